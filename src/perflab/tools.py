"""Where perflab finds the programs it runs as load generators or measuring tools (k6, wrk,
pgbench, valgrind): one place, used by the workload checks before a run and by the runners.
A leaf module: it imports nothing of perflab's, so any stage may ask it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path


def find_k6() -> str | None:
    """k6 on PATH, else where `go install go.k6.io/k6` puts it: $(go env GOPATH)/bin."""
    return find_go_tool("k6")


def find_go_tool(name: str) -> str | None:
    """A program on PATH, else where `go install` puts it: $(go env GOPATH)/bin (k6, runsc)."""
    found = shutil.which(name)
    if found:
        return found
    gopaths = [os.environ.get("GOPATH"), str(Path.home() / "go")]
    go = shutil.which("go") or ("/usr/local/go/bin/go" if os.path.exists("/usr/local/go/bin/go") else None)
    if go is not None:
        try:
            gopaths.insert(0, subprocess.run([go, "env", "GOPATH"], capture_output=True, text=True,
                                             timeout=10).stdout.strip())
        except (OSError, subprocess.SubprocessError):
            pass
    for gopath in filter(None, gopaths):
        for entry in gopath.split(os.pathsep):
            candidate = Path(entry) / "bin" / name
            if os.access(candidate, os.X_OK):
                return str(candidate)
    return None


def find_tool(name: str) -> str | None:
    """A program by name: k6 also where `go install` puts it, the others on PATH."""
    return find_go_tool(name) if name in ("k6", "runsc") else shutil.which(name)


def find_browser() -> str | None:
    """A Chromium that can run headless (to print a report book to PDF), on PATH."""
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None

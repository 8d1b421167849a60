"""Where the driver's time goes: py-spy (installed in the peers venv, never a perflab
dependency) attached to a running `perflab run`, its raw stacks reduced to the top functions.

Shares are of the samples in which the driver's threads were on CPU (py-spy leaves idle
threads out): *self* counts the sample to the innermost frame only, *total* to every function
on the stack (once per sample).
"""

from __future__ import annotations

import collections
import re
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from common import find_tool, log, workdir
from perflab_runs import run_perflab

_FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")


def _short(frame: str) -> str:
    m = _FRAME.match(frame.strip())
    if not m:
        return frame.strip()
    path = m.group("file")
    for marker in ("site-packages/", "src/", "lib/python3.11/"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return f"{m.group('func')} ({path})"


def top_functions(raw: Path, limit: int = 12) -> dict[str, Any]:
    self_counts: collections.Counter[str] = collections.Counter()
    total_counts: collections.Counter[str] = collections.Counter()
    samples = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = [_short(f) for f in stack.split(";") if f and not f.startswith("process ") and
                  not f.startswith("thread ")]
        if not frames:
            continue
        samples += n
        self_counts[frames[-1]] += n
        for f in set(frames):
            total_counts[f] += n
    share = (lambda c: 100.0 * c / samples if samples else 0.0)
    return {"samples": samples,
            "self": [(f, share(c)) for f, c in self_counts.most_common(limit)],
            "total": [(f, share(c)) for f, c in total_counts.most_common(limit * 2)]}


def profile_perflab(workload_text: str, name: str, delay_s: float = 4.0, duration_s: int = 6,
                    rate: int = 250) -> dict[str, Any]:
    """Run the workload with py-spy attached to the driver for `duration_s` after `delay_s`."""
    exe = find_tool("py-spy")
    if exe is None:
        return {"note": "py-spy is not installed (bench/setup_peers.sh installs it in the peers venv)"}
    raw = workdir("profiles") / f"{name}.txt"
    raw.unlink(missing_ok=True)
    result: dict[str, Any] = {}

    def attach(proc: subprocess.Popen) -> None:
        def run() -> None:
            time.sleep(delay_s)
            argv = [exe, "record", "--pid", str(proc.pid), "--duration", str(duration_s), "--rate", str(rate),
                    "--format", "raw", "--output", str(raw), "--nonblocking"]
            done = subprocess.run(argv, capture_output=True, text=True)
            result["py_spy_exit"] = done.returncode
            result["py_spy_stderr"] = done.stderr[-500:]
        threading.Thread(target=run, daemon=True).start()

    log(f"profile: {name} under py-spy")
    run = run_perflab(workload_text, name, on_start=attach)
    deadline = time.monotonic() + 30
    while "py_spy_exit" not in result and time.monotonic() < deadline:
        time.sleep(0.2)
    if not raw.exists():
        return {"note": f"py-spy produced no profile: {result.get('py_spy_stderr', '')}"}
    values = run.metrics().values
    return {**top_functions(raw), "command": run.command, "run_id": run.run_id, "raw": str(raw),
            "etr_t": values.get("etr_t"), "driver_cpu": values.get("driver_cpu"),
            "profiler": f"py-spy record --rate {rate} --nonblocking --format raw, {duration_s} s of the window"}

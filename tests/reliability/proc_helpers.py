"""Finding the processes a test's perflab left behind: every process started under a tag (an
environment variable the test sets) carries it in /proc/PID/environ, whoever its parent is."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

TAG_VARIABLE = "PERFLAB_TEST_TAG"


def new_tag() -> str:
    return uuid.uuid4().hex


def tagged_pids(tag: str) -> list[int]:
    """Live (not zombie) processes whose environment holds TAG_VARIABLE=tag."""
    needle = f"{TAG_VARIABLE}={tag}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if needle in environ.split(b"\0") and state != "Z":
            found.append(int(entry.name))
    return found

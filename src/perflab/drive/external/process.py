"""Running an external driver: pinned to the driver's CPUs, watched, its CPU measured.

While the tool runs, the SUT is watched: if the server exits, the tool is stopped and the run
fails with the server's reason. Ctrl-C reaches the tool too (same process group); perflab
waits for it to write its log and imports what it measured, marked interrupted.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from perflab.records.run import RunStatus

POLL_S = 0.1


@dataclass
class ToolRun:
    returncode: int
    stdout: str
    stderr: str
    started: float  # time.monotonic() just before the exec
    ended: float
    cpu_s: float  # the tool's user + system CPU (rusage of the reaped child)
    sut_failure: str | None
    interrupted: str | None

    @property
    def driver(self) -> dict:
        wall = self.ended - self.started
        util = 100.0 * self.cpu_s / wall if wall > 0 else float("nan")
        return {"pid": None, "cpu_s": self.cpu_s, "window_wall_s": wall, "util_pct": util,
                "saturated": util >= 90.0, "tool_wall_s": wall}


def run_tool(argv: list[str], run_dir: Path, name: str, cpus: list[int], failure: Callable[[], str | None] | None,
             env: dict | None = None, cwd: Path | None = None) -> ToolRun:
    out_path, err_path = run_dir / f"{name}.stdout", run_dir / f"{name}.stderr"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    sut_failure = interrupted = None
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        started = time.monotonic()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=cwd, env=env,
                                preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None)
        while True:
            try:
                proc.wait(timeout=POLL_S)
                break
            except subprocess.TimeoutExpired:
                pass
            except KeyboardInterrupt:
                interrupted = "interrupted by SIGINT (Ctrl-C)"
                proc.send_signal(signal.SIGINT)
                continue
            reason = failure() if failure is not None else None
            if reason and sut_failure is None:
                sut_failure = reason
                proc.send_signal(signal.SIGINT)  # the tool writes what it has, then exits
        ended = time.monotonic()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return ToolRun(proc.returncode, out_path.read_text(errors="replace"), err_path.read_text(errors="replace"),
                   started, ended, cpu, sut_failure, interrupted)


def tool_outcome(tool, failure, what: str) -> tuple[RunStatus, str] | None:
    """(status, reason) when the tool run did not complete, else None: the SUT's failure first, then
    Ctrl-C, then the tool's own exit code (with the server's reason if it has gone meanwhile)."""
    if tool.sut_failure:
        return "failed", tool.sut_failure
    if tool.interrupted:
        return "interrupted", tool.interrupted
    if tool.returncode != 0:
        gone = failure() if failure is not None else None
        return "failed", gone or f"{what} exited with code {tool.returncode}: {tool.stderr.strip()[-600:]}"
    return None

"""A sampled CPU profile of the SUT's processes during the window, where counting cannot reach
(nginx, any server perflab starts as a `service`): perf's software `cpu-clock` event, which
needs no hardware counters (this lab's KVM guest has none), at `profile.frequency` samples a
second of each process's CPU time.

A sample says where a processor was when the clock ticked, so a profile is a set of **shares of
CPU time**, each with its sampling error, never a count of instructions: a function seen in k of
n samples has the share k / n and a 95% Wilson interval around it (samples a millisecond apart
are not independent draws, so the interval is a lower bound on the error of the share, and a
share below a few samples means nothing). The kernel is in it ([kernel.kallsyms]), unlike a
valgrind count.

`perf record -p PIDS` follows the threads the processes have when it starts (a server's
workers, started before the window), not processes forked later: a server that forks per
connection during the window is profiled only in the processes it had at its start. What it
costs: perf's own CPU (it reads a ring buffer at the sampling rate) on the driver's processors
and a few microseconds per sample in the SUT's -- about 0.5% of a busy processor at 999 Hz.
"""

from __future__ import annotations

import math
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from perflab import arrow_arrays
from perflab.tools import find_tool

PROFILE_FILE = "profile.parquet"
DATA_FILE = "profile.perf.data"
#: a 95% interval
Z = 1.959964


@dataclass(frozen=True)
class Share:
    object: str
    function: str
    samples: int
    share: float
    low: float
    high: float


def wilson(k: int, n: int, z: float = Z) -> tuple[float, float]:
    """The Wilson score interval of a share k / n."""
    if n <= 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def record_command(pids: list[int], out: Path, frequency: int, seconds: float) -> list[str]:
    program = find_tool("perf") or "perf"
    return [program, "record", "-e", "cpu-clock", "-F", str(frequency), "-p", ",".join(str(p) for p in pids),
            "-o", str(out), "--", "sleep", f"{seconds:.3f}"]


def report_command(data: Path) -> list[str]:
    program = find_tool("perf") or "perf"
    return [program, "report", "-i", str(data), "--stdio", "--no-children", "--sort", "dso,sym",
            "-F", "sample,dso,sym", "-t", ";"]


def parse_report(text: str) -> list[tuple[str, str, int]]:
    """(object, function, samples) from `perf report -F sample,dso,sym -t ';'`."""
    rows: list[tuple[str, str, int]] = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        parts = [p.strip() for p in line.split(";", 2)]
        if len(parts) != 3 or not parts[0].isdigit():
            continue
        samples, obj, symbol = int(parts[0]), parts[1], parts[2]
        if symbol.startswith("[") and "] " in symbol:
            symbol = symbol.split("] ", 1)[1]      # "[.] name", "[k] name"
        rows.append((obj, symbol, samples))
    return rows


def shares(rows: list[tuple[str, str, int]]) -> list[Share]:
    n = sum(s for _o, _f, s in rows)
    out = []
    for obj, fn, k in sorted(rows, key=lambda r: (-r[2], r[0], r[1])):
        low, high = wilson(k, n)
        out.append(Share(obj, fn, k, k / n if n else 0.0, low, high))
    return out


@dataclass
class ProfileSampler:
    """perf record over the window, from a thread that waits for the window's start; `finish`
    waits for it and writes profile.parquet. Nothing here raises into the run: a profile that
    fails leaves its reason."""

    pids: list[int]
    run_dir: Path
    frequency: int
    start: float            # CLOCK_MONOTONIC of the window's start
    seconds: float          # the window's length
    reason: str | None = None
    samples: int = 0
    functions: int = 0
    perf_seconds: float | None = None
    _thread: threading.Thread | None = field(default=None, repr=False)
    _process: subprocess.Popen | None = field(default=None, repr=False)
    _stop: threading.Event = field(default_factory=threading.Event, repr=False)

    def begin(self) -> None:
        if not self.pids:
            self.reason = "no SUT process to sample"
            return
        if find_tool("perf") is None:
            self.reason = "perf is not installed"
            return
        self._thread = threading.Thread(target=self._record, name="perflab-profile", daemon=True)
        self._thread.start()

    def _record(self) -> None:
        delay = self.start - time.monotonic()
        if delay > 0 and self._stop.wait(delay):
            self.reason = "the run ended before its window"
            return
        self.pids = tree(self.pids)   # the server's workers as they are at the window's start
        out = self.run_dir / DATA_FILE
        log = self.run_dir / "profile.log"
        try:
            with open(log, "wb") as handle:
                self._process = subprocess.Popen(record_command(self.pids, out, self.frequency, self.seconds),
                                                 stdout=handle, stderr=subprocess.STDOUT)
                began = time.monotonic()
                self._process.wait()
                self.perf_seconds = time.monotonic() - began
        except OSError as exc:
            self.reason = f"perf record: {exc}"

    def finish(self) -> None:
        """Stop a recording the run outlived (interrupted), wait for it, and write the table."""
        self._stop.set()
        if self._thread is None:
            return
        self._thread.join(timeout=self.seconds + 60)
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            self._process.wait(timeout=30)
        data = self.run_dir / DATA_FILE
        if self.reason is not None:
            return
        if not data.exists():
            self.reason = "perf record wrote no data (see profile.log)"
            return
        try:
            text = subprocess.run(report_command(data), capture_output=True, text=True, timeout=300).stdout
        except (OSError, subprocess.SubprocessError) as exc:
            self.reason = f"perf report: {exc}"
            return
        table = shares(parse_report(text))
        self.samples = sum(s.samples for s in table)
        self.functions = len(table)
        if not table:
            self.reason = "no samples: the SUT's processes did not run on a processor during the window"
        write_shares(table, self.run_dir)


def tree(pids: list[int]) -> list[int]:
    """The processes and every descendant they have now (from /proc: each process's parent)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    found: set[int] = set()
    todo = [p for p in pids if Path(f"/proc/{p}").exists()]
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo += children.get(pid, [])
    return sorted(found)


def write_shares(table: list[Share], run_dir: Path) -> None:
    pq.write_table(pa.table({
        "object": arrow_arrays.strings([s.object for s in table]),
        "function": arrow_arrays.strings([s.function for s in table]),
        "samples": arrow_arrays.numbers([s.samples for s in table], pa.int64()),
        "share": arrow_arrays.numbers([s.share for s in table], pa.float64()),
        "share_low": arrow_arrays.numbers([s.low for s in table], pa.float64()),
        "share_high": arrow_arrays.numbers([s.high for s in table], pa.float64()),
    }), run_dir / PROFILE_FILE)

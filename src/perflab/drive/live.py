"""The writer of live.json (perflab.records.live): a run observer that the run lifecycle
attaches to every run, so `perflab serve` shows any run in progress, however it was started.

`LiveWriter.tick(engine, elapsed)` is called from the engine's event loop about twice a
second, beside the terminal's progress display. It keeps its cost small: the recent figures
come from the transactions the recorder appended since the previous write (one numpy pass over
them), the SUT's CPU from one cgroup file (or one /proc/<pid>/stat per SUT process), the
driver's from os.times(). It is a display, not a measurement.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from perflab.drive.live_stats import ErrorCounts, History, TransactionStats
from perflab.monitor.sources.procfs import CLK_TCK, parse_key_values, read_bytes, read_pid_stat
from perflab.records.live import LIVE_FILE, LivePoint, LiveStatus
from perflab.stats.quantiles import nearest_rank
from perflab.store.atomic import write_json_atomic

#: Points kept for the live charts: five minutes at one write a second (~50 KB of JSON); a
#: longer run's points are merged in pairs (live_stats.History), so the charts cover it whole.
HISTORY_POINTS = 300
#: The longest error message kept: an error can hold a whole server response.
ERROR_CHARS = 300


# -- CPU counters --------------------------------------------------------------------------------

class SutCpu:
    """The SUT's cumulative CPU seconds: from its cgroup (exact, includes processes that came and
    went) when there is one, else the sum over its processes of their own and reaped children's
    times. A process that exits keeps its last reading, so the sum never goes backwards."""

    def __init__(self, cgroup: str | os.PathLike | dict[str, str] | None, pids: Iterable[int]):
        self.v2_dir, self.v1_dir = _cgroup_dirs(cgroup)
        self.pids = list(pids)
        self._last: dict[int, float] = {}

    @property
    def available(self) -> bool:
        return bool(self.v2_dir or self.v1_dir or self.pids)

    def seconds(self) -> float | None:
        if self.v2_dir:
            stat = parse_key_values(read_bytes(os.path.join(self.v2_dir, "cpu.stat")) or b"")
            if b"usage_usec" in stat:
                return stat[b"usage_usec"] / 1e6
        if self.v1_dir:
            raw = read_bytes(os.path.join(self.v1_dir, "cpuacct.usage"))
            if raw and raw.strip().isdigit():
                return int(raw) / 1e9
        if not self.pids:
            return None
        for pid in self.pids:
            pid_stat = read_pid_stat(pid)
            if pid_stat is not None:
                self._last[pid] = (pid_stat.utime + pid_stat.stime + pid_stat.cutime + pid_stat.cstime) / CLK_TCK
        return sum(self._last.values()) if self._last else None


def _cgroup_dirs(cgroup: str | os.PathLike | dict[str, str] | None) -> tuple[str | None, str | None]:
    """(v2 directory, v1 cpuacct directory) of what SutCgroup.path_for_monitor gives: a v2
    directory, or controller -> v1 directory."""
    if not cgroup:
        return None, None
    if isinstance(cgroup, dict):
        return cgroup.get("unified"), cgroup.get("cpuacct")
    path = os.fspath(cgroup)
    if os.path.exists(os.path.join(path, "cpu.stat")) and os.path.exists(os.path.join(path, "cgroup.controllers")):
        return path, None
    return None, path


def _driver_cpu_seconds() -> float:
    # The driver's own threads only: its children are SUT workers, whose time is the SUT's.
    times = os.times()
    return times.user + times.system


# -- the writer --------------------------------------------------------------------------------

@dataclass
class _Mark:
    """What the previous write saw: the recent figures are differences from it."""

    elapsed: float
    index: int          # transactions in the recorder
    completed: int
    errors: int
    sut_cpu: float | None
    driver_cpu: float


class LiveWriter:
    """Writes live.json at most once per `min_interval_s` from the driver's progress ticks.

    run_dir, run_id: the run's directory and id; sut_cgroup: the SUT's cgroup as
    SutCgroup.path_for_monitor gives it, or None; sut_pids: the SUT's processes (used when
    there is no cgroup); processors: how many processors the SUT has (UTIL/PROC (S) is a
    percentage of them).

    A failure here must never end a measurement: the first exception stops the writer (kept
    in `self.error`) and the run goes on without a live view.
    """

    def __init__(self, run_dir: Path, run_id: str, sut_cgroup: Any = None, sut_pids: Iterable[int] = (),
                 processors: int = 1, *, min_interval_s: float = 1.0, history: int = HISTORY_POINTS):
        self.path = Path(run_dir) / LIVE_FILE
        self.run_id = run_id
        self.sut_cpu = SutCpu(sut_cgroup, sut_pids)
        self.processors = max(1, int(processors))
        self.min_interval_s = min_interval_s
        self.history = History(history)
        self.transactions = TransactionStats()
        self.error_counts = ErrorCounts()
        self.last_error: str | None = None
        self.error: str | None = None
        self.writes = 0
        self._mark: _Mark | None = None

    def tick(self, engine: Any, elapsed: float) -> None:
        """The progress callback: engine.phases, engine.recorder (and engine.users/rate)."""
        if self.error is not None:
            return
        if self._mark is not None and elapsed - self._mark.elapsed < self.min_interval_s:
            return
        self._safely(engine, elapsed)

    def flush(self, engine: Any, elapsed: float) -> None:
        """Write now, whatever the interval (the last state of a run, for instance)."""
        if self.error is None:
            self._safely(engine, elapsed)

    def _safely(self, engine: Any, elapsed: float) -> None:
        try:
            write_json_atomic(self.path, self.status(engine, elapsed).model_dump(mode="json"))
            self.writes += 1
        except Exception as exc:
            self.error = f"{type(exc).__name__}: {exc}"

    def status(self, engine: Any, elapsed: float) -> LiveStatus:
        """The figures for this tick, and the mark the next tick's differences start from."""
        recorder, phases = engine.recorder, engine.phases
        n = len(recorder)
        mark = _Mark(elapsed, n, int(recorder.completed), int(recorder.errors),
                     self.sut_cpu.seconds(), _driver_cpu_seconds())
        previous, self._mark = self._mark, mark
        span = None if previous is None else elapsed - previous.elapsed
        point = LivePoint(elapsed_s=elapsed, span_s=span)
        if previous is not None and elapsed > previous.elapsed and n >= previous.index:
            point, last_error = _recent(recorder, previous, mark, self.processors, self.transactions,
                                        self.error_counts)
            if last_error is not None:
                self.last_error = last_error
        if previous is not None:
            self.history.add(point)
        now = time.time()
        return LiveStatus(
            run_id=self.run_id, pid=os.getpid(), phase=phases.name_at(elapsed), elapsed_s=elapsed,
            window_start_s=phases.window_start, window_end_s=phases.window_end,
            time_left_s=max(0.0, phases.window_end - elapsed),
            users=getattr(engine, "users", None), rate=getattr(engine, "rate", None),
            tx_completed=mark.completed, errors=mark.errors,
            recent_s=span,
            etr_t=point.etr_t, avg_last_t=point.avg_last_t, resp_p90_t=point.resp_p90_t,
            util_proc_s=point.util_proc_s, driver_cpu_pct=point.driver_cpu_pct, last_error=self.last_error,
            updated=now, updated_iso=dt.datetime.fromtimestamp(now, dt.UTC).isoformat(timespec="seconds"),
            history=self.history.shown(),
            transactions=self.transactions.rows(getattr(recorder, "tx_names", None) or [], span),
            error_messages=self.error_counts.rows(),
        )


def _recent(recorder: Any, a: _Mark, b: _Mark, processors: int, transactions: TransactionStats | None = None,
            error_counts: ErrorCounts | None = None) -> tuple[LivePoint, str | None]:
    """The figures of the transactions recorded between two marks (recorded = completed, so
    this is the same "completed in the interval" rule as the reduction's per-interval rows),
    and the last error among them; `transactions` and `error_counts` are brought up to date
    with the same rows."""
    span = b.elapsed - a.elapsed
    rows = recorder.recent(a.index, b.index)  # a long run's older rows are spilled to disk
    ok = rows.ok
    all_responses = rows.end - rows.intended
    response = all_responses[ok]
    out = LivePoint(elapsed_s=b.elapsed, span_s=span, etr_t=(b.completed - a.completed) / span,
                    errors=b.errors - a.errors, driver_cpu_pct=100.0 * (b.driver_cpu - a.driver_cpu) / span)
    last_error = None
    if len(response):
        out.avg_last_t = float(response.mean())
        out.resp_p50_t, out.resp_p90_t, out.resp_p99_t = nearest_rank(response, (50, 90, 99))
    if a.sut_cpu is not None and b.sut_cpu is not None:
        out.util_proc_s = 100.0 * (b.sut_cpu - a.sut_cpu) / span / processors
    # A recorder without transaction names (a Ray run's drained rows) has no per-name table.
    tx = getattr(rows, "tx", None)
    names = getattr(recorder, "tx_names", None) or []
    if transactions is not None and tx is not None and len(tx) == len(ok):
        transactions.add(tx, ok, all_responses)
    failed = np.flatnonzero(~ok)
    if len(failed):
        message = recorder.error_at(rows.first + int(failed[-1]))
        last_error = None if message is None else str(message)[:ERROR_CHARS]
        if error_counts is not None:
            for i in failed:
                text = recorder.error_at(rows.first + int(i))
                name = str(names[int(tx[i])]) if tx is not None and 0 <= int(tx[i]) < len(names) else ""
                error_counts.add(name, None if text is None else str(text)[:ERROR_CHARS])
    return out, last_error

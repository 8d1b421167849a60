"""The monitor process: reads every source on a fixed grid and, at the end, hands its rows to the
driver, which writes samples.parquet -- or writes it itself when the driver is gone (the driver's
side, and why this is a process of its own: sampler.py).

Timing: sample k is taken at the first grid point t0 + k * interval after the previous one
(missed grid points are skipped, never caught up in a burst), so samples of different runs and
the measurement window share one grid. A sample's `t` is the midpoint of its reads, in seconds
since t0 on CLOCK_MONOTONIC, which the driver and SUT share.

The driver's death: the monitor watches a pidfd of its parent (and its control pipe, and its
parent pid as a fallback), and on any sign that the parent is gone it takes a final sample,
writes what it has and exits. SIGINT (Ctrl-C reaches the whole process group) is ignored: the
driver decides when to stop. SIGTERM writes and exits.

Cost (the summary reports it per run as sampling_cpu_per_s; measured on the 2-core development
VM with all machine sources, SharedCounters, a driver pid and two components):
    1 s interval,   5 SUT processes: 0.0011 CPU-s per s (0.11 % of one core)
    1 s interval,  51 SUT processes: 0.0041 CPU-s per s (0.41 %)
    0.1 s interval, 5 SUT processes: 0.0086 CPU-s per s (0.86 %)
plus ~0.1 CPU-s to start, outside the sampled span. Asked to stop, the monitor hands its rows to
the driver, which writes samples.parquet (samples_file.py); only a monitor whose driver is gone
writes the file itself, ~0.35 CPU-s more (pyarrow's import). Most of the per-sample cost is
~70 us per SUT process (four /proc reads) and
PSS (smaps_rollup, ~170 us per small process), which is why PSS is refreshed every 5 s.
"""

from __future__ import annotations

import json
import math
import os
import pickle
import resource
import select
import signal
import struct
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .sampler import MonitorSpec
from .samples_file import SampleRows, write_samples
from .sources import SourceUnavailable, close_all

if TYPE_CHECKING:
    from .sources.perf_counters import PerfCounterSource
    from .sources.process_tree import ProcessTreeSource


def build_sources(spec: MonitorSpec):
    """-> (sources in read order, status per source name, the SUT tree holder). The monitor
    process reads them on its grid; `perflab agent` (agent.py) reads them when asked."""
    from .sources.cgroup import CgroupSource
    from .sources.diskstats import DiskstatsSource
    from .sources.netdev import NetdevSource
    from .sources.own_cpu import DriverCpuSource, MonitorCpuSource
    from .sources.proc_stat import ProcStatSource
    from .sources.vmstat import VmstatSource

    status: dict[str, dict] = {}
    sources: list = []

    def add(name: str, factory) -> Any:
        try:
            src = factory()
        except SourceUnavailable as e:
            status[name] = {"available": False, "reason": str(e)}
            return None
        except Exception as e:  # a broken source must not cost the whole run its samples
            status[name] = {"available": False, "reason": f"{type(e).__name__}: {e}"}
            return None
        status[name] = {"available": True, "reason": None}
        sources.append(src)
        return src

    cgroup = None
    if spec.sut_cgroup is not None:
        # Read through the tree holder (not on its own), which also finds members by it.
        try:
            cgroup = CgroupSource(spec.sut_cgroup)
        except SourceUnavailable as e:
            status["cgroup"] = {"available": False, "reason": str(e)}
        else:
            status["cgroup"] = {"available": True, "reason": None, "describe": cgroup.describe}
            if not cgroup.provides_cpu:
                status["cgroup"]["reason"] = "no CPU accounting files; s.cpu_* from the process tree"
    tree = _TreeHolder(spec, cgroup, status)
    sources.append(tree)
    has_sut = bool(spec.sut_pids) or cgroup is not None
    status["process_tree"] = {
        "available": has_sut,
        "reason": None if has_sut else "no SUT pids yet (Sampler.add_sut_pids adds them)",
    }

    machine = {"proc_stat": ProcStatSource, "vmstat": VmstatSource,
               "diskstats": DiskstatsSource, "netdev": NetdevSource}
    for name in spec.machine_sources:
        add(name, machine[name])
    if spec.driver_pid is not None:
        add("driver_cpu", lambda: DriverCpuSource(spec.driver_pid))
    if spec.counters is not None:
        add("sut_counters", lambda: spec.counters.open())
    if spec.remote is not None:
        from .sources.remote import RemoteSource

        # The SUT host's monitor (node_exporter or perflab agent): its h.*, s.*, v.*, sut.*.
        remote = add("remote", lambda: RemoteSource(spec.remote, spec.t0_monotonic))
        if remote is not None:
            status["remote"].update(remote.status())
    if spec.perf_counters:
        from .sources.perf_counters import probe

        ok, why = probe()
        status["perf_counters"] = {"available": ok, "reason": why}
        if ok:
            tree.enable_perf()
    else:
        status["perf_counters"] = {"available": False, "reason": "turned off (MonitorSpec.perf_counters)"}
    sources.append(MonitorCpuSource())  # last: its reading includes this sample's reads
    status["monitor_cpu"] = {"available": True, "reason": None}
    return sources, status, tree


class _TreeHolder:
    """The SUT's process tree (and perf counters), created once the SUT has processes.

    Until the SUT has any process there are no s.* columns rather than zeros.
    """

    name = "process_tree"

    def __init__(self, spec: MonitorSpec, cgroup, status: dict[str, dict]) -> None:
        self._spec = spec
        self._cgroup = cgroup
        self._status = status
        self._tree: ProcessTreeSource | None = None
        self._perf: PerfCounterSource | None = None
        self._perf_wanted = False
        self._roots: list[int] = list(spec.sut_pids)

    def enable_perf(self) -> None:
        self._perf_wanted = True

    def add_roots(self, pids: list[int]) -> None:
        self._roots.extend(pids)
        if self._tree is not None:
            self._tree.add_roots(pids)
            if self._perf is not None:
                self._perf.add_pids(pids)

    def read(self) -> dict[str, float]:
        from .sources.process_tree import ProcessTreeSource

        members = self._cgroup.procs() if self._cgroup is not None else []
        tree = self._tree
        if tree is None:
            if not (self._roots or members):
                return self._cgroup.read() if self._cgroup is not None else {}
            cpu_entity = "tree" if self._cgroup is not None and self._cgroup.provides_cpu else None
            tree = self._tree = ProcessTreeSource(
                self._roots, self._spec.components, cpu_entity=cpu_entity,
                pss_refresh_s=self._spec.pss_refresh_s,
            )
            self._status["process_tree"] = {"available": True, "reason": None}
        if members:
            tree.add_roots(members)
        out = tree.read()
        if self._perf_wanted and self._perf is None:
            from .sources.perf_counters import PerfCounterSource

            # Existing processes get their own counters; later children are inherited.
            try:
                self._perf = PerfCounterSource(tree.pids)
            except Exception as e:
                self._perf_wanted = False
                self._status["perf_counters"] = {"available": False, "reason": str(e)}
        if self._perf is not None:
            out.update(self._perf.read())
        if self._cgroup is not None:
            out.update(self._cgroup.read())  # exact s.cpu_* when the cgroup has them
        return out

    def close(self) -> None:
        if self._perf is not None:
            self._perf.close()
        if self._tree is not None:
            self._tree.close()


class _Monitor:
    def __init__(self, spec: MonitorSpec) -> None:
        self.spec = spec
        self.sources, self.status, self.tree = build_sources(spec)
        self.rows: list[dict[str, float]] = []
        self.columns: dict[str, None] = {"t": None}  # insertion-ordered set
        self.errors: dict[str, str] = {}

    def sample(self) -> float:
        """Read every source once; the sample's time (seconds since t0) is returned."""
        begin = time.monotonic()
        row: dict[str, float] = {}
        for src in self.sources:
            try:
                row.update(src.read())
            except Exception as e:  # keep sampling; the summary carries the first error
                self.errors.setdefault(src.name, f"{type(e).__name__}: {e}")
        end = time.monotonic()
        row["t"] = (begin + end) / 2 - self.spec.t0_monotonic
        for k in row:
            if k not in self.columns:
                self.columns[k] = None
        self.rows.append(row)
        return row["t"]

    def rows_to_hand_over(self, end_reason: str) -> SampleRows:
        """The rows, their columns and metadata, and the summary: what the driver writes as
        samples.parquet when it asked the monitor to stop."""
        return SampleRows(list(self.columns), self.rows, self._meta(end_reason), self._summary(end_reason))

    def write(self, end_reason: str) -> dict:
        """Write samples.parquet here: the driver is gone, or did not ask for the rows."""
        cpu_at_write = _own_cpu_s()
        summary = self._summary(end_reason)
        write_samples(Path(self.spec.out_path), list(self.columns), self.rows, self._meta(end_reason))
        summary["monitor_write_cpu_s"] = round(_own_cpu_s() - cpu_at_write, 4)
        return summary

    def _meta(self, end_reason: str) -> dict:
        return {"interval_s": self.spec.interval_s, "t0_monotonic": self.spec.t0_monotonic,
                "sources": self.status, "end": end_reason}

    def _summary(self, end_reason: str) -> dict:
        first, last = (self.rows[0], self.rows[-1]) if self.rows else ({}, {})
        span = last.get("t", 0.0) - first.get("t", 0.0)
        sampling_cpu = (
            last.get("monitor.cpu_user", 0.0) + last.get("monitor.cpu_sys", 0.0)
            - first.get("monitor.cpu_user", 0.0) - first.get("monitor.cpu_sys", 0.0)
        )
        status = {k: dict(v) for k, v in self.status.items()}
        for src in self.sources:
            if hasattr(src, "status"):  # a source that keeps its own account (remote: losses, clocks)
                status.setdefault(src.name, {"available": True, "reason": None}).update(src.status())
        for name, err in self.errors.items():
            status.setdefault(name, {"available": True, "reason": None})["error"] = err
        return {
            "out_path": str(self.spec.out_path),
            "samples": len(self.rows),
            "interval_s": self.spec.interval_s,
            "span_s": round(span, 6),
            "columns": list(self.columns),
            "monitor_pid": os.getpid(),
            "monitor_cpu_s": round(_own_cpu_s(), 4),
            # CPU spent between the first and the last sample: the steady cost of sampling,
            # without interpreter start-up and the final write.
            "sampling_cpu_s": round(sampling_cpu, 4),
            "sampling_cpu_per_s": round(sampling_cpu / span, 6) if span > 0 else math.nan,
            "sources": status,
            "end": end_reason,
        }

    def close(self) -> None:
        close_all(self.sources)


def _own_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _next_grid_time(now: float, t0: float, interval: float) -> float:
    """The first grid point t0 + k * interval strictly after `now`."""
    k = math.floor((now - t0) / interval) + 1
    return t0 + k * interval


def _read_exact(fd: int, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = os.read(fd, n - len(data))
        if not chunk:
            raise EOFError("control pipe closed before the spec arrived")
        data += chunk
    return data


def main() -> None:
    """Entry point of the monitor process: argv = control-pipe fd, report-pipe fd."""
    ctl, rep = int(sys.argv[1]), int(sys.argv[2])
    parent = os.getppid()

    def report(obj: dict) -> None:
        try:
            os.write(rep, (json.dumps(obj) + "\n").encode())
        except OSError:
            pass  # the driver is gone; the samples file is what matters

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    terminated = []
    signal.signal(signal.SIGTERM, lambda *_: terminated.append(True))
    try:
        parent_fd = os.pidfd_open(parent)
    except (AttributeError, OSError):
        parent_fd = None  # old kernel: the getppid() check below still notices

    try:
        (size,) = struct.unpack("<Q", _read_exact(ctl, 8))
        spec: MonitorSpec = pickle.loads(_read_exact(ctl, size))
        allowed = os.sched_getaffinity(0)
        if spec.cpus:
            os.sched_setaffinity(0, spec.cpus)
        # The process tree keeps a few /proc descriptors open per SUT process.
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != hard:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        monitor = _Monitor(spec)
        monitor.sample()
    except Exception as e:
        report({"event": "error", "message": f"{type(e).__name__}: {e}"})
        raise
    report({"event": "ready", "sources": monitor.status})

    end_reason = None
    pending = b""
    watched = [ctl, wake_r] + ([parent_fd] if parent_fd is not None else [])
    try:
        while end_reason is None:
            deadline = _next_grid_time(time.monotonic(), spec.t0_monotonic, spec.interval_s)
            while end_reason is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                ready, _, _ = select.select(watched, [], [], left)
                if terminated:
                    end_reason = "terminated (SIGTERM)"
                elif os.getppid() != parent or (parent_fd is not None and parent_fd in ready):
                    end_reason = "driver exited"
                elif ctl in ready:
                    chunk = os.read(ctl, 65536)
                    if not chunk:
                        end_reason = "driver exited (control pipe closed)"
                        break
                    pending += chunk
                    while b"\n" in pending:
                        line, _, pending = pending.partition(b"\n")
                        cmd, *args = line.decode().split()
                        if cmd == "stop":
                            end_reason = "stopped"
                        elif cmd == "add":
                            monitor.tree.add_roots([int(a) for a in args])
                        elif cmd == "sample":
                            # Off the grid, at the driver's request: a job stream's window starts and
                            # ends when its jobs do, and counters read there need no interpolation.
                            # The driver waits for the answer before its first job starts.
                            report({"event": "sampled", "t": monitor.sample()})
                        elif cmd == "edge":
                            # A window's edge (Sampler.sample_edge): no answer, nobody waits.
                            monitor.sample()
                if wake_r in ready:
                    os.read(wake_r, 4096)
            if end_reason is None:
                monitor.sample()
    finally:
        end_reason = end_reason or "monitor error"
        monitor.sample()  # the final sample, whatever ended the run
        monitor.close()
        # Measuring is over: the driver may stop the SUT now.
        report({"event": "final"})
        # Asked to stop, the rows go to the driver: it has pyarrow loaded, this process has not.
        # Until the driver says it has written the file, the rows stay here too: a driver that dies
        # (or stops reading) before that leaves the file to be written here, on any CPU.
        handed = end_reason == "stopped" and _hand_over(rep, monitor.rows_to_hand_over(end_reason))
        if not (handed and _written_by_driver(ctl, parent_fd, pending)):
            try:
                os.sched_setaffinity(0, allowed)
            except OSError:
                pass
            try:
                summary = monitor.write(end_reason)
            except Exception as e:
                report({"event": "error", "message": f"writing samples failed: {type(e).__name__}: {e}"})
                raise
            report({"event": "stopped", "summary": summary})


def _written_by_driver(ctl: int, parent_fd: int | None, pending: bytes,
                       timeout_s: float = 300.0) -> bool:
    """Wait for the driver's `written` (samples.parquet is in place); False when the control pipe
    closes, the driver dies or says nothing for `timeout_s` -- the monitor then writes the file."""
    deadline = time.monotonic() + timeout_s
    watched = [ctl] + ([parent_fd] if parent_fd is not None else [])
    while b"written\n" not in pending:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        ready, _, _ = select.select(watched, [], [], min(left, 1.0))
        if parent_fd is not None and parent_fd in ready:
            return False
        if ctl in ready:
            chunk = os.read(ctl, 65536)
            if not chunk:
                return False
            pending += chunk
    return True


def _hand_over(rep: int, rows: SampleRows) -> bool:
    """Send the rows to the driver: a JSON line `rows` with the payload's size, then the pickled
    SampleRows. False when the driver is no longer reading (it died after asking to stop): the
    monitor then writes the file itself."""
    payload = pickle.dumps(rows, protocol=pickle.HIGHEST_PROTOCOL)
    data = (json.dumps({"event": "rows", "size": len(payload)}) + "\n").encode() + payload
    view = memoryview(data)
    try:
        while view:
            written = os.write(rep, view)
            view = view[written:]
    except OSError:
        return False
    return True

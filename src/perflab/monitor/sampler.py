"""The sampler, the driver's handle on the monitor: a separate process that reads every source
on a fixed grid; its rows become samples.parquet (docs/architecture.md has the column contract;
monitor_process.py is the code that runs in that process, samples_file.py writes the file).

    spec = MonitorSpec(out_path=run_dir / "samples.parquet", t0_monotonic=t0, interval_s=1.0,
                       sut_pids=[...], driver_pid=os.getpid(), cpus=driver_cpus)
    sampler = Sampler(spec)
    sampler.start()          # returns after the first sample
    ...                      # drive the workload
    summary = sampler.stop() # final sample, atomic write, summary dict

Why a separate process: sampling must not compete with the driver's event loop for the GIL
(late samples, delayed transactions), its CPU cost must be measurable on its own
(`monitor.cpu_*`), and it must survive -- and then notice -- the driver's death.

The protocol: the spec goes to the monitor pickled, length-prefixed, on its control pipe; then
text commands, one a line (`add PID...`; `sample`, answered `sampled`; `edge`, a sample at a
window's edge, unanswered; `stop`). The monitor answers on its report pipe with
JSON lines: `ready` (with the sources' status) after its first sample; asked to stop, `final`
after its last sample and then `rows` (the size of a pickled samples_file.SampleRows that follows
the line), which the sampler writes as samples.parquet -- the driver has pyarrow loaded, the
monitor would spend ~0.35 CPU-s importing it; a monitor that ends otherwise writes the file
itself and answers `stopped` (with the summary); or `error`.
"""

from __future__ import annotations

import json
import os
import pickle
import select
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .samples_file import SampleRows, write_samples

MACHINE_SOURCES = ("proc_stat", "vmstat", "diskstats", "netdev")


class MonitorError(RuntimeError):
    """The monitor process could not start or stopped unexpectedly."""


@dataclass
class MonitorSpec:
    """Everything the monitor process needs; picklable (it is sent to that process)."""

    out_path: str | os.PathLike
    t0_monotonic: float = field(default_factory=time.monotonic)
    interval_s: float = 1.0
    sut_pids: list[int] = field(default_factory=list)
    sut_cgroup: str | dict[str, str] | None = None  # SutCgroup.path_for_monitor
    components: dict[str, str] = field(default_factory=dict)  # component -> regex (v.*)
    driver_pid: int | None = None
    counters: Any = None  # a CounterSpec (e.g. SharedCounters or its handle), or None
    machine_sources: tuple[str, ...] = MACHINE_SOURCES  # () turns the h.* sources off
    cpus: list[int] | None = None  # pin the monitor here: the driver's CPUs, not the SUT's
    perf_counters: bool = True  # try i.* (perf_event)
    pss_refresh_s: float = 5.0  # PSS is re-read at most this often (see ProcessTreeSource)
    remote: Any = None  # a sources.remote.RemoteSpec: the SUT host's monitor (docs/distributed.md)

    def __post_init__(self) -> None:
        if not self.interval_s > 0:
            raise ValueError("interval_s must be > 0")
        unknown = set(self.machine_sources) - set(MACHINE_SOURCES)
        if unknown:
            raise ValueError(f"unknown machine sources {sorted(unknown)}; known: {MACHINE_SOURCES}")


class Sampler:
    """Starts, feeds and stops the monitor process."""

    def __init__(self, spec: MonitorSpec) -> None:
        self.spec = spec
        self._proc: subprocess.Popen | None = None
        self._ctl: int | None = None
        self._rep: int | None = None
        self._buf = b""
        self._pending: list[dict] = []  # reports read while waiting for something else
        self.sources: dict[str, dict] = {}
        self.summary: dict | None = None
        self._stopping = False  # "stop" sent (end_sampling or stop)

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def start(self, timeout_s: float = 60.0) -> None:
        """Spawn the monitor; returns once it has taken its first sample."""
        if self._proc is not None:
            raise MonitorError("sampler already started")
        ctl_r, ctl_w = os.pipe()
        rep_r, rep_w = os.pipe()
        package_parent = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH")) if p)
        code = "from perflab.monitor.monitor_process import main; main()"
        self._proc = subprocess.Popen(
            [sys.executable, "-c", code, str(ctl_r), str(rep_w)],
            pass_fds=(ctl_r, rep_w),
            stdin=subprocess.DEVNULL,
            env=env,
        )
        os.close(ctl_r)
        os.close(rep_w)
        self._ctl, self._rep = ctl_w, rep_r
        payload = pickle.dumps(self.spec)
        self._send(struct.pack("<Q", len(payload)) + payload)
        msg = self._receive(timeout_s)
        if msg is None or msg.get("event") != "ready":
            self._kill()
            raise MonitorError(f"monitor did not start: {msg.get('message') if msg else 'no answer'}")
        self.sources = msg["sources"]

    def add_sut_pids(self, pids: Iterable[int]) -> None:
        """Tell the monitor about SUT processes started after start() (not children of known ones)."""
        pids = [int(p) for p in pids]
        if pids:
            self._send(("add " + " ".join(map(str, pids)) + "\n").encode())

    def end_sampling(self, timeout_s: float = 30.0) -> None:
        """Have the monitor take its final sample and wait until it has: the driver may stop the
        SUT once this returns and store its own rows; `stop` then takes the monitor's rows and
        writes samples.parquet. A monitor that is gone or does not answer is left to `stop`,
        which reports it."""
        if self._proc is None or self.summary is not None or self._stopping:
            return
        if not self._request_stop():
            return
        msg = self._receive(timeout_s)
        while msg is not None and msg.get("event") == "sampled":  # a late answer to sample_now
            msg = self._receive(timeout_s)
        if msg is not None and msg.get("event") != "final":
            self._pending.append(msg)  # an error, or the summary itself: `stop` reads it

    def _request_stop(self) -> bool:
        """Send "stop", once (end_sampling or stop); False when the monitor is already gone."""
        self._stopping = True
        try:
            self._send(b"stop\n")
        except MonitorError:
            return False
        return True

    def stop(self, timeout_s: float = 120.0) -> dict:
        """Final sample, write samples.parquet atomically, and return the monitor's summary."""
        if self._proc is None:
            raise MonitorError("sampler not started")
        if self.summary is not None:
            return self.summary
        if not self._stopping:
            self._request_stop()  # gone already: its last report (if any) is still in the pipe
        msg = self._pending.pop(0) if self._pending else self._receive(timeout_s)
        # a late answer to sample_now, or the final sample's notice
        while msg is not None and msg.get("event") in ("sampled", "final"):
            msg = self._receive(timeout_s)
        rows: SampleRows | None = None
        if msg is not None and msg.get("event") == "rows":
            rows = self._receive_rows(int(msg["size"]), timeout_s)
        if rows is not None:
            # Written here, then `written` tells the monitor it may exit.
            started = time.thread_time()
            try:
                write_samples(Path(self.spec.out_path), rows.columns, rows.rows, rows.meta)
            except OSError:
                # (a full disk): the monitor still holds the rows; a closed control pipe makes
                # it write them itself and report how that went.
                self._close_control()
                msg = self._receive(timeout_s)
            else:
                self._send(b"written\n")
                self.summary = dict(rows.summary, monitor_write_cpu_s=0.0,
                                    driver_write_cpu_s=round(time.thread_time() - started, 4))
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._kill()
        self._close_control()
        os.close(self._pipes()[1])
        if self.summary is not None:
            return self.summary
        if msg is None or msg.get("event") != "stopped":
            raise MonitorError(
                f"monitor ended without a summary (exit code {self._proc.returncode}): "
                f"{msg.get('message') if msg else 'no answer'}"
            )
        self.summary = msg["summary"]
        return self.summary

    def sample_now(self, timeout_s: float = 5.0) -> float | None:
        """Have the monitor take a sample now, off its grid, and wait until it has; its time in
        seconds since t0, or None (no monitor, or no answer). A job stream's window runs from one
        such sample to another, so no counter in it is interpolated."""
        if self._proc is None or self.summary is not None or self._stopping:
            return None
        try:
            self._send(b"sample\n")
        except MonitorError:
            return None  # a monitor that is gone is reported when it is stopped
        msg = self._receive(timeout_s)
        if msg is not None and msg.get("event") == "sampled":
            return float(msg["t"])
        if msg is not None:
            self._pending.append(msg)  # an error or an early stop: stop() reports it
        return None

    def sample_edge(self) -> None:
        """Have the monitor take a sample now, off its grid, without waiting or an answer: a
        window's edge, where the reduction then reads the counters instead of interpolating
        them between grid samples. The driver's event loop is never held up by it."""
        if self._proc is None or self.summary is not None or self._stopping:
            return
        try:
            self._send(b"edge\n")
        except MonitorError:
            pass  # a monitor that is gone is reported when it is stopped

    def __enter__(self) -> Sampler:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._proc is not None and self.summary is None:
            self.stop()

    def _close_control(self) -> None:
        """Close the control pipe (once): the monitor reads its end of file."""
        if self._ctl is not None and self._ctl >= 0:
            os.close(self._ctl)
            self._ctl = -1  # closed; _send then fails as for a monitor that is gone

    def _pipes(self) -> tuple[int, int]:
        """The control and report pipes, open from start() on."""
        if self._ctl is None or self._rep is None:
            raise MonitorError("sampler not started")
        return self._ctl, self._rep

    def _send(self, data: bytes) -> None:
        try:
            os.write(self._pipes()[0], data)
        except (BrokenPipeError, OSError) as e:
            raise MonitorError(f"monitor process is gone: {e}") from e

    def _fill(self, enough: Callable[[], bool], timeout_s: float) -> bool:
        """Read the report pipe into the buffer until `enough()`; False on timeout or its end."""
        deadline = time.monotonic() + timeout_s
        rep = self._pipes()[1]
        while not enough():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            ready, _, _ = select.select([rep], [], [], left)
            if ready:
                chunk = os.read(rep, 1 << 20)
                if not chunk:
                    return False
                self._buf += chunk
        return True

    def _receive(self, timeout_s: float) -> dict | None:
        if not self._fill(lambda: b"\n" in self._buf, timeout_s):
            return None
        line, _, self._buf = self._buf.partition(b"\n")
        return json.loads(line)

    def _receive_rows(self, size: int, timeout_s: float) -> SampleRows | None:
        """The pickled rows that follow a `rows` line; None if the monitor died sending them."""
        if not self._fill(lambda: len(self._buf) >= size, timeout_s):
            return None
        payload, self._buf = self._buf[:size], self._buf[size:]
        rows = pickle.loads(payload)
        return rows if isinstance(rows, SampleRows) else None

    def _kill(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()


"""What every run does whatever its SUT: the run record, the SUT's cgroup, the monitor, the
event loop with its signal handlers, and the ending written to the store.

Both run paths -- SUT worker processes (`local_run`) and a server driven over the network
(`server_run`) -- import this module; it imports neither. The run record is built here and only
here (`RunLifecycle.open`), then completed as the run goes and written atomically at the end.

Whatever ends a run -- the window closing, Ctrl-C or SIGTERM (status `interrupted`), the SUT
failing (status `failed`, with the reason) -- what was recorded so far is written. A SIGKILL
leaves run.json at `running` with the driver's pid, which the catalog reports as `abandoned`.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from perflab import __version__, caveats, limits
from perflab.drive.live import LiveWriter
from perflab.drive.load.deadline import deadlines_of
from perflab.drive.load.engine import Engine
from perflab.drive.plan import RunPlan
from perflab.drive.remote.sut_host import account, redacted
from perflab.errors import StorageError, SutFailure, storage_reason
from perflab.monitor.sampler import MonitorSpec, Sampler
from perflab.records.run import (
    Clock,
    DriverRecord,
    MonitorRecord,
    RunConfig,
    RunRecord,
    RunStatus,
    SutRecord,
    WindowRecord,
)
from perflab.store.active import ActiveRuns
from perflab.store.atomic import write_atomic, write_json_atomic
from perflab.store.catalog import CatalogError, Store, new_run_id
from perflab.sut.cgroup import SutCgroup, remove_stale
from perflab.sut.fingerprint import machine_fingerprint


class RunObserver(Protocol):
    """Who watches a run: the terminal's progress line, the live file of `perflab serve`."""

    def started(self, run_id: str, run_dir: Path) -> None: ...

    def tick(self, engine: Engine, elapsed: float) -> None: ...


@dataclass
class RunResult:
    run_id: str
    run_dir: Path
    status: str
    reason: str | None
    valid: bool
    transactions: int
    record: RunRecord | None = None


@dataclass
class Ending:
    """How a run ended -- complete, failed or interrupted -- and why (run.json status, reason)."""

    status: RunStatus = "failed"
    reason: str | None = None


class Terminated(BaseException):
    """SIGTERM outside the event loop (while the SUT is set up): ends the run as Ctrl-C does.
    A BaseException, like KeyboardInterrupt, so no `except Exception` swallows it."""


@contextmanager
def recording_ending(ending: Ending):
    """Record what ended a run in `ending`. A SUT failure and Ctrl-C end the run normally (it is
    stored, marked failed or interrupted); any other exception is a bug: recorded as the
    reason, then raised, after the caller's `finally` has stored the run."""
    try:
        yield ending
    except SutFailure as exc:
        ending.status, ending.reason = "failed", str(exc)
    except KeyboardInterrupt:
        ending.status, ending.reason = "interrupted", "interrupted by SIGINT (Ctrl-C)"
    except Terminated:
        ending.status, ending.reason = "interrupted", "interrupted by SIGTERM"
    except Exception as exc:
        ending.status, ending.reason = "failed", f"{type(exc).__name__}: {exc}"
        raise


def recorded_table(life: RunLifecycle, recorder: Any) -> pa.Table | None:
    """The recorder's table, or None with the run marked failed when its spilled rows cannot be
    read back (the spill files are then kept beside the record: the caller removes them only
    once transactions.parquet exists)."""
    if recorder is None:
        return None
    try:
        return recorder.table()
    except Exception as exc:  # noqa: BLE001 - the run is stored, failed, with the reason
        life.ending.status = "failed"
        life.ending.reason = (f"the recorded transactions could not be read back ({type(exc).__name__}: {exc}); "
                              f"the spill files are kept in the run directory")
        return None


#: Space taken in every run directory while the run goes (`RunLifecycle._reserve`): enough for
#: its final run.json and catalog row on a disk that has filled meanwhile.
RESERVE_NAME = ".reserve"
RESERVE_BYTES = 256 * 1024
#: How long a duet's run waits for its partner to be ready (its SUT set up: a database loaded).
DUET_START_TIMEOUT_S = 600.0


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def run_fingerprint(plan: RunPlan, machine: dict[str, Any]) -> dict[str, Any]:
    """A run's fingerprint: the machine's (perflab.sut.fingerprint), perflab's version and the
    run's placement."""
    info = dict(machine)
    info.setdefault("python", sys.version.split()[0])
    info["perflab"] = __version__
    info["placement"] = plan.placement.describe()
    return info


def opening_record(plan: RunPlan, run_id: str, fingerprint: dict[str, Any]) -> RunRecord:
    """run.json as a run opens (status `running`): the plan resolved into RunConfig, the
    workload as written (passwords redacted), the fingerprint, the driver's pid. The one builder
    of a run record: a run's lifecycle writes it at the start and fills in the rest as the run
    goes; the model driver (perflab.drive.model_driver) starts from it too."""
    position, placement, phases = plan.position, plan.placement, plan.phases
    return RunRecord(
        run_id=run_id, label=plan.label, study=position.study, workload_path=str(plan.workload_path),
        workload=redacted(plan.workload.model_dump(mode="json", by_alias=True)),
        config=RunConfig(
            users=plan.users, rate=plan.rate, seed=plan.seed, workers=plan.workers,
            processors=len(placement.sut_cpus), sut_cpus=placement.sut_cpus,
            driver_cpus=placement.driver_cpus, shared_cpus=placement.shared,
            jobs=plan.jobs, initiators=plan.initiators,
            real_storage_bytes=plan.memory_limit,
            driver_memory_bytes=limits.driver_memory_bytes(plan.users) if plan.users else None,
            stagger_s=phases.stagger, stabilization_s=phases.stabilization, measurement_s=phases.measurement,
            block=position.block, order=position.order, purpose=position.purpose,
            configuration=position.configuration, duet=plan.duet.key if plan.duet is not None else None,
            arrangement=plan.duet.arrangement if plan.duet is not None else None),
        fingerprint=fingerprint, pid=os.getpid(), created=now_iso())


class RunLifecycle:
    """One run's record and the resources every run holds, released whatever happens."""

    def __init__(self, plan: RunPlan, store: Store, observer: RunObserver | None = None):
        self.plan = plan
        self.store = store
        self.observer = observer
        self._record: RunRecord | None = None
        self._run_dir: Path | None = None
        self.cgroup: SutCgroup | None = None
        self.sampler: Sampler | None = None
        self.ending = Ending()
        self._affinity = os.sched_getaffinity(0)
        self.closing = False  # the run is being stored: a SIGTERM waits (sigterm_ends_the_run)
        self._opening = False  # ... or opened
        self._pending_term: int = 0  # a signal that came while the run was opened or stored
        self.active = ActiveRuns(store.home)
        self._concurrent: dict[str, Any] = {}
        self._on_term: Callable[[int, Any], None] | None = None
        self._cgroup_note: str | None = None

    @property
    def record(self) -> RunRecord:
        """The run's record: made by `open`, which every run path calls before anything else."""
        if self._record is None:
            raise RuntimeError("the run's record is read before RunLifecycle.open made it")
        return self._record

    @property
    def run_dir(self) -> Path:
        """The run's directory: made by `open`, as the record is."""
        if self._run_dir is None:
            raise RuntimeError("the run's directory is read before RunLifecycle.open made it")
        return self._run_dir

    # -- signals ------------------------------------------------------------------------------

    @contextmanager
    def sigterm_ends_the_run(self):
        """From the run's opening to its storing, SIGTERM ends the run as Ctrl-C does (status
        interrupted, the run stored) instead of killing perflab with the run left `running`.
        While the event loop drives, its own handlers interrupt the engine (`drive`); while the
        run is being opened (run.json and its catalog row written) or stored (`closing`), SIGTERM
        and Ctrl-C wait: until the run is stored, or until `raise_if_terminated` ends it."""
        import threading

        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}

        def on_signal(signum, frame):
            if self.closing or self._opening:
                self._pending_term = self._pending_term or signum
                return
            raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()

        self._on_term = on_signal
        for sig in previous:
            signal.signal(sig, on_signal)
        try:
            yield
        finally:
            self._on_term = None
            for sig, handler in previous.items():
                signal.signal(sig, handler if handler is not None else signal.SIG_DFL)

    def raise_if_terminated(self) -> None:
        """End the run now (as interrupted) if a SIGTERM or Ctrl-C came while it was being opened."""
        self._opening = False
        if self._pending_term and not self.closing:
            signum, self._pending_term = self._pending_term, False
            raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()

    # -- the record ---------------------------------------------------------------------------

    def open(self) -> RunRecord:
        """Create the run directory and its run.json (status `running`), and index it. A store
        that cannot take the run (a full disk) is one clear error, and no run is left behind."""
        plan = self.plan
        run_id = new_run_id(plan.workload.name)
        try:
            self._run_dir = self.store.create_run_dir(run_id)
        except OSError as exc:
            raise StorageError(f"cannot create the run's directory: {storage_reason(exc)}",
                               file=self.store.run_dir(run_id)) from None
        # From here until the run path takes over (raise_if_terminated), a SIGTERM waits: run.json
        # and its catalog row are written whole, then the run ends interrupted.
        self._opening = True
        try:
            self._reserve()
            return self._open(plan, run_id)
        except (OSError, CatalogError) as exc:
            self._opening = False
            import shutil

            shutil.rmtree(self.run_dir, ignore_errors=True)  # nothing stored claims to be running
            if isinstance(exc, CatalogError):
                raise
            raise StorageError(f"cannot store the run: {storage_reason(exc)}", file=self.run_dir) from None
        except BaseException:
            self._opening = False
            raise

    def _reserve(self) -> None:
        """Space kept for the run's last record: a disk that fills during the run still lets it
        be marked failed with the reason (the reserve is freed first, see `finish`)."""
        fd = os.open(self.run_dir / RESERVE_NAME, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.posix_fallocate(fd, 0, RESERVE_BYTES)
        finally:
            os.close(fd)

    def _release_reserve(self) -> None:
        (self.run_dir / RESERVE_NAME).unlink(missing_ok=True)

    def _open(self, plan: RunPlan, run_id: str) -> RunRecord:
        record = self._record = opening_record(plan, run_id, run_fingerprint(plan, machine_fingerprint()))
        self.save()
        self.store.index(record)
        self._concurrent = {r.run_id: r for r in self.active.register(run_id, self._cpus(), self._duet_key)}
        if self.observer is not None:
            self.observer.started(run_id, self.run_dir)
            memory = record.config.driver_memory_bytes
            say = getattr(self.observer, "memory_needed", None)  # the terminal's progress says it
            if memory is not None and plan.users and say is not None:
                say(plan.users, memory)
        return record

    def _cpus(self) -> list[int]:
        placement = self.plan.placement
        return sorted(set(placement.driver_cpus) | set(placement.sut_cpus))

    def save(self) -> None:
        write_json_atomic(self.run_dir / "run.json", self.record.dump())

    # -- resources ----------------------------------------------------------------------------

    def make_cgroup(self, pids: list[int]) -> None:
        """Put the SUT in a cgroup of its own: exact CPU accounting (exited children included) and,
        when asked, a memory limit. Without one, SUT CPU comes from the process tree (noted).
        First the cgroups SIGKILLed runs left behind are removed (sut.cgroup.remove_stale)."""
        plan = self.plan
        remove_stale(self.store.run_is_live)
        cgroup, reason = SutCgroup.try_create(self.record.run_id, cpus=plan.placement.sut_cpus,
                                              memory_limit_bytes=plan.memory_limit)
        if cgroup is None:
            if plan.memory_limit is not None:
                raise SutFailure(f"a memory limit needs a cgroup, and none could be made: {reason}")
            self._cgroup_note = f"no SUT cgroup ({reason}): SUT CPU from the process tree"
            return
        for pid in pids:
            cgroup.add_pid(pid)
        self.cgroup = cgroup
        self._cgroup_note = None

    def add_sut_pid(self, pid: int) -> None:
        """A SUT worker started during the run (in place of one killed past its deadline): into
        the SUT's cgroup and its record. Never raises: the run goes on without it accounted."""
        try:
            if self.cgroup is not None:
                self.cgroup.add_pid(pid)
            if self.record.sut is not None:
                self.record.sut.pids.append(pid)
        except Exception:
            pass

    def describe_sut(self, **fields: Any) -> SutRecord:
        """The SUT record: its processes, counters, components and cgroup."""
        sut = self.record.sut = SutRecord(cgroup=self.cgroup.path_for_monitor if self.cgroup is not None else None,
                                    cgroup_note=self._cgroup_note,
                                    memory_limit=self.plan.memory_limit, **fields)
        return sut

    def pin_driver(self) -> None:
        """The driver is pinned for this run only: a study runs many runs in one process, and each
        must resolve its placement from the CPUs the process was given, not the previous pin."""
        os.sched_setaffinity(0, self.plan.placement.driver_cpus)

    @property
    def _duet_key(self) -> str | None:
        return self.plan.duet.key if self.plan.duet is not None else None

    def synchronized_t0(self) -> float:
        """The moment the run's clock starts: now, or -- in a duet -- when its partner is ready
        too (both have set up their SUTs), so the two runs' phases and windows coincide."""
        duet = self.plan.duet
        if duet is not None:
            import threading

            try:
                duet.barrier.wait(timeout=DUET_START_TIMEOUT_S)
            except threading.BrokenBarrierError:
                raise SutFailure(f"the duet's other run was not ready to start within {DUET_START_TIMEOUT_S:g} s "
                                 f"(it failed while setting up, or took too long)") from None
        return time.monotonic()

    def start_clock(self, t0: float, t0_epoch: float) -> None:
        self.record.clock = Clock(t0_monotonic=t0, t0_epoch=t0_epoch)

    def _started_clock(self) -> float:
        if self.record.clock is None:
            raise RuntimeError("the monitor is started before the run's clock (RunLifecycle.start_clock)")
        return self.record.clock.t0_monotonic

    def start_monitor(self, pids: list[int], counters: Any = None, components: dict[str, str] | None = None,
                      driver_pid: int | None = -1) -> None:
        """The monitors (H, S, V, I, SUT counters) in a process of their own. `driver_pid` None:
        an external tool drives, whose CPU is accounted from its rusage instead."""
        plan = self.plan
        interval = plan.workload.monitor_interval
        if not plan.monitor:
            self.record.monitor = MonitorRecord(interval_s=interval, note="monitor disabled (--no-monitor)")
            return
        spec = MonitorSpec(
            interval_s=interval, t0_monotonic=self._started_clock(),
            out_path=self.run_dir / "samples.parquet", sut_pids=pids,
            sut_cgroup=self.cgroup.path_for_monitor if self.cgroup is not None else None,
            components=components or {}, driver_pid=os.getpid() if driver_pid == -1 else driver_pid,
            cpus=plan.placement.driver_cpus, counters=counters, remote=plan.remote,
            # The SUT's host is measured there: this host's /proc/stat is not the SUT's (H).
            machine_sources=() if plan.remote is not None else MonitorSpec.machine_sources)
        self.sampler = Sampler(spec)
        # Before the start: a monitor that fails to start is stopped by `release`, which notes
        # the error in this record.
        self.record.monitor = MonitorRecord(interval_s=interval)
        self.sampler.start()
        remote = self.sampler.sources.get("remote")
        if plan.remote is not None and not (remote or {}).get("available"):
            raise SutFailure(f"the SUT host's monitor ({plan.remote.describe()}) could not be read when the run "
                             f"started: {(remote or {}).get('reason')}")

    def end_sampling(self) -> None:
        """The monitor's final sample, now (Sampler.end_sampling): from here on the SUT may stop
        and the driver store its rows; `stop_monitor` then takes the monitor's rows and writes
        samples.parquet. A monitor problem is left to `stop_monitor`, which notes it."""
        if self.sampler is not None:
            self.sampler.end_sampling()

    def stop_monitor(self) -> None:
        """Stop the monitors and keep their summary; a monitor problem must not lose the transactions."""
        if self.sampler is None:
            return
        sampler, self.sampler = self.sampler, None
        monitor = self.record.monitor
        assert monitor is not None  # made by start_monitor before the sampler started
        try:
            summary = sampler.stop() or {}
            self.record.monitor = MonitorRecord.model_validate({**monitor.model_dump(), **summary})
        except Exception as exc:
            monitor.error = f"{type(exc).__name__}: {exc}"
            return
        sut = self.record.sut
        remote = (summary.get("sources") or {}).get("remote")
        if sut is not None and sut.host is not None and remote:
            sut.host = account(sut.host, remote)

    def release(self) -> None:
        """Monitor, cgroup and the driver's CPU affinity back as they were (idempotent)."""
        self.stop_monitor()
        if self.cgroup is not None:
            self.cgroup.remove()
            self.cgroup = None
        os.sched_setaffinity(0, self._affinity)

    def live_writer(self) -> LiveWriter:
        """live.json for `perflab serve`: every run shows while it runs, however it was started."""
        sut = self.record.sut
        return LiveWriter(self.run_dir, self.record.run_id, sut.cgroup if sut is not None else None,
                          sut.pids if sut is not None else (), len(self.plan.placement.sut_cpus))

    # -- the event loop -----------------------------------------------------------------------

    def drive(self, engine: Engine, before: Callable[[], Awaitable[None]] | None = None,
              after: Callable[[], Awaitable[None]] | None = None,
              failure: Callable[[], str | None] | None = None, watch_interval_s: float = 0.1):
        """Run the engine on uvloop; Ctrl-C and SIGTERM interrupt it (the run is kept). `failure`,
        polled while the engine runs, fails the run at once with the SUT's reason (a server that
        exited), even while every user thinks."""
        import uvloop

        if hasattr(engine, "on_mark") and self.sampler is not None:
            engine.on_mark = self.sampler.sample_now  # a job stream: samples at its start and end
        if hasattr(engine, "on_window_edge") and self.sampler is not None:
            engine.on_window_edge = self.sampler.sample_edge  # users: samples at the window's edges
        live = self.live_writer()
        ticks = [t for t in (self.observer.tick if self.observer is not None else None, live.tick) if t is not None]

        def tick(engine_: Engine, elapsed: float) -> None:
            for each in ticks:
                each(engine_, elapsed)

        async def watch(failure: Callable[[], str | None]) -> None:
            while True:
                await asyncio.sleep(watch_interval_s)
                reason = failure()
                if reason:
                    engine.fail(reason)
                    return

        async def main():
            loop = asyncio.get_running_loop()
            if before is not None:
                await before()
            watcher = asyncio.ensure_future(watch(failure)) if failure is not None else None
            for sig, name in ((signal.SIGINT, "SIGINT (Ctrl-C)"), (signal.SIGTERM, "SIGTERM")):
                loop.add_signal_handler(sig, engine.interrupt, f"interrupted by {name}")
            try:
                return await engine.run(on_tick=tick)
            finally:
                for sig in (signal.SIGINT, signal.SIGTERM):
                    loop.remove_signal_handler(sig)
                if self._on_term is not None:  # removing the loop's handlers reset SIGTERM's and SIGINT's
                    for sig in (signal.SIGINT, signal.SIGTERM):
                        signal.signal(sig, self._on_term)
                if watcher is not None:
                    watcher.cancel()
                if after is not None:
                    await after()

        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            return runner.run(main())

    # -- the ending ---------------------------------------------------------------------------

    def finish(self, table: pa.Table | None, engine: Engine | None = None,
               window: tuple[float, float] | None = None) -> RunResult:
        """Write the transactions and the final record, index the run. `table`: the transactions
        (the recorder's, or imported from an external driver's log); `window`: the measured span
        when an external driver decides it (pgbench's measured run)."""
        record, phases, ending = self.record, self.plan.phases, self.ending
        self.closing = True
        if self.plan.duet is not None:
            self.plan.duet.barrier.abort()  # a partner still waiting to start learns that this run ended
        engine_window = getattr(engine, "window", None)  # a job stream's (drive/load/batch.py)
        if window is None and engine_window is not None:
            window = engine_window  # a job stream's window is the stream itself
        try:
            if table is not None:
                transactions = table
                write_atomic(self.run_dir / "transactions.parquet", lambda tmp: pq.write_table(transactions, tmp))
            if engine is not None and table is not None:
                thinks = engine.recorder.thinks_table()
                write_atomic(self.run_dir / "thinks.parquet", lambda tmp: pq.write_table(thinks, tmp))
        except OSError as exc:  # a full disk: the run fails with the reason, its record is still written
            table = None
            ending.status, ending.reason = "failed", f"the run could not be stored: {storage_reason(exc)}"
        self._release_reserve()
        end = phases.window_end
        if ending.status != "complete":
            # A run cut short measures only up to its last completed transaction.
            end = min(end, max(phases.window_start, _last_end(table)))
        record.window = WindowRecord(start=phases.window_start, end=end, planned_end=phases.window_end)
        if window is not None:
            record.window = WindowRecord(start=window[0], end=window[1],
                                         planned_end=None if self.plan.batch else window[0] + phases.measurement)
        invalid: list[caveats.Caveat] = []
        if engine is not None and engine.outcome.window_wall_s == engine.outcome.window_wall_s:
            wall = engine.outcome.window_wall_s
            cpu = engine.outcome.driver_cpu_window_s
            util = 100.0 * cpu / wall if wall > 0 else float("nan")
            saturated = util >= caveats.DRIVER_SATURATION_PCT
            recorder = engine.recorder
            record.driver = DriverRecord(pid=os.getpid(), cpu_s=cpu, window_wall_s=wall, util_pct=util,
                                         saturated=saturated, dropped=engine.outcome.dropped,
                                         spilled_bytes=getattr(recorder, "spilled_bytes", None) or None,
                                         spill_error=getattr(recorder, "spill_error", None),
                                         window_counts=engine.outcome.window_counts)
            if saturated:
                invalid.append(caveats.driver_saturated(util))
        elif record.drivers:
            # Several drivers (drive/remote/distributed.py): each gated on its own CPU.
            for d in record.drivers:
                if d.saturated:
                    invalid.append(caveats.driver_saturated(d.util_pct, f"driver {d.index} on {d.node}"))
                if d.lost:
                    invalid.append(caveats.driver_lost(d.index, d.node, d.lost))
            busiest = max(record.drivers, key=lambda d: -1.0 if d.util_pct is None else d.util_pct)
            record.driver = DriverRecord.model_validate(busiest.model_dump(include=set(DriverRecord.model_fields)))
        elif record.driver is not None and record.driver.saturated:
            # An external tool's CPU (its rusage over its run, pinned to the driver's CPU): the same
            # rule -- a k6 at 98% of its core set the pace as surely as perflab's own driver would.
            tool = (record.external or {}).get("tool", "the external driver")
            invalid.append(caveats.driver_saturated(record.driver.util_pct, tool))
        if engine is not None and engine.outcome.hung:
            invalid.append(caveats.hung_transactions(engine.outcome.hung, engine.outcome.deadline_s))
        elif any(d.hung for d in record.drivers):
            # Several drivers: their hung transactions together, under the workload's longest deadline.
            invalid.append(caveats.hung_transactions(sum(d.hung for d in record.drivers),
                                                     max(deadlines_of(self.plan.workload), default=None)))
        if ending.status != "complete":
            invalid.append(caveats.run_not_complete(ending.status, ending.reason))
        for other in self.active.withdraw(record.run_id, self._cpus(), self._duet_key):
            self._concurrent.setdefault(other.run_id, other)
        if self._concurrent:
            shared = sorted(set().union(*(o.cpus for o in self._concurrent.values())) & set(self._cpus()))
            invalid.append(caveats.concurrent_run(sorted(self._concurrent), shared))
        record.status, record.reason = ending.status, ending.reason
        record.valid, record.invalid, record.finished = not invalid, invalid, now_iso()
        try:
            self.save()
        except OSError as exc:
            raise StorageError(f"cannot store the run's record (it stays marked running): {storage_reason(exc)}",
                               file=self.run_dir / "run.json") from None
        self.store.index(record)
        return RunResult(record.run_id, self.run_dir, record.status, record.reason, bool(record.valid),
                         0 if table is None else table.num_rows, record)


def _last_end(table: pa.Table | None) -> float:
    if table is None or table.num_rows == 0:
        return 0.0
    value = pc.max(table.column("end")).as_py()
    return 0.0 if value is None else float(value)

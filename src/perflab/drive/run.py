"""One run, start to finish: the SUT started fresh, driven, measured, stored.

Order of events (the seeds' protocol): create the run directory and its run.json (status
`running`) and index it; prepare the SUT (fresh database...) and start its workers on the SUT's
CPUs; start the monitors; drive (stagger, stabilization, measurement window); stop the
monitors; write transactions.parquet and the final run.json atomically; update the catalog.

Whatever ends the run -- the window closing, Ctrl-C or SIGTERM (status `interrupted`), the
SUT failing (status `failed`, with the reason) -- what was recorded so far is written. A
SIGKILL leaves run.json at `running` with the driver's pid, which the catalog reports as
`abandoned`.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import platform
import signal
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pyarrow.parquet as pq

from perflab import __version__
from perflab.drive.adapters.base import adapter_class
from perflab.drive.engine import Engine, Phases
from perflab.drive.recorder import Recorder
from perflab.drive.workers import WorkerPool, WorkerSpec
from perflab.errors import SutFailure
from perflab.store.atomic import write_atomic, write_json_atomic
from perflab.store.catalog import Store, new_run_id
from perflab.sut.placement import Placement, resolve_placement
from perflab.workload.model import NETWORK_KINDS, Workload

DRIVER_SATURATION_PCT = 90.0
MAX_DEFAULT_WORKERS = 8


@dataclass
class RunRequest:
    workload: Workload
    workload_path: Path
    users: int | None = None
    rate: float | None = None
    duration: float | None = None
    stagger: float | None = None
    stabilization: float | None = None
    seed: int | None = None
    label: str | None = None
    study: str | None = None
    workers: int | None = None
    driver_cpus: list[int] | None = None
    sut_cpus: list[int] | None = None
    monitor: bool = True
    memory_limit: int | None = None  # bytes available to the SUT (cgroup): the seeds' storage-constrained runs
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class RunResult:
    run_id: str
    run_dir: Path
    status: str
    reason: str | None
    valid: bool
    transactions: int


@dataclass
class Ending:
    """How a run ended -- complete, failed or interrupted -- and why (run.json status, reason)."""

    status: str = "failed"
    reason: str | None = None


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
    except Exception as exc:
        ending.status, ending.reason = "failed", f"{type(exc).__name__}: {exc}"
        raise


def _now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def _fingerprint(placement: Placement) -> dict[str, Any]:
    try:
        from perflab.sut.fingerprint import machine_fingerprint

        info = machine_fingerprint()
    except ImportError:  # the fingerprint module is optional while the monitors land
        info = {"kernel": platform.release(), "cores": os.cpu_count()}
    info.setdefault("python", sys.version.split()[0])
    info["perflab"] = __version__
    info["placement"] = placement.describe()
    return info


def _sut_cgroup(run_id: str, placement: Placement, memory_limit: int | None, pids: list[int]):
    """Put the SUT's workers in a cgroup of their own: exact CPU accounting (exited children
    included) and, when asked, a memory limit. Returns (cgroup or None, note)."""
    try:
        from perflab.sut.cgroup import SutCgroup
    except ImportError as exc:
        cgroup, reason = None, str(exc)
    else:
        cgroup, reason = SutCgroup.try_create(run_id, cpus=placement.sut_cpus, memory_limit_bytes=memory_limit)
    if cgroup is None:
        if memory_limit is not None:
            raise SutFailure(f"a memory limit needs a cgroup, and none could be made: {reason}")
        return None, f"no SUT cgroup ({reason}): SUT CPU from the process tree"
    for pid in pids:
        cgroup.add_pid(pid)
    return cgroup, None


def _start_monitor(request: RunRequest, run_dir: Path, t0: float, pids: list[int], placement: Placement,
                   counter_spec: Any, cgroup: Any = None, components: dict[str, str] | None = None,
                   driver_pid: int | None = -1):
    """The monitors (H, S, V, I, SUT counters) in a process of their own, or None with why not."""
    if not request.monitor:
        return None, "monitor disabled (--no-monitor)"
    try:
        from perflab.monitor.sampler import MonitorSpec, Sampler
    except ImportError as exc:
        return None, f"monitor not available: {exc}"
    spec = MonitorSpec(
        interval_s=request.workload.monitor_interval,
        t0_monotonic=t0,
        out_path=run_dir / "samples.parquet",
        sut_pids=pids,
        sut_cgroup=cgroup.path_for_monitor if cgroup is not None else None,
        components=components or {},
        driver_pid=os.getpid() if driver_pid == -1 else driver_pid,
        cpus=placement.driver_cpus,
        counters=counter_spec,
    )
    sampler = Sampler(spec)
    sampler.start()
    return sampler, None


def stop_monitor(sampler, run: dict[str, Any]) -> None:
    """Stop the monitors and keep their summary; a monitor problem must not lose the transactions."""
    if sampler is None:
        return
    try:
        run["monitor"].update(sampler.stop() or {})
    except Exception as exc:
        run["monitor"]["error"] = f"{type(exc).__name__}: {exc}"


def _shared_counters(names: tuple[str, ...], slots: int):
    if not names:
        return None
    try:
        from perflab.monitor.sources.counters import SharedCounters
    except ImportError:
        return None
    return SharedCounters(list(names), slots)


def execute_run(request: RunRequest, store: Store, on_tick: Callable | None = None,
                on_started: Callable[[str, Path], None] | None = None) -> RunResult:
    workload = request.workload
    timing = workload.timing
    phases = Phases(
        stagger=timing.stagger if request.stagger is None else request.stagger,
        stabilization=timing.stabilization if request.stabilization is None else request.stabilization,
        measurement=timing.measurement if request.duration is None else request.duration,
    )
    placement = resolve_placement(request.driver_cpus or workload.placement.driver_cpus,
                                  request.sut_cpus or workload.placement.sut_cpus)
    users = request.users if request.users is not None else (None if request.rate is not None else getattr(workload.load, "users", None))
    rate = request.rate if request.rate is not None else (None if request.users is not None else getattr(workload.load, "rate", None))
    n_workers = request.workers or workload.placement.workers or min(users or MAX_DEFAULT_WORKERS, MAX_DEFAULT_WORKERS)
    seed = workload.seed if request.seed is None else request.seed

    run_id = new_run_id(workload.name)
    run_dir = store.create_run_dir(run_id)
    run: dict[str, Any] = {
        "run_id": run_id,
        "status": "running",
        "reason": None,
        "valid": None,
        "invalid_reasons": [],
        "label": request.label,
        "study": request.study,
        "workload_path": str(request.workload_path),
        "workload": workload.model_dump(mode="json", by_alias=True),
        "config": {
            "users": users, "rate": rate, "seed": seed, "workers": n_workers,
            "processors": len(placement.sut_cpus), "sut_cpus": placement.sut_cpus,
            "driver_cpus": placement.driver_cpus, "shared_cpus": placement.shared,
            "real_storage_bytes": request.memory_limit,
            "stagger_s": phases.stagger, "stabilization_s": phases.stabilization,
            "measurement_s": phases.measurement, **request.extra,
        },
        "fingerprint": _fingerprint(placement),
        "pid": os.getpid(),
        "created": _now_iso(),
    }
    write_json_atomic(run_dir / "run.json", run)
    store.index(run)
    if on_started is not None:
        on_started(run_id, run_dir)

    workload_dir = Path(request.workload_path).resolve().parent
    if workload.target.kind in NETWORK_KINDS:
        # The SUT is a server reached over the network: no worker pool (see network_run.py).
        from perflab.drive.network_run import execute_network_run

        return execute_network_run(request, store, run, run_dir, workload_dir, placement, phases, users, rate,
                                   seed, n_workers)
    cls = adapter_class(workload.target.kind)
    recorder = None
    pool = None
    sampler = None
    engine = None
    counters = None
    cgroup = None
    # The driver is pinned for the run only: a study runs many runs in one process, and each
    # must resolve its placement from the CPUs the process was given, not the previous run's pin.
    affinity = os.sched_getaffinity(0)
    ending = Ending()
    try:
        with recording_ending(ending):
            run["fingerprint"].update(cls.prepare(workload, workload_dir, run_dir))
            os.sched_setaffinity(0, placement.driver_cpus)
            counters = _shared_counters(cls.counter_names, n_workers)
            specs = [WorkerSpec(workload.model_dump(mode="json", by_alias=True), str(workload_dir), str(run_dir), i,
                                placement.sut_cpus, counters) for i in range(n_workers)]
            pool = WorkerPool(specs)
            cgroup, cgroup_note = _sut_cgroup(run_id, placement, request.memory_limit, pool.pids)
            run["sut"] = {"pids": pool.pids, "counters": list(cls.counter_names), "tx_counter": cls.tx_counter,
                          "cgroup": cgroup.path_for_monitor if cgroup is not None else None, "cgroup_note": cgroup_note,
                          "memory_limit": request.memory_limit}
            t0 = time.monotonic()
            run["clock"] = {"t0_monotonic": t0, "t0_epoch": time.time()}
            sampler, monitor_note = _start_monitor(request, run_dir, t0, pool.pids, placement,
                                                   counters.handle if counters is not None else None, cgroup)
            run["monitor"] = {"interval_s": workload.monitor_interval, "note": monitor_note}
            tx_names = [t.name for t in workload.transactions]
            recorder = Recorder([s.name for s in workload.scripts], tx_names, [], t0)
            engine = Engine(workload, pool, recorder, phases, t0, users=users, rate=rate, seed=seed)
            recorder.class_names = engine.class_names
            outcome = _drive(engine, pool)
            ending.status, ending.reason = outcome.status, outcome.reason
    finally:
        stop_monitor(sampler, run)
        if pool is not None:
            pool.close()
        if cgroup is not None:
            cgroup.remove()
        os.sched_setaffinity(0, affinity)
        if counters is not None:
            counters.close()
            counters.unlink()
        _finish(run, run_dir, store, recorder, engine, phases, ending.status, ending.reason)
    return RunResult(run_id, run_dir, run["status"], run["reason"], bool(run["valid"]), len(recorder or []))


def _drive(engine: Engine, pool: WorkerPool):
    import uvloop

    async def main():
        loop = asyncio.get_running_loop()
        pool.attach(loop)
        for sig, name in ((signal.SIGINT, "SIGINT (Ctrl-C)"), (signal.SIGTERM, "SIGTERM")):
            loop.add_signal_handler(sig, engine.interrupt, f"interrupted by {name}")
        try:
            return await engine.run(on_tick=_TICK)
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)
            pool.detach(loop)

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(main())


_TICK: Callable | None = None


def set_progress(callback: Callable | None) -> None:
    """The CLI's progress display, called from the event loop about twice a second."""
    global _TICK
    _TICK = callback


def _finish(run: dict, run_dir: Path, store: Store, recorder: Recorder | None, engine: Engine | None,
            phases: Phases, status: str, reason: str | None, table: Any = None,
            window: tuple[float, float] | None = None) -> None:
    """`table`: transactions imported from an external driver's log, instead of a recorder;
    `window`: the measured span when that driver decides it (pgbench's measured run)."""
    if recorder is not None:
        table = recorder.table()
    if table is not None:
        write_atomic(run_dir / "transactions.parquet", lambda tmp: pq.write_table(table, tmp))
    end = phases.window_end
    if status != "complete":
        # A run cut short measures only up to its last completed transaction.
        last = _last_end(recorder) if recorder is not None else _table_last_end(table)
        end = min(end, max(phases.window_start, last))
    run["window"] = {"start": phases.window_start, "end": end, "planned_end": phases.window_end}
    if window is not None:
        run["window"] = {"start": window[0], "end": window[1], "planned_end": window[0] + phases.measurement}
    invalid: list[str] = []
    if engine is not None and engine.outcome.window_wall_s == engine.outcome.window_wall_s:
        wall = engine.outcome.window_wall_s
        cpu = engine.outcome.driver_cpu_window_s
        util = 100.0 * cpu / wall if wall > 0 else float("nan")
        saturated = util >= DRIVER_SATURATION_PCT
        run["driver"] = {"pid": os.getpid(), "cpu_s": cpu, "window_wall_s": wall, "util_pct": util,
                         "saturated": saturated, "dropped": engine.outcome.dropped}
        if saturated:
            invalid.append(f"driver CPU {util:.0f}% of one core: run invalid (the driver, not the SUT, set the pace)")
    elif (run.get("driver") or {}).get("saturated"):
        # An external tool's CPU (its rusage over its run, pinned to the driver's CPU): the same
        # rule -- a k6 at 98% of its core set the pace as surely as perflab's own driver would.
        tool = (run.get("external") or {}).get("tool", "the external driver")
        invalid.append(f"driver CPU {run['driver']['util_pct']:.0f}% of one core ({tool}): run invalid (the driver, "
                       "not the SUT, set the pace)")
    if status != "complete":
        invalid.append(f"run {status}: {reason}")
    run.update(status=status, reason=reason, valid=not invalid, invalid_reasons=invalid, finished=_now_iso())
    write_json_atomic(run_dir / "run.json", run)
    store.index(run, etr_t=_etr_for_catalog(run_dir))


def _etr_for_catalog(run_dir: Path) -> float | None:
    """ETR (T) for `perflab runs`; the catalog is an index, so a reduction problem only leaves it blank."""
    try:
        from perflab.reduce.reduce import reduce_run

        return reduce_run(run_dir).values.get("etr_t")
    except Exception:
        return None


def _table_last_end(table: Any) -> float:
    if table is None or table.num_rows == 0:
        return 0.0
    import pyarrow.compute as pc

    value = pc.max(table.column("end")).as_py()
    return 0.0 if value is None else float(value)


def _last_end(recorder: Recorder | None) -> float:
    if recorder is None or not len(recorder):
        return 0.0
    return max(recorder.end)

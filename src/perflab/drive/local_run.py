"""A run whose SUT executes in perflab's own worker processes (sqlite, python, command targets).

Order of events (the seeds' protocol): prepare the SUT (a fresh database...), start its workers
on the SUT's CPUs inside the SUT cgroup, start the monitors, drive (stagger, stabilization,
measurement window), then hand the ending to the lifecycle, which stops the monitors and stores
the run.
"""

from __future__ import annotations

import os
import time

from perflab.drive.adapters.base import adapter_class, prepare_sut
from perflab.drive.lifecycle import RunLifecycle, RunResult, recorded_table, recording_ending
from perflab.drive.load.batch import engine_for, mixed_work
from perflab.drive.load.deadline import WORKER_ENFORCED_GRACE_S, deadlines_of
from perflab.drive.load.recorder import SPILL_FILE, Recorder
from perflab.drive.pathlength.count import PassInputs, count_pathlength
from perflab.drive.workers.pool import WorkerPool
from perflab.drive.workers.wire import WorkerSpec
from perflab.monitor.sources.counters import SharedCounters
from perflab.records.run import PathlengthRecord
from perflab.sut import isolation
from perflab.sut.releases import call_with_path, ensure_all, release_fingerprint, requirements_of
from perflab.workload.kinds import KINDS


def execute_local_run(life: RunLifecycle) -> RunResult:
    plan, record = life.plan, life.record
    workload = plan.workload
    cls = adapter_class(workload.target.kind)
    recorder = pool = engine = counters = None
    paths: list[str] = []
    try:
        with recording_ending(life.ending) as ending:
            life.raise_if_terminated()  # a SIGTERM while the run was opened
            releases = ensure_all(requirements_of(workload.target))
            paths = [str(r.path) for r in releases]
            if releases:
                record.fingerprint["sut_release"] = release_fingerprint(releases)
                record.fingerprint.update(call_with_path(paths, prepare_sut, workload.target.kind,
                                                         workload.model_dump(mode="json", by_alias=True),
                                                         str(plan.workload_dir), str(life.run_dir)))
            else:
                record.fingerprint.update(cls.prepare(workload, plan.workload_dir, life.run_dir))
            life.pin_driver()
            counter_names, tx_counter = cls.counters_for(workload)
            if counter_names:
                counters = SharedCounters(list(counter_names), plan.workers)
            specs = [WorkerSpec(workload.model_dump(mode="json", by_alias=True), str(plan.workload_dir),
                                str(life.run_dir), i, plan.placement.sut_cpus, counters, paths, os.getpid())
                     for i in range(plan.workers)]
            depth = workload.placement.depth
            if depth is None and mixed_work(workload):
                # A job holds its worker for its whole elapsed time: a request waiting in that
                # worker's pipe would wait for the job, and an online user's response would include
                # a job's elapsed time the SUT's CPU never imposed.
                depth = 1
            # A command's deadline is enforced in its worker (the command's process group is
            # killed there); the pool kills a worker that stops answering, and any other hung one.
            grace = WORKER_ENFORCED_GRACE_S if KINDS.of(workload.target).worker_deadline else 0.0
            pool = WorkerPool(specs, **({} if depth is None else {"depth": depth}), deadlines=deadlines_of(workload),
                              grace=grace, on_worker=life.add_sut_pid)
            life.make_cgroup(pool.pids)
            life.describe_sut(pids=pool.pids, counters=list(counter_names), tx_counter=tx_counter)
            t0 = life.synchronized_t0()
            life.start_clock(t0, time.time())
            life.start_monitor(pool.pids, counters.handle if counters is not None else None,
                               isolation.components(getattr(workload.target, "isolation", None)))
            recorder = Recorder([s.name for s in workload.scripts], [t.name for t in workload.transactions], [], t0,
                                spill_path=life.run_dir / SPILL_FILE)
            engine = engine_for(plan, pool, recorder, t0)
            recorder.class_names = engine.class_names

            async def attach() -> None:
                import asyncio

                pool.attach(asyncio.get_running_loop())

            async def detach() -> None:
                import asyncio

                pool.detach(asyncio.get_running_loop())

            outcome = life.drive(engine, before=attach, after=detach)
            ending.status, ending.reason = outcome.status, outcome.reason
    finally:
        life.closing = True  # a SIGTERM from here on waits until the run is stored
        # The final sample first, with the SUT still up; then the workers go, the rows are
        # gathered, and release writes the monitor's rows as samples.parquet.
        life.end_sampling()
        if pool is not None:
            pool.close()
        table = recorded_table(life, recorder)
        life.release()
        if counters is not None:
            counters.close()
            counters.unlink()
        if workload.pathlength is not None:
            _count_pathlength(life, paths)
        try:
            result = life.finish(table, engine)
        finally:
            if recorder is not None:
                recorder.close(remove=(life.run_dir / "transactions.parquet").exists())
    return result


def _count_pathlength(life: RunLifecycle, paths: list[str]) -> None:
    """The counted pass (drive/pathlength/), after the window has closed, the monitor has stopped
    and the timed workers are gone: nothing it does reaches the timed rows. A run that did not
    complete is not counted (its record says so)."""
    plan = life.plan
    if life.ending.status != "complete":
        life.record.pathlength = PathlengthRecord(status="skipped", reason=f"the run is {life.ending.status}")
        return
    life.record.pathlength = count_pathlength(PassInputs(plan.workload, plan.workload_dir, life.run_dir, plan.seed,
                                                         list(plan.placement.sut_cpus), paths))

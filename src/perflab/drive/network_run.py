"""One run against a server: started fresh, driven over the network, measured, stopped.

The branch of `execute_run` for network targets (postgres, http, tcp). Order of events:
the SUT cgroup; the server started in it on the SUT's CPUs (PostgreSQL: initdb, settings,
database, pgbench's tables or the workload's setup SQL; or the workload's `service`); the
monitor, told the server's pid, cgroup, components and own counters; the load -- perflab's
driver with a driver-side executor, or an external driver whose log is imported; then the
monitor stopped, the server stopped, the run written.

A server that exits during the run fails the run with the reason (exit status, last log
lines); what was recorded so far is kept.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path
from typing import Any

from perflab.drive.engine import Engine, Phases
from perflab.drive.recorder import Recorder
from perflab.drive.run import stop_monitor
from perflab.errors import SutFailure
from perflab.store.atomic import write_json_atomic
from perflab.store.catalog import Store
from perflab.sut.placement import Placement
from perflab.workload.model import PostgresTarget, Workload

WATCH_INTERVAL_S = 0.1


def start_sut(workload: Workload, workload_dir: Path, run_dir: Path, run_id: str, cpus: list[int],
              cgroup: Any, users: int | None):
    """The server perflab manages for this run (not started yet), or None for an external one."""
    from perflab.sut.postgres_server import PostgresServer
    from perflab.sut.service import Service

    target = workload.target
    if isinstance(target, PostgresTarget) and target.server is not None:
        return PostgresServer(target.server, target.database, run_dir, run_id, cpus, cgroup,
                              max_connections=max(100, (users or 0) + 20))
    if workload.service is not None:
        return Service(workload.service, workload_dir, run_dir, cpus, cgroup)
    return None


def prepare_postgres(workload: Workload, server: Any) -> tuple[str, dict[str, Any], Any]:
    """Load the database; -> (dsn, fingerprint facts, counter spec for the monitor)."""
    from perflab.monitor.sources.pg_counters import PgCounterSpec

    target = workload.target
    facts: dict[str, Any] = {}
    if server is not None:
        dsn = server.dsn
        if target.pgbench_init is not None:
            server.pgbench_init(target.pgbench_init.scale, target.pgbench_init.options)
    else:
        dsn = target.dsn
    facts.update(asyncio.run(_setup_sql(dsn, target.setup, server is None)))
    import urllib.parse

    parts = urllib.parse.urlsplit(dsn)
    spec = PgCounterSpec(parts.hostname or "127.0.0.1", parts.port or 5432, parts.username or "postgres",
                         (parts.path or "/").lstrip("/") or target.database) if target.counters else None
    return dsn, facts, spec


async def _setup_sql(dsn: str, statements: list[str], want_version: bool) -> dict[str, Any]:
    import asyncpg

    try:
        conn = await asyncpg.connect(dsn, timeout=30)
    except Exception as exc:
        raise SutFailure(f"cannot connect to PostgreSQL at {dsn}: {type(exc).__name__}: {exc}") from None
    try:
        for sql in statements:
            await conn.execute(sql)
        # A clean start: what setup dirtied is written out now, not during the window.
        await conn.execute("CHECKPOINT")
        return {"sut_version": await conn.fetchval("SELECT version()")} if want_version else {}
    except Exception as exc:
        raise SutFailure(f"setup SQL failed: {type(exc).__name__}: {exc}") from None
    finally:
        await conn.close()


def make_executor(workload: Workload, dsn: str | None, failure, pool_size: int):
    kind = workload.target.kind
    if kind == "postgres":
        from perflab.drive.adapters.postgres import PostgresExecutor

        return PostgresExecutor(workload, dsn, failure, pool_size)
    if kind == "http":
        from perflab.drive.adapters.http import HttpExecutor

        return HttpExecutor(workload, failure, pool_size)
    from perflab.drive.adapters.tcp import TcpExecutor

    return TcpExecutor(workload, failure, pool_size)


def execute_network_run(request, store: Store, run: dict, run_dir: Path, workload_dir: Path, placement: Placement,
                        phases: Phases, users: int | None, rate: float | None, seed: int, n_workers: int):
    from perflab.drive.run import Ending, RunResult, _finish, _start_monitor, _sut_cgroup, recording_ending

    workload = request.workload
    run_id = run["run_id"]
    server = sampler = recorder = engine = cgroup = None
    table = window = None
    affinity = os.sched_getaffinity(0)
    driver_kind = workload.driver.kind
    ending = Ending()
    try:
        with recording_ending(ending):
            cgroup, cgroup_note = _sut_cgroup(run_id, placement, request.memory_limit, [])
            server = start_sut(workload, workload_dir, run_dir, run_id, placement.sut_cpus, cgroup, users)
            failure = server.failure if server is not None else None
            if server is not None:
                run["fingerprint"].update(server.start())
            dsn, counter_spec = None, None
            if workload.target.kind == "postgres":
                dsn, facts, counter_spec = prepare_postgres(workload, server)
                run["fingerprint"].update(facts)
            run["fingerprint"]["adapter"] = workload.target.kind
            run["fingerprint"]["driver"] = driver_kind
            components = dict(server.components) if server is not None else {}
            pids = [server.pid] if server is not None else []
            run["sut"] = {"pids": pids, "service": type(server).__name__ if server else None,
                          "counters": ["xact_commit", "xact_rollback", "blks_read", "blks_hit"] if counter_spec else [],
                          "tx_counter": "xact_commit" if counter_spec else None, "components": components,
                          "cgroup": cgroup.path_for_monitor if cgroup is not None else None, "cgroup_note": cgroup_note,
                          "memory_limit": request.memory_limit}
            write_json_atomic(run_dir / "run.json", run)
            os.sched_setaffinity(0, placement.driver_cpus)
            t0 = time.monotonic()
            run["clock"] = {"t0_monotonic": t0, "t0_epoch": time.time()}
            # An external driver's CPU is accounted in run.json (the tool's rusage), not sampled.
            sampler, monitor_note = _start_monitor(request, run_dir, t0, pids, placement, counter_spec, cgroup,
                                                   components, driver_pid=-1 if driver_kind == "native" else None)
            run["monitor"] = {"interval_s": workload.monitor_interval, "note": monitor_note}
            if driver_kind == "native":
                recorder = Recorder([s.name for s in workload.scripts], [t.name for t in workload.transactions], [], t0)
                executor = make_executor(workload, dsn, failure, n_workers)
                engine = Engine(workload, executor, recorder, phases, t0, users=users, rate=rate, seed=seed)
                recorder.class_names = engine.class_names
                outcome = _drive(engine, executor, failure, users)
                ending.status, ending.reason = outcome.status, outcome.reason
            else:
                from perflab.drive.external import run_external

                t0_epoch = run["clock"]["t0_epoch"]
                result = run_external(workload, driver_kind, run_dir, workload_dir, phases, t0, t0_epoch, users, rate,
                                      seed, n_workers, placement.driver_cpus, dsn, failure)
                table, ending.status, ending.reason = result.table, result.status, result.reason
                run["driver"] = result.driver
                run["external"] = {"tool": driver_kind, **result.summary}
                window = result.window
    finally:
        stop_monitor(sampler, run)
        if server is not None:
            gone = server.failure()
            if gone and ending.status == "complete":
                ending.status, ending.reason = "failed", gone
            note = server.stop()
            if note:
                run.setdefault("sut", {})["stop_note"] = note
        if cgroup is not None:
            cgroup.remove()
        os.sched_setaffinity(0, affinity)
        _finish(run, run_dir, store, recorder, engine, phases, ending.status, ending.reason, table=table,
                window=window)
    n = len(recorder) if recorder is not None else (table.num_rows if table is not None else 0)
    return RunResult(run_id, run_dir, run["status"], run["reason"], bool(run["valid"]), n)


def _drive(engine: Engine, executor, failure, users: int | None):
    import uvloop

    from perflab.drive import run as run_module

    async def watch() -> None:
        # The server's exit fails the run at once, with its reason, even while users think.
        while True:
            await asyncio.sleep(WATCH_INTERVAL_S)
            reason = failure()
            if reason:
                engine.fail(reason)
                return

    async def main():
        loop = asyncio.get_running_loop()
        await executor.open(users)
        watcher = asyncio.ensure_future(watch()) if failure is not None else None
        for sig, name in ((signal.SIGINT, "SIGINT (Ctrl-C)"), (signal.SIGTERM, "SIGTERM")):
            loop.add_signal_handler(sig, engine.interrupt, f"interrupted by {name}")
        try:
            return await engine.run(on_tick=run_module._TICK)
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)
            if watcher is not None:
                watcher.cancel()
            await executor.close()

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(main())

"""A run against a server: started fresh, driven over the network, measured, stopped.

For network targets (postgres, http, tcp). Order of events: the SUT cgroup; the server started
in it on the SUT's CPUs (PostgreSQL: initdb, settings, database, pgbench's tables or the
workload's setup SQL; or the workload's `service`); the monitor, told the server's pid, cgroup,
components and own counters; the load -- perflab's driver with a driver-side executor, or an
external driver whose log is imported; then the monitor stopped, the server stopped, the run
written by the lifecycle.

A server that exits during the run fails the run with the reason (exit status, last log
lines); what was recorded so far is kept.
"""

from __future__ import annotations

import asyncio
import time
import urllib.parse
from typing import Any

from perflab.drive.adapters import registry
from perflab.drive.adapters.context import NetworkContext
from perflab.drive.lifecycle import RunLifecycle, RunResult, recorded_table, recording_ending
from perflab.drive.load.batch import engine_for
from perflab.drive.load.recorder import SPILL_FILE, Recorder
from perflab.drive.plan import RunPlan
from perflab.drive.remote.sut_host import host_record
from perflab.errors import SutFailure
from perflab.extras import require
from perflab.monitor.sources.pg_counters import PgCounterSpec
from perflab.monitor.sources.remote import HostInfo
from perflab.records.run import DriverRecord
from perflab.sut.postgres_server import PostgresServer
from perflab.sut.service import Service
from perflab.workload.kinds import KINDS
from perflab.workload.model import PostgresTarget, Workload

PG_COUNTERS = ["xact_commit", "xact_rollback", "blks_read", "blks_hit", "wal_records", "wal_fpi", "wal_bytes",
               "wal_write", "wal_sync", "wal_lsn"]


def manages_sut(plan: RunPlan) -> bool:
    """Whether perflab starts this run's server (and so can measure its processes here)."""
    target = plan.workload.target
    return plan.workload.service is not None or (isinstance(target, PostgresTarget) and target.server is not None)


def start_sut(plan: RunPlan, life: RunLifecycle) -> PostgresServer | Service | None:
    """The server perflab manages for this run (not started yet), or None for an external one."""
    workload = plan.workload
    target = workload.target
    if isinstance(target, PostgresTarget) and target.server is not None:
        return PostgresServer(target.server, target.database, life.run_dir, life.record.run_id,
                              plan.placement.sut_cpus, life.cgroup, max_connections=max(100, (plan.users or 0) + 20))
    if workload.service is not None:
        return Service(workload.service, plan.workload_dir, life.run_dir, plan.placement.sut_cpus, life.cgroup,
                       port=plan.service_port)
    return None


def load_key(target: PostgresTarget) -> dict[str, Any]:
    """What the run loads into the database: the key of a server's template (postgres_server.py)."""
    init = target.pgbench_init
    return {"pgbench": None if init is None else {"scale": init.scale, "options": list(init.options)},
            "setup": list(target.setup)}


def prepare_postgres(target: PostgresTarget, server: PostgresServer | None
                     ) -> tuple[str, dict[str, Any], PgCounterSpec | None]:
    """Load the database (unless the server started from a loaded template); -> (dsn,
    fingerprint facts, counter spec for the monitor)."""
    from perflab.monitor.sources.pg_counters import PgCounterSpec

    loaded = server is not None and getattr(server, "from_template", False)
    if server is not None:
        dsn = server.dsn
        if target.pgbench_init is not None and not loaded:
            server.pgbench_init(target.pgbench_init.scale, target.pgbench_init.options)
    else:
        # Without a server to start there is a DSN: the workload asks for one or the other
        # (PostgresTarget._server_or_dsn).
        assert target.dsn is not None
        dsn = target.dsn
    facts = asyncio.run(_setup_sql(dsn, [] if loaded else target.setup, server is None))
    if server is not None and not loaded:
        server.save_template()
    parts = urllib.parse.urlsplit(dsn)
    spec = PgCounterSpec(parts.hostname or "127.0.0.1", parts.port or 5432, parts.username or "postgres",
                         (parts.path or "/").lstrip("/") or target.database) if target.counters else None
    return dsn, facts, spec


async def _setup_sql(dsn: str, statements: list[str], want_version: bool) -> dict[str, Any]:
    asyncpg = require("asyncpg", extra="net", feature="a postgres target")

    try:
        conn = await asyncpg.connect(dsn, timeout=30)
    except Exception as exc:
        raise SutFailure(f"cannot connect to PostgreSQL at {dsn}: {type(exc).__name__}: {exc}") from None
    try:
        for sql in statements:
            await conn.execute(sql)
        # A clean start: what setup dirtied is written out now, not during the window.
        await conn.execute("CHECKPOINT")
        if not want_version:
            return {}
        # A server perflab does not start may restart between the runs of a study (a cold cache
        # after it): when it last started is a fact of the run the study compares run to run.
        started = await conn.fetchval("SELECT pg_postmaster_start_time()")
        return {"sut_version": await conn.fetchval("SELECT version()"), "sut_started": started.isoformat()}
    except Exception as exc:
        raise SutFailure(f"setup SQL failed: {type(exc).__name__}: {exc}") from None
    finally:
        await conn.close()


def make_executor(workload: Workload, dsn: str | None, failure, pool_size: int,
                  tokens: dict[str, str] | None = None, counts: Any = None):
    """The driver-side executor. `tokens` ({run_dir}, {workload_dir}) fill the target's paths (a
    CA file, a Unix socket); `counts` receives what only the driver sees: the connections and TLS
    handshakes the HTTP and TCP executors make (ConnectionCounts), the commits the PostgreSQL
    executor waits for (CommitCounts)."""
    # The kind's own factory, as its registry line names it (workload/kinds.py): a kind without one
    # is refused there, never driven by another kind's executor.
    return registry.make_executor(NetworkContext(workload, dsn, failure, pool_size, tokens or {}, counts))


def execute_server_run(life: RunLifecycle, host: HostInfo | None = None, cluster: Any = None) -> RunResult:
    """`host`: the SUT host's monitor as probed before the run (workload `monitor:`); `cluster`:
    the drivers placed on other hosts (distributed.DriverCluster, workload `drivers:`).

    The steps (_ServerRun): start the server, describe the SUT, drive it (here, or from the
    cluster's hosts), then -- whatever happened -- stop and store everything."""
    run = _ServerRun(life, host, cluster)
    try:
        with recording_ending(life.ending) as ending:
            life.raise_if_terminated()  # a SIGTERM while the run was opened
            run.start_server()
            run.describe_sut()
            if cluster is not None:
                _drive_distributed(life, cluster, run.pids, run.counter_spec, run.components, run.dsn, run.failure)
            else:
                run.drive_here(ending)
    finally:
        result = run.end()
    return result


class _ServerRun:
    """One run against a server (or an external driver): what each step leaves for the next,
    and for the end, which stops and stores whatever was started."""

    def __init__(self, life: RunLifecycle, host: HostInfo | None, cluster: Any):
        self.life, self.host, self.cluster = life, host, cluster
        self.plan, self.record, self.workload = life.plan, life.record, life.plan.workload
        self.server: PostgresServer | Service | None = None
        self.failure: Any = None
        self.dsn: str | None = None
        self.counter_spec: PgCounterSpec | None = None
        self.pids: list[int] = []
        self.components: dict[str, Any] = {}
        self.recorder: Recorder | None = None
        self.engine: Any = None
        self.table: Any = None
        self.window: Any = None
        self.sampler: Any = None
        self.counts: Any = None  # ConnectionCounts or CommitCounts: what only the driver sees

    def start_server(self) -> None:
        """The server perflab starts (in the SUT's cgroup), PostgreSQL's connection and facts,
        and what the fingerprint says of them."""
        life, plan, record, workload = self.life, self.plan, self.record, self.workload
        if manages_sut(plan):
            life.make_cgroup([])  # the server is started inside it
        server = self.server = start_sut(plan, life)
        self.failure = server.failure if server is not None else None
        target = workload.target
        if isinstance(server, PostgresServer):
            assert isinstance(target, PostgresTarget)  # start_sut starts one for a postgres target only
            record.fingerprint.update(server.start(load_key(target)))
        elif server is not None:
            record.fingerprint.update(server.start())
        if isinstance(target, PostgresTarget):
            self.dsn, facts, self.counter_spec = prepare_postgres(target, server if isinstance(server, PostgresServer)
                                                                  else None)
            record.fingerprint.update(facts)
            if isinstance(server, PostgresServer):
                record.fingerprint.update(server.start_standby())  # a standby is made of the loaded server
        record.fingerprint["adapter"] = workload.target.kind
        record.fingerprint["driver"] = workload.driver.kind

    def describe_sut(self) -> None:
        """The SUT record: its processes, components, counters and host, saved before the load."""
        life, record, server, host = self.life, self.record, self.server, self.host
        self.components = dict(server.components) if server is not None else {}
        self.pids = (server.pids if isinstance(server, PostgresServer) else [server.pid]) if server is not None else []
        sut_host = None
        if host is not None:
            # The SUT's own host: its processors are what PROCESSORS and the (H) rows count. A
            # host is probed from the workload's monitor (drive/run.py), so both are there.
            assert self.plan.remote is not None and self.workload.monitor is not None
            sut_host = host_record(self.plan.remote, host, self.workload.monitor.cpus)
            record.config = record.config.model_copy(update={
                "sut_cpus": sut_host.cpus, "processors": len(sut_host.cpus), "shared_cpus": False})
            if "sut" in host.provides:
                self.counter_spec = None  # the agent reads the SUT's counters where it runs
        counted = self.counter_spec is not None or (host is not None and "sut" in host.provides)
        life.describe_sut(pids=self.pids, service=type(server).__name__ if server else None,
                          counters=PG_COUNTERS if counted else [], tx_counter="xact_commit" if counted else None,
                          components=self.components, host=sut_host)
        life.save()

    def drive_here(self, ending: Any) -> None:
        """The driver on this host: its clock, the monitor, the profile, then the load (perflab's
        own engine, or an external driver)."""
        from perflab.monitor.sources.counters import combine_counter_specs

        life, workload, server = self.life, self.workload, self.server
        native = workload.driver.kind == "native"
        life.pin_driver()
        t0 = life.synchronized_t0()
        t0_epoch = time.time()
        life.start_clock(t0, t0_epoch)
        if native:
            # driver.connects and driver.tls_* (http, tcp), driver.commits and commit_us
            # (postgres): sampled with the SUT's counters
            self.counts = registry.driver_counts(KINDS.of(workload.target))
        device = server.device_counters() if isinstance(server, PostgresServer) else None
        monitored = combine_counter_specs(self.counter_spec, self.counts.spec if self.counts is not None else None,
                                          device)
        # An external driver's CPU is accounted in run.json (the tool's rusage), not sampled.
        life.start_monitor(self.pids, monitored, self.components, driver_pid=-1 if native else None)
        self.sampler = _start_profile(life, self.pids, t0)
        if native:
            self.drive_native(t0, ending)
        else:
            self.drive_external(t0, t0_epoch, ending)

    def drive_native(self, t0: float, ending: Any) -> None:
        life, plan, record, workload = self.life, self.plan, self.record, self.workload
        recorder = self.recorder = Recorder([s.name for s in workload.scripts], [t.name for t in workload.transactions],
                                            [], t0, spill_path=life.run_dir / SPILL_FILE)
        tokens = {"run_dir": str(life.run_dir), "workload_dir": str(plan.workload_dir), "run_id": record.run_id,
                  "service_address": workload.service.address if workload.service else "127.0.0.1"}
        executor = make_executor(workload, self.dsn, self.failure, plan.workers, tokens, self.counts)
        engine = self.engine = engine_for(plan, executor, recorder, t0)
        if engine.core_choice is not None:
            record.fingerprint["driver_core"] = engine.core_choice.fingerprint()
        if self.counts is not None:
            engine.count_reader = self.counts.totals
        recorder.class_names = engine.class_names
        outcome = life.drive(engine, before=engine.before_run(lambda: executor.open(plan.users)), after=executor.close,
                             failure=self.failure)
        ending.status, ending.reason = outcome.status, outcome.reason

    def drive_external(self, t0: float, t0_epoch: float, ending: Any) -> None:
        from perflab.drive.external import run_external

        record = self.record
        external = run_external(self.plan, self.life.run_dir, t0, t0_epoch, self.dsn, self.failure)
        self.table, ending.status, ending.reason = external.table, external.status, external.reason
        record.driver = DriverRecord.model_validate(external.driver) if external.driver else None
        record.external = {"tool": self.workload.driver.kind, **external.summary}
        self.window = external.window

    def end(self) -> RunResult:
        """Whatever happened: the monitor and the profile stopped, the server stopped (a failure
        it shows makes the run failed; a restart measured when asked), the counted pass, the
        transactions stored, the record finished."""
        life, record, server = self.life, self.record, self.server
        life.closing = True  # a SIGTERM from here on waits until the run is stored
        life.stop_monitor()
        if self.sampler is not None:
            _finish_profile(life, self.sampler)
        if self.counts is not None:
            self.counts.close()  # the monitor, its only other reader, has stopped
        if server is not None:
            gone = server.failure()
            if gone and life.ending.status == "complete":
                life.ending.status, life.ending.reason = "failed", gone
            if not gone and life.ending.status == "complete" and isinstance(server, PostgresServer) \
                    and server.spec.measure_restart:
                _measure_restart(life, server)
            note = server.stop()
            if note:
                sut = record.sut if record.sut is not None else life.describe_sut()
                sut.stop_note = note
        life.release()
        if self.workload.pathlength is not None:
            _count_pathlength(life)
        if self.recorder is not None:
            self.table = recorded_table(life, self.recorder)
        cluster = self.cluster
        if cluster is not None:
            self.table = cluster.table()
            record.drivers = cluster.records()
            if life.ending.status != "complete":
                phases = life.plan.phases
                self.window = (phases.window_start, max(phases.window_start, cluster.window_end(phases.window_end)))
            cluster.close()
        try:
            return life.finish(self.table, self.engine, self.window)
        finally:
            if self.recorder is not None:
                self.recorder.close(remove=(life.run_dir / "transactions.parquet").exists())


def _start_profile(life: RunLifecycle, pids: list[int], t0: float) -> Any:
    """The sampled CPU profile over the window (workload `profile`; drive/profile.py), or None."""
    settings = life.plan.workload.profile
    if settings is None:
        return None
    from perflab.drive.profile import ProfileSampler

    phases = life.plan.phases
    sampler = ProfileSampler(list(pids), life.run_dir, settings.frequency, t0 + phases.window_start,
                             max(0.0, phases.window_end - phases.window_start))
    sampler.begin()
    return sampler


def _finish_profile(life: RunLifecycle, sampler: Any) -> None:
    from perflab.records.run import ProfileRecord

    sampler.finish()
    life.record.profile = ProfileRecord(
        status="failed" if sampler.reason else "sampled", reason=sampler.reason, frequency=sampler.frequency,
        pids=sampler.pids, samples=sampler.samples, functions=sampler.functions,
        seconds=None if sampler.perf_seconds is None else round(sampler.perf_seconds, 3))


def _count_pathlength(life: RunLifecycle) -> None:
    """The counted pass (drive/pathlength/server.py) on a server of its own, after this run's
    server has stopped: nothing it does reaches the timed rows. A run that did not complete is
    not counted (its record says so)."""
    from perflab.drive.pathlength.count import PassInputs, count_pathlength
    from perflab.records.run import PathlengthRecord

    plan = life.plan
    if life.ending.status != "complete":
        life.record.pathlength = PathlengthRecord(status="skipped", reason=f"the run is {life.ending.status}")
        return
    life.record.pathlength = count_pathlength(PassInputs(plan.workload, plan.workload_dir, life.run_dir, plan.seed,
                                                         list(plan.placement.sut_cpus), []))


def _measure_restart(life: RunLifecycle, server: PostgresServer) -> None:
    """The server crashed and restarted once the load is over (sut/pg_restart.py): its restart
    times into run.json (sut.restart). A server that does not come back fails the run, saying why."""
    from perflab.records.run import RestartRecord
    from perflab.sut.pg_restart import measure_restart

    sut = life.record.sut if life.record.sut is not None else life.describe_sut()
    try:
        restart = measure_restart(server)
    except Exception as exc:  # the server's, asyncpg's or the OS's: the run keeps what it measured
        why = str(exc) if isinstance(exc, SutFailure) else f"{type(exc).__name__}: {exc}"
        restart = RestartRecord(error=why)
        life.ending.status, life.ending.reason = "failed", f"restart after the load: {why}"
    sut.restart = restart


def _drive_distributed(life: RunLifecycle, cluster: Any, pids, counter_spec, components, dsn, failure) -> None:
    """The load from the cluster's drivers; this process only coordinates (and monitors), so it
    is neither pinned nor counted as a driver. The transactions are taken at the ending."""
    t0 = cluster.start_time()
    life.start_clock(t0, time.time() + (t0 - time.monotonic()))
    life.start_monitor(pids, counter_spec, components, driver_pid=None)
    life.record.config = life.record.config.model_copy(update={"driver_cpus": []})
    sut = f"SUT on CPU {','.join(map(str, life.plan.placement.sut_cpus))}" if life.record.sut is None or \
        life.record.sut.host is None else f"SUT on its host ({life.record.sut.host.url})"
    life.record.fingerprint["placement"] = cluster.describe(sut)
    live = life.live_writer()
    ticks = [t for t in (life.observer.tick if life.observer is not None else None, live.tick) if t is not None]

    def tick(view: Any, elapsed: float) -> None:
        for each in ticks:
            each(view, elapsed)

    life.ending.status, life.ending.reason = cluster.drive(life.plan, t0, dsn, failure, on_tick=tick)

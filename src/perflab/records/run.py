"""run.json as a model: what one run was asked to do, where it ran, and how it ended.

The run lifecycle (`perflab.drive.lifecycle`) is the one builder; everything downstream --
reduction, the catalog, studies, `perflab compare`, the reports -- reads attributes of a
`RunRecord` loaded with `read_run_record`. The file carries a format version:

* format 2 (this one): reasons a run is invalid are typed caveats (`perflab.caveats`).
* format 1 (perflab 0.1, no `format` field): the same fields, reasons as plain sentences. It
  loads through this model (the sentences become caveats with code `legacy`).

A newer format than this perflab knows is refused with a message naming both versions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from perflab.caveats import Caveat, as_caveat
from perflab.records.documents import read_json, validate
from perflab.redact import redact

RUN_FORMAT = 2
RunStatus = Literal["running", "complete", "failed", "interrupted"]


class Record(BaseModel):
    """Stored records ignore fields they do not know (a newer minor addition) but never invent one.

    No record holds a secret: every field is redacted (perflab.redact) as it is built, loaded or
    assigned, so run.json, study.json, the catalog row and whatever is read back from them show a
    DSN's password, PGPASSWORD or a token as `***`. (The run itself connects with the workload
    model, which is not a record.)"""

    model_config = ConfigDict(extra="ignore", validate_assignment=True)
    redacts_itself: ClassVar[bool] = True   # a record inside a record is not walked again

    @field_validator("*", mode="after")
    @classmethod
    def _no_secrets(cls, value: Any) -> Any:
        return redact(value)


class RunConfig(Record):
    """The load and placement the run was given: resolved once, in the run plan."""

    users: int | None = Field(default=None, description='simulated users (closed loop); null in open loop')
    rate: float | None = Field(default=None, description='arrivals per second (open loop); null in closed loop')
    seed: int = Field(default=1, description="the seed every driver used (perflab's engine, pgbench, k6, wrk)")
    jobs: int | None = Field(default=None, description="a job stream's jobs (null for interactive loads)")
    initiators: int | None = Field(default=None, description="a job stream's concurrent initiators")
    workers: int | None = Field(default=None, description='SUT worker processes (in-process targets) or the client '
                                                          'pool size')
    processors: int | None = Field(default=None, description='CPUs given to the SUT: PROCESSORS')
    sut_cpus: list[int] = Field(default_factory=list, description="the SUT's CPUs")
    driver_cpus: list[int] = Field(default_factory=list, description="the driver's CPUs")
    shared_cpus: bool = Field(default=False, description='the driver and the SUT share a CPU (reports say so)')
    real_storage_bytes: int | None = Field(default=None, description="memory limit of the SUT's cgroup (REAL "
                                                                     "STORAGE), null: none")
    driver_memory_bytes: int | None = Field(default=None, description="the driver's memory (RSS) its simulated "
                                                    "users were estimated to need before the run started "
                                                    "(perflab.limits.driver_memory_bytes); null: no users")
    stagger_s: float = Field(default=0.0, description='users start spread over this period')
    stabilization_s: float = Field(default=0.0, description='warm-up excluded from the window')
    measurement_s: float = Field(default=0.0, description='the planned measurement window')
    # where the run sits in a study (None for a single run)
    block: int | None = Field(default=None, description="the study's block of this run")
    order: int | None = Field(default=None, description="its position in the study's schedule")
    purpose: str | None = Field(default=None, description='measure or calibrate')
    configuration: str | None = Field(default=None, description='the study configuration it ran')
    duet: str | None = Field(default=None, description="a duet's key (study/block): the run ran at the same time "
                                                        "as its partner, on the same CPUs, by design")
    arrangement: str | None = Field(default=None, description="a pair's arrangement (duet or split-duet); None: the "
                                                              "run ran alone (or before perflab 0.3 recorded it)")


class Clock(Record):
    t0_monotonic: float = Field(description='CLOCK_MONOTONIC at t0: every time in the data files is seconds since it')
    t0_epoch: float = Field(description='wall-clock time at t0')


class WindowRecord(Record):
    start: float = Field(description='window start, seconds since t0')
    end: float = Field(description='window end (earlier than planned when the run was cut short)')
    planned_end: float | None = Field(default=None, description='the planned end')


class DriverRecord(Record):
    """The driver's own CPU over the window (perflab's driver, or an external tool's rusage)."""

    pid: int | None = Field(default=None, description="the driver's process")
    cpu_s: float | None = Field(default=None, description='its CPU seconds over the window')
    window_wall_s: float | None = Field(default=None, description='the window as the driver measured it')
    util_pct: float | None = Field(default=None, description='cpu_s / window_wall_s, % of one core')
    saturated: bool = Field(default=False, description='util_pct >= DRIVER_SATURATION_PCT: the run is invalid')
    dropped: int | None = Field(default=None, description='open-loop arrivals dropped at the in-flight cap (recorded '
                                                          'as errors)')
    spilled_bytes: int | None = Field(default=None, description="bytes the driver wrote to the run directory during "
                                      "the run: its transactions, spilled so as not to keep them in memory")
    spill_error: str | None = Field(default=None, description="why spilling stopped (the rows were then kept in "
                                    "memory)")
    window_counts: dict[str, int] | None = Field(default=None, description="the driver's own counts (connects, "
                                                 "tls_handshakes, tls_resumed) over the window, read by the driver "
                                                 "at its start and end: exact, where the monitor's are interpolated")


class SutHostRecord(Record):
    """The host of a SUT perflab does not start, as its monitor there saw it (workload `monitor:`)."""

    monitor: str = Field(description="node_exporter or agent")
    url: str = Field(description="where it was read")
    process_exporter: str | None = Field(default=None, description="the process-exporter read beside node_exporter")
    hostname: str | None = Field(default=None, description="the host's name (agent)")
    same_machine: bool | None = Field(default=None, description="the agent's boot id is the driver's: one machine "
                                                                "(network namespaces, containers)")
    cpus: list[int] = Field(default_factory=list, description="the SUT host's processors the (H) rows sum over")
    memory_bytes: int | None = Field(default=None, description="the SUT host's memory (REAL STORAGE)")
    provides: list[str] = Field(default_factory=list, description="column groups it gave: h, s, v, sut")
    clock_offset_s: float | None = Field(default=None, description="its CLOCK_MONOTONIC minus the driver's (agent)")
    clock_error_s: float | None = Field(default=None, description="half the round trip of that measurement")
    clock_drift_s: float | None = Field(default=None, description="change of the offset from start to end")
    wall_offset_s: float | None = Field(default=None, description="its wall clock minus the driver's")
    samples: int | None = Field(default=None, description="samples read")
    failures: int | None = Field(default=None, description="samples it did not answer")
    lost_at: float | None = Field(default=None, description="when it first stopped answering, seconds since t0")
    lost_reason: str | None = Field(default=None, description="why")
    gaps: list[dict[str, Any]] = Field(default_factory=list, description="every span it did not answer: from, to "
                                                                         "(null: to the end), reason")


class DriverHostRecord(DriverRecord):
    """One of several drivers (workload `drivers:`, on Ray): where it ran and what it did."""

    index: int = Field(description="driver number")
    node: str | None = Field(default=None, description="the Ray node it ran on (its address)")
    cpus: list[int] = Field(default_factory=list, description="the CPUs it was pinned to on its node")
    users: int | None = Field(default=None, description="its users (closed loop)")
    rate: float | None = Field(default=None, description="its arrival rate (open loop)")
    clock_offset_s: float | None = Field(default=None, description="its CLOCK_MONOTONIC minus the coordinator's")
    clock_error_s: float | None = Field(default=None, description="half the round trip of that measurement")
    transactions: int = Field(default=0, description="transactions it recorded (in transactions.parquet)")
    hung: int = Field(default=0, description="its transactions past their deadline (the run is invalid)")
    lost: str | None = Field(default=None, description="why it stopped answering, when it did")


class RestartRecord(Record):
    """A PostgreSQL server crashed when the load ended and started again (sut/pg_restart.py): how
    long its recovery took against the WAL it had to replay, then a clean restart's start-up. The
    times marked (T) perflab measured from outside; the redo lines are the server's own log."""

    wal_since_checkpoint: int | None = Field(default=None, description="bytes of WAL from the last checkpoint's "
                                             "redo point to the insert position when it crashed")
    checkpoint_redo_lsn: str | None = Field(default=None, description="that redo point (pg_control_checkpoint())")
    crash_lsn: str | None = Field(default=None, description="the insert position just before the crash, all of it "
                                  "flushed")
    restart_s: float | None = Field(default=None, description="(T) from starting the crashed server to its first "
                                    "answered query: recovery and all")
    redo_start_lsn: str | None = Field(default=None, description="where its log says redo started")
    redo_end_lsn: str | None = Field(default=None, description="where it says redo ended: the last record replayed")
    redo_bytes: int | None = Field(default=None, description="redo_end_lsn - redo_start_lsn")
    redo_s: float | None = Field(default=None, description="the redo's elapsed time, as its log says")
    redo_cpu_s: float | None = Field(default=None, description="the redo's user + system CPU, as its log says")
    recovery_checkpoint_s: float | None = Field(default=None, description="the end-of-recovery checkpoint's total "
                                                "time, as its log says (na when log_checkpoints is off)")
    startup_s: float | None = Field(default=None, description="(T) after a clean shutdown, from starting the server "
                                    "to its first answered query: start-up without recovery")
    # restart_s in parts that sum to it (sut/pg_restart.py restart_parts): the log's stamps, and
    # perflab's clock beyond the log's span
    restart_launch_s: float | None = Field(default=None, description="restart_s less the log's span: the process "
                                           "before its first log line, and the first query after it was ready")
    restart_init_s: float | None = Field(default=None, description="the log's first line to 'redo starts'")
    restart_redo_s: float | None = Field(default=None, description="'redo starts' to 'redo done', by the log's stamps")
    restart_checkpoint_s: float | None = Field(default=None, description="'redo done' to the end-of-recovery "
                                               "checkpoint's 'checkpoint complete'")
    restart_ready_s: float | None = Field(default=None, description="'checkpoint complete' to 'ready to accept "
                                          "connections'")
    error: str | None = Field(default=None, description="why it could not be measured")


class SutRecord(Record):
    pids: list[int] = Field(default_factory=list, description="the SUT's processes (workers or server)")
    service: str | None = Field(default=None, description='the server class perflab started, if any')
    counters: list[str] = Field(default_factory=list, description="the SUT's own counters sampled")
    tx_counter: str | None = Field(default=None, description="the counter that is the SUT's transaction count (ETR)")
    components: dict[str, str] = Field(default_factory=dict, description='component name -> process-name pattern '
                                                                         '(the (V) rows)')
    cgroup: str | dict[str, str] | None = Field(default=None, description="the SUT's cgroup (v2: a path; v1: one per "
                                                                          "controller)")
    cgroup_note: str | None = Field(default=None, description='why there is no cgroup, when there is none')
    memory_limit: int | None = Field(default=None, description="the cgroup's memory limit, bytes")
    stop_note: str | None = Field(default=None, description='how the server stopped, when not cleanly')
    host: SutHostRecord | None = Field(default=None, description="the SUT's own host, when a monitor there measured "
                                                                 "it (workload `monitor:`)")
    restart: RestartRecord | None = Field(default=None, description="a PostgreSQL server's crash recovery and "
                                          "start-up after the load (target.server.measure_restart)")


class MonitorRecord(Record):
    model_config = ConfigDict(extra="allow")  # the sampler's own summary (samples, cost, notes)

    interval_s: float | None = Field(default=None, description='sampling interval')
    note: str | None = Field(default=None, description='why nothing was sampled (--no-monitor)')
    error: str | None = Field(default=None, description='what went wrong stopping the monitor (the transactions are '
                                                        'kept)')


#: The counted pass's transactions, beside transactions.parquet (drive/pathlength/): one row per
#: counted transaction, columns PATHLENGTH_COLUMNS (instructions NaN where it failed or was not counted).
PATHLENGTH_FILE = "pathlength.parquet"
PATHLENGTH_COLUMNS = ("transaction", "class", "instructions", "ok", "error")
PathlengthMethod = Literal["client_requests", "per_command", "server_backend"]


class PathlengthRecord(Record):
    """The counted pass that measured INSTR/CMD (I) beside the timed run (workload `pathlength`)."""

    status: Literal["counted", "failed", "skipped"] = Field(
        description="counted: pathlength.parquet holds the counts; failed: INSTR/CMD (I) is na, for `reason`; "
        "skipped: the timed run did not complete")
    reason: str | None = Field(default=None, description="why the pass failed or was skipped")
    tool: str | None = Field(default=None, description="the counter: valgrind's version and tool")
    method: PathlengthMethod | None = Field(
        default=None, description="client_requests: callgrind counted each transaction between two client requests "
        "in an in-process SUT's worker; per_command: each command ran under cachegrind; server_backend: the server "
        "(PostgreSQL) ran under callgrind and the backend serving the pass's one connection was counted between "
        "marker calls (drive/pathlength/server.py)")
    transactions: int = Field(default=0, description="transactions counted")
    warmup: int = Field(default=0, description="transactions run before them, not counted")
    errors: int = Field(default=0, description="counted transactions that failed (not used)")
    overhead_instructions: float | None = Field(default=None, description="instructions of the two client requests "
                                                "around each transaction (measured on empty ones), subtracted; "
                                                "server_backend: the marker statement's between two transactions")
    seconds: float | None = Field(default=None, description="the pass's wall time (valgrind's, not the SUT's)")
    functions: int | None = Field(default=None, description="functions counted one by one (workload "
                                  "`pathlength.functions`): pathlength_functions.parquet and pathlength_calls.parquet "
                                  "hold them (drive/pathlength/functions.py); null: not counted per function")
    functions_seconds: float | None = Field(default=None, description="the time the per-function tables took to "
                                            "read from callgrind's dumps and write, part of `seconds`")
    functions_reason: str | None = Field(default=None, description="why the per-function tables are missing when "
                                         "they were asked for (the counts per transaction are kept)")
    other_processes: dict[str, float] | None = Field(
        default=None, description="server_backend: the instructions of the server's processes other than the counted "
        "backend over the whole pass (start to shutdown), by pg_stat_activity's backend_type (walwriter, checkpointer, "
        "background writer, ...; postmaster): not in INSTR/CMD (I)")


class ProfileRecord(Record):
    """A sampled CPU profile (drive/profile.py): shares of the SUT's CPU time, never counts."""

    status: Literal["sampled", "failed"] = Field(description="sampled: profile.parquet holds the shares")
    reason: str | None = Field(default=None, description="why there is no profile")
    tool: str = Field(default="perf record -e cpu-clock", description="the sampler")
    frequency: int = Field(default=999, description="samples per second of a process's CPU time")
    pids: list[int] = Field(default_factory=list, description="the processes sampled (their threads at the "
                            "window's start)")
    samples: int = Field(default=0, description="samples taken: a share's sampling error is about "
                         "sqrt(share (1 - share) / samples)")
    functions: int = Field(default=0, description="functions seen")
    seconds: float | None = Field(default=None, description="perf record's wall time (the window's)")


class RunRecord(Record):
    format: int = Field(default=RUN_FORMAT, description='format version of this file')
    run_id: str = Field(description='unique id: time, workload, random suffix')
    status: RunStatus = Field(default="running", description='running until the run ends; a running run whose pid is '
                                                             'gone is shown as abandoned')
    reason: str | None = Field(default=None, description='why it failed or was interrupted')
    valid: bool | None = Field(default=None, description='no caveat in `invalid`')
    invalid: list[Caveat] = Field(default_factory=list, description="why the run is invalid (empty: valid)")
    label: str | None = Field(default=None, description="the configuration's name (--label, or the study "
                                                        "configuration)")
    study: str | None = Field(default=None, description='the study it belongs to')
    workload_path: str | None = Field(default=None, description='the workload file')
    workload: dict[str, Any] = Field(default_factory=dict, description="the validated workload, as written")
    config: RunConfig = Field(default_factory=RunConfig, description='the resolved run plan')
    fingerprint: dict[str, Any] = Field(default_factory=dict, description='machine and software facts (pyperf-style '
                                                                          'metadata)')
    clock: Clock | None = Field(default=None, description="the run's time origin")
    window: WindowRecord | None = Field(default=None, description='the measurement window')
    driver: DriverRecord | None = Field(default=None, description="the driver's CPU account")
    monitor: MonitorRecord | None = Field(default=None, description="the monitor's summary")
    sut: SutRecord | None = Field(default=None, description='the system under test')
    external: dict[str, Any] | None = Field(default=None, description="an external driver's own summary")
    drivers: list[DriverHostRecord] = Field(default_factory=list, description="each driver of a run driven from "
                                            "several hosts; `driver` is then the busiest")
    pathlength: PathlengthRecord | None = Field(default=None, description="the counted pass beside the timed run "
                                                "(workload `pathlength`): INSTR/CMD (I)")
    profile: ProfileRecord | None = Field(default=None, description="the sampled CPU profile of the SUT's processes "
                                          "over the window (workload `profile`): profile.parquet")
    pid: int | None = Field(default=None, description="the driver's pid while running")
    created: str = Field(default="", description='ISO-8601')
    finished: str | None = Field(default=None, description='ISO-8601')

    @field_validator("invalid", mode="before")
    @classmethod
    def _caveats(cls, value: Any) -> Any:
        return [as_caveat(v) for v in value or []]

    @property
    def workload_name(self) -> str:
        return str(self.workload.get("name") or "?")

    @property
    def invalid_reasons(self) -> list[str]:
        return [c.text for c in self.invalid]

    def dump(self) -> dict[str, Any]:
        """The JSON document (what run.json holds)."""
        return self.model_dump(mode="json")


def upgrade_run_document(data: dict[str, Any]) -> dict[str, Any]:
    """Bring an older run.json to the current shape before validation."""
    version = data.get("format", 1)
    if not isinstance(version, int) or version < 1:
        raise ValueError(f"unknown format {version!r}")
    if version > RUN_FORMAT:
        raise ValueError(f"run.json format {version} is newer than this perflab reads (format {RUN_FORMAT}): "
                         "upgrade perflab to read it")
    if version == 1:
        data = dict(data)
        data["invalid"] = list(data.pop("invalid_reasons", None) or [])
        config = dict(data.get("config") or {})
        data["config"] = config
        data["format"] = RUN_FORMAT
    return data


def parse_run_record(data: Any, source: Path | str | None = None) -> RunRecord:
    """A RunRecord from a loaded run.json document; InputError (file, field) when it is not one."""
    return validate(RunRecord, upgrade_run_document, data, source, "run record")


def read_run_record(path: Path) -> RunRecord:
    """Load run.json (a path to the file or to its run directory)."""
    data, path = read_json(path, "run.json", "run")
    return parse_run_record(data, path)

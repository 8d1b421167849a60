"""The workload file model: what a simulated user does, how many of them, for how long.

A workload is the seeds' "workload definition" (FS7B: weighted scripts, an init script, a
Bactrian think time; DCW: one debit-credit transaction) in a form pydantic validates and
exports as a JSON schema. Validation errors carry the field path; the loader maps it to a
line of the YAML file.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AfterValidator, Discriminator, Field, Tag, field_validator, model_validator

from perflab import limits
from perflab.workload.fields import Duration as Duration
from perflab.workload.fields import Strict as Strict
from perflab.workload.fields import parse_bytes as parse_bytes
from perflab.workload.fields import parse_duration as parse_duration
from perflab.workload.kinds import BODIES, KINDS
from perflab.workload.targets import CommandTarget as CommandTarget
from perflab.workload.targets import HttpTarget as HttpTarget
from perflab.workload.targets import Isolation as Isolation
from perflab.workload.targets import PgbenchInit as PgbenchInit
from perflab.workload.targets import PostgresServer as PostgresServer
from perflab.workload.targets import PostgresStandby as PostgresStandby
from perflab.workload.targets import PostgresTarget as PostgresTarget
from perflab.workload.targets import PythonTarget as PythonTarget
from perflab.workload.targets import ServiceNetwork as ServiceNetwork
from perflab.workload.targets import SqliteTarget as SqliteTarget
from perflab.workload.targets import TargetModel
from perflab.workload.targets import TcpTarget as TcpTarget
from perflab.workload.targets import TlsOptions as TlsOptions
from perflab.workload.targets import WalDevice as WalDevice
from perflab.workload.thinktime import ThinkTime


def _threshold(text: str) -> str:
    """A threshold expression checked (grammar, catalog key) and kept in its normal form."""
    from perflab.catalog.thresholds import parse_threshold

    return parse_threshold(text).expression


ThresholdExpression = Annotated[str, AfterValidator(_threshold)]


# Bounded numbers (perflab.limits: the bound is read when a value is checked, so an
# environment variable can raise it).
Users = Annotated[int, AfterValidator(limits.check_users)]
Rate = Annotated[float, AfterValidator(limits.check_rate)]
Workers = Annotated[int, AfterValidator(limits.check_workers)]
_INT64 = (1 << 63) - 1


# --- parameter generators -------------------------------------------------------------------


class RandomInt(Strict):
    random_int: tuple[Annotated[int, Field(ge=-_INT64, le=_INT64)], Annotated[int, Field(ge=-_INT64, le=_INT64)]] = \
        Field(description="inclusive range [low, high]")

    @field_validator("random_int")
    @classmethod
    def _ordered(cls, v: tuple[int, int]) -> tuple[int, int]:
        if v[0] > v[1]:
            raise ValueError("low must be <= high")
        return v


class Choice(Strict):
    choice: list[Any] = Field(min_length=1, description="values picked uniformly")
    weights: list[float] | None = None

    @model_validator(mode="after")
    def _weights_match(self) -> Choice:
        if self.weights is not None and len(self.weights) != len(self.choice):
            raise ValueError("weights must have one entry per choice")
        if self.weights is not None and (any(w < 0 for w in self.weights) or not 0 < sum(self.weights) < math.inf):
            raise ValueError("weights cannot be negative, and at least one must be above 0")
        return self


class Sequence(Strict):
    sequence: int = Field(default=1, ge=-_INT64, le=_INT64, description="first value; each use adds `step`")
    step: int = Field(default=1, ge=-_INT64, le=_INT64)


class Constant(Strict):
    value: Any


_PARAM_KINDS = ((RandomInt, "random_int"), (Choice, "choice"), (Sequence, "sequence"), (Constant, "value"))


def _param_kind(value: Any) -> str | None:
    # The key the user wrote decides the generator, so an error names that generator's field
    # (not another member's "unknown field").
    if isinstance(value, dict):
        return next((tag for _model, tag in _PARAM_KINDS if tag in value), None)
    return next((tag for model, tag in _PARAM_KINDS if isinstance(value, model)), None)


ParamSpec = Annotated[
    Annotated[RandomInt, Tag("random_int")] | Annotated[Choice, Tag("choice")]
    | Annotated[Sequence, Tag("sequence")] | Annotated[Constant, Tag("value")],
    Discriminator(_param_kind, custom_error_type="param_kind",
                  custom_error_message="expected a generator: {random_int: [low, high]}, {choice: [...]}, "
                                       "{sequence: FIRST} or {value: X}"),
]


# --- network transaction bodies ---------------------------------------------------------------



class Extract(Strict):
    """Where a value comes from in a response: a JSON path ($.a.b[0]), a regex group, a header."""

    json_path: str | None = Field(default=None, alias="json", description="JSON path into the body, e.g. $.items[0].id")
    regex: str | None = Field(default=None, description="regular expression over the body; group 1 (else 0)")
    header: str | None = None

    @model_validator(mode="after")
    def _one(self) -> Extract:
        if sum(x is not None for x in (self.json_path, self.regex, self.header)) != 1:
            raise ValueError("give one of json, regex or header")
        if self.regex is not None:
            re.compile(self.regex)
        if self.json_path is not None and not self.json_path.startswith("$"):
            raise ValueError("a JSON path starts with $ (e.g. $.token)")
        return self


class HttpRequest(Strict):
    """One request of an HTTP transaction. `{name}` in path, headers and body is replaced by
    the transaction's parameters and the user's variables (values extracted earlier)."""

    method: str = "GET"
    path: str = Field(description="path (appended to target.base_url) or a full URL")
    headers: dict[str, str] = Field(default_factory=dict)
    json_body: Any = Field(default=None, alias="json", description="JSON request body")
    body: str | None = None
    expect_status: list[int] | int | None = Field(default=None, description="ok statuses; default 2xx and 3xx")
    expect_body: str | None = Field(default=None, description="the body must contain this text (or match as a regex)")
    extract: dict[str, Extract | str] = Field(default_factory=dict,
                                              description="user variables set from the response; a string is a JSON path")

    @field_validator("extract")
    @classmethod
    def _paths(cls, v: dict[str, Any]) -> dict[str, Extract]:
        return {k: Extract(json_path=x) if isinstance(x, str) else x for k, x in v.items()}


class TcpExchange(Strict):
    message_size: int | None = Field(default=None, ge=1, le=64 << 20, description="bytes per message (default: the "
                                     "target's)")
    messages: int | None = Field(default=None, ge=1, le=1_000_000, description="messages per transaction (default: "
                                 "the target's)")
    message: str | None = Field(default=None, min_length=1, max_length=1 << 20,
                                description="the message's text, sent as UTF-8 (default: the target's)")
    reply: str | None = Field(default=None, max_length=1 << 20,
                              description="the reply expected to each message (default: the target's)")


# --- transactions ------------------------------------------------------------------------


class Transaction(Strict):
    name: str
    tx_class: str = Field(default="default", alias="class", description="response times are reported per class")
    sql: list[str] | str | None = None
    call: str | None = None
    command: list[str] | str | None = None
    http: list[HttpRequest] | None = Field(default=None, description="HTTP requests made in order (one transaction)")
    tcp: TcpExchange | None = Field(default=None, description="messages sent over the target's TCP connection")
    args: list[Any] | None = None
    kwargs: dict[str, Any] | None = None
    params: dict[str, ParamSpec] = Field(default_factory=dict)
    timeout: Duration | None = Field(
        default=None, description="the transaction's deadline (python, command, sqlite targets): past it the "
        "transaction is an error, its worker or command is killed and the run is invalid; default "
        "timing.deadline, else 60 s (perflab.drive.load.deadline), a job stream's timeout for a batch load")

    @field_validator("timeout", mode="before")
    @classmethod
    def _timeout(cls, v: Any) -> float | None:
        return None if v is None else parse_duration(v)

    @field_validator("sql", mode="before")
    @classmethod
    def _sql_list(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v

    @field_validator("http", mode="before")
    @classmethod
    def _http_list(cls, v: Any) -> Any:
        return [v] if isinstance(v, dict) else v

    @field_validator("call")
    @classmethod
    def _module_function(cls, v: str | None) -> str | None:
        if v is not None and not re.match(r"^[\w.]+:[\w.]+$", v):
            raise ValueError("expected 'package.module:function'")
        return v

    @model_validator(mode="after")
    def _one_body(self) -> Transaction:
        bodies = [k for k in BODIES if getattr(self, k) is not None]
        if len(bodies) != 1:
            raise ValueError("a transaction needs exactly one body: sql, call, command, http or tcp")
        return self

    @property
    def body_kind(self) -> str:
        return next(k for k in BODIES if getattr(self, k) is not None)

    # The body, typed, for the code that runs it: a target runs only transactions whose body is
    # its own (workload/checks.py refuses the others), so an adapter reads the one it expects.

    def _body(self, kind: str) -> Any:
        value = getattr(self, kind)
        if value is None:
            raise ValueError(f"transaction {self.name!r} has a {self.body_kind} body, not {kind}")
        return value

    def sql_body(self) -> list[str]:
        """The SQL statements (a single string was made a list of one when read)."""
        body: list[str] = self._body("sql")
        return body

    def call_body(self) -> str:
        """'package.module:function'."""
        body: str = self._body("call")
        return body

    def http_body(self) -> list[HttpRequest]:
        body: list[HttpRequest] = self._body("http")
        return body

    def tcp_body(self) -> TcpExchange:
        body: TcpExchange = self._body("tcp")
        return body


# --- scripts, load, timing -----------------------------------------------------------------


class Step(Strict):
    transaction: str
    think: ThinkTime | None = Field(default=None, description="think time before this step; default: the workload's")


class Script(Strict):
    name: str
    weight: float = Field(default=1.0, ge=0)
    steps: list[Step] = Field(min_length=1)

    @field_validator("steps", mode="before")
    @classmethod
    def _names_as_steps(cls, v: Any) -> Any:
        # A bare transaction name is shorthand for a step with the default think time.
        if isinstance(v, list):
            return [{"transaction": s} if isinstance(s, str) else s for s in v]
        return v


class BatchBeside(Strict):
    """A job stream beside the online users (mixed work, the seeds' MIDI/LODI and JES3 runs):
    `initiators` initiators take job after job -- each one run of a script drawn from `scripts`
    by weight -- from the run's start until the window's end (or `jobs` jobs), while the users
    run the other scripts. Each class of transaction gets its own rows."""

    scripts: list[str] = Field(min_length=1, description="the scripts the job stream runs (by weight); the users "
                               "run the others")
    initiators: int = Field(default=1, ge=1, le=10_000, description="jobs run at once")
    jobs: int | None = Field(default=None, ge=1, le=10_000_000, description="stop after this many jobs (default: "
                             "jobs run until the window's end)")


class ClosedLoad(Strict):
    users: Users = Field(ge=1, description="simulated users (closed loop)")
    batch: BatchBeside | None = Field(default=None, description="a job stream run beside the users: mixed work "
                                      "(docs/workloads.md#mixed-work)")


class OpenLoad(Strict):
    rate: Rate = Field(gt=0, description="script starts per second (open loop)")
    arrival: Literal["poisson", "constant"] = "poisson"
    max_in_flight: int = Field(default=1000, ge=1, le=1_000_000,
                               description="arrivals beyond this are dropped and counted as errors")


class BatchLoad(Strict):
    """A job stream (the seeds' CB84 and JES3 benchmarks): `jobs` jobs -- each one run of a script
    chosen by the mix -- run by `initiators` concurrent initiators, as fast as they go. Measured by
    the stream's elapsed time, from the first job's start to the last one's end."""

    jobs: int = Field(ge=1, le=10_000_000, description="jobs in the stream")
    initiators: int = Field(default=1, ge=1, le=10_000, description="jobs run at once (the seeds' initiators)")
    timeout: Duration = Field(default=3600.0, description="give up on the stream after this long (the run fails)")

    @field_validator("timeout", mode="before")
    @classmethod
    def _timeout(cls, v: Any) -> float:
        return parse_duration(v)


def _load_kind(value: Any) -> str | None:
    # Which loop a load block describes is decided by the key the user wrote, so an error
    # names that model's field instead of listing every model's complaints.
    if isinstance(value, dict):
        return "batch" if "jobs" in value else "open" if "rate" in value else "closed"
    for model, tag in ((OpenLoad, "open"), (ClosedLoad, "closed"), (BatchLoad, "batch")):
        if isinstance(value, model):
            return tag
    return None


Load = Annotated[
    Annotated[ClosedLoad, Tag("closed")] | Annotated[OpenLoad, Tag("open")] | Annotated[BatchLoad, Tag("batch")],
    Discriminator(_load_kind),
]


class Timing(Strict):
    stagger: Duration = Field(default=0.0, description="users start spread over this period")
    stabilization: Duration = Field(default=0.0, description="warm-up after the stagger, excluded from results")
    measurement: Duration = Field(default=30.0, description="the measurement window")
    first_think: Literal["full", "residual"] = Field(
        default="full", description="full: each user thinks a whole think after logon; residual: the rest of a "
        "think, drawn as a user of a running system is caught mid-think, so the run is in steady state at once")
    deadline: Duration | None = Field(
        default=None, description="the deadline of every transaction without a timeout: of its own (default 60 s; "
        "a job stream's timeout for a batch load): past it the transaction is an error and the run invalid")
    wake: Literal["auto", "exact", "tick"] = Field(
        default="auto", description="auto: a user whose think ends starts at its time, to tens of microseconds (a "
        "timerfd), and an open loop's arrival at the loop's first turn after its time (it turns for every response), "
        "at the latest at the next point of a 1 ms grid, those of one millisecond together; exact: arrivals woken "
        "for on time too (in the compiled loop; each wake-up costs the driver about 20 us of CPU on a virtual "
        "machine); tick: think ends on the grid too. A start's wait is recorded as lateness; its intended time "
        "stays the schedule's. The Python engine's arrivals are always on its event loop's 1 ms timer")

    @field_validator("stagger", "stabilization", "measurement", mode="before")
    @classmethod
    def _durations(cls, v: Any) -> float:
        return parse_duration(v)

    @field_validator("deadline", mode="before")
    @classmethod
    def _deadline(cls, v: Any) -> float | None:
        if v is None:
            return None
        seconds = parse_duration(v)
        if not seconds > 0:
            raise ValueError("a deadline must be longer than 0")
        return seconds

    @field_validator("measurement")
    @classmethod
    def _positive(cls, v: float) -> float:
        if v <= 0:
            raise ValueError("the measurement period must be longer than 0")
        return v


# --- targets: one model per kind (workload/targets.py), the kinds registered in workload/kinds.py --

if TYPE_CHECKING:  # one of the registered models; what each one is, mypy learns by isinstance
    Target = TargetModel
else:
    Target = KINDS.union()


class ReadyProbe(Strict):
    """How perflab knows a service is ready: a TCP port accepts, a URL answers, or a command succeeds."""

    tcp: int | str | None = Field(default=None, description="port, or host:port")
    http: str | None = Field(default=None, description="URL that must answer (any status below 500)")
    unix: str | None = Field(default=None, description="a Unix-domain socket path that must accept ({run_dir} "
                             "replaced)")
    command: list[str] | None = None
    timeout: Duration = 30.0

    @field_validator("timeout", mode="before")
    @classmethod
    def _timeout(cls, v: Any) -> float:
        return parse_duration(v)

    @model_validator(mode="after")
    def _one(self) -> ReadyProbe:
        if sum(x is not None for x in (self.tcp, self.http, self.unix, self.command)) != 1:
            raise ValueError("give one of tcp, http, unix or command")
        return self


class Service(Strict):
    """A server perflab starts before the run and stops after: the system under test.

    Its process tree (and cgroup) is what the (S) and (V) monitors measure. `{run_dir}`,
    `{workload_dir}` and `{python}` (perflab's interpreter) in command, cwd, env, files and
    version_command are replaced.
    """

    command: list[str] = Field(min_length=1)
    setup: list[list[str]] = Field(default_factory=list, description="commands run in order before the server "
                                   "starts, as its user in its directory (a certificate, a data file); one that "
                                   "fails fails the run")
    cwd: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    user: str | None = Field(default=None, description="OS user to run as (when perflab runs as root)")
    files: dict[str, str] = Field(default_factory=dict,
                                  description="file in the run directory -> template file (relative to the workload)")
    ready: ReadyProbe
    stop_signal: Literal["SIGTERM", "SIGINT", "SIGQUIT", "SIGHUP"] = "SIGTERM"
    stop_timeout: Duration = Field(default=10.0, description="then SIGKILL")
    components: dict[str, str] = Field(default_factory=dict, description="component -> regex on process names")
    version_command: list[str] | None = Field(default=None, description="prints the version (fingerprint sut_version)")
    network: ServiceNetwork | None = Field(default=None, description="run the server in a network namespace of "
                                           "its own, over a veth pair (default: perflab's own network, loopback)")
    isolation: Isolation | None = Field(default=None, description="run the server behind an isolation layer "
                                        "(gVisor), or native (the default)")

    @property
    def address(self) -> str:
        """Where the server is reached: `{service_address}` in the service and the target."""
        if self.network is None:
            return "127.0.0.1"
        import ipaddress

        return str(ipaddress.ip_interface(self.network.address).ip)

    @field_validator("stop_timeout", mode="before")
    @classmethod
    def _timeout(cls, v: Any) -> float:
        return parse_duration(v)


class Driver(Strict):
    """Who generates the load: perflab's own driver, or an external load generator whose log is
    imported into the same run format."""

    kind: Literal["native", "pgbench", "k6", "wrk"] = "native"
    threads: int | None = Field(default=None, ge=1, description="pgbench -j (default 1); wrk runs a thread per user")
    protocol: Literal["simple", "extended", "prepared"] = Field(default="prepared", description="pgbench -M")
    options: list[str] = Field(default_factory=list, description="more command-line options for the tool")
    core: Literal["auto", "python"] = Field(
        default="auto", description="perflab's own driver: `auto` runs the users (and arrivals) of HTTP, TCP and "
        "PostgreSQL targets in its compiled loop wherever it runs them as the Python path would (drive/load/"
        "native_http.py; the run says why where it does not), about half the CPU per request; `python` keeps the "
        "Python path for every workload")


class Placement(Strict):
    """Where the driver and the SUT run: separate CPUs keep the driver's cost out of the SUT's."""

    driver_cpus: list[int] | None = None
    sut_cpus: list[int] | None = None
    workers: Workers | None = Field(default=None, ge=1, description="SUT worker processes (default: users, at most 8)")
    depth: int | None = Field(default=None, ge=1, le=64, description="requests each SUT worker holds at once, one "
                              "running and the rest waiting in its pipe (default 2); a fast SUT on one worker needs "
                              "more, or it idles while the driver catches up")


class Pathlength(Strict):
    """Instructions per transaction (INSTR/CMD (I)) counted under valgrind in a short pass after
    the timed run, never during it: valgrind slows a SUT 20 to 50 times, so the timed rows stay
    native and the counted pass has rows of its own (drive/pathlength/, docs/workloads.md)."""

    transactions: int = Field(default=200, ge=1, le=100_000, description="transactions counted, drawn from the "
                              "workload's mix with its seed")
    warmup: int = Field(default=20, ge=0, le=100_000, description="transactions run first and not counted, so the "
                        "counted ones find the caches warm (Python's, SQLite's schema and statements)")
    timeout: Duration = Field(default=900.0, description="give up counting after this long (INSTR/CMD (I) is then "
                              "na; the timed run is kept)")
    functions: bool = Field(default=True, description="also count each function's instructions (callgrind's dumps "
                            "read function by function): the study report's \"where the pathlength went\"")

    @field_validator("timeout", mode="before")
    @classmethod
    def _timeout(cls, v: Any) -> float:
        return parse_duration(v)


class SampledProfile(Strict):
    """Where a server's CPU time went, sampled (drive/profile.py): perf's software cpu-clock event
    over the SUT's processes during the window. Shares of CPU time with their sampling error,
    never counts of instructions."""

    sampler: Literal["perf"] = Field(default="perf", description="perf record -e cpu-clock (no hardware counters "
                                     "needed)")
    frequency: int = Field(default=999, ge=1, le=20_000, description="samples per second of each process's CPU "
                           "time (perf -F)")


# --- a SUT on another host: its monitor, and drivers on several hosts (docs/distributed.md) -----


def _http_url(v: str | None) -> str | None:
    if v is not None and not re.match(r"^https?://[^/\s]+", v):
        raise ValueError("expected a URL such as http://db1:9100/metrics")
    return v


class RemoteMonitor(Strict):
    """The monitor on the SUT's host, for a SUT perflab does not start: a Prometheus
    node_exporter (and optionally a process-exporter), or `perflab agent`."""

    node_exporter: str | None = Field(default=None, description="node_exporter's URL, e.g. http://db1:9100/metrics: "
                                                               "the SUT host's (H) rows")
    process_exporter: str | None = Field(default=None, description="a process-exporter's URL beside it: (S) and "
                                                                  "per-group (V) rows")
    groups: list[str] | None = Field(default=None, min_length=1, description="process-exporter groups that are the "
                                                                             "SUT (default: every group)")
    agent: str | None = Field(default=None, description="`perflab agent`'s URL, e.g. http://db1:8766: (H), (S), (V) "
                                                       "and the SUT's counters")
    token: str | None = Field(default=None, description="the agent's token")
    token_env: str | None = Field(default=None, description="or the environment variable that holds it")
    cpus: list[int] | None = Field(default=None, min_length=1, description="the SUT's processors on its host "
                                   "(default: the agent's cgroup cpuset, else every CPU the monitor sees)")
    timeout: Duration = Field(default=2.0, description="per request; a monitor silent longer is lost")

    @field_validator("timeout", mode="before")
    @classmethod
    def _timeout(cls, v: Any) -> float:
        return parse_duration(v)

    @field_validator("node_exporter", "process_exporter", "agent")
    @classmethod
    def _urls(cls, v: str | None) -> str | None:
        return _http_url(v)

    @model_validator(mode="after")
    def _one_monitor(self) -> RemoteMonitor:
        if (self.node_exporter is None) == (self.agent is None):
            raise ValueError("give node_exporter: URL or agent: URL (one of them)")
        if self.agent is None and (self.token is not None or self.token_env is not None):
            raise ValueError("token and token_env belong to agent:")
        if self.node_exporter is None and (self.process_exporter is not None or self.groups is not None):
            raise ValueError("process_exporter and groups belong to node_exporter:")
        if self.groups is not None and self.process_exporter is None:
            raise ValueError("groups name process-exporter groups: give process_exporter: URL")
        if self.token is not None and self.token_env is not None:
            raise ValueError("give token or token_env, not both")
        return self


class Drivers(Strict):
    """perflab's driver in several processes placed by Ray on a cluster's nodes."""

    ray: str = Field(description="the cluster: ray://HEAD:10001 (Ray Client), or `auto` (RAY_ADDRESS, or the "
                                 "cluster running on this host)")
    count: int | None = Field(default=None, ge=1, le=256, description="driver processes (default: one per alive "
                                                                      "node)")
    cpus: list[int] | None = Field(default=None, min_length=1, description="pin driver i to CPU cpus[i mod len] on "
                                                                          "its node")
    spread: bool = Field(default=True, description="at most one driver per node (Ray's STRICT_SPREAD) when the "
                                                   "cluster has nodes enough")

    @field_validator("ray")
    @classmethod
    def _address(cls, v: str) -> str:
        if v != "auto" and not re.match(r"^ray://[^/\s]+:\d+$", v):
            raise ValueError("expected ray://HOST:PORT (the head's Ray Client port, 10001 by default) or auto")
        return v


class Workload(Strict):
    name: str
    description: str = ""
    target: Target
    transactions: list[Transaction] = Field(min_length=1)
    scripts: list[Script] = Field(min_length=1)
    init_script: str | None = Field(default=None, description="script each user runs once at logon")
    think: ThinkTime | None = Field(default=None, description="default think time before every step")
    load: Load
    timing: Timing = Field(default_factory=Timing)
    placement: Placement = Field(default_factory=Placement)
    service: Service | None = Field(default=None, description="a server to start for each run: the SUT")
    driver: Driver = Field(default_factory=Driver)
    monitor: RemoteMonitor | None = Field(default=None, description="the monitor on the host of a SUT perflab does "
                                          "not start (docs/distributed.md)")
    drivers: Drivers | None = Field(default=None, description="drivers on several hosts, on Ray "
                                    "(docs/distributed.md)")
    seed: int = Field(default=1, ge=-_INT64, le=_INT64)
    pathlength: Pathlength | None = Field(default=None, description="count instructions per transaction under "
                                          "valgrind in a short pass after the timed run (sqlite, python and "
                                          "command targets)")
    profile: SampledProfile | None = Field(default=None, description="a sampled CPU profile of the SUT's processes "
                                           "during the window (perf cpu-clock): shares of CPU time, for servers "
                                           "perflab starts, where counting cannot reach")
    monitor_interval: Duration = 1.0
    thresholds: list[ThresholdExpression] = Field(
        default_factory=list, description="absolute limits on catalog keys that `perflab run` checks (exit 1 when "
        "one is violated): KEY OP NUMBER, OP one of < <= > >= ==", examples=[["resp_p95_t < 0.5", "error_pct_t < 1"]])

    @field_validator("monitor_interval", mode="before")
    @classmethod
    def _interval(cls, v: Any) -> float:
        seconds = parse_duration(v)
        if seconds < limits.MIN_MONITOR_INTERVAL:
            raise ValueError(f"the monitor samples at least {limits.MIN_MONITOR_INTERVAL:g} s apart")
        return seconds

    def transaction(self, name: str) -> Transaction:
        return next(t for t in self.transactions if t.name == name)

    @property
    def closed(self) -> bool:
        return isinstance(self.load, ClosedLoad)

    @property
    def batch(self) -> bool:
        return isinstance(self.load, BatchLoad)

    def describe_load(self) -> str:
        """The load in words: "8 users (closed loop)", "150/s poisson arrivals (open loop)"..."""
        load = self.load
        if isinstance(load, ClosedLoad):
            if load.batch is not None:
                jobs = "" if load.batch.jobs is None else f" (at most {load.batch.jobs:,} jobs)"
                return (f"{load.users:,} users (closed loop) and a job stream beside them, {load.batch.initiators} "
                        f"at a time{jobs}")
            return f"{load.users:,} users (closed loop)"
        if isinstance(load, OpenLoad):
            return f"{load.rate:,g}/s {load.arrival} arrivals (open loop)"
        return f"a stream of {load.jobs:,} jobs, {load.initiators} at a time"

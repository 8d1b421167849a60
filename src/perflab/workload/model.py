"""The workload file model: what a simulated user does, how many of them, for how long.

A workload is the seeds' "workload definition" (FS7B: weighted scripts, an init script, a
Bactrian think time; DCW: one debit-credit transaction) in a form pydantic validates and
exports as a JSON schema. Validation errors carry the field path; the loader maps it to a
line of the YAML file.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator, model_validator

from perflab.workload.thinktime import ThinkTime

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h)?\s*$")
_UNIT_SECONDS = {None: 1.0, "s": 1.0, "ms": 0.001, "m": 60.0, "min": 60.0, "h": 3600.0}


def parse_duration(value: Any) -> float:
    """Seconds from a number or a string such as '30s', '5m', '250ms', '1h'."""
    if isinstance(value, bool):
        raise ValueError("expected a duration such as 30, '30s', '5m'")
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str) and (m := _DURATION.match(value)):
        seconds = float(m.group(1)) * _UNIT_SECONDS[m.group(2)]
    else:
        raise ValueError(f"expected a duration such as 30, '30s', '5m', got {value!r}")
    if seconds < 0:
        raise ValueError("a duration cannot be negative")
    return seconds


Duration = Annotated[float, Field(json_schema_extra={"examples": [30, "30s", "5m"]})]


class Strict(BaseModel):
    """Unknown fields are errors: a typo in a workload file must not be silently ignored."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


# --- parameter generators -------------------------------------------------------------------


class RandomInt(Strict):
    random_int: tuple[int, int] = Field(description="inclusive range [low, high]")

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
    def _weights_match(self) -> "Choice":
        if self.weights is not None and len(self.weights) != len(self.choice):
            raise ValueError("weights must have one entry per choice")
        return self


class Sequence(Strict):
    sequence: int = Field(default=1, description="first value; each use adds `step`")
    step: int = 1


class Constant(Strict):
    value: Any


ParamSpec = Union[RandomInt, Choice, Sequence, Constant]


# --- transactions ------------------------------------------------------------------------


class Transaction(Strict):
    name: str
    tx_class: str = Field(default="default", alias="class", description="response times are reported per class")
    sql: list[str] | str | None = None
    call: str | None = None
    command: list[str] | str | None = None
    args: list[Any] | None = None
    kwargs: dict[str, Any] | None = None
    params: dict[str, ParamSpec] = Field(default_factory=dict)
    timeout: Duration | None = None

    @field_validator("timeout", mode="before")
    @classmethod
    def _timeout(cls, v: Any) -> float | None:
        return None if v is None else parse_duration(v)

    @field_validator("sql", mode="before")
    @classmethod
    def _sql_list(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v

    @field_validator("call")
    @classmethod
    def _module_function(cls, v: str | None) -> str | None:
        if v is not None and not re.match(r"^[\w.]+:[\w.]+$", v):
            raise ValueError("expected 'package.module:function'")
        return v

    @model_validator(mode="after")
    def _one_body(self) -> "Transaction":
        bodies = [k for k in ("sql", "call", "command") if getattr(self, k) is not None]
        if len(bodies) != 1:
            raise ValueError("a transaction needs exactly one body: sql, call or command")
        return self

    @property
    def body_kind(self) -> str:
        return next(k for k in ("sql", "call", "command") if getattr(self, k) is not None)


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


class ClosedLoad(Strict):
    users: int = Field(ge=1, description="simulated users (closed loop)")


class OpenLoad(Strict):
    rate: float = Field(gt=0, description="script starts per second (open loop)")
    arrival: Literal["poisson", "constant"] = "poisson"
    max_in_flight: int = Field(default=1000, ge=1, description="arrivals beyond this are dropped and counted as errors")


def _load_kind(value: Any) -> str | None:
    # Which loop a load block describes is decided by the key the user wrote, so an error
    # names that model's field instead of listing both models' complaints.
    if isinstance(value, dict):
        return "open" if "rate" in value else "closed"
    return "open" if isinstance(value, OpenLoad) else "closed" if isinstance(value, ClosedLoad) else None


Load = Annotated[
    Union[Annotated[ClosedLoad, Tag("closed")], Annotated[OpenLoad, Tag("open")]],
    Discriminator(_load_kind),
]


class Timing(Strict):
    stagger: Duration = Field(default=0.0, description="users start spread over this period")
    stabilization: Duration = Field(default=0.0, description="warm-up after the stagger, excluded from results")
    measurement: Duration = Field(default=30.0, description="the measurement window")

    @field_validator("stagger", "stabilization", "measurement", mode="before")
    @classmethod
    def _durations(cls, v: Any) -> float:
        return parse_duration(v)

    @field_validator("measurement")
    @classmethod
    def _positive(cls, v: float) -> float:
        if v <= 0:
            raise ValueError("the measurement period must be longer than 0")
        return v


# --- targets ---------------------------------------------------------------------------------


class SqliteTarget(Strict):
    kind: Literal["sqlite"]
    driver: Literal["stdlib", "apsw"] = Field(default="stdlib", description="stdlib sqlite3 or apsw (newer SQLite)")
    database: str = Field(default="sut.db", description="database file; relative paths are inside the run directory")
    setup: list[str] = Field(default_factory=list, description="SQL run once before the run (schema, data)")
    pragmas: dict[str, str | int] = Field(default_factory=dict)
    busy_timeout_ms: int = 30000


class PythonTarget(Strict):
    kind: Literal["python"]
    path: list[str] = Field(default_factory=list, description="directories added to sys.path (relative to the workload)")
    setup: str | None = Field(default=None, description="module:function called once in each worker at start")


class CommandTarget(Strict):
    kind: Literal["command"]
    cwd: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    valgrind: bool = Field(default=False, description="count instructions per transaction with valgrind (slow)")


Target = Annotated[Union[SqliteTarget, PythonTarget, CommandTarget], Field(discriminator="kind")]

_BODY_FOR_TARGET = {"sqlite": "sql", "python": "call", "command": "command"}


class Placement(Strict):
    """Where the driver and the SUT run: separate CPUs keep the driver's cost out of the SUT's."""

    driver_cpus: list[int] | None = None
    sut_cpus: list[int] | None = None
    workers: int | None = Field(default=None, ge=1, description="SUT worker processes (default: users, at most 8)")


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
    seed: int = 1
    monitor_interval: Duration = 1.0

    @field_validator("monitor_interval", mode="before")
    @classmethod
    def _interval(cls, v: Any) -> float:
        return parse_duration(v)

    def transaction(self, name: str) -> Transaction:
        return next(t for t in self.transactions if t.name == name)

    @property
    def closed(self) -> bool:
        return isinstance(self.load, ClosedLoad)


class LocatedError(ValueError):
    """A cross-reference error that knows which field it is about (for file:line messages)."""

    def __init__(self, loc: tuple, message: str):
        super().__init__(message)
        self.loc = loc


def check_references(workload: Workload) -> None:
    """Cross-field checks pydantic cannot locate precisely: names that refer to other entries.

    Raises LocatedError with the field path so the loader can point at the line.
    """
    names = [t.name for t in workload.transactions]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise LocatedError(("transactions",), f"duplicate transaction names: {sorted(dupes)}")
    known = set(names)
    scripts = {s.name for s in workload.scripts}
    for i, script in enumerate(workload.scripts):
        for j, step in enumerate(script.steps):
            if step.transaction not in known:
                raise LocatedError(
                    ("scripts", i, "steps", j, "transaction"),
                    f"unknown transaction {step.transaction!r}; defined: {sorted(known)}",
                )
    if workload.init_script is not None and workload.init_script not in scripts:
        raise LocatedError(("init_script",), f"unknown script {workload.init_script!r}; defined: {sorted(scripts)}")
    if sum(s.weight for s in workload.scripts if s.name != workload.init_script) <= 0:
        raise LocatedError(("scripts",), "at least one script needs a weight above 0")
    body = _BODY_FOR_TARGET[workload.target.kind]
    for i, tx in enumerate(workload.transactions):
        if tx.body_kind != body:
            raise LocatedError(
                ("transactions", i, tx.body_kind),
                f"a {workload.target.kind} target runs transactions with a `{body}` body, not `{tx.body_kind}`",
            )


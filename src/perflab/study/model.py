"""The study file: which configurations to compare, at what load, how many times, how judged.

The seeds' method made explicit: a base configuration and others that differ from it in one
thing (a release, an option, the CPUs online to the SUT, the memory available to it); the base
calibrated to a target utilization and every configuration run at that same load; repetitions
as randomized interleaved blocks; a verdict against a stated margin.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from perflab import caveats as cav
from perflab import limits
from perflab.catalog.registry import REGISTRY, base_key, class_key
from perflab.errors import repeated, some_of
from perflab.stats.criteria import DEFAULT_ALPHA, DEFAULT_MARGIN, Criteria
from perflab.stats.verdict import MIN_BLOCKS
from perflab.workload.fields import Duration
from perflab.workload.model import Rate, Strict, Timing, Users, Workers, parse_bytes, parse_duration


class Configuration(Strict):
    name: str
    set: dict[str, Any] = Field(default_factory=dict,
                                description="workload fields to change, by dotted path: {target.driver: apsw}")
    sut_cpus: list[int] | None = Field(default=None, description="CPUs online to the SUT (the seeds' processors varied off)")
    memory_limit: int | None = Field(default=None, gt=0, description="memory available to the SUT (cgroup limit), "
                                     "e.g. 256M")
    workers: Workers | None = Field(default=None, ge=1)

    @field_validator("memory_limit", mode="before")
    @classmethod
    def _bytes(cls, v: Any) -> int | None:
        return None if v is None else parse_bytes(v)

    def changes(self) -> dict[str, Any]:
        """What this configuration sets, flattened, for the report's software section."""
        out = dict(self.set)
        for key in ("sut_cpus", "memory_limit", "workers"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out


class Calibration(Strict):
    target_util: float = Field(default=90.0, gt=0, le=100, description="UTIL/PROC (S) of the base, percent")
    equal_utilization: bool = Field(default=False, description="calibrate every configuration to the target (the "
                                    "seeds' equal-utilization tables) instead of running all at the base's load")
    tolerance: float = Field(default=4.0, gt=0, description="accept within this many points of the target")
    start_users: Users | None = Field(default=None, ge=1, description="default: the workload's users")
    start_rate: Rate | None = Field(default=None, gt=0)
    max_users: Users = Field(default=5000, ge=1)
    max_steps: int = Field(default=5, ge=1)
    measurement: float = Field(default=5.0, gt=0, description="measurement period of each calibration run")

    @field_validator("measurement", mode="before")
    @classmethod
    def _duration(cls, v: Any) -> float:
        return parse_duration(v)


class LoadRule(Strict):
    calibrate: Calibration | None = None
    users: Users | None = Field(default=None, ge=1)
    rate: Rate | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _one(self) -> LoadRule:
        if sum(x is not None for x in (self.calibrate, self.users, self.rate)) > 1:
            raise ValueError("give one of calibrate, users or rate")
        return self


class Gates(Strict):
    @field_validator("util_band")
    @classmethod
    def _band(cls, v: tuple[float, float] | None) -> tuple[float, float] | None:
        if v is not None and not 0 <= v[0] < v[1] <= 100:
            raise ValueError("expected [low, high] percent with 0 <= low < high <= 100")
        return v

    max_error_rate: float = Field(default=cav.MAX_ERROR_RATE, ge=0, le=1)
    util_band: tuple[float, float] | None = Field(default=None, description="UTIL/PROC (S) band for base runs; "
                                                  "default: ± 10 around what the calibration reached at its chosen load")
    max_etr_trend: float = Field(default=cav.MAX_DRIFT, gt=0, description="largest drift across the window: closed "
                                 "loop, the relative change of ETR (T); open loop, completions short of arrivals")


#: Sweep factors that are not workload fields: the load, and what a configuration sets besides `set`.
SPECIAL_FACTORS = ("users", "rate", "sut_cpus", "memory_limit", "workers")


class Sweep(Strict):
    """One factor over a list of values. With one configuration: a curve. With several: every
    configuration at every value (a two-factor design, the seeds' release x storage size or
    release x processors), each compared with the base at the same value."""

    factor: str = Field(description="users, rate, sut_cpus, memory_limit, workers, or any workload field by dotted "
                                    "path (e.g. transactions.work.kwargs.cpu_ms)")
    values: list[Any] = Field(min_length=2, max_length=100)

    @field_validator("factor")
    @classmethod
    def _factor(cls, v: str) -> str:
        import re

        if v not in SPECIAL_FACTORS and not re.fullmatch(r"[A-Za-z_][\w-]*(\.[\w-]+)*", v):
            raise ValueError(f"expected one of {', '.join(SPECIAL_FACTORS)} or a dotted workload path, got {v!r}")
        return v

    @model_validator(mode="after")
    def _values(self) -> Sweep:
        """A special factor's values must be what that factor takes (checked here, so a bad value
        is a file:line error before the study directory exists)."""
        for i, value in enumerate(self.values):
            ok = True
            check = {"users": limits.check_users, "workers": limits.check_workers, "rate": limits.check_rate}
            if self.factor in ("users", "workers"):
                ok = isinstance(value, int) and not isinstance(value, bool) and value >= 1
            elif self.factor == "rate":
                ok = (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
                      and value > 0)
            if ok and self.factor in check:
                try:
                    check[self.factor](value)
                except ValueError as exc:
                    raise ValueError(f"values[{i}]: {exc} (got {value!r})") from None
            elif self.factor == "sut_cpus":
                ok = isinstance(value, list) and bool(value) and all(isinstance(c, int) and c >= 0 for c in value)
            elif self.factor == "memory_limit":
                try:
                    ok = parse_bytes(value) > 0
                except ValueError:
                    ok = False
            if not ok:
                raise ValueError(f"values[{i}]: {value!r} is not a valid {self.factor}")
        if len({repr(v) for v in self.values}) != len(self.values):
            raise ValueError("sweep values must differ")
        return self


class InterleavedTrials(Strict):
    """`arrangement: interleaved`: many short trials, one configuration at a time, the two
    configurations in a random order within each pair (Abedi & Brecht, ICPE 2017: randomized
    multiple interleaved trials). Like one at a time it is unbiased by construction -- each run
    has the machine to itself -- and its short pairs, seconds apart, see the host in nearly one
    state, so the host's slow wander cancels from each pair's ratio as it does in a duet."""

    pairs: int = Field(default=24, ge=MIN_BLOCKS, le=int(limits.MAX_BLOCKS.default),
                       description="the trials of each configuration (a pair is one block)")
    stabilization: Duration = Field(default=2.0, description="each trial's warm-up")
    measurement: Duration = Field(default=4.0, description="each trial's window")

    @field_validator("stabilization", "measurement", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> Any:
        return parse_duration(value)


class SelfCalibration(Strict):
    """A pair arrangement's study measuring its own bias with knob blocks (study/knob.py)."""

    mode: Literal["auto", "on", "off"] = Field(
        default="auto", description="auto: when this host has no bias bound of its own for the arrangement and the "
                                    "kind of target (store/bias.py) and perflab can add a known cost to its "
                                    "transactions (SQLite, python targets); on: always (where it can); off: never")
    added: float = Field(default=0.10, gt=0.01, le=0.5, description="the knob's cost, as a share of the base's CPU per "
                                                                     "transaction (about; its truth is measured)")
    blocks: int | None = Field(default=None, ge=2, le=int(limits.MAX_BLOCKS.default),
                               description="knob blocks, interleaved with the study's (default: as many)")
    truth_runs: int = Field(default=3, ge=2, le=20, description="mixed runs that measure the knob's truth alone")
    truth_measurement: Duration = Field(default=12.0, description="each mixed run's window")

    @field_validator("truth_measurement", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> Any:
        return parse_duration(value)


class Study(Strict):
    name: str
    title: str | None = None
    workload: str = Field(description="workload file, relative to the study file")
    configurations: list[Configuration] = Field(default_factory=list)
    load: LoadRule = Field(default_factory=LoadRule)
    blocks: int = Field(default=6, ge=1, le=int(limits.MAX_BLOCKS.default),
                        description="randomized interleaved blocks (repetitions); a "
                        f"comparison needs at least {MIN_BLOCKS} (fewer give no interval), a sweep at least 1")
    seed: int = 1
    margin: float = Field(default=DEFAULT_MARGIN, gt=0, lt=0.5, description="equivalence margin: 0.03 = ±3%")
    alpha: float | None = Field(default=None, gt=0, lt=0.5,
                                description=f"the one error rate (default {DEFAULT_ALPHA}): every interval is at "
                                            "1 - alpha (1 - alpha/k in a family of k rows tested together) and "
                                            "decides its verdict; the report's claims of a change together err at "
                                            "most alpha of the time")
    confidence: float | None = Field(default=None, gt=0.5, lt=1, description="older spelling: alpha = 1 - confidence")
    family_alpha: float | None = Field(default=None, gt=0, lt=0.5, description="older spelling of alpha")
    timing: Timing | None = None
    gates: Gates = Field(default_factory=Gates)
    sweep: Sweep | None = None
    metrics: list[str] | None = Field(default=None, description="metric keys to compare (default: the standard set)")
    notes: list[str] = Field(default_factory=list, description="remarks the report prints with its General "
                             "Observations (how a short default differs from the full study, for example)")
    arrangement: Literal["one-at-a-time", "duet", "split-duet", "interleaved", "auto"] | None = Field(
        default=None, description="how a block's two runs run (docs/studies.md): one-at-a-time (the default), "
                                  "interleaved (one at a time in many short pairs: `interleaved`), duet "
                                  "(at the same time, sharing the SUT's CPUs: a slow spell of the host slows both and "
                                  "cancels from their ratio), split-duet (at the same time, each SUT on CPUs of its "
                                  "own, swapped from block to block) or auto (perflab chooses from the CPU the driver "
                                  "and the SUT used in calibration, and says why); the report states the "
                                  "arrangement's measured bias (docs/accuracy.md)")
    duet: bool = Field(default=False, description="shorthand for `arrangement: duet`")
    self_calibration: SelfCalibration = Field(default_factory=SelfCalibration,
                                              description="a duet's or split duet's own measurement of its bias, in "
                                                          "knob blocks beside its blocks (study/knob.py)")
    interleaved: InterleavedTrials = Field(default_factory=InterleavedTrials,
                                           description="the trials of `arrangement: interleaved` (its pairs replace "
                                                       "`blocks`, its windows the study's timing)")
    gate_metrics: list[str] = Field(default_factory=lambda: [REGISTRY.role("capacity")[0]], min_length=1,
                                    description="the primary metrics: their verdicts answer the study and decide "
                                                "its exit code")

    @property
    def criteria(self) -> Criteria:
        return Criteria.from_fields(self.margin, self.confidence, self.family_alpha, self.alpha)

    @property
    def runs_together(self) -> bool:
        """A block's two runs run at the same time (a duet or a split duet)."""
        return self.arrangement in ("duet", "split-duet") or (self.arrangement is None and self.duet)

    @property
    def chosen_arrangement(self) -> Literal["one-at-a-time", "duet", "split-duet", "interleaved", "auto"]:
        return self.arrangement or ("duet" if self.duet else "one-at-a-time")


def check_study(study: Study, aa: bool = False) -> None:
    """Cross-field checks, located for file:line messages (LocatedError). `aa`: the study will run
    its base against itself (`--aa`), so one configuration is enough."""
    from perflab.workload.checks import LocatedError

    twice = repeated([c.name for c in study.configurations])
    if twice:
        first = min(twice, key=lambda n: twice[n][1])
        others = f"; repeated names: {some_of(list(twice))}" if len(twice) > 1 else ""
        raise LocatedError(("configurations", twice[first][1], "name"),
                           f"configuration names must be unique: {first!r} is given again (first at "
                           f"configurations[{twice[first][0]}]){others}")
    if study.sweep is None and len(study.configurations) < (1 if aa else 2):
        raise LocatedError(("configurations",), "a comparison needs at least two configurations (the first is the base)")
    if study.sweep is None and study.blocks < MIN_BLOCKS:
        raise LocatedError(("blocks",), f"a comparison needs at least {MIN_BLOCKS} blocks (fewer give no interval); "
                                        f"got {study.blocks}")
    field = ("arrangement",) if study.arrangement is not None else ("duet",)
    if study.arrangement is not None and study.duet and study.arrangement != "duet":
        raise LocatedError(("duet",), f"`duet: true` is `arrangement: duet`; the file also says arrangement "
                                      f"{study.arrangement}: give one")
    what = study.chosen_arrangement
    if study.runs_together and study.sweep is not None:
        raise LocatedError(field, f"a {what} runs two configurations side by side: it cannot also sweep a factor")
    if study.runs_together and not aa and len(study.configurations) != 2:
        raise LocatedError(field, f"a {what} runs exactly two configurations side by side; got "
                                  f"{len(study.configurations)}")
    try:
        _ = study.criteria  # its one validity rule (perflab.stats.criteria)
    except ValueError as exc:
        given = "alpha" if study.alpha is not None else "confidence"
        raise LocatedError((given,), str(exc)) from None
    concurrent_only = [k for k in study.gate_metrics if base_key(k) in REGISTRY.role("response_rows")
                       or REGISTRY.machine_wide(base_key(k))]
    if study.runs_together and concurrent_only:
        key = concurrent_only[0]
        why = ("its response times depend on how they shared it" if key in REGISTRY.role("response_rows")
               else "this machine-wide row counts both")
        raise LocatedError(("gate_metrics", study.gate_metrics.index(key)),
                           f"{key} cannot be a primary metric of a {what}: both runs of a block share the machine, "
                           f"so {why}; "
                           f"judge it one configuration at a time (arrangement: one-at-a-time)")
    if study.sweep is not None and study.load.calibrate is not None and study.sweep.factor in ("users", "rate"):
        raise LocatedError(("sweep", "factor"), "a sweep over the load cannot also calibrate the load")
    from perflab.catalog.registry import COMPONENT_COMPARED

    for name in ("metrics", "gate_metrics"):
        keys = getattr(study, name) or []
        for i, key in enumerate(keys):
            if class_key(key) is None and REGISTRY.unknown_keys([key], COMPONENT_COMPARED):
                raise LocatedError((name, i), f"unknown metric key {key!r}: `perflab metrics` lists the keys; "
                                              f"a class's row is <key>.<class>, e.g. avg_last_t.online")

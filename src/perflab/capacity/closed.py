"""The closed-loop model of a users sweep: measured demand + think time → MVA → users supported.

The system as the seeds' TPNS (and perflab's closed-loop driver) sees it: N users think for Z,
then wait R for a transaction, which costs D seconds of the SUT's CPU (PBT/CMD (S) / 1000) on C
processors, plus a fixed delay d that is not spent queueing for that CPU (the driver's share,
the IPC to the SUT, wake-ups). With C > 1 the CPUs are one multi-server centre, taken by
Seidmann's approximation: a single server of demand D/C plus a delay D·(C − 1)/C (exact for
C = 1, within a few % elsewhere -- stated with every result for C > 1).

Parameters come from measurements, never from a curve fit to throughput:

* D -- geometric mean of the per-run PBT/CMD (S) over the fitting levels' runs, weighted by
  their transaction counts; its interval is the t-interval of those logs (the run-to-run
  spread), and it is what the users-supported intervals propagate.
* Z -- mean AVG THINK (T) over the fitting runs (projections); beside a measured level, that
  level's own AVG THINK (T), because think time is the workload's input, not an output.
* d -- the one fitted number: least squares on ln AVG LAST (T) over the fitting runs, each run
  with its own D and Z. Saturated runs barely constrain it (there R ≈ N·D/C − Z whatever d is),
  which least squares on the model's own sensitivity handles without special cases.

Who calls: `summary.capacity_summary` and the `perflab capacity mva|bounds|supported` commands.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np

from perflab import caveats as cav
from perflab.capacity.points import SweepData, check_monotone, check_response_monotone, require_metric
from perflab.capacity.usl import EXTRAPOLATION_FACTOR
from perflab.caveats import Caveat, Code
from perflab.errors import InputError, NoCurve
from perflab.records.study import StudyRun
from perflab.values import finite

#: population beyond which users-supported searches stop (and say so) instead of looping on
MAX_USERS = 1_000_000


@dataclass(frozen=True)
class Prediction:
    """The model at population *n*: throughput *x* (tx/s), response *r* (s, excluding think
    time), utilization per processor *u* (fraction)."""

    n: int
    x: float
    r: float
    u: float


def mva_steps(demand: float, processors: float, delay: float, think: float, n_max: int):
    """Exact single-class MVA, one population at a time: yields Prediction(1), ..., (n_max).

    One queueing centre (the CPUs, by Seidmann) and delays; a scalar loop because it may run to
    a million users when searching for a response-time limit. Called by `ClosedModel`.
    """
    dq = demand / processors
    dd = demand * (processors - 1.0) / processors + delay
    q = 0.0
    for k in range(1, n_max + 1):
        r = dq * (1.0 + q)  # arrival theorem: the queue seen is the one at k − 1
        x = k / (think + dd + r)
        q = x * r
        yield Prediction(k, x, r + dd, x * dq)


@dataclass(frozen=True)
class ClosedModel:
    """MVA parameters estimated from a users sweep (see the module docstring)."""

    demand: float
    demand_ci: tuple[float, float]
    demand_df: int
    processors: float
    delay: float
    think: float
    fit_levels: tuple[float, ...]
    n_runs: int
    confidence: float
    max_measured: float
    notes: tuple[Caveat, ...] = ()

    def predict(self, n: int, *, think: float | None = None, demand: float | None = None) -> Prediction:
        """The model at population *n* (optionally with another think time or demand)."""
        steps = deque(mva_steps(self.demand if demand is None else demand, self.processors, self.delay,
                                self.think if think is None else think, int(n)), maxlen=1)
        last = steps[0] if steps else None
        if last is None:
            raise InputError(f"population must be ≥ 1, got {n!r}")
        return last

    def curve(self, n_max: int) -> list[Prediction]:
        """The model at every population 1..n_max."""
        return list(mva_steps(self.demand, self.processors, self.delay, self.think, int(n_max)))

    def to_dict(self) -> dict:
        d = asdict(self)
        d["demand_ci"] = [_num(v) for v in self.demand_ci]
        d["notes"] = [n.model_dump(mode="json") for n in self.notes]
        return d


#: The seeds' two rules for the users a configuration supports: its processor at a target
#: utilization, or its response time at a limit.
Rule = Literal["utilization", "response"]


@dataclass(frozen=True)
class Supported:
    """Users supported under one rule: *users* (None when beyond MAX_USERS) with the interval
    [low, high] the demand's interval implies, and the model's x, r, u there."""

    rule: Rule
    limit: float
    users: int | None
    low: int | None
    high: int | None
    x: float | None
    r: float | None
    u: float | None
    extrapolated: bool
    note: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def fit_closed_model(
    data: SweepData,
    *,
    fit: list[float] | None = None,
    think: float | None = None,
    processors: float | None = None,
) -> ClosedModel:
    """Estimate D, Z and d from the sweep's levels *fit* (default: all). InputError "no curve"
    when the sweep is not over users, lacks a metric, or is not one monotone curve."""
    if data.factor != "users":
        raise NoCurve(f"no curve: the closed-loop model needs a sweep over users (simulated users with "
                         f"think time), this one varies {data.factor}; use `perflab capacity usl`")
    for key, label in (("etr_t", "ETR (T)"), ("avg_last_t", "AVG LAST (T)"), ("avg_think_t", "AVG THINK (T)"),
                       ("pbt_cmd_s", "PBT/CMD (S)")):
        require_metric(data, key, label, "the closed-loop model")
    check_monotone(data)
    check_response_monotone(data)
    notes: list[Caveat] = []
    c = processors if processors is not None else data.processors
    if c is None:
        c = 1.0
        notes.append(cav.remark(Code.MODEL_FIT, "PROCESSORS not recorded: 1 assumed", processors=1))
    if c > 1:
        notes.append(cav.remark(Code.MODEL_FIT, f"{c:g} processors taken as one multi-server centre by Seidmann's "
                                "approximation (a few % off exact near the knee)", processors=c))
    levels = [data.level(v) for v in fit] if fit else list(data.levels)
    runs = [f for f in (FitRun.of(level.n, r) for level in levels for r in level.runs) if f is not None]
    if not runs:
        raise NoCurve("no curve: no fitting run has PBT/CMD (S), AVG THINK (T) and AVG LAST (T)")
    demand, demand_ci, df = _pooled_demand(runs, data.confidence)
    conf = data.confidence
    if df < 1:
        notes.append(cav.remark(Code.MODEL_FIT, "fewer than 2 effective fitting runs (runs weighted by their "
                                "transactions): the demand has no run-to-run spread to give it an interval"))
    z = think if think is not None else float(np.mean([r.think for r in runs]))
    delay = _fit_delay(runs, c)
    if delay <= 0.0:
        notes.append(cav.remark(Code.MODEL_FIT, "the measured response times are at or below the model's CPU "
                                "residence alone (delay 0): service times less variable than exponential, or demand "
                                "overstated", delay=0.0))
    return ClosedModel(demand, demand_ci, df, float(c), delay, z,
                       tuple(level.n for level in levels), len(runs), conf, data.max_n, tuple(notes))


@dataclass(frozen=True)
class FitRun:
    """One fitting run as the model reads it: its population *n*, its demand D (s of CPU per
    command: PBT/CMD (S) / 1000), think time Z and response R (s), and its transaction count
    (the demand's weight; None when not recorded)."""

    n: float
    demand: float
    think: float
    response: float
    weight: float | None

    @classmethod
    def of(cls, n: float, run: StudyRun) -> FitRun | None:
        """The run's fitting values; None when PBT/CMD (S), AVG THINK (T) or AVG LAST (T) is
        missing or not positive."""
        pbt, think, last = (finite(run.metric(k)) for k in ("pbt_cmd_s", "avg_think_t", "avg_last_t"))
        if pbt is None or think is None or last is None or min(pbt, think, last) <= 0:
            return None
        return cls(n, pbt / 1000.0, think, last, finite(run.metric("tx_ok")))


def _pooled_demand(runs: list[FitRun], confidence: float) -> tuple[float, tuple[float, float], int]:
    """D as the transaction-weighted geometric mean of the runs' PBT/CMD (S), with a t-interval.

    Weighted by each run's transaction count (TX OK) when every run has one: a run's mean cost
    per command is an average over its transactions, so a 4 s run at 1 user (170 commands)
    says far less about D than one at 18 users (2,000). The interval uses the weighted spread of
    the logs with Kish's effective number of runs, n_eff = (Σw)²/Σw², and n_eff − 1 df; with
    equal weights this is the ordinary t-interval of the logs.
    """
    from scipy import stats  # here, not at import: scipy costs most of a second at every command's start
    logs = np.log([r.demand for r in runs])
    w = np.array([math.nan if r.weight is None else r.weight for r in runs], dtype=float)
    if not (np.all(np.isfinite(w)) and np.all(w > 0)):
        w = np.ones(len(logs))
    m = float(np.sum(w * logs) / w.sum())
    n_eff = float(w.sum() ** 2 / np.sum(w**2))
    df = int(math.floor(n_eff + 1e-9)) - 1
    demand = math.exp(m)
    if len(logs) < 2 or df < 1:
        return demand, (math.nan, math.nan), max(df, 0)
    var = float(np.sum(w * (logs - m) ** 2) / w.sum()) * n_eff / (n_eff - 1.0)
    t = float(stats.t.ppf(0.5 + confidence / 2.0, df))
    half = t * math.sqrt(var / n_eff)
    return demand, (demand * math.exp(-half), demand * math.exp(half)), df


def _fit_delay(runs: list[FitRun], processors: float) -> float:
    """d ≥ 0 minimizing Σ (ln R_measured − ln R_model(d))² over the fitting runs."""
    from scipy import optimize  # here, not at import: scipy costs most of a second at every command's start

    def loss(d: float) -> float:
        total = 0.0
        for r in runs:
            p = _predict_one(int(round(r.n)), r.demand, processors, d, r.think)
            total += (math.log(r.response) - math.log(p.r)) ** 2
        return total

    upper = max(r.response for r in runs)
    res = optimize.minimize_scalar(loss, bounds=(0.0, upper), method="bounded", options={"xatol": upper * 1e-6})
    best = float(res.x)
    return 0.0 if loss(0.0) <= loss(best) else best


def _predict_one(n: int, demand: float, processors: float, delay: float, think: float) -> Prediction:
    steps = deque(mva_steps(demand, processors, delay, think, n), maxlen=1)
    if not steps:
        raise ValueError(f"no MVA prediction for {n} users")  # (a run has one user at least)
    return steps[0]


def supported_at_utilization(model: ClosedModel, target: float) -> Supported:
    """The most users whose modelled UTIL/PROC stays ≤ *target* (a fraction): the seeds' "base
    release at 90 % processor utilization" rule. Interval: the same at the demand's CI ends."""
    if not 0.0 < target < 1.0:
        raise InputError(f"target utilization must be between 0 and 100 %, got {100 * target:g} %",
                         field="--target-util")
    return _supported(model, "utilization", target)


def supported_at_response(model: ClosedModel, limit: float) -> Supported:
    """The most users whose modelled AVG LAST (T) stays ≤ *limit* seconds: the seeds' "AVG LAST
    (T) < 1 s" acceptance rule. Interval: the same at the demand's CI ends."""
    if not limit > 0:
        raise InputError(f"response-time limit must be positive, got {limit!r}", field="--response-limit")
    return _supported(model, "response", limit)


def _last_within(demand: float, model: ClosedModel, rule: Rule, limit: float) -> Prediction | None:
    """The largest population whose utilization (or response) is within *limit*: Prediction(0)
    when even one user exceeds it, None when MAX_USERS still do not. The MVA recursion inline,
    without objects per step, because a response limit can be a million users away."""
    dq = demand / model.processors
    dd = demand * (model.processors - 1.0) / model.processors + model.delay
    think = model.think
    q = 0.0
    prev = (0, 0.0, 0.0)
    by_util = rule == "utilization"
    for k in range(1, MAX_USERS + 1):
        r = dq * (1.0 + q)
        x = k / (think + dd + r)
        q = x * r
        if (x * dq if by_util else r + dd) > limit:
            n, px, pr = prev
            return Prediction(n, px, pr + dd if n else 0.0, px * dq)
        prev = (k, x, r)
    return None


def _supported(model: ClosedModel, rule: Rule, limit: float) -> Supported:
    at = _last_within(model.demand, model, rule, limit)
    users = None if at is None else at.n
    low = high = None
    if all(math.isfinite(v) for v in model.demand_ci):
        worse = _last_within(model.demand_ci[1], model, rule, limit)  # more CPU per command: fewer users
        better = _last_within(model.demand_ci[0], model, rule, limit)
        low = None if worse is None else worse.n
        high = None if better is None else better.n
    note = ""
    if users is None:
        note = f"more than {MAX_USERS:,} users: beyond what this model is searched for"
    elif users == 0:
        note = f"one user already exceeds the {rule} limit"
    extrapolated = users is None or users > EXTRAPOLATION_FACTOR * model.max_measured
    if users is not None and extrapolated:
        note = (f"extrapolated: {users} users is beyond {EXTRAPOLATION_FACTOR:g}× the largest measured "
                f"point ({model.max_measured:g}); measure there before relying on it")
    found = at if at is not None and at.n > 0 else None
    return Supported(rule, limit, users, low, high, found.x if found else None, found.r if found else None,
                     found.u if found else None, extrapolated, note)


_num = finite



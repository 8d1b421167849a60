"""Models beside the measurements, level by level: MVA's prediction and the operational-law
bounds at each measured population, with the measured ETR (T), AVG LAST (T) and UTIL/PROC (S).

Think time at each level is that level's AVG THINK (T) -- the workload's input as the driver
delivered it -- so no measured output (throughput, response, utilization) of a level enters its
own prediction unless it is a fitting level. The demand is the model's pooled D, or with
`demand="point"` the level's own PBT/CMD (S): the CPU per command that level actually cost
(with random service times a short run's mean cost differs from the long-run mean, and
"point" separates that sampling noise from the queueing model's error).

Called by `summary.capacity_summary` and `perflab capacity mva|bounds`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from perflab.capacity.closed import ClosedModel
from perflab.capacity.laws import asymptotic_bounds
from perflab.capacity.points import SweepData
from perflab.errors import InputError


@dataclass(frozen=True)
class LevelPrediction:
    """MVA at one measured level: inputs (think, demand), prediction, measurement, and the
    relative errors predicted/measured − 1."""

    n: float
    fit: bool
    runs: int
    think: float
    demand: float
    etr_t: float
    etr_t_measured: float
    avg_last_t: float
    avg_last_t_measured: float
    util_proc_s: float
    util_proc_s_measured: float | None
    etr_error: float
    avg_last_error: float

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class LevelBounds:
    """Asymptotic bounds at one measured level and whether the measurement lies inside them
    (judged with the demand's interval and 3 counting SEs of the measured ETR, so noise alone
    does not make a violation)."""

    n: float
    x_low: float
    x_high: float
    r_low: float
    r_high: float
    etr_t_measured: float
    avg_last_t_measured: float
    inside: bool
    note: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def predictions(model: ClosedModel, data: SweepData, demand: str = "pooled") -> list[LevelPrediction]:
    """MVA beside every measured level (see the module docstring for *demand*)."""
    if demand not in ("pooled", "point"):
        raise InputError(f"demand must be 'pooled' or 'point', got {demand!r}", field="--demand")
    out = []
    for level in data.levels:
        # the metrics the model was fitted from (fit_closed_model requires them at every level)
        z = level.measured("avg_think_t")
        d = model.demand if demand == "pooled" else level.measured("pbt_cmd_s") / 1000.0
        p = model.predict(int(round(level.n)), think=z, demand=d)
        x, r = level.measured("etr_t"), level.measured("avg_last_t")
        u = level.mean("util_proc_s")
        out.append(LevelPrediction(level.n, level.n in model.fit_levels, len(level.runs), z, d, p.x, x, p.r, r,
                                   100.0 * p.u, u, p.x / x - 1.0, p.r / r - 1.0))
    return out


def knee(model: ClosedModel) -> float:
    """N* = (D + d + Z) / D_max: where the two asymptotes of throughput cross."""
    return (model.demand + model.delay + model.think) / (model.demand / model.processors)


def bounds(model: ClosedModel, data: SweepData) -> list[LevelBounds]:
    """Operational-law bounds from the pooled demand and each level's think time.

    The C processors are C centres of demand D/C (so X ≤ C/D); the delay d does not queue, so
    for bounding it is part of the think time, and it is added back to the response bounds.
    """
    out = []
    lo_d, hi_d = model.demand_ci if all(math.isfinite(v) for v in model.demand_ci) else (model.demand,) * 2
    c = int(round(model.processors))
    for level in data.levels:
        z = level.measured("avg_think_t") + model.delay  # (as in predictions)
        b = asymptotic_bounds([model.demand / c] * c, level.n, think_time=z)
        loose_high = asymptotic_bounds([lo_d / c] * c, level.n, think_time=z).x_high
        loose_low = asymptotic_bounds([hi_d / c] * c, level.n, think_time=z).x_low
        x, r = level.measured("etr_t"), level.measured("avg_last_t")
        # the measured ETR is a count over a window: allow 3 of its Poisson SEs, 1/√count
        count = sum(level.values("tx_ok"))
        slack = 3.0 / math.sqrt(count) if count > 0 else 0.0
        inside = loose_low * (1 - slack) <= x <= loose_high * (1 + slack)
        note = ""
        if inside:
            pass
        elif x > loose_high:
            note = (f"ETR above the bound by {100 * (x / loose_high - 1):.1f} %: this level needed less CPU per "
                    "command than the pooled demand")
        elif x < loose_low:
            note = "ETR below the pessimistic bound: a bottleneck the model does not have (locks, I/O, driver)"
        out.append(LevelBounds(level.n, b.x_low, b.x_high, b.r_low + model.delay, b.r_high + model.delay, x, r,
                               inside, note))
    return out

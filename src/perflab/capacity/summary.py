"""Everything capacity planning says about one sweep study, as data a report can render.

`capacity_summary(study)` is pure: it takes a `StudySource` (the StudyDocument, e.g. from
`source.read_study`, and the file it came from if any) and returns a `CapacitySummary`; it never prints, never reads files and
never raises for a model that cannot be built -- that section is empty and `notes` says
"no curve: <why>". It raises InputError only when the document is not a sweep over a numeric
factor, or its levels are not one system (two points at one value, runs that disagree on
PROCESSORS although the sweep does not vary it).

Called by `perflab capacity summary` and, later, by the study reports' Capacity section.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from perflab import caveats as cav
from perflab.capacity.beside import LevelBounds, LevelPrediction, bounds, knee, predictions
from perflab.capacity.closed import (
    ClosedModel,
    Supported,
    fit_closed_model,
    supported_at_response,
    supported_at_utilization,
)
from perflab.capacity.laws import RESPONSE_LIMIT_S, TARGET_UTIL
from perflab.capacity.points import SweepData, sweep_data
from perflab.capacity.scaling import Scaling, sweep_scaling
from perflab.capacity.source import StudySource
from perflab.capacity.usl import EXTRAPOLATION_FACTOR, USLFit
from perflab.capacity.uslsweep import LevelResidual, fit_sweep_usl
from perflab.caveats import Caveat, Code
from perflab.errors import InputError, NoCurve

#: population samples of the model curves (1 .. 2× the largest measured level)
CURVE_POINTS = 60


@dataclass(frozen=True)
class MeasuredPoint:
    """One sweep level as measured: geometric means over its valid runs (None: not measured)."""

    n: float
    label: str
    runs: int
    excluded: int
    etr_t: float | None
    avg_last_t: float | None
    avg_think_t: float | None
    pbt_cmd_s: float | None
    util_proc_s: float | None
    itr_s: float | None


@dataclass(frozen=True)
class CurvePoint:
    """The models at population *n* (None where a model was not built). *beyond_data*: n is
    past the largest measured level (the curve stops at 2× it, the extrapolation limit)."""

    n: float
    usl_etr_t: float | None
    mva_etr_t: float | None
    mva_avg_last_t: float | None
    mva_util_proc_s: float | None
    bound_x_high: float | None
    bound_x_low: float | None
    beyond_data: bool


@dataclass
class CapacitySummary:
    """What `capacity_summary` returns.

    * `measured` -- one MeasuredPoint per valid sweep level, in increasing order;
    * `usl`, `usl_residuals` -- the USL fit of ETR (T) (α, β, γ with intervals, peak N and peak
      throughput with intervals, covariance, warnings) and each level against it; None/[] when
      not fitted (see `notes`);
    * `model` -- the closed-loop MVA parameters (demand D with interval, think Z, delay d,
      processors); `predictions` -- MVA beside each measured level; `bounds` -- asymptotic
      bounds at each level; `knee` -- N* where the bounds' asymptotes cross (users sweeps only);
    * `supported` -- users supported at the target utilization and at the response-time limit,
      each with its interval and an `extrapolated` flag;
    * `curve` -- CurvePoints from 1 to 2× the largest measured level, for plotting;
    * `scaling` -- ITRR per processor for sut_cpus sweeps;
    * `notes` -- caveats and every "no curve: <why>", in the order met.
    """

    study_id: str | None
    title: str
    factor: str
    confidence: float
    target_util: float
    response_limit: float
    measured: list[MeasuredPoint]
    usl: USLFit | None = None
    usl_residuals: list[LevelResidual] = field(default_factory=list)
    model: ClosedModel | None = None
    predictions: list[LevelPrediction] = field(default_factory=list)
    bounds: list[LevelBounds] = field(default_factory=list)
    knee: float | None = None
    supported: list[Supported] = field(default_factory=list)
    curve: list[CurvePoint] = field(default_factory=list)
    scaling: Scaling | None = None
    notes: list[Caveat] = field(default_factory=list)

    def to_dict(self) -> dict:
        """JSON-ready (no NaN or inf: those become None)."""
        return json_clean({
            "study_id": self.study_id, "title": self.title, "factor": self.factor,
            "confidence": self.confidence, "target_util": self.target_util,
            "response_limit": self.response_limit,
            "measured": [asdict(p) for p in self.measured],
            "usl": self.usl.to_dict() if self.usl else None,
            "usl_residuals": [r.to_dict() for r in self.usl_residuals],
            "model": self.model.to_dict() if self.model else None,
            "predictions": [p.to_dict() for p in self.predictions],
            "bounds": [b.to_dict() for b in self.bounds],
            "knee": self.knee,
            "supported": [s.to_dict() for s in self.supported],
            "curve": [asdict(c) for c in self.curve],
            "scaling": self.scaling.to_dict() if self.scaling else None,
            "notes": [n.model_dump(mode="json") for n in self.notes],
        })


def capacity_summary(
    study: StudySource,
    *,
    target_util: float = TARGET_UTIL,
    response_limit: float = RESPONSE_LIMIT_S,
    fit: list[float] | None = None,
    demand: str = "pooled",
) -> CapacitySummary:
    """The capacity picture of a sweep study (see `CapacitySummary` for what each part holds).

    *target_util* (fraction) and *response_limit* (s) are the seeds' rules -- 90 % processor
    utilization, AVG LAST (T) < 1 s; *fit* restricts the closed-loop model's fitting levels;
    *demand* is "pooled" or "point" for the predictions beside the measurements.
    """
    data = sweep_data(study)
    summary = CapacitySummary(data.study_id, data.title, data.factor, data.confidence, target_util,
                              response_limit, [_measured(level) for level in data.levels], notes=list(data.notes))
    if data.factor == "sut_cpus":
        summary.scaling = _try(summary, "scaling", lambda: sweep_scaling(data))
    else:
        fitted = _try(summary, "USL", lambda: fit_sweep_usl(data))
        if fitted:
            summary.usl, summary.usl_residuals = fitted
            summary.notes.extend(prefixed("USL", w) for w in summary.usl.warnings)
    if data.factor == "users":
        model = _try(summary, "MVA", lambda: fit_closed_model(data, fit=fit))
        if model:
            summary.model = model
            summary.notes.extend(prefixed("MVA", n) for n in model.notes)
            summary.predictions = predictions(model, data, demand)
            summary.bounds = bounds(model, data)
            summary.knee = knee(model)
            for rule in (lambda: supported_at_utilization(model, target_util),
                         lambda: supported_at_response(model, response_limit)):
                s = _try(summary, "users supported", rule)
                if s:
                    summary.supported.append(s)
    elif data.factor != "sut_cpus":
        summary.notes.append(cav.remark(Code.NO_CURVE, "MVA, bounds and users supported need a sweep over users (think "
                                        f"time and simulated users); this one varies {data.factor}",
                                        factor=data.factor))
    summary.curve = _curve(data, summary)
    return summary


def _try(summary: CapacitySummary, what: str, build):
    """Run one model builder; an InputError becomes a note ("no curve: why") and None."""
    try:
        return build()
    except InputError as exc:
        text = exc.message if isinstance(exc, NoCurve) else f"no curve: {exc.message}"
        summary.notes.append(cav.remark(Code.NO_CURVE, f"{what}: {text}", model=what))
        return None


def prefixed(model: str, remark: Caveat) -> Caveat:
    """A model's own remark, saying which model it is about."""
    return remark.model_copy(update={"text": f"{model}: {remark.text}"})


def _measured(level) -> MeasuredPoint:
    return MeasuredPoint(level.n, level.label, len(level.runs), level.excluded, level.mean("etr_t"),
                         level.mean("avg_last_t"), level.mean("avg_think_t"), level.mean("pbt_cmd_s"),
                         level.mean("util_proc_s"), level.mean("itr_s"))


def _curve(data: SweepData, s: CapacitySummary) -> list[CurvePoint]:
    if s.usl is None and s.model is None:
        return []
    top = EXTRAPOLATION_FACTOR * data.max_n
    step = max(1.0, math.ceil(top / CURVE_POINTS))
    grid = sorted({1.0, *(float(k) for k in range(int(step), int(top) + 1, int(step))), float(top)})
    mva = {}
    if s.model is not None:
        mva = {p.n: p for p in s.model.curve(int(top))}
    out = []
    for n in grid:
        p = mva.get(int(n))
        x_high = x_low = None
        if s.model is not None:
            m = s.model
            x_high = min(n / (m.demand + m.delay + m.think), m.processors / m.demand)
            x_low = n / (n * m.demand + m.delay + m.think)
        out.append(CurvePoint(n, float(s.usl.predict(n)) if s.usl else None, p.x if p else None,
                              p.r if p else None, 100.0 * p.u if p else None, x_high, x_low, n > data.max_n))
    return out


def json_clean(obj):
    if isinstance(obj, Caveat):
        return obj.model_dump(mode="json")
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: json_clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_clean(v) for v in obj]
    return obj

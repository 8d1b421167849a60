"""The report's Capacity section: what the study means for users supported.

* A sweep over users, workers or CPUs: the measured points beside the fitted models
  (perflab.capacity.capacity_summary: USL, MVA, the operational-law bounds and their knee) and
  the users supported at the seeds' rules -- 90% processor utilization, AVG LAST (T) < 1 s --
  each with its interval; a chart of both.
* A release study at a calibrated load: the seeds' headline. The base supports the users it was
  calibrated to at the target utilization; at the same think time users supported scale with
  ITR, so each release supports (base users) x ITRR, with the ITRR's interval.

Everything is read from the study document and the capacity package; a model that cannot be
built is a note ("no curve: <why>"), never a number.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from perflab.capacity.points import NUMERIC_FACTORS
from perflab.capacity.source import StudySource
from perflab.capacity.summary import CapacitySummary, capacity_summary
from perflab.catalog.registry import REGISTRY
from perflab.errors import InputError
from perflab.records.study import StudyDocument
from perflab.report import numbers as fmt


@dataclass
class CapacityTable:
    title: str
    columns: list[str]
    rows: list[list[str]]
    verdict_column: int | None = None   # the report's table layout; capacity tables carry no verdict


@dataclass
class CapacityView:
    tables: list[CapacityTable] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    summary: CapacitySummary | None = None   # for the chart


def _users(value: float | None) -> str:
    """Users supported: whole users from 100 up, one decimal below (an estimate, not a count)."""
    if value is None:
        return fmt.NA
    return f"{value:,.0f}" if abs(value) >= 100 or float(value).is_integer() else f"{value:.1f}"


def _pair(pair: tuple[float, float] | None) -> tuple[float | None, float | None]:
    return (None, None) if pair is None else pair


def _finite(pair: tuple[float, float]) -> tuple[float | None, float | None]:
    low, high = pair
    return (low if math.isfinite(low) else None), (high if math.isfinite(high) else None)


def _interval(low: float | None, high: float | None, render: Callable[[float], str] = _users) -> str:
    if low is None or high is None:
        return fmt.NA
    return f"[{render(low)}, {render(high)}]"


def sweep_capacity(study: StudyDocument) -> CapacityView | None:
    if study.sweep is None or study.sweep.factor not in NUMERIC_FACTORS:
        return None
    view = CapacityView()
    try:
        summary = capacity_summary(StudySource(study))
    except InputError as exc:
        view.notes.append(f"no capacity model: {exc.message}")
        return view
    view.summary = summary
    etr = REGISTRY.label_of("etr_t")
    if summary.usl is not None:
        u = summary.usl
        rows = [[name, f"{value:.4g}", _interval(*_pair(u.ci.get(key)), lambda x: f"{x:.4g}")]
                for name, key, value in (("α (contention)", "alpha", u.alpha), ("β (coherency)", "beta", u.beta),
                                         ("γ (throughput of one)", "gamma", u.gamma))]
        rows.append([f"peak {summary.factor}", f"{u.peak_n:,.1f}" if math.isfinite(u.peak_n) else "none (β = 0)",
                     _interval(*_finite(u.peak_ci), lambda x: f"{x:,.1f}")])
        rows.append([f"peak {etr}", f"{u.peak_throughput:,.1f}",
                     _interval(*_finite(u.peak_throughput_ci), lambda x: f"{x:,.1f}")])
        view.tables.append(CapacityTable(f"Universal Scalability Law fit of {etr} ({100 * u.confidence:g}% intervals)",
                                         ["parameter", "estimate", "interval"], rows))
    if summary.supported:
        rows = []
        for s in summary.supported:
            rule = (f"UTIL/PROC (S) ≤ {100 * summary.target_util:g}%" if s.rule == "utilization"
                    else f"AVG LAST (T) ≤ {summary.response_limit:g} s")
            shown = _users(s.users) + (" (extrapolated)" if s.extrapolated else "")
            rows.append([rule, shown, _interval(s.low, s.high), s.note or ""])
        view.tables.append(CapacityTable("Users supported (closed-loop model from the measured demand and think time)",
                                         ["rule", "users", "interval", "note"], rows))
    if summary.predictions:
        by_n = {p.n: p for p in summary.predictions}
        bounds = {b.n: b for b in summary.bounds}
        rows = []
        for m in summary.measured:
            p, b = by_n.get(m.n), bounds.get(m.n)
            rows.append([f"{m.n:g}" + (" (fit)" if p is not None and p.fit else ""), fmt.value(m.etr_t, "etr_t"),
                         fmt.value(p.etr_t if p is not None else None, "etr_t"),
                         fmt.value(b.x_high if b is not None else None, "etr_t"),
                         fmt.value(m.avg_last_t, "avg_last_t"),
                         fmt.value(p.avg_last_t if p is not None else None, "avg_last_t"),
                         "yes" if b is None or b.inside else "no"])
        view.tables.append(CapacityTable("Measured beside the model (MVA) and the throughput bound",
                                         [summary.factor, f"{etr} measured", f"{etr} MVA", f"{etr} bound",
                                          "AVG LAST (T) measured", "AVG LAST (T) MVA", "within bounds"], rows))
    if summary.knee is not None:
        view.notes.append(f"Knee of the bounds (where the light-load and saturation asymptotes cross): N* = "
                          f"{summary.knee:,.1f} {summary.factor}.")
    view.notes += [n.text for n in summary.notes]
    return view


def release_capacity(study: StudyDocument) -> CapacityView | None:
    """Users supported at the calibration target by each release: base users x ITRR (S)."""
    load = study.design.load
    if not study.comparisons or load.mode != "calibrated" or load.users is None:
        return None
    if study.design.loads:
        return None  # equal utilization: each configuration's own calibrated users are the answer
    key = REGISTRY.role("capacity")[0]
    target = load.target_util
    rows = [[study.comparisons[0].base, "1 (base)", _users(load.users), "calibrated"]]
    for comparison in study.comparisons:
        entry = comparison.entry(key)
        if entry is None or entry.ratio is None:
            rows.append([comparison.new, fmt.NA, fmt.NA, (entry.no_comparison or fmt.NA) if entry else "not measured"])
            continue
        ci = (fmt.ci_ratio(entry.ci_low, entry.ci_high))
        users = load.users * entry.ratio
        interval = (_interval(load.users * entry.ci_low, load.users * entry.ci_high)
                    if entry.ci_low is not None and entry.ci_high is not None else fmt.NA)
        rows.append([comparison.new, f"{fmt.ratio(entry.ratio)} {ci}", f"{_users(users)} {interval}",
                     entry.verdict or "no verdict"])
    view = CapacityView()
    view.tables.append(CapacityTable(
        f"Users supported at {fmt.fixed(target, 0)}% UTIL/PROC (S), at the workload's think time",
        ["configuration", f"{REGISTRY.label_of(key)} ratio [interval]", "users supported [interval]", "verdict"],
        rows))
    view.notes.append("The base ran at the users it was calibrated to at the target; at the same think time the users "
                      "a processor supports scale with internal throughput, so each configuration supports the base's "
                      "users times its ITR ratio (the seeds' way of turning ITR into a capacity headline).")
    return view


def capacity_view(study: StudyDocument) -> CapacityView | None:
    return sweep_capacity(study) or release_capacity(study)

"""The one exclusion rule: is a run valid evidence for a verdict, and if not, why.

Used by `perflab study` (each run is judged once and the decision stored in study.json), by
`perflab compare` (runs of a study: the stored decision, re-derivable with `judge_run` and the
study's stored gates; other runs: the gates that apply to a single run) and by the reports.
A run that fails a gate is kept and shown with its reasons, never silently dropped.

The gates, in order:

1. the run itself: it completed, its driver was not saturated, no transaction hung (the run
   record's own caveats, decided when the run ended);
2. errors: the share of finished transactions that failed is within `max_error_rate`;
3. something was measured: at least one completed transaction in the window;
4. steady state, judged on what the SUT does:
   * closed loop -- ETR (T) is the SUT's answer to a fixed population, so a line through the
     per-interval rates must not change by more than `max_etr_trend` across the window *and*
     by more than its own scatter explains (Student's t, n - 2 degrees of freedom, two-sided
     `STEADY_ALPHA`): a quiet SUT meets the limit alone; a noisy one is excluded only for a
     drift its own second-to-second scatter does not explain;
   * open loop -- ETR (T) is the arrival process (a seeded one replays the same wobble in every
     run), so it says nothing about the SUT; the SUT is unsteady when it falls behind the
     arrivals: fewer finished than offered by more than `max_etr_trend` *and* by more than the
     count's own noise, z(1 - STEADY_ALPHA) x sqrt(offered) (a Poisson count's standard error;
     at 90% utilization the number in the system moves by less), so a short window at high
     load is not read as a growing queue;
   * fewer than `MIN_STEADY_INTERVALS` intervals: not judged, said as a note, never excluded;
   * a duet's run (both runs of a block at once, study/duet.py) is judged beside its partner:
     a drift both runs share is the host's speed, which slows both and cancels from their
     ratio, so it is said as a note; only a drift of the run's rate relative to its partner's
     (the per-interval ratio, scaled by the partner's mean) excludes it;
5. utilization: a calibrated base run lies inside the utilization band.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
from scipy import stats

from perflab import caveats as cav
from perflab.caveats import Caveat
from perflab.records.run import RunRecord


@dataclass(frozen=True)
class GateSettings:
    """The thresholds a judgement used (stored in study.json's design, so it can be re-derived)."""

    max_error_rate: float = cav.MAX_ERROR_RATE
    max_etr_trend: float = cav.MAX_DRIFT
    util_band: tuple[float, float] | None = None


@dataclass
class RunValidity:
    exclusions: list[Caveat] = field(default_factory=list)
    notes: list[Caveat] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return not self.exclusions


def etr_trend_fit(per_interval: Sequence[Mapping[str, Any]] | None) -> tuple[float, float, int] | None:
    """(change, standard error, intervals): the relative change of ETR (T) across the window from a
    least-squares line through the per-interval rates -- (slope x window length) / mean -- and
    its standard error from the scatter about the line. None when there are too few intervals.

    The last interval of a window that is not a whole number of intervals can be a sliver: an
    external driver's window ends at its last response, so its final 0.05 s holds only the
    tool's in-flight requests finishing -- a "rate" of a few percent of the rest, which a line
    through it read as a collapse of -60% to -80%. Intervals shorter than half the usual length
    are left out of the line; the rest are weighted by their length (a rate counted over d
    seconds has variance ~ 1/d)."""
    if not per_interval:
        return None
    start = np.asarray([_num(row.get("t_start")) for row in per_interval], dtype=float)
    end = np.asarray([_num(row.get("t_end")) for row in per_interval], dtype=float)
    etr = np.asarray([_num(row.get("etr_t")) for row in per_interval], dtype=float)
    ok = np.isfinite(start) & np.isfinite(end) & np.isfinite(etr) & (end > start)
    start, end, etr = start[ok], end[ok], etr[ok]
    length = end - start
    if len(length):
        whole = length >= 0.5 * np.median(length)
        start, end, etr, length = start[whole], end[whole], etr[whole], length[whole]
    n = len(etr)
    if n < 3:
        return None
    mean = float(np.sum(etr * length) / np.sum(length))  # transactions / time: the window's rate
    if mean <= 0:
        return None
    t = (start + end) / 2
    # Weighted least squares by hand: polyfit's cov=True refuses n <= 3 (it needs n - deg > 2).
    w = length / length.mean()
    tw = np.sum(w * t) / np.sum(w)
    sxx = float(np.sum(w * (t - tw) ** 2))
    if sxx <= 0:
        return None
    slope = float(np.sum(w * (t - tw) * etr) / sxx)
    intercept = float(np.sum(w * etr) / np.sum(w)) - slope * tw
    residual = etr - (intercept + slope * t)
    dof = n - 2
    sigma2 = float(np.sum(w * residual**2)) / dof if dof > 0 else float("inf")
    span = float(end[-1] - start[0])
    se = math.sqrt(sigma2 / sxx) * span / mean
    return slope * span / mean, se, n


def steady_t(intervals: int) -> float:
    """The two-sided critical t of the steadiness test for a line through `intervals` points."""
    return float(stats.t.ppf(1.0 - cav.STEADY_ALPHA / 2.0, max(intervals - 2, 1)))


def _drifted(fit: tuple[float, float, int], limit: float) -> bool:
    """A line's change across the window beyond the limit and beyond its own scatter."""
    change, se, n = fit
    return abs(change) > limit and abs(change) > steady_t(n) * se


def relative_to_partner(per_interval: Sequence[Mapping[str, Any]],
                        partner: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A duet run's per-interval rates divided by its partner's over the same interval (their
    clocks start together), times the partner's mean rate: what is left of its drift once the
    host's, common to both, is taken out. Intervals the partner lacks are left out."""
    theirs = {(round(_num(r.get("t_start")), 3), round(_num(r.get("t_end")), 3)): _num(r.get("etr_t"))
              for r in partner}
    rates = [v for v in theirs.values() if v == v and v > 0]
    if not rates:
        return []
    scale = float(np.mean(rates))
    out = []
    for row in per_interval:
        other = theirs.get((round(_num(row.get("t_start")), 3), round(_num(row.get("t_end")), 3)))
        if other is not None and other == other and other > 0:
            out.append({**row, "etr_t": _num(row.get("etr_t")) * scale / other})
    return out


def steady_state(values: Mapping[str, Any], per_interval: Sequence[Mapping[str, Any]] | None, closed: bool,
                 limit: float, partner: Sequence[Mapping[str, Any]] | None = None) -> \
        tuple[Caveat | None, Caveat | None]:
    """(exclusion, note) of the steadiness gate; see the module doc. `partner`: the per-interval
    rows of a duet run's partner."""
    intervals = sum(1 for row in per_interval or [] if _num(row.get("etr_t")) == _num(row.get("etr_t")))
    if not closed:
        offered = _num(values.get("tx_offered"))
        finished = _num(values.get("tx_ok")) + _num(values.get("errors_t"), 0.0)
        if offered == offered and offered > 0 and finished == finished:
            shortfall = offered - finished
            noise = float(stats.norm.ppf(1.0 - cav.STEADY_ALPHA)) * math.sqrt(offered)
            if shortfall > limit * offered and shortfall > noise:
                return cav.fell_behind(finished, offered, limit), None
            return None, None
        return None, cav.steady_unjudged(0)
    if intervals < cav.MIN_STEADY_INTERVALS:
        return None, cav.steady_unjudged(intervals)
    fit = etr_trend_fit(per_interval)
    if fit is None:
        return None, cav.steady_unjudged(intervals)
    if not _drifted(fit, limit):
        return None, None
    relative = etr_trend_fit(relative_to_partner(per_interval, partner)) if partner else None
    if relative is None:
        change, se, n = fit
        return cav.not_steady(change, se, limit, n), None
    if not _drifted(relative, limit):
        return None, cav.shared_drift(fit[0], relative[0])
    change, se, n = relative
    return cav.not_steady(change, se, limit, n, beside_partner=True), None


def judge_run(record: RunRecord, values: Mapping[str, Any], per_interval: Sequence[Mapping[str, Any]] | None,
              gates: GateSettings, is_base: bool = False,
              partner: Sequence[Mapping[str, Any]] | None = None) -> RunValidity:
    """Every reason to exclude this run from a verdict, and the notes that do not exclude.
    `partner`: a duet run's partner's per-interval rows (the steadiness gate judges beside them)."""
    out = RunValidity()
    if record.status != "complete":
        out.exclusions.append(cav.run_not_complete(record.status, record.reason))
    out.exclusions += [c for c in record.invalid if c.code is not cav.Code.RUN_NOT_COMPLETE]
    errors = _num(values.get("error_pct_t"))
    if errors == errors and errors / 100.0 > gates.max_error_rate:
        out.exclusions.append(cav.error_rate(errors / 100.0, gates.max_error_rate))
    ok_rate = _num(values.get("etr_t"))
    if not ok_rate == ok_rate or ok_rate <= 0:
        out.exclusions.append(cav.no_transactions())
    else:
        exclusion, note = steady_state(values, per_interval, record.config.users is not None, gates.max_etr_trend,
                                       partner)
        if exclusion is not None:
            out.exclusions.append(exclusion)
        if note is not None:
            out.notes.append(note)
    util = _num(values.get("util_proc_s"))
    if is_base and gates.util_band is not None and util == util:
        low, high = gates.util_band
        if not low <= util <= high:
            out.exclusions.append(cav.util_out_of_band(util, low, high))
    return out


def _num(value: Any, default: float = float("nan")) -> float:
    if value is None or isinstance(value, bool):
        return default
    try:
        number = float(value)
    except (TypeError, ValueError):
        return default
    return number

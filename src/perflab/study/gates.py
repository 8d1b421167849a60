"""Validity gates: a run that fails one is kept and shown with the reason, but excluded from
the verdict (never silently dropped)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from perflab.study.model import Gates


# One-sided 1%: a run is excluded for a drift only when the drift is real, not the line's noise.
SIGNIFICANT_Z = 2.326


def etr_trend(per_interval: list[dict] | None) -> float | None:
    """Relative change of ETR (T) across the window (see etr_trend_fit), or None."""
    fit = etr_trend_fit(per_interval)
    return None if fit is None else fit[0]


def etr_trend_fit(per_interval: list[dict] | None) -> tuple[float, float] | None:
    """(change, standard error): the relative change of ETR (T) across the window from a
    least-squares line through the per-interval rates -- (slope x window length) / mean -- and
    its standard error from the scatter about the line. None when there are too few intervals.

    The error matters because windows are short: with 20 one-second intervals and a server
    whose rate wobbles by 10% from second to second (PostgreSQL under debit-credit, measured
    here), the line's change has a standard error near 8%, so a fixed +-10% limit excluded a
    fifth of perfectly stationary runs.

    The last interval of a window that is not a whole number of intervals can be a sliver: an
    external driver's window ends at its last response, so its final 0.05 s holds only the
    tool's in-flight requests finishing -- a "rate" of a few percent of the rest, which a line
    through it read as a collapse of -60% to -80%. That edge is not the steady state the gate
    asks about: intervals shorter than half the usual length are left out of the line; the
    rest are weighted by their length (a rate counted over d seconds has variance ~ 1/d).

    `per_interval` is reduction's list of rows ({"t_start", "t_end", "etr_t", ...})."""
    if not per_interval:
        return None
    start = np.asarray([row["t_start"] for row in per_interval], dtype=float)
    end = np.asarray([row["t_end"] for row in per_interval], dtype=float)
    etr = np.asarray([np.nan if row.get("etr_t") is None else row["etr_t"] for row in per_interval], dtype=float)
    ok = np.isfinite(start) & np.isfinite(end) & np.isfinite(etr) & (end > start)
    start, end, etr = start[ok], end[ok], etr[ok]
    length = end - start
    if len(length):
        whole = length >= 0.5 * np.median(length)
        start, end, etr, length = start[whole], end[whole], etr[whole], length[whole]
    if len(etr) < 4:
        return None
    mean = float(np.sum(etr * length) / np.sum(length))  # transactions / time: the window's rate
    if mean <= 0:
        return None
    t = (start + end) / 2
    # polyfit's weights multiply the residuals (1/sd); cov=True scales by the residual scatter
    coef, cov = np.polyfit(t, etr, 1, w=np.sqrt(length), cov=True)
    span = end[-1] - start[0]
    se = math.sqrt(max(float(cov[0, 0]), 0.0)) * span / mean
    return float(coef[0] * span / mean), se


def check_run(run: dict[str, Any], metrics: dict[str, Any], per_interval: list[dict] | None, gates: Gates,
              util_band: tuple[float, float] | None, is_base: bool) -> list[str]:
    """Reasons to exclude this run (empty: it counts)."""
    reasons = []
    if run.get("status") != "complete":
        reasons.append(f"run {run.get('status')}: {run.get('reason')}")
    for reason in run.get("invalid_reasons") or []:
        if reason not in reasons and not reason.startswith("run "):
            reasons.append(reason)
    ok_rate = metrics.get("etr_t")
    errors = metrics.get("error_pct_t")
    errors = None if errors is None else errors / 100.0
    if errors is not None and errors > gates.max_error_rate:
        reasons.append(f"error rate {100 * errors:.1f}% above {100 * gates.max_error_rate:.1f}%")
    if ok_rate is None or (isinstance(ok_rate, float) and (math.isnan(ok_rate) or ok_rate <= 0)):
        reasons.append("no completed transactions in the measurement window")
    fit = etr_trend_fit(per_interval)
    if fit is not None:
        trend, se = fit
        # Beyond the limit, and real: a quiet SUT (small se) meets the limit alone; a noisy one
        # is excluded only for a drift its own second-to-second scatter does not explain.
        if abs(trend) > gates.max_etr_trend and abs(trend) > SIGNIFICANT_Z * se:
            reasons.append(f"not steady: ETR (T) changed {100 * trend:+.1f}% (±{100 * se:.1f}%) across the "
                           f"window (limit ±{100 * gates.max_etr_trend:.0f}%)")
    util = metrics.get("util_proc_s")
    if is_base and util_band is not None and util is not None:
        low, high = util_band
        if not low <= util <= high:
            reasons.append(f"UTIL/PROC (S) {util:.1f}% outside the target band {low:.0f}-{high:.0f}%")
    return reasons

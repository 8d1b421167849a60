"""Validity gates: a run that fails one is kept and shown with the reason, but excluded from
the verdict (never silently dropped)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from perflab.study.model import Gates


def etr_trend(per_interval: list[dict] | None) -> float | None:
    """Relative change of ETR (T) across the window from a least-squares line through the
    per-interval rates: (slope x window length) / mean. None when there are too few intervals.

    `per_interval` is reduction's list of rows ({"t_start", "t_end", "etr_t", ...})."""
    if not per_interval:
        return None
    t = np.asarray([(row["t_start"] + row["t_end"]) / 2 for row in per_interval], dtype=float)
    etr = np.asarray([np.nan if row.get("etr_t") is None else row["etr_t"] for row in per_interval], dtype=float)
    ok = np.isfinite(t) & np.isfinite(etr)
    t, etr = t[ok], etr[ok]
    if len(t) < 4 or etr.mean() <= 0:
        return None
    slope = np.polyfit(t, etr, 1)[0]
    return float(slope * (t[-1] - t[0]) / etr.mean())


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
    trend = etr_trend(per_interval)
    if trend is not None and abs(trend) > gates.max_etr_trend:
        reasons.append(f"not steady: ETR (T) changed {100 * trend:+.1f}% across the window "
                       f"(limit ±{100 * gates.max_etr_trend:.0f}%)")
    util = metrics.get("util_proc_s")
    if is_base and util_band is not None and util is not None:
        low, high = util_band
        if not low <= util <= high:
            reasons.append(f"UTIL/PROC (S) {util:.1f}% outside the target band {low:.0f}-{high:.0f}%")
    return reasons

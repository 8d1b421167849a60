"""The verdict: what a confidence interval for a ratio B/A says against a margin.

The seeds judged "equivalent", "slight" and "improved" by eye on single runs (a fixed ±3 % rule
on the point estimate). perflab keeps the ±3 % as a *margin of practical indifference* but asks
it of the interval, not of the point: that is an equivalence test (Schuirmann's TOST), whose
false-positive rate is known (statistics-and-capacity.md §5.4).

Assumptions made explicit here:

* The margin is symmetric on the log scale: m = 3 % means bounds L = 0.97 and U = 1/0.97 =
  1.0309, so "B is 3 % below A" and "A is 3 % below B" are the same distance from 1.
* The interval passed in is the two-sided interval that decides (perflab.stats.criteria: 95 %
  by default, widened for multiplicity): inside the margin is TOST at half its alpha per side,
  and "CI excludes 1" a two-sided test at its alpha -- one interval, one level, for every call.
* Every metric has a direction. For ITR (and ETR, ITRR) higher is better; for CPU per command
  (PBT/CMD) or response time lower is better, so there a ratio above 1 is WORSE.

Everything here is plain arithmetic on bounds, so `classify` is vectorized: the power and
calibration simulations call the very code that produces the report's verdicts.
"""

from __future__ import annotations

__all__ = ["DEFAULT_CONFIDENCE", "DEFAULT_MARGIN", "DEFAULT_POWER", "MIN_BLOCKS", "Verdict", "Judgement",
           "blocks_needed", "classify", "judge", "legacy_label", "margin_bounds"]

import functools
import math
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

# The defaults live in perflab.stats.criteria (one home); re-exported for the estimators.
from perflab.stats.criteria import DEFAULT_CONFIDENCE, DEFAULT_MARGIN, DEFAULT_POWER
from perflab.stats.distributions import norm_ppf

#: Fewest blocks (or runs per configuration) for which perflab computes an interval. With two
#: blocks the t-interval has one degree of freedom (t = 6.31 at 90 %) and rests on one
#: difference-of-differences; it is formally valid but useless, so it is not offered.
MIN_BLOCKS = 3

#: Column header of the seeds' legacy call, kept for continuity (vmesa-methodology.md §6.1).
LEGACY_LABEL = "IBM ±3 % on point estimate"
#: The seeds' verbal bands on |ΔITR|: ≲ 1 % "equivalent", 1–3 % "slight", ≥ 3 % a reported change.
LEGACY_EQUIVALENT = 0.01
LEGACY_SLIGHT = 0.03


class Verdict(StrEnum):
    """Outcome of a comparison against the margin (statistics-and-capacity.md §5.4)."""

    EQUIVALENT = "EQUIVALENT"
    BETTER = "BETTER"
    WORSE = "WORSE"
    INCONCLUSIVE = "INCONCLUSIVE"


@dataclass(frozen=True)
class Judgement:
    """A verdict with its *material* flag and a short note for the report."""

    verdict: Verdict
    material: bool
    note: str


def margin_bounds(margin: float = DEFAULT_MARGIN) -> tuple[float, float]:
    """Ratio bounds (L, U) = (1 − m, 1/(1 − m)) of a log-symmetric margin m."""
    if not 0.0 < margin < 1.0:
        raise ValueError(f"margin must be a fraction in (0, 1), got {margin!r}")
    low = 1.0 - margin
    return low, 1.0 / low


def classify(
    low: np.ndarray | float,
    high: np.ndarray | float,
    *,
    margin: float = DEFAULT_MARGIN,
    higher_is_better: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Verdicts and material flags for interval bounds of the ratio B/A (vectorized).

    Evaluated in the order of §5.4: EQUIVALENT when the interval lies inside [L, U] (even if it
    also excludes 1: a detectable change that is within the margin is still equivalent), then a
    one-sided claim when the interval excludes 1, else INCONCLUSIVE. A NaN bound (no interval)
    is INCONCLUSIVE. *material* means the whole interval lies beyond the margin.

    Returns two arrays shaped like the inputs: verdict strings (the `Verdict` values) and bools.
    """
    lo = np.asarray(low, dtype=float)
    hi = np.asarray(high, dtype=float)
    L, U = margin_bounds(margin)
    equivalent = (lo >= L) & (hi <= U)
    below = ~equivalent & (hi < 1.0)
    above = ~equivalent & (lo > 1.0)
    worse, better = (below, above) if higher_is_better else (above, below)
    verdict = np.full(np.broadcast(lo, hi).shape, Verdict.INCONCLUSIVE.value, dtype="<U12")
    verdict[equivalent] = Verdict.EQUIVALENT.value
    verdict[worse] = Verdict.WORSE.value
    verdict[better] = Verdict.BETTER.value
    material = (below & (hi < L)) | (above & (lo > U))
    return verdict, material


def judge(
    ratio: float,
    low: float,
    high: float,
    *,
    margin: float = DEFAULT_MARGIN,
    higher_is_better: bool = True,
) -> Judgement:
    """The verdict for one interval, with the note the report prints next to it.

    The note on an equivalent result whose interval excludes 1 follows §5.4:
    "(detectable −1.2 % [−1.8, −0.6], within margin)" -- the change is real but smaller than
    anyone agreed to care about, and hiding it would throw information away.
    """
    v, mat = classify(low, high, margin=margin, higher_is_better=higher_is_better)
    verdict, material = Verdict(str(v)), bool(mat)
    L, U = margin_bounds(margin)
    change = f"{_pct(ratio)} [{_pct(low, unit=False)}, {_pct(high, unit=False)}]"
    if verdict is Verdict.EQUIVALENT:
        note = f"(detectable {change}, within margin)" if (high < 1.0 or low > 1.0) else ""
    elif verdict is Verdict.INCONCLUSIVE:
        note = "" if math.isnan(low) else f"({change} includes both 1 and changes beyond the margin)"
    else:
        bound = L if high < 1.0 else U
        where = "beyond" if material else "reaching inside"
        note = f"({change}, {where} the {_pct(bound)} margin)"
    return Judgement(verdict, material, note)


@functools.lru_cache(maxsize=256)
def _z(p: float) -> float:
    return float(norm_ppf(p))


def blocks_needed(
    cv: float,
    margin: float = DEFAULT_MARGIN,
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    power: float = DEFAULT_POWER,
) -> int:
    """Blocks a paired design needs to show EQUIVALENT when the true ratio is 1 (§5.2).

    blocks ≈ 2·(z_{1−α} + z_{1−β/2})²·CV²/δ² + 2, with δ = ln(1/(1 − m)), α = (1 − confidence)/2
    per side and β = 1 − power. *cv* is the per-run CV as the SD of ln(value); a paired block
    difference then has variance 2·CV² (the leading 2). β is halved because both one-sided tests
    must pass. The "+ 2" corrects the normal quantiles for the t-distribution at small n; the
    exact `perflab.stats.noise.power` confirms the result (CV 1 %: 4 blocks give P ≈ 0.8).
    """
    if not math.isfinite(cv) or cv < 0:
        raise ValueError(f"cv must be a finite non-negative number, got {cv!r}")
    if not 0.0 < power < 1.0:
        raise ValueError(f"power must be in (0, 1), got {power!r}")
    alpha = (1.0 - confidence) / 2.0
    delta = math.log(margin_bounds(margin)[1])  # ln(1/(1 − m)): the margin on the log scale
    z = _z(1.0 - alpha) + _z(1.0 - (1.0 - power) / 2.0)
    n = 2.0 * z * z * cv * cv / (delta * delta) + 2.0
    return max(MIN_BLOCKS, math.ceil(n - 1e-9))


def legacy_label(ratio: float) -> str:
    """The seeds' verbal call on a point estimate, for the "IBM ±3 %" continuity column.

    Bands from vmesa-methodology.md §6.1: |Δ| < 1 % "equivalent", 1–3 % "slight", ≥ 3 % a
    "change". It ignores noise entirely -- at CV 2 % it calls identical releases different 29 %
    of the time -- which is why it is a column and never the verdict.
    """
    delta = ratio - 1.0
    if abs(delta) < LEGACY_EQUIVALENT:
        return "equivalent"
    band = "slight" if abs(delta) < LEGACY_SLIGHT else "change"
    return f"{band} {_pct(ratio)}"


def _pct(ratio: float, *, unit: bool = True) -> str:
    """Format a ratio as a signed relative change: 0.988 -> '−1.2 %' (typographic minus)."""
    if math.isnan(ratio):
        return "n/a"
    value = (ratio - 1.0) * 100.0
    text = f"{value:+.1f}".replace("-", "\u2212")
    return f"{text} %" if unit else text

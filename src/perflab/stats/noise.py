"""How noisy is the lab, and what can a comparison of n blocks detect?

Two questions a study must answer before it runs (statistics-and-capacity.md §5.2):

* `dimension`: from ≥ 10 runs of the base configuration alone (the A/A experiment), the CV of
  ln(value) between runs and the number of blocks it calls for. The CV is the SD of ln(value),
  which equals the usual CV to within 0.01 % of itself below CV 5 %, and is what the paired
  analysis actually consumes.
* `power`: for a CV, a number of blocks, a true ratio and a margin, the probability of each
  verdict. Computed exactly for normal log-noise (see `power`); the tests in tests/stats check
  it against simulations through `compare`'s own code, and against the §5.2/§5.4 tables.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from perflab import caveats as cav
from perflab.caveats import Caveat, Code
from perflab.errors import InputError
from perflab.stats.distributions import chi2_ppf, linear_trend, norm_cdf, t_ppf
from perflab.stats.estimate import NOISY_CV, Comparison, compare, jsonable, noisy
from perflab.stats.verdict import (
    DEFAULT_CONFIDENCE,
    DEFAULT_MARGIN,
    DEFAULT_POWER,
    MIN_BLOCKS,
    Verdict,
    blocks_needed,
    margin_bounds,
)

#: Blocks used when the A/A experiment says the noise is low (CV ≤ 1 % gives P(EQUIVALENT) ≈
#: 0.995 at 6 blocks; fewer blocks leave little room for one excluded run).
DEFAULT_BLOCKS = 6
#: Runs of the base configuration needed to estimate the CV usefully: with 10 runs the 90 %
#: interval of the CV is still about 0.7×…1.6× the estimate.
MIN_DIMENSION_RUNS = 10
#: Grid size of the quantile rule that integrates over the sample SD in `power`; the error is
#: well below 1e-4 in probability.
_GRID = 4096


@dataclass
class NoiseEstimate:
    """Result of an A/A dimensioning experiment.

    *cv* (with its chi-square interval [cv_low, cv_high]) is the run-to-run SD of ln(value);
    *blocks* the blocks to plan for at that CV (never fewer than `DEFAULT_BLOCKS`), and
    *blocks_upper* at the upper end of its interval, the cautious choice. *drift_per_run* is the
    relative linear trend across the runs in their order, with its p-value. *aa* compares two
    random halves of the runs against each other as a sanity check.
    """

    n_runs: int
    cv: float
    cv_low: float
    cv_high: float
    confidence: float
    margin: float
    blocks: int
    blocks_upper: int
    drift_per_run: float
    drift_p: float
    aa: Comparison | None
    warnings: list[Caveat] = field(default_factory=list)

    def to_dict(self) -> dict:
        out = asdict(self)
        out["aa"] = self.aa.to_dict() if self.aa is not None else None
        out["warnings"] = [w.model_dump(mode="json") for w in self.warnings]
        return jsonable(out)


def dimension(
    values: Sequence[float],
    *,
    margin: float = DEFAULT_MARGIN,
    confidence: float = DEFAULT_CONFIDENCE,
    power: float = DEFAULT_POWER,
    seed: int = 0,
) -> NoiseEstimate:
    """Dimension a comparison from per-run values of the base configuration, in run order.

    The split into A/A halves is seeded (stdlib `random`, whose sequence for a given seed is
    stable across Python versions), so the same runs always give the same report.
    """
    v = np.asarray([float(x) for x in values], dtype=float)
    if len(v) < MIN_BLOCKS:
        raise InputError(f"need ≥ {MIN_DIMENSION_RUNS} base runs to dimension, got {len(v)}")
    if not np.all(np.isfinite(v) & (v > 0)):
        raise InputError("per-run values must be positive and finite")
    warnings: list[Caveat] = []
    if len(v) < MIN_DIMENSION_RUNS:
        warnings.append(cav.remark(Code.NO_INTERVAL, f"n={len(v)} base runs: need ≥ {MIN_DIMENSION_RUNS} to dimension "
                                   "reliably", n=len(v), need=MIN_DIMENSION_RUNS))
    x = np.log(v)
    n = len(x)
    cv = float(x.std(ddof=1))
    # (n−1)s²/σ² ~ χ²(n−1) under normal log-noise.
    q_small = float(chi2_ppf((1 - confidence) / 2, n - 1))
    q_large = float(chi2_ppf((1 + confidence) / 2, n - 1))
    cv_low, cv_high = cv * math.sqrt((n - 1) / q_large), cv * math.sqrt((n - 1) / q_small)
    blocks = max(DEFAULT_BLOCKS, blocks_needed(cv, margin, confidence=confidence, power=power))
    blocks_upper = max(
        DEFAULT_BLOCKS, blocks_needed(cv_high, margin, confidence=confidence, power=power)
    )

    slope, drift_p = linear_trend(x)
    drift = math.expm1(slope)
    if drift_p < 0.05:
        per_run = f"{100 * drift:+.2f}".replace("-", "\u2212")
        warnings.append(cav.remark(Code.DRIFT, f"drift {per_run} % per run across the session (p={drift_p:.3f}): it "
                                   "inflates this CV; interleave and pair (randomized blocks) to cancel it",
                                   per_run=drift, p=drift_p))
    if cv > NOISY_CV:
        warnings.append(noisy(cv))

    aa = None
    if n >= 2 * MIN_BLOCKS:
        order = list(range(n))
        random.Random(seed).shuffle(order)
        half = n // 2
        aa = compare(
            v[order[:half]].tolist(),
            v[order[half : 2 * half]].tolist(),
            metric="A/A",
            margin=margin,
            confidence=confidence,
            paired=False,
        )
        if aa.verdict is not Verdict.EQUIVALENT:
            warnings.append(cav.remark(Code.AA_NOT_EQUIVALENT, f"A/A split ({half} vs {half} runs) is "
                                       f"{aa.verdict.value} at margin {100 * margin:g} %: identical configurations "
                                       "are not shown equivalent", verdict=aa.verdict.value, margin=margin))
    return NoiseEstimate(
        n_runs=n,
        cv=cv,
        cv_low=cv_low,
        cv_high=cv_high,
        confidence=confidence,
        margin=margin,
        blocks=blocks,
        blocks_upper=blocks_upper,
        drift_per_run=drift,
        drift_p=drift_p,
        aa=aa,
        warnings=warnings,
    )


@dataclass(frozen=True)
class Power:
    """Probabilities of each verdict (they sum to 1), plus the one-sided CI events.

    *ci_below_one* / *ci_above_one*: the interval lies entirely below / above 1, whatever the
    verdict (a detectable change may still be EQUIVALENT).
    """

    cv: float
    n_blocks: int
    true_ratio: float
    margin: float
    confidence: float
    equivalent: float
    better: float
    worse: float
    inconclusive: float
    ci_below_one: float
    ci_above_one: float

    def to_dict(self) -> dict:
        return jsonable(asdict(self))


def power(
    cv: float,
    n_blocks: int,
    true_ratio: float = 1.0,
    *,
    margin: float = DEFAULT_MARGIN,
    confidence: float = DEFAULT_CONFIDENCE,
    higher_is_better: bool = True,
) -> Power:
    """Exact verdict probabilities of the paired design under normal log-noise.

    With d_j ~ N(μ, 2·CV²), μ = ln(true_ratio), the mean m and the SD s of the n differences are
    independent: m ~ N(μ, 2·CV²/n) and (n−1)s²/(2·CV²) ~ χ²(n−1). Given s, every verdict is an
    interval of m (e.g. EQUIVALENT ⇔ ln L + k·s ≤ m ≤ ln U − k·s with k = t/√n), so its
    probability is a difference of normal CDFs; averaging it over the χ² quantiles of s (a
    midpoint rule on the probability scale) integrates out s. This is the power of the exact
    procedure `compare` runs, not a normal approximation of it -- useful because the
    simulation tests then check two independent routes against each other.
    """
    if n_blocks < MIN_BLOCKS:
        raise ValueError(f"power needs n_blocks ≥ {MIN_BLOCKS}")
    if cv <= 0 or true_ratio <= 0:
        raise ValueError("cv and true_ratio must be positive")
    n = int(n_blocks)
    lnL, lnU = (math.log(b) for b in margin_bounds(margin))
    mu = math.log(true_ratio)
    sd_d = math.sqrt(2.0) * cv
    sd_m = sd_d / math.sqrt(n)
    q = (np.arange(_GRID) + 0.5) / _GRID
    s = sd_d * np.sqrt(chi2_ppf(q, n - 1) / (n - 1))
    half = t_ppf(0.5 + confidence / 2.0, n - 1) * s / math.sqrt(n)

    def p_between(a, b):
        """E_s[P(a(s) ≤ m ≤ b(s))]."""
        za, zb = (a - mu) / sd_m, (b - mu) / sd_m
        return float(np.mean(np.clip(norm_cdf(zb) - norm_cdf(za), 0.0, 1.0)))

    inf = np.inf
    equivalent = p_between(lnL + half, lnU - half)
    below = p_between(-inf, -half)  # upper bound < 0
    above = p_between(half, inf)  # lower bound > 0
    below_eq = p_between(lnL + half, -half)  # both: equivalent and detectably lower
    above_eq = p_between(half, lnU - half)
    lower, higher = below - below_eq, above - above_eq
    worse, better = (lower, higher) if higher_is_better else (higher, lower)
    return Power(
        cv=cv,
        n_blocks=n,
        true_ratio=true_ratio,
        margin=margin,
        confidence=confidence,
        equivalent=equivalent,
        better=better,
        worse=worse,
        inconclusive=max(0.0, 1.0 - equivalent - worse - better),
        ci_below_one=below,
        ci_above_one=above,
    )

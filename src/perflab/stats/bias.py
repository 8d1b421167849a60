"""A design's measured bias, the interval widened by it, and the bound fitted from known truths.

Precision is not accuracy (DESIGN.md): a duet's interval can be a few tenths of a point wide
and still miss the ratio a one-at-a-time measurement gives, because the design changes what is
measured -- two servers time-sharing a CPU magnify a CPU-bound difference (docs/accuracy.md).
perflab measures each design against known truths (`perflab accuracy --studies`) and states
the result as a bound of this form:

    ln r_design = (1 + k) · ln r_true + a,    k_low ≤ k ≤ k_high,  a_low ≤ a ≤ a_high

*k* is a magnification (the design stretches or shrinks every change by the same factor: a
known +5.0 % measured as +5.9 % is k ≈ 0.18) and *a* an offset (an A/A interval of the design
that sits away from 1). A magnification cannot turn a change's sign, so it never turns a
WORSE into a BETTER; an offset can, and the widening takes both into account.

`widen` turns a design's interval for r_design into the set of true ratios compatible with it
under the bound: {(x − a')/(1 + k') : x in [low, high], a' in [a_low, a_high], k' in [k_low,
k_high]}, an interval whose ends are at the corners (the map is monotone in x and a', and for a
fixed numerator monotone in k').

**The fit** (`fit_bias`). A bound is a claim about the *next* study on the same host, so it is a
prediction interval, not a confidence interval for a mean: the magnification and the offset
differ from study to study with the host's state (on the development VM, PostgreSQL duets gave
k = +0.17 one day and -0.35 the next), and that between-study spread is the largest part of what
a user's study can be off by. Each accuracy study i of a known truth x_i (with its standard
error) measured y_i (with its own standard error); the model is the random-effects
meta-regression of the field (Higgins, Thompson & Spiegelhalter, JRSS A 2009):

    y_i − x_i = (k + u_i) x_i + (a + v_i) + e_i,   u_i ~ N(0, τk²), v_i ~ N(0, τa²),
    e_i ~ N(0, se_y,i² + (1 + k)² se_x,i²)

fitted by restricted maximum likelihood (the between-study variances τk², τa² by REML, k and a
by generalized least squares given them). The bound is the prediction box for a new study's
(k, a): each of k and a within its estimate ± t_{n−2} · sqrt(its variance + its τ²), each at
1 − (1 − level)/2, so the box holds the next study's pair with probability at least `level`
(Bonferroni over the two). Without A/A studies and studies of a change, or with fewer than
four studies (no degree of freedom left for the spread), there is no bound.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import product

import numpy as np

#: The level a fitted bound claims for the next study's (k, a) by default.
DEFAULT_BOUND_LEVEL = 0.95
#: Fewest studies a bound is fitted from: two fixed effects and a spread need n - 2 >= 2.
MIN_STUDIES = 4
#: The least 1 + k a bound may reach: a design cannot shrink a change to nothing.
MIN_SCALE = 0.05
#: A bias-bounded interval wider than this (in ln, about 20 points of a ratio) does not size a
#: change: the report says the arrangement cannot, instead of printing a span of tens of points.
UNSIZED_LOG_WIDTH = 0.20


@dataclass(frozen=True)
class BiasBound:
    k_low: float = 0.0
    k_high: float = 0.0
    a_max: float = 0.0
    #: The offset's own range when it is not symmetric (None: ±a_max).
    a_low: float | None = None
    a_high: float | None = None
    #: The centre the point estimate is de-biased by (the fit's k and a; None: the range's middle).
    k_mid: float | None = None
    a_mid: float | None = None

    def __post_init__(self) -> None:
        numbers = [self.k_low, self.k_high, self.a_max] + [v for v in (self.a_low, self.a_high, self.k_mid, self.a_mid)
                                                           if v is not None]
        if not all(math.isfinite(v) for v in numbers):
            raise ValueError("a bias bound needs finite numbers")
        if self.k_low > self.k_high or 1.0 + self.k_low <= 0.0 or self.a_max < 0.0:
            raise ValueError(f"not a bias bound: k in [{self.k_low}, {self.k_high}], |a| <= {self.a_max}")
        if self.a_low is not None and self.a_high is not None and self.a_low > self.a_high:
            raise ValueError(f"not a bias bound: a in [{self.a_low}, {self.a_high}]")

    @property
    def none(self) -> bool:
        return self.k_low == 0.0 == self.k_high and self.a_max == 0.0 and not self.a_low and not self.a_high

    @property
    def offsets(self) -> tuple[float, float]:
        low = -self.a_max if self.a_low is None else self.a_low
        high = self.a_max if self.a_high is None else self.a_high
        return low, high

    def widen(self, low: float, high: float) -> tuple[float, float]:
        """The interval of true log-ratios compatible with a design interval [low, high] (logs)."""
        if not (math.isfinite(low) and math.isfinite(high)):
            return low, high
        corners = [(x - a) / (1.0 + k) for x, a, k in product((low, high), self.offsets, (self.k_low, self.k_high))]
        return min(corners), max(corners)

    def effective_margin(self, margin: float) -> float:
        """The margin a design interval about no change must fall within for its widened
        interval to fall within `margin` (ln, both): the offset takes away from it and the
        least magnification shrinks what is left -- what the blocks a margin needs, and an
        A/A's power, are computed against when the intervals are widened. 0: no number of
        blocks gives EQUIVALENT under this bound."""
        low, high = self.offsets
        room = min(margin - high, margin + low) * (1.0 + self.k_low)
        return max(room, 0.0)

    def truth(self, center: float) -> float:
        """The point estimate of the true log-ratio: the design's, less the fitted offset and
        un-magnified by the fitted k (the range's middle when the bound has no fitted centre)."""
        k = (self.k_low + self.k_high) / 2.0 if self.k_mid is None else self.k_mid
        a = 0.0 if self.a_mid is None else self.a_mid
        return (center - a) / (1.0 + k)


@dataclass(frozen=True)
class BiasObservation:
    """One accuracy study: the known truth of its change and what the design measured (logs)."""

    truth: float            # ln r_true: 0 for an A/A
    truth_se: float
    design: float           # ln r_design: the study's paired estimate
    design_se: float


@dataclass(frozen=True)
class BiasFit:
    """The random-effects fit (module doc) and the prediction bound it gives."""

    k: float
    k_se: float
    tau_k: float
    a: float
    a_se: float
    tau_a: float
    studies: int
    level: float

    @property
    def df(self) -> int:
        return self.studies - 2

    def prediction(self) -> tuple[tuple[float, float], tuple[float, float]]:
        """((k_low, k_high), (a_low, a_high)): each at 1 - (1 - level)/2 for a new study."""
        from perflab.stats.estimate import t_quantile

        t = t_quantile(1.0 - (1.0 - self.level) / 4.0, self.df)
        spread_k = t * math.hypot(self.k_se, self.tau_k)
        spread_a = t * math.hypot(self.a_se, self.tau_a)
        k_low = max(self.k - spread_k, MIN_SCALE - 1.0)
        return (k_low, max(self.k + spread_k, k_low)), (self.a - spread_a, self.a + spread_a)

    def bound(self) -> BiasBound:
        (k_low, k_high), (a_low, a_high) = self.prediction()
        return BiasBound(k_low, k_high, max(abs(a_low), abs(a_high)), a_low, a_high, self.k, self.a)


def fit_bias(observations: Sequence[BiasObservation], level: float = DEFAULT_BOUND_LEVEL) -> BiasFit | None:
    """REML fit of the module doc's model; None when the studies cannot identify it (fewer than
    MIN_STUDIES, no A/A, or no change)."""
    obs = [o for o in observations if all(math.isfinite(v) for v in (o.truth, o.truth_se, o.design, o.design_se))]
    x = np.array([o.truth for o in obs])
    if len(obs) < MIN_STUDIES or not np.any(x == 0.0) or not np.any(x != 0.0):
        return None
    z = np.array([o.design - o.truth for o in obs])
    se_y2 = np.array([o.design_se for o in obs]) ** 2
    se_x2 = np.array([o.truth_se for o in obs]) ** 2
    X = np.column_stack([x, np.ones_like(x)])
    k = 0.0
    for _ in range(3):  # the truth's error enters scaled by (1 + k): refit with the k found
        within = se_y2 + (1.0 + k) ** 2 * se_x2
        tau_k2, tau_a2 = _reml_spreads(X, z, within)
        beta, cov = _gls(X, z, within + tau_k2 * x ** 2 + tau_a2)
        k = float(beta[0])
    return BiasFit(k=float(beta[0]), k_se=math.sqrt(cov[0, 0]), tau_k=math.sqrt(tau_k2), a=float(beta[1]),
                   a_se=math.sqrt(cov[1, 1]), tau_a=math.sqrt(tau_a2), studies=len(obs), level=level)


def _gls(X: np.ndarray, z: np.ndarray, variance: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    w = 1.0 / variance
    information = X.T @ (X * w[:, None])
    cov = np.linalg.inv(information)
    return cov @ (X.T @ (w * z)), cov


def _restricted_loglik(X: np.ndarray, z: np.ndarray, within: np.ndarray, tau_k2: np.ndarray,
                       tau_a2: np.ndarray) -> np.ndarray:
    """The restricted log-likelihood at every (tau_k², tau_a²) of two broadcastable arrays, in
    closed form: the information matrix X'WX is 2 x 2 (k and a)."""
    x = X[:, 0]
    variance = within + tau_k2[..., None] * x ** 2 + tau_a2[..., None]
    w = 1.0 / variance
    s_xx, s_x1, s_11 = np.sum(w * x * x, -1), np.sum(w * x, -1), np.sum(w, -1)
    b_x, b_1, zz = np.sum(w * x * z, -1), np.sum(w * z, -1), np.sum(w * z * z, -1)
    det = s_xx * s_11 - s_x1 ** 2
    explained = (s_11 * b_x ** 2 - 2.0 * s_x1 * b_x * b_1 + s_xx * b_1 ** 2) / det
    with np.errstate(invalid="ignore", divide="ignore"):
        out = -0.5 * (np.sum(np.log(variance), -1) + np.log(det) + zz - explained)
    return np.where(det > 0, out, -np.inf)


def _reml_spreads(X: np.ndarray, z: np.ndarray, within: np.ndarray) -> tuple[float, float]:
    """(tau_k², tau_a²) maximizing the restricted likelihood, by a grid over both (zero
    included: no spread is a value the data may well choose) zoomed in around its best point
    three times. A grid because the likelihood of a few studies is flat and often has its
    maximum on the boundary, where a gradient method stops anywhere; on numpy, every point at
    once, in a millisecond or two."""
    x2 = X[:, 0] ** 2
    scale_a = float(np.var(z)) + float(np.mean(within))
    scale_k = scale_a / float(np.mean(x2[x2 > 0]))
    grid_k = np.concatenate([[0.0], scale_k * np.logspace(-5, 2, 57)])
    grid_a = np.concatenate([[0.0], scale_a * np.logspace(-5, 2, 57)])
    for _ in range(4):
        values = _restricted_loglik(X, z, within, grid_k[:, None], grid_a[None, :])
        i, j = np.unravel_index(int(np.argmax(values)), values.shape)
        best = float(grid_k[i]), float(grid_a[j])
        grid_k = _around(grid_k, int(i))
        grid_a = _around(grid_a, int(j))
    return best


def _around(grid: np.ndarray, index: int) -> np.ndarray:
    """A finer grid between the neighbours of grid[index] (zero kept when it is one of them)."""
    low = grid[max(index - 1, 0)]
    high = grid[min(index + 1, len(grid) - 1)]
    return np.unique(np.concatenate([[low], np.linspace(low, high, 41), [high]]))

"""Gunther's Universal Scalability Law, fitted to throughput measured at several load levels.

    X(N) = γ·N / (1 + α·(N − 1) + β·N·(N − 1))

γ is the throughput of one unit of concurrency, α the contention (serialized fraction, Amdahl),
β the coherency cost (pairwise crosstalk) that makes throughput fall past the peak at
N = √((1 − α)/β). It suits throughput versus concurrency (threads, connections, vCPUs); for
simulated users with think time, MVA (`perflab.capacity.mva`) is the principled model.

Choices, and why:

* Fit with `scipy.optimize.curve_fit` on ln X. Throughput noise between runs is multiplicative
  (a CV, not a fixed number of tx/s), so residuals are homoscedastic on the log scale and every
  load level gets equal weight -- the small-N points, which pin γ, are not drowned by the large.
* Bounds 0 ≤ α ≤ 1 and β ≥ 0: the other signs have no physical meaning and would let the fit
  trade α against β to chase noise.
* At least 6 distinct load levels (as codahale/usl4j requires): three parameters need spare
  degrees of freedom, and levels should reach saturation; intervals are Student t on the
  covariance of the fit with m − 3 degrees of freedom.
* A peak far beyond the largest measured N is reported with a warning, not hidden: it is an
  extrapolation of a quadratic term the data barely constrain.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize, stats

from perflab.errors import InputError

#: Distinct load levels needed for a fit.
MIN_LEVELS = 6
#: A peak beyond this multiple of the largest measured N is flagged as an extrapolation.
EXTRAPOLATION_FACTOR = 2.0


def usl(n: np.ndarray | float, alpha: float, beta: float, gamma: float) -> np.ndarray:
    """Throughput predicted by the USL at concurrency n."""
    n = np.asarray(n, dtype=float)
    return gamma * n / (1.0 + alpha * (n - 1.0) + beta * n * (n - 1.0))


@dataclass(frozen=True)
class USLFit:
    """Fitted USL parameters with t-intervals (`ci[name] = (low, high)`), the peak concurrency
    and its throughput, and the caveats a report must show with them."""

    alpha: float
    beta: float
    gamma: float
    ci: dict[str, tuple[float, float]]
    confidence: float
    peak_n: float
    peak_throughput: float
    n_levels: int
    max_n: float
    rmse_log: float
    warnings: list[str] = field(default_factory=list)

    def predict(self, n: np.ndarray | float) -> np.ndarray:
        """Throughput at concurrency n. Beyond `EXTRAPOLATION_FACTOR`·max_n it is a guess."""
        return usl(n, self.alpha, self.beta, self.gamma)

    def to_dict(self) -> dict:
        def num(x: float) -> float | None:
            return x if math.isfinite(x) else None

        return {
            "alpha": self.alpha,
            "beta": self.beta,
            "gamma": self.gamma,
            "ci": {k: [num(lo), num(hi)] for k, (lo, hi) in self.ci.items()},
            "confidence": self.confidence,
            "peak_n": num(self.peak_n),
            "peak_throughput": num(self.peak_throughput),
            "n_levels": self.n_levels,
            "max_n": self.max_n,
            "rmse_log": self.rmse_log,
            "warnings": list(self.warnings),
        }


def fit_usl(
    concurrency: Sequence[float], throughput: Sequence[float], *, confidence: float = 0.90
) -> USLFit:
    """Fit the USL to (N, X) measurements; repeated runs at one level are allowed."""
    n = np.asarray(concurrency, dtype=float)
    x = np.asarray(throughput, dtype=float)
    if n.shape != x.shape or n.ndim != 1:
        raise InputError("concurrency and throughput must be lists of the same length")
    if not (np.all(np.isfinite(n)) and np.all(np.isfinite(x)) and np.all(n >= 1) and np.all(x > 0)):
        raise InputError("concurrency must be >= 1 and throughput positive, all finite")
    levels = len(np.unique(n))
    if levels < MIN_LEVELS:
        raise InputError(f"a USL fit needs ≥ {MIN_LEVELS} distinct load levels, got {levels}")

    def model(nn, alpha, beta, gamma):
        return np.log(usl(nn, alpha, beta, gamma))

    p0 = _initial_guess(n, x)
    popt, pcov = optimize.curve_fit(
        model,
        n,
        np.log(x),
        p0=p0,
        bounds=([0.0, 0.0, 0.0], [1.0, np.inf, np.inf]),
        method="trf",
        x_scale="jac",
    )
    alpha, beta, gamma = (float(v) for v in popt)
    resid = np.log(x) - model(n, alpha, beta, gamma)
    dof = len(x) - 3
    t = stats.t.ppf(0.5 + confidence / 2.0, dof)
    se = np.sqrt(np.clip(np.diag(pcov), 0.0, np.inf))
    lower = {"alpha": 0.0, "beta": 0.0, "gamma": 0.0}
    ci = {
        name: (max(lower[name], float(v - t * s)), float(v + t * s))
        for name, v, s in zip(("alpha", "beta", "gamma"), (alpha, beta, gamma), se, strict=True)
    }
    ci["alpha"] = (ci["alpha"][0], min(1.0, ci["alpha"][1]))

    warnings: list[str] = []
    max_n = float(n.max())
    if beta > 0.0:
        peak = math.sqrt((1.0 - alpha) / beta)
        peak_x = float(usl(peak, alpha, beta, gamma))
    else:
        peak, peak_x = math.inf, gamma / alpha if alpha > 0 else math.inf
    if ci["beta"][0] <= 0.0:
        warnings.append(
            "β is indistinguishable from 0: the data show no retrograde region, so the peak "
            "is not determined by them"
        )
    if peak > EXTRAPOLATION_FACTOR * max_n:
        where = "infinite" if math.isinf(peak) else f"N≈{peak:.0f}, {peak / max_n:.1f}×"
        warnings.append(
            f"peak at {where} the largest measured N={max_n:g}: an extrapolation far beyond "
            f"the data; measure closer to saturation before relying on it"
        )
    return USLFit(
        alpha=alpha,
        beta=beta,
        gamma=gamma,
        ci=ci,
        confidence=confidence,
        peak_n=peak,
        peak_throughput=peak_x,
        n_levels=levels,
        max_n=max_n,
        rmse_log=float(np.sqrt(np.mean(resid**2))),
        warnings=warnings,
    )


def _initial_guess(n: np.ndarray, x: np.ndarray) -> list[float]:
    """Start from the linearized model: with γ from the smallest N, N·γ/X − 1 = α(N−1) + βN(N−1)
    is linear in (α, β), so least squares gives a start inside the bounds."""
    small = n == n.min()
    gamma = float(np.exp(np.mean(np.log(x[small] / n[small]))))
    y = n * gamma / x - 1.0
    a = np.column_stack([n - 1.0, n * (n - 1.0)])
    (alpha, beta), *_ = np.linalg.lstsq(a, y, rcond=None)
    return [float(np.clip(alpha, 1e-6, 0.99)), float(max(beta, 1e-9)), gamma]

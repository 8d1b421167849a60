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
* A fit that does not converge, or whose parameters the data cannot separate (an infinite
  covariance), is an `InputError` starting "no curve:": a curve with made-up intervals would be
  worse than none.
* The peak's interval propagates the parameters' joint uncertainty (their covariance, Student t
  with m − 3 df) through N* = √((1 − α)/β) by simulation, because N* is far from linear in β:
  when β may be 0 the peak may be at infinity, and the interval says so (high = inf).
"""

from __future__ import annotations

import math
import warnings as _warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from perflab import caveats as cav
from perflab.caveats import Caveat, Code
from perflab.errors import InputError
from perflab.stats.criteria import DEFAULT_CONFIDENCE

#: Distinct load levels needed for a fit.
MIN_LEVELS = 6
#: A peak beyond this multiple of the largest measured N is flagged as an extrapolation.
EXTRAPOLATION_FACTOR = 2.0


def usl(n: np.ndarray | float, alpha: np.ndarray | float, beta: np.ndarray | float,
        gamma: np.ndarray | float) -> np.ndarray:
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
    warnings: list[Caveat] = field(default_factory=list)
    #: covariance of (α, β, γ) from the fit, and its degrees of freedom (observations − 3)
    cov: tuple[tuple[float, ...], ...] = ()
    dof: int = 0
    #: per observation (n, measured, fitted, ln(measured / fitted)), in input order
    residuals: tuple[tuple[float, float, float, float], ...] = ()
    #: intervals of the peak (N*, X(N*)) at `confidence`; high may be inf (β may be 0)
    peak_ci: tuple[float, float] = (math.nan, math.nan)
    peak_throughput_ci: tuple[float, float] = (math.nan, math.nan)

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
            "warnings": [w.model_dump(mode="json") for w in self.warnings],
            "peak_ci": [num(v) for v in self.peak_ci],
            "peak_throughput_ci": [num(v) for v in self.peak_throughput_ci],
            "dof": self.dof,
            "residuals": [
                {"n": n, "measured": m, "fitted": f, "log_residual": r} for n, m, f, r in self.residuals
            ],
        }


def fit_usl(
    concurrency: Sequence[float], throughput: Sequence[float], *, confidence: float = DEFAULT_CONFIDENCE
) -> USLFit:
    """Fit the USL to (N, X) measurements; repeated runs at one level are allowed."""
    from scipy import optimize, stats  # here, not at import: scipy costs most of a second at every command's start
    n = np.asarray(concurrency, dtype=float)
    x = np.asarray(throughput, dtype=float)
    if n.shape != x.shape or n.ndim != 1:
        raise InputError("concurrency and throughput must be lists of the same length")
    if not (np.all(np.isfinite(n)) and np.all(np.isfinite(x)) and np.all(n >= 1) and np.all(x > 0)):
        raise InputError("concurrency must be >= 1 and throughput positive, all finite")
    levels = len(np.unique(n))
    if levels < MIN_LEVELS:
        raise InputError(
            f"no curve: a USL fit needs ≥ {MIN_LEVELS} distinct load levels, got {levels}"
        )

    def model(nn, alpha, beta, gamma):
        return np.log(usl(nn, alpha, beta, gamma))

    p0 = _initial_guess(n, x)
    try:
        with _warnings.catch_warnings():
            # an unestimable covariance is checked below, as a message of our own
            _warnings.simplefilter("ignore", optimize.OptimizeWarning)
            popt, pcov = optimize.curve_fit(
                model,
                n,
                np.log(x),
                p0=p0,
                bounds=([0.0, 0.0, 0.0], [1.0, np.inf, np.inf]),
                method="trf",
                x_scale="jac",
                max_nfev=2000,
            )
    except (RuntimeError, ValueError) as exc:
        raise InputError(f"no curve: the USL fit did not converge ({exc})") from None
    if not np.all(np.isfinite(pcov)):
        raise InputError(
            "no curve: the USL parameters cannot be separated by these points (infinite "
            "covariance); measure more load levels, up to saturation"
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

    warnings: list[Caveat] = []
    max_n = float(n.max())
    if beta > 0.0:
        peak = math.sqrt((1.0 - alpha) / beta)
        peak_x = float(usl(peak, alpha, beta, gamma))
    else:
        peak, peak_x = math.inf, gamma / alpha if alpha > 0 else math.inf
    if ci["beta"][0] <= 0.0:
        warnings.append(cav.remark(Code.MODEL_FIT, "β is indistinguishable from 0: the data show no retrograde region, "
                                   "so the peak is not determined by them", parameter="beta"))
    if peak > EXTRAPOLATION_FACTOR * max_n:
        where = "infinite" if math.isinf(peak) else f"N≈{peak:.0f}, {peak / max_n:.1f}×"
        warnings.append(cav.remark(Code.MODEL_FIT, f"peak at {where} the largest measured N={max_n:g}: an "
                                   "extrapolation far beyond the data; measure closer to saturation before relying "
                                   "on it", peak=peak, max_n=max_n))
    fitted = usl(n, alpha, beta, gamma)
    peak_ci, peak_x_ci = _peak_intervals(popt, pcov, dof, confidence)
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
        cov=tuple(tuple(float(v) for v in row) for row in pcov),
        dof=dof,
        residuals=tuple(
            (float(a), float(b), float(c), float(d)) for a, b, c, d in zip(n, x, fitted, resid, strict=True)
        ),
        peak_ci=peak_ci,
        peak_throughput_ci=peak_x_ci,
    )


#: draws for the peak's interval; fixed seed so a report is reproducible
PEAK_DRAWS = 20_000


def _peak_intervals(
    popt: np.ndarray, pcov: np.ndarray, dof: int, confidence: float
) -> tuple[tuple[float, float], tuple[float, float]]:
    """Intervals of N* and X(N*) from the fit's sampling distribution.

    Draws (α, β, γ) from the multivariate t the covariance intervals assume (normal / √(χ²/df)),
    clipped to the physical bounds, and takes the central `confidence` quantiles of the peak each
    draw implies. A draw with β = 0 has its peak at infinity, so a β the data cannot tell from 0
    gives an upper bound of inf rather than a finite number the data do not support.
    Called by `fit_usl`.
    """
    rng = np.random.default_rng(12345)
    try:
        z = rng.multivariate_normal(np.zeros(3), pcov, size=PEAK_DRAWS, method="eigh")
    except np.linalg.LinAlgError:
        return (math.nan, math.nan), (math.nan, math.nan)
    scale = np.sqrt(rng.chisquare(dof, size=PEAK_DRAWS) / dof)[:, None]
    draws = popt[None, :] + z / scale
    a = np.clip(draws[:, 0], 0.0, 1.0)
    b = np.clip(draws[:, 1], 0.0, None)
    g = np.clip(draws[:, 2], 0.0, None)
    with np.errstate(divide="ignore", invalid="ignore"):
        peak = np.where(b > 0, np.sqrt((1.0 - a) / np.where(b > 0, b, 1.0)), np.inf)
        peak_x = np.where(
            np.isfinite(peak), usl(np.where(np.isfinite(peak), peak, 1.0), a, b, g),
            np.where(a > 0, g / np.where(a > 0, a, 1.0), np.inf),
        )
    tail = (1.0 - confidence) / 2.0
    # np.quantile handles inf: a quantile that falls among infinite draws is inf
    lo, hi = np.quantile(peak, [tail, 1.0 - tail], method="inverted_cdf")
    xlo, xhi = np.quantile(peak_x, [tail, 1.0 - tail], method="inverted_cdf")
    return (float(lo), float(hi)), (float(xlo), float(xhi))


def _initial_guess(n: np.ndarray, x: np.ndarray) -> list[float]:
    """Start from the linearized model: with γ from the smallest N, N·γ/X − 1 = α(N−1) + βN(N−1)
    is linear in (α, β), so least squares gives a start inside the bounds."""
    small = n == n.min()
    gamma = float(np.exp(np.mean(np.log(x[small] / n[small]))))
    y = n * gamma / x - 1.0
    a = np.column_stack([n - 1.0, n * (n - 1.0)])
    (alpha, beta), *_ = np.linalg.lstsq(a, y, rcond=None)
    return [float(np.clip(alpha, 1e-6, 0.99)), float(max(beta, 1e-9)), gamma]

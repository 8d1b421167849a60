"""The few distribution functions perflab's statistics need, from scipy.special.

scipy.stats builds its distribution objects (and parses their docstrings) when it is imported:
1.3 s of every `perflab run`, `show` or `study` on this machine, against 0.35 s for
scipy.special, whose functions scipy.stats' own t, normal and chi-squared distributions call.
Each function here is the scipy.stats one it is named after (tests/stats/test_distributions.py
compares them), vectorized like it. scipy.special itself is imported at the first call, not with this module:
most commands that import perflab's statistics never compute a quantile.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _special() -> Any:
    from scipy import special  # here, not at import: 0.3 s of every command's start otherwise

    return special


def t_ppf(p: Any, df: Any) -> Any:
    """Student's t quantile: scipy.stats.t.ppf(p, df)."""
    return _special().stdtrit(df, p)


def t_sf(t: Any, df: Any) -> Any:
    """Student's t survival function, P(T > t): scipy.stats.t.sf(t, df)."""
    return _special().stdtr(df, np.negative(t))


def norm_ppf(p: Any) -> Any:
    """The standard normal quantile: scipy.stats.norm.ppf(p)."""
    return _special().ndtri(p)


def norm_cdf(x: Any) -> Any:
    """The standard normal distribution function: scipy.stats.norm.cdf(x)."""
    return _special().ndtr(x)


def chi2_ppf(p: Any, df: Any) -> Any:
    """The chi-squared quantile: scipy.stats.chi2.ppf(p, df). chdtri inverts the upper tail."""
    return _special().chdtri(df, np.subtract(1.0, p))


def clopper_pearson_lower(successes: int, trials: int, level: float = 0.95) -> float:
    """The one-sided Clopper-Pearson lower bound of a binomial proportion at `level`: the least p
    under which `successes` or more of `trials` have probability 1 - level (0 with none)."""
    if trials <= 0 or successes <= 0:
        return 0.0
    return float(_special().betaincinv(successes, trials - successes + 1, 1.0 - level))


def linear_trend(y: np.ndarray) -> tuple[float, float]:
    """The least-squares slope of y against 0, 1, ..., n-1 and its two-sided p-value (H0: no
    trend): scipy.stats.linregress(range(n), y)'s slope and pvalue."""
    n = len(y)
    x = np.arange(n, dtype=float)
    dx, dy = x - x.mean(), y - np.mean(y)
    sxx, syy, sxy = float(dx @ dx), float(dy @ dy), float(dx @ dy)
    slope = sxy / sxx
    if syy == 0.0:
        return slope, 1.0
    if n == 2:  # two points lie on their line
        return slope, 0.0
    r2 = min(1.0, sxy * sxy / (sxx * syy))
    if r2 >= 1.0:
        return slope, 0.0
    t = np.sqrt(r2 * (n - 2) / (1.0 - r2))
    return slope, float(2.0 * t_sf(t, n - 2))

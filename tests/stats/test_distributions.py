"""perflab.stats.distributions against scipy.stats, the functions each one stands in for.

The values are deterministic: a grid of probabilities and degrees of freedom, the tails
included, where a wrong argument order or tail (stdtrit(p, df), chdtri's upper tail) would be
off by far more than the tolerance."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from perflab.stats.distributions import chi2_ppf, linear_trend, norm_cdf, norm_ppf, t_ppf, t_sf

P = np.array([1e-6, 0.001, 0.025, 0.05, 0.3, 0.5, 0.7, 0.95, 0.975, 0.999])
DF = np.array([1.0, 2.0, 2.5, 3.0, 7.0, 30.0, 1000.0])


def test_quantiles_and_tails_are_scipy_stats_own():
    p, df = np.meshgrid(P, DF)
    np.testing.assert_allclose(t_ppf(p, df), stats.t.ppf(p, df), rtol=1e-9)
    np.testing.assert_allclose(chi2_ppf(p, df), stats.chi2.ppf(p, df), rtol=1e-9)
    np.testing.assert_allclose(norm_ppf(P), stats.norm.ppf(P), rtol=1e-12)
    x = np.array([-8.0, -2.0, -0.1, 0.0, 0.4, 1.96, 3.0, np.inf])
    xs, dfs = np.meshgrid(x, DF)
    np.testing.assert_allclose(t_sf(xs, dfs), stats.t.sf(xs, dfs), rtol=1e-9, atol=1e-300)
    np.testing.assert_allclose(norm_cdf(x), stats.norm.cdf(x), rtol=1e-12)
    assert float(t_ppf(0.975, 9)) == pytest.approx(2.2621571628, abs=1e-9)  # the printed tables' value


@pytest.mark.parametrize("y", [
    [1.0, 1.2, 0.9, 1.4, 1.3, 1.7, 1.5],           # a trend in noise
    [3.0, 2.0, 4.0, 1.0, 5.0],                      # none to speak of
    [0.0, 0.5, 1.0, 1.5],                           # an exact line: p = 0
    [1.0, 3.0],                                     # two points
])
def test_the_trend_is_linregress_slope_and_p_value(y):
    slope, p = linear_trend(np.array(y))
    fit = stats.linregress(np.arange(len(y), dtype=float), y)
    assert slope == pytest.approx(fit.slope, abs=1e-12)
    assert p == pytest.approx(fit.pvalue, rel=1e-9, abs=1e-12)


def test_a_flat_series_has_no_trend():
    # linregress answers nan (0/0); a drift test reads "no evidence of a trend" either way
    assert linear_trend(np.array([2.0, 2.0, 2.0])) == (0.0, 1.0)

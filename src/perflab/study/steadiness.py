"""Is a run in steady state? The trend of its per-interval series, judged against the noise those
series really have.

A run is a sample of the SUT's steady state only if what it measures does not drift across the
window. Three series are judged (each where the run has it):

* the primary metrics' own per-interval values (ITR (S) by default): the steadiness that matters
  is that of the number the study compares;
* ETR (T), closed loop only (open loop, it is the arrival process, which says nothing of the SUT);
* the response time AVG LAST (T), on a log scale: with 10 s thinks, a response time rising from
  5 to 500 ms moves ETR by only 5%, and in open loop a SUT a few percent slower than its
  arrivals shows nowhere else but in a response time (a growing queue) that climbs all window.

For each, a weighted least-squares line through the per-interval values gives the change across
the window (relative for rates; for the response time the change of its logarithm). A run is not
steady when a change is both beyond its limit and beyond what the series' own noise explains.

**The noise is autocorrelated.** The host's speed wanders over tens of seconds and a queue
remembers its past, so consecutive intervals are not independent; a t-test on the line's slope
that assumes they are excluded 7-47% of stationary runs instead of 1% (issue 23). An AR(1)
correction estimated from the run alone does not rescue it: from 8 intervals the residual
lag-1 correlation of a line through an AR(1) series with rho = 0.9 averages about 0, the same
as for rho = 0 -- the two cannot be told apart. So the null is taken from where it can be
measured:

* **in a study** (`Scale.between_runs`), from the other runs: every run of the study measures the
  same workload on the same host, and the changes of the stationary ones are draws from the
  very distribution a drift must stand out of, whatever its autocorrelation. A run's change is
  compared with the standard deviation of the other runs' changes (leave-one-out, Student's t
  with k - 2 degrees of freedom), so a run that drifts alone is found, and if every run drifts
  (a stabilization too short for the workload) every one is;
* **alone** (`Scale.alone`: `perflab run`, or a study with fewer than `MIN_POOL` runs), by the
  worst case of the stated null: the standard error of the line's change under AR(1) noise with
  rho = `RHO_ALONE` (0.9), the marginal variance estimated from the residuals under that rho. A
  drift must beyond what a wander that slow explains; a lone run is judged conservatively.

Both keep false exclusions of stationary runs (AR(1), rho up to 0.9) at or below 2% at 8, 20 and
60 intervals (tests/study/test_steadiness.py). A duet's run is judged on its series relative to
its partner's, interpolated onto its own intervals by overlap (any driver, any edge offsets): a
slow spell of the host slows both and cancels from their ratio, so only a drift of one against
the other excludes.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from perflab.stats.distributions import t_ppf
from perflab.values import as_float

#: A study judges a run against the other runs' changes when it has at least this many others.
MIN_POOL = 5
#: The autocorrelation a lone run's null allows for: the largest the gate is built to tolerate.
RHO_ALONE = 0.9
#: Two-sided significance of one series' drift test against the study's other runs. Three series
#: are judged per run (at most), strongly dependent (ITR and ETR move together): a stationary
#: run's false exclusion stays near 0.5% (tests/study/test_steadiness.py measures it).
ALPHA_BETWEEN = 0.005
#: The same for a run judged alone. Its null, AR(1) at rho = 0.9, has few effective degrees of
#: freedom for the variance estimated under it, so the t-quantile is optimistic: at 0.005 a
#: rho = 0.9 wander was excluded 1.2% of the time at 20 intervals; at 0.002, 0.4%.
ALPHA_ALONE = 0.002


@dataclass(frozen=True)
class Series:
    """One per-interval series of a run: interval edges and values, finite and positive."""

    start: np.ndarray
    end: np.ndarray
    value: np.ndarray

    @classmethod
    def of(cls, rows: Sequence[Mapping[str, Any]] | None, key: str) -> Series:
        start, end, value = [], [], []
        for row in rows or []:
            s, e, v = _num(row.get("t_start")), _num(row.get("t_end")), _num(row.get(key))
            if math.isfinite(s) and math.isfinite(e) and e > s and math.isfinite(v) and v > 0:
                start.append(s)
                end.append(e)
                value.append(v)
        return cls(np.asarray(start), np.asarray(end), np.asarray(value))

    def __len__(self) -> int:
        return len(self.value)

    def whole(self) -> Series:
        """Without slivers: an interval shorter than half the usual length (the window's last,
        when it is not a whole number of intervals; an external driver's window ends at its last
        response, so its final 0.05 s holds only in-flight requests finishing -- a "rate" a line
        through it reads as a collapse) is left out."""
        if not len(self):
            return self
        length = self.end - self.start
        keep = length >= 0.5 * np.median(length)
        return Series(self.start[keep], self.end[keep], self.value[keep])

    def relative_to(self, other: Series) -> Series:
        """This series divided by `other` interpolated onto its intervals (each of its intervals
        takes `other`'s values weighted by their overlap; an interval `other` covers less than
        half of is left out), times `other`'s mean: what is left once what both share is taken
        out, at this series' level."""
        if not len(other) or not len(self):
            return Series(np.empty(0), np.empty(0), np.empty(0))
        overlap = np.clip(np.minimum(self.end[:, None], other.end[None, :])
                          - np.maximum(self.start[:, None], other.start[None, :]), 0.0, None)
        covered = overlap.sum(axis=1)
        keep = covered >= 0.5 * (self.end - self.start)
        theirs = (overlap @ other.value)[keep] / covered[keep]
        level = float(np.sum(other.value * (other.end - other.start)) / np.sum(other.end - other.start))
        return Series(self.start[keep], self.end[keep], self.value[keep] / theirs * level)


@dataclass(frozen=True)
class Trend:
    """A line through a series: its change across the window (relative, or of the log), the
    standard errors of that change under independent intervals and under AR(1) noise with
    rho = RHO_ALONE, the residuals' lag-1 autocorrelation (reported, never trusted alone), and
    the number of intervals."""

    change: float
    se_independent: float
    se_alone: float
    residual_rho: float
    intervals: int


def fit(series: Series, log: bool = False, bend: bool = False) -> Trend | None:
    """The weighted least-squares line through the series (weights: interval lengths, since a
    rate counted over d seconds has variance ~ 1/d); None with fewer than 3 intervals. `bend`:
    fit a centred quadratic term beside the line (for a response time, see below)."""
    series = series.whole()
    n = len(series)
    if n < 3:
        return None
    length = series.end - series.start
    w = length / length.mean()
    t = (series.start + series.end) / 2.0
    y = np.log(series.value) if log else series.value
    level = 1.0 if log else float(np.sum(series.value * length) / np.sum(length))
    if level <= 0:
        return None
    x = (t - t.mean()) / max(float(np.ptp(t)), 1e-12)
    # A line and, for a response time, a bend: a queue that grows bends its response time, and a
    # bend left in the residuals looks like slow autocorrelated wander, which would hide the
    # very change being tested. The bend term is centred (orthogonal to the line's), so the
    # change is still the line's: the slope times the window. Rates are fitted with the line
    # alone: the extra column costs a lone run's test power at 20 intervals (22% against 90%
    # for a 10% drift at 1% noise).
    columns = [np.ones(n), x]
    if bend and n >= 6:
        bend = x * x
        columns.append(bend - np.sum(w * bend) / np.sum(w))
    X = np.column_stack(columns)
    XtW = X.T * w
    try:
        inverse = np.linalg.inv(XtW @ X)
    except np.linalg.LinAlgError:
        return None
    slope_weights = (inverse @ XtW)[1] / max(float(np.ptp(t)), 1e-12)  # slope = slope_weights @ y
    slope = float(slope_weights @ y)
    hat = X @ inverse @ XtW
    residual = y - hat @ y
    span = float(series.end[-1] - series.start[0])
    scale = span / level
    rss = float(np.sum(w * residual**2))
    residual_rho = float(np.sum(residual[1:] * residual[:-1]) / np.sum(residual**2)) if rss > 0 else 0.0
    se = [_slope_se(rss, w, hat, slope_weights, rho) * scale for rho in (0.0, RHO_ALONE)]
    return Trend(slope * scale, se[0], se[1], residual_rho, n)


def _slope_se(rss: float, w: np.ndarray, hat: np.ndarray, c: np.ndarray, rho: float) -> float:
    """The slope's standard error if the intervals were AR(1) with `rho`: the marginal variance
    from the residuals, E[sum w e^2] = s^2 tr(W M R M') with M = I - H, then c' R c s^2."""
    n = len(w)
    corr = _ar1_correlation(n, rho)
    m = np.eye(n) - hat
    expected = float(np.einsum("i,ij,ij->", w, m @ corr, m))  # tr(W M R M')
    if expected <= 0:
        return math.inf
    return math.sqrt(max(rss / expected, 0.0) * float(c @ corr @ c))


@functools.lru_cache(maxsize=64)
def _ar1_correlation(n: int, rho: float) -> np.ndarray:
    lag = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :])
    return rho**lag


@dataclass(frozen=True)
class Scale:
    """The standard error a run's change is judged against, and its degrees of freedom."""

    se: float
    df: float
    basis: str      # "between runs" or "alone"
    alpha: float = ALPHA_BETWEEN

    @classmethod
    def alone(cls, trend: Trend) -> Scale:
        return cls(trend.se_alone, max(trend.intervals - 2, 1), "alone", ALPHA_ALONE)

    @classmethod
    def between_runs(cls, others: Sequence[float]) -> Scale | None:
        """From the changes of the study's other runs; None with fewer than MIN_POOL of them.
        A stationary run's change has mean 0 and the spread the others show, so change / SD of
        the others is Student's t with k - 1 degrees of freedom under the null. The SD is taken
        about the others' mean, not about 0: if every run drifts one way (a stabilization too
        short for the workload), the spread stays small and every run is found."""
        values = np.asarray([v for v in others if math.isfinite(v)])
        if len(values) < MIN_POOL:
            return None
        return cls(float(np.std(values, ddof=1)), len(values) - 1, "between runs")

    def critical(self) -> float:
        return float(t_ppf(1.0 - self.alpha / 2.0, self.df))


def drifted(trend: Trend, limit: float, scale: Scale) -> bool:
    """A change beyond the limit and beyond what the null scale explains."""
    return abs(trend.change) > limit and abs(trend.change) > scale.critical() * scale.se


_num = as_float

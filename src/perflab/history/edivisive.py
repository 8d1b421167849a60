"""E-Divisive means: change points in one series by energy statistics and a permutation test.

The method of Matteson and James (JASA 2014, "A nonparametric approach for multiple change point
analysis of multivariate data"), as MongoDB (Daly et al., ICPE 2020) and Apache Otava (Fleming et
al., ICPE 2023) use it on performance histories, written here on numpy:

* For a segment Z[s:e] and a split at tau with a right end kappa (s < tau < kappa <= e), X =
  Z[s:tau] (n values) and Y = Z[tau:kappa] (m values), the energy divergence is

      E = 2/(n m) sum |X_i - Y_j|^a - 2/(n(n-1)) sum_{i<k} |X_i - X_k|^a - 2/(m(m-1)) sum_{j<k} |Y_j - Y_k|^a

  and the statistic is Q = n m / (n + m) E. The candidate of a segment is the tau of the largest
  Q over every (tau, kappa); with a = 1 the statistic sees any change of distribution, a shift
  of the mean first.
* Hierarchical: the candidate with the largest Q over all current segments is tested; if it is
  significant it becomes a change point and splits its segment, and the search goes on.
* Significance by permutation: the values are shuffled within each current segment (what the
  segments would look like if nothing changed inside them), the largest Q over all segments is
  found again, and p = (1 + #{permuted Q >= observed Q}) / (1 + permutations). The test stops
  early once the count of exceedances has decided that p is above alpha (a null series costs a
  few permutations, not all of them).

Why not Otava itself (docs/history.md, "Why a numpy E-Divisive"): apache-otava 0.8 pins numpy
2.2.0 on Python < 3.14 (perflab's environment runs numpy 2.4) and installs the Google BigQuery,
Slack and PostgreSQL clients with it; and its default analysis replaces the permutation test
with a Student's t-test inside sliding windows. This module keeps the permutation test and is
checked against Otava on the same series (perflab.history.validation).

Every sum is read from one two-dimensional prefix sum of the distance matrix, so all (tau, kappa)
of a segment cost O(L^2) array operations and no Python loop over them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Exponent of the distances (Matteson and James's alpha, in (0, 2)); 1 as in both the paper's
#: examples, MongoDB's and Otava's default. (2 would see a change of the mean only.)
DISTANCE_EXPONENT = 1.0
#: Permutations per test (the paper's R: 199 gives p-values down to 0.005).
PERMUTATIONS = 199
#: The significance level a candidate must reach (p <= SIGNIFICANCE): the paper's and MongoDB's.
#: The validation (docs/history.md) measured what it gives: 0.10 false change points per 100 runs
#: of an unchanged series (0.09 alarms per 100 runs analysed after every run, as a CI job does) --
#: a tenth of the goal's 1 -- and 97% of 3% shifts found within 5 runs at 1% noise (0.01: 88%).
SIGNIFICANCE = 0.05
#: The fewest values on either side of a candidate: a change point needs this many runs after it
#: before it can be seen at all.
MIN_SIZE = 3
#: The permutation test's random stream: fixed, so one series always gives the same answer (a CI
#: job run twice on the same history must not disagree with itself).
SEED = 20140101


@dataclass(frozen=True)
class Candidate:
    """The best split of one segment: the change point tau (the first index after it), the right
    end kappa of the Y that maximised Q, and Q itself."""

    tau: int
    kappa: int
    q: float


@dataclass(frozen=True)
class Found:
    """A change point the permutation test accepted, in the order found (strongest first)."""

    index: int              # the first value after the change
    q: float                # its statistic
    p_value: float          # the permutation p at which it was accepted
    permutations: int       # permutations run for it (fewer than asked when the test stopped early)


def prefix_sums(z: np.ndarray, exponent: float = DISTANCE_EXPONENT) -> np.ndarray:
    """P with P[i, j] = sum of |z_p - z_q|^a over p < i, q < j (shape (T+1, T+1))."""
    d = np.abs(z[:, None] - z[None, :])
    if exponent != 1.0:
        d = d ** exponent
    p = np.zeros((len(z) + 1, len(z) + 1))
    p[1:, 1:] = d.cumsum(axis=0).cumsum(axis=1)
    return p


def _rect(p: np.ndarray, a1, a2, b1, b2):
    """Sum of the distances over rows [a1, a2) and columns [b1, b2) (broadcast over arrays)."""
    return p[a2, b2] - p[a1, b2] - p[a2, b1] + p[a1, b1]


def best_split(p: np.ndarray, start: int, end: int, min_size: int = MIN_SIZE) -> Candidate | None:
    """The largest Q of segment [start, end) over every split (tau, kappa) that leaves at least
    `min_size` values on each side; None when the segment is too short for one."""
    if end - start < 2 * min_size:
        return None
    tau = np.arange(start + min_size, end - min_size + 1)[:, None]
    kappa = np.arange(start + min_size, end + 1)[None, :]
    valid = kappa - tau >= min_size
    kappa_ok = np.where(valid, kappa, tau + min_size)        # any valid index where (tau, kappa) is not used
    n = (tau - start).astype(float)
    m = (kappa_ok - tau).astype(float)
    cross = _rect(p, start, tau, tau, kappa_ok)
    within_x = _rect(p, start, tau, start, tau) / 2.0
    within_y = _rect(p, tau, kappa_ok, tau, kappa_ok) / 2.0
    energy = 2.0 * cross / (n * m) - 2.0 * within_x / (n * (n - 1.0)) - 2.0 * within_y / (m * (m - 1.0))
    q = np.where(valid, n * m / (n + m) * energy, -np.inf)
    i, j = np.unravel_index(int(np.argmax(q)), q.shape)
    if not np.isfinite(q[i, j]):
        return None
    return Candidate(int(tau[i, 0]), int(kappa[0, j]), float(q[i, j]))


def _segments(length: int, cuts: list[int]) -> list[tuple[int, int]]:
    edges = [0, *sorted(cuts), length]
    return list(zip(edges[:-1], edges[1:]))


def strongest(p: np.ndarray, length: int, cuts: list[int], min_size: int = MIN_SIZE) -> Candidate | None:
    """The candidate with the largest Q over every segment the cuts leave."""
    best: Candidate | None = None
    for start, end in _segments(length, cuts):
        found = best_split(p, start, end, min_size)
        if found is not None and (best is None or found.q > best.q):
            best = found
    return best


def permutation_p(z: np.ndarray, cuts: list[int], observed: float, rng: np.random.Generator, *,
                  permutations: int = PERMUTATIONS, significance: float = SIGNIFICANCE,
                  min_size: int = MIN_SIZE, exponent: float = DISTANCE_EXPONENT) -> tuple[float, int]:
    """(p, permutations run) of the observed largest Q against shuffles within the segments.

    Stops as soon as the exceedances alone put p above `significance` (the p then returned is the
    bound reached so far, above the level): a null series is rejected in a few permutations."""
    segments = _segments(len(z), cuts)
    # p = (1 + k) / (1 + R) <= significance  <=>  k <= significance (1 + R) - 1
    allowed = significance * (1 + permutations) - 1.0
    exceed = 0
    shuffled = z.copy()
    for done in range(1, permutations + 1):
        for start, end in segments:
            shuffled[start:end] = rng.permutation(z[start:end])
        best = strongest(prefix_sums(shuffled, exponent), len(z), cuts, min_size)
        if best is not None and best.q >= observed:
            exceed += 1
            if exceed > allowed:
                return (1.0 + exceed) / (1.0 + done), done
    return (1.0 + exceed) / (1.0 + permutations), permutations


def change_points(values: np.ndarray | list[float], *, significance: float = SIGNIFICANCE,
                  permutations: int = PERMUTATIONS, min_size: int = MIN_SIZE,
                  exponent: float = DISTANCE_EXPONENT, seed: int = SEED) -> list[Found]:
    """Every change point of the series E-Divisive finds at `significance`, strongest first.

    `values` are analysed as given (history.analysis passes logarithms: run-to-run noise is
    multiplicative, so a change of x% is the same step at any level). NaN is not allowed."""
    z = np.asarray(values, dtype=float)
    if z.ndim != 1 or not np.all(np.isfinite(z)):
        raise ValueError("a series of finite numbers is needed")
    if not 0.0 < significance < 1.0 or permutations < 1 or min_size < 2:
        raise ValueError("significance in (0, 1), permutations >= 1 and min_size >= 2 are needed")
    rng = np.random.default_rng(seed)
    found: list[Found] = []
    cuts: list[int] = []
    p = prefix_sums(z, exponent)
    while True:
        candidate = strongest(p, len(z), cuts, min_size)
        if candidate is None:
            return found
        p_value, run = permutation_p(z, cuts, candidate.q, rng, permutations=permutations,
                                     significance=significance, min_size=min_size, exponent=exponent)
        if p_value > significance:
            return found
        found.append(Found(candidate.tau, candidate.q, p_value, run))
        cuts.append(candidate.tau)

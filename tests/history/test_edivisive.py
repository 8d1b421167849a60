"""E-Divisive means on numpy (perflab.history.edivisive) against its definition and known series.

The statistic is checked against a direct evaluation of Matteson and James's formula over every
split; the change points against series whose changes are many times the noise. The random series
here are seeded; each test of a random outcome states the chance that a correct detector fails it.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from perflab.history import edivisive as ed


def direct_q(z: np.ndarray, start: int, tau: int, kappa: int) -> float:
    """Q of the split (tau, kappa) of z[start:], straight from the paper's definition."""
    x, y = z[start:tau], z[tau:kappa]
    n, m = len(x), len(y)
    cross = sum(abs(a - b) for a in x for b in y)
    within_x = sum(abs(a - b) for a, b in itertools.combinations(x, 2))
    within_y = sum(abs(a - b) for a, b in itertools.combinations(y, 2))
    energy = 2 * cross / (n * m) - within_x / (n * (n - 1) / 2) - within_y / (m * (m - 1) / 2)
    return n * m / (n + m) * energy


@pytest.mark.parametrize("length,start,end", [(12, 0, 12), (20, 3, 17), (25, 0, 25)])
def test_the_best_split_is_the_largest_q_of_the_definition(length, start, end):
    z = np.random.default_rng(length).normal(size=length)
    z[length // 2:] += 1.0
    best = ed.best_split(ed.prefix_sums(z), start, end, min_size=3)
    splits = [(tau, kappa) for tau in range(start + 3, end - 2) for kappa in range(tau + 3, end + 1)]
    expected = max(splits, key=lambda s: direct_q(z, start, *s))
    assert (best.tau, best.kappa) == expected
    assert best.q == pytest.approx(direct_q(z, start, *expected), rel=1e-12)


def test_a_segment_too_short_for_two_sides_has_no_split():
    p = ed.prefix_sums(np.arange(10.0))
    assert ed.best_split(p, 0, 5, min_size=3) is None
    assert ed.best_split(p, 0, 6, min_size=3) is not None


def test_a_constant_series_has_no_change_point():
    assert ed.change_points(np.full(40, 3.0)) == []


def test_a_large_step_is_found_first_where_it_is():
    # 40 values, a step of 10 SD after value 25. A shuffle mixes the two levels, so its Q is a
    # fraction of the step's (the largest of 10,000 shuffles of this series: 0.54 of it); the
    # test fails only if 9 of the 199 shuffles reach it, which at a chance of even 1e-3 a shuffle
    # is C(199, 9) 1e-27 = 3e-14 -- far below 1e-4. (What is found after it, in the two
    # segments of pure noise, is a false change point 5% of the time each: the simulations of
    # test_history_truths.py measure that rate; this test does not look.)
    z = np.random.default_rng(1).normal(0.0, 0.01, 40)
    z[25:] += 0.10
    found = ed.change_points(z)
    assert found[0].index == 25
    assert found[0].p_value <= ed.SIGNIFICANCE


def test_two_steps_are_both_found_strongest_first():
    z = np.random.default_rng(2).normal(0.0, 0.01, 60)
    z[20:] += 0.08
    z[45:] -= 0.20
    found = ed.change_points(z)
    # the larger step first, then the other (each many times any shuffle's Q, as above); a third
    # one found in the noise between them (5% of the time per segment) is not this test's question
    assert [f.index for f in found[:2]] == [45, 20]


def test_the_answer_does_not_change_when_asked_twice_or_when_the_series_is_scaled():
    z = np.random.default_rng(3).normal(0.0, 0.02, 50)
    z[35:] += 0.03
    first = ed.change_points(z)
    assert ed.change_points(z) == first
    scaled = ed.change_points(5.0 * z + 7.0)     # the energy statistic and its permutations scale together
    assert [(f.index, f.p_value) for f in scaled] == [(f.index, f.p_value) for f in first]


def test_the_permutation_test_stops_early_on_a_null_candidate():
    # A candidate that half of the shuffles beat is rejected after about 20 of them: 10 exceedances
    # already put p = (1 + 10) / (1 + 199) above 0.05.
    z = np.random.default_rng(4).normal(size=30)
    candidate = ed.strongest(ed.prefix_sums(z), len(z), [])
    p, run = ed.permutation_p(z, [], candidate.q * 0.5, np.random.default_rng(0))
    assert p > ed.SIGNIFICANCE
    assert run < 40


def test_bad_series_are_refused():
    with pytest.raises(ValueError):
        ed.change_points([1.0, float("nan"), 2.0])
    with pytest.raises(ValueError):
        ed.change_points([1.0, 2.0], significance=0.0)

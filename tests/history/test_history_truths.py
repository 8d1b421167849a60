"""The detector's error rates by simulation: its power to find a 3% shift within 5 runs, and its
false change points in series without a change (the lab tier's simulations: tests/tiers.py
LAB_SIMULATIONS; seconds to a minute of CPU each).

The series are drawn as the model driver draws a run's cost (perflab.drive.model_driver: a
log-normal run-to-run noise of a given CV), on the log scale the history analyses; the validation
(perflab.history.validation, docs/history.md) runs the same through stored model runs and Otava.
Each bound below states the chance that a correct detector fails it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from perflab.history import edivisive as ed


def shifted(rng: np.random.Generator, cv: float, shift: float, pre: int = 30, post: int = 5) -> np.ndarray:
    z = rng.normal(0.0, cv, pre + post)
    z[pre:] += math.log(1.0 + shift)
    return z


@pytest.mark.parametrize("cv", [0.0059, 0.01])
def test_a_3pct_shift_is_found_within_5_runs_at_least_9_times_in_10(cv):
    # 0.59%: a duet's per-run CV on this host (docs/noise.md §5); 1%: the largest CV the goal is
    # claimed for (docs/history.md). Power measured over 400 series each: 400/400 and 390/400.
    # With a true miss rate of 2.5%, 21 or more misses of 200 have a chance of about 1e-7.
    rng = np.random.default_rng(20141 + int(cv * 1e4))
    found = 0
    for _ in range(200):
        changes = ed.change_points(shifted(rng, cv, 0.03))
        found += any(abs(c.index - 30) <= 2 for c in changes)
    assert found >= 180


def test_false_change_points_stay_below_one_per_100_runs():
    # 100 series of 100 runs without a change. Every change point is false; measured: 0.10 per
    # series (200 series, docs/history.md). The goal allows 100 in all; more than 60 at even 0.25
    # per series (Poisson, mean 25) has a chance below 1e-7.
    rng = np.random.default_rng(777)
    false = sum(len(ed.change_points(rng.normal(0.0, 0.02, 100))) for _ in range(100))
    assert false <= 60


def test_the_first_test_rejects_a_null_series_at_its_level():
    # The permutation test's size: of 400 null series of 40 runs, a share near 5% get a change
    # point. Binomial(400, 0.05): mean 20, SD 4.4; outside [3, 45] has a chance below 1e-5.
    rng = np.random.default_rng(4242)
    rejected = sum(bool(ed.change_points(rng.normal(0.0, 1.0, 40))) for _ in range(400))
    assert 3 <= rejected <= 45

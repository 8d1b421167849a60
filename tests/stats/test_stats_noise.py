"""A/A dimensioning and the exact power computation."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from perflab.caveats import Code
from perflab.errors import InputError
from perflab.stats import Verdict, dimension, power


def base_runs(rng, cv, n=10, drift=0.0):
    t = np.arange(n)
    return (71.78 * np.exp(rng.normal(0.0, cv, n) + np.log1p(drift * t))).tolist()


def test_cv_interval_covers_the_true_cv():
    rng = np.random.default_rng(21)
    trials, hits = 400, 0
    for _ in range(trials):
        est = dimension(base_runs(rng, 0.01))
        hits += est.cv_low <= 0.01 <= est.cv_high
    assert abs(hits / trials - 0.90) <= 0.04


def test_quiet_host_gets_the_default_six_blocks_and_passes_a_a():
    rng = np.random.default_rng(22)
    est = dimension(base_runs(rng, 0.008, n=12))
    assert est.n_runs == 12 and est.blocks == 6
    assert est.aa is not None and est.aa.verdict is Verdict.EQUIVALENT
    assert est.warnings == []
    json.dumps(est.to_dict(), allow_nan=False)


def test_noisy_host_is_told_to_reduce_noise_and_given_more_blocks():
    rng = np.random.default_rng(23)
    est = dimension(base_runs(rng, 0.03, n=20))
    assert est.blocks > 10 and est.blocks_upper >= est.blocks
    assert any(w.code == Code.NOISY and "reduce noise first" in w.text for w in est.warnings)


def test_drifting_session_is_flagged():
    rng = np.random.default_rng(24)
    est = dimension(base_runs(rng, 0.005, n=12, drift=-0.003))
    assert est.drift_per_run == pytest.approx(-0.003, abs=0.001)
    drift = [w for w in est.warnings if w.code == Code.DRIFT]
    assert drift and drift[0].text.startswith("drift −") and drift[0].values["per_run"] < 0


def test_too_few_runs():
    rng = np.random.default_rng(25)
    est = dimension(base_runs(rng, 0.01, n=6))
    assert any(w.code == Code.NO_INTERVAL and "need ≥ 10" in w.text for w in est.warnings)
    with pytest.raises(InputError):
        dimension([70.0, 71.0])


def test_aa_split_is_seeded():
    rng = np.random.default_rng(26)
    values = base_runs(rng, 0.01)
    assert dimension(values, seed=5).aa.ratio == dimension(values, seed=5).aa.ratio
    assert dimension(values, seed=5).aa.ratio != dimension(values, seed=6).aa.ratio


def test_power_probabilities_are_a_partition_and_symmetric():
    for cv, n, r in [(0.01, 6, 1.0), (0.02, 10, 0.98), (0.015, 8, 1.03)]:
        p = power(cv, n, r)
        assert p.equivalent + p.worse + p.better + p.inconclusive == pytest.approx(1.0, abs=1e-9)
    up, down = power(0.01, 6, 1.02), power(0.01, 6, 1 / 1.02)
    assert up.better == pytest.approx(down.worse, abs=1e-9)
    assert up.equivalent == pytest.approx(down.equivalent, abs=1e-9)
    assert power(0.01, 6).ci_below_one == pytest.approx(0.025, abs=1e-4)  # exactly α/2 per side (95%)


def test_power_grows_with_blocks_and_falls_with_noise():
    eq = [power(0.02, n).equivalent for n in (4, 6, 10, 15)]
    assert eq == sorted(eq) and eq[-1] > 0.90
    eq = [power(cv, 6).equivalent for cv in (0.005, 0.01, 0.015, 0.02)]
    assert eq == sorted(eq, reverse=True)
    assert math.isclose(power(0.01, 6, 0.95).worse, 1.0, abs_tol=1e-5)

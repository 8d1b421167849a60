"""Several workloads at once: Holm for claims, intersection–union for "equivalent overall"."""

from __future__ import annotations

import math

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from perflab.stats import (
    Verdict,
    adjust_claims,
    compare,
    equivalent_overall,
    holm,
    paired_log_interval,
)


def test_holm_known_values_and_statsmodels_oracle():
    p = [0.01, 0.04, 0.03, 0.005]
    assert holm(p).tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02])
    rng = np.random.default_rng(1)
    batch = rng.uniform(0, 0.2, (50, 7))
    oracle = np.array([multipletests(row, method="holm")[1] for row in batch])
    assert np.allclose(holm(batch), oracle)


def test_holm_ignores_missing_tests():
    out = holm([0.01, math.nan, 0.03])
    assert out[0] == pytest.approx(0.02) and math.isnan(out[1]) and out[2] == pytest.approx(0.03)


def test_holm_controls_the_familywise_rate_where_raw_claims_do_not():
    """Ten identical-release workloads, CV 2 %, 6 blocks: any "changed" claim is an error."""
    rng = np.random.default_rng(2)
    families, k, n, s = 5000, 10, 6, 0.02
    d = rng.normal(0.0, math.sqrt(2) * s, (families, k, n))
    p = paired_log_interval(d, 0.90).p_value()  # the p-value `compare` reports
    raw = np.mean((p < 0.10).any(axis=1))
    adjusted = np.mean((holm(p) < 0.10).any(axis=1))
    assert raw > 0.6  # 1 − 0.9¹⁰ = 0.65
    assert adjusted <= 0.105


def _workload(rng, ratio, name, cv=0.01, n=6):
    a = 100 * np.exp(rng.normal(0, cv, n))
    b = 100 * ratio * np.exp(rng.normal(0, cv, n))
    return compare(a.tolist(), b.tolist(), metric=name)


def test_adjust_claims_withdraws_a_weak_claim_and_keeps_a_strong_one():
    rng = np.random.default_rng(3)
    strong = _workload(rng, 0.93, "fs7b")
    assert strong.verdict is Verdict.WORSE and strong.p_value < 0.01
    # A weak claim: p just under 0.10 on its own.
    a, b = [100.0, 100.0, 100.0, 100.0], [97.0, 96.0, 98.5, 99.8]
    weak = compare(a, b, metric="dcw")
    assert weak.verdict is Verdict.WORSE and 0.05 < weak.p_value < 0.10
    others = [_workload(rng, 1.0, f"w{i}") for i in range(3)]
    out = adjust_claims([strong, weak, *others])
    assert out[0].verdict is Verdict.WORSE and out[0].material
    assert out[1].verdict is Verdict.INCONCLUSIVE and not out[1].material
    assert any("WORSE withdrawn: Holm-adjusted p=" in w for w in out[1].warnings)
    assert all(c.p_adjusted is not None for c in out)
    assert weak.verdict is Verdict.WORSE  # inputs are not modified


def test_equivalent_overall_needs_every_workload():
    rng = np.random.default_rng(4)
    eq = [_workload(rng, 1.0, f"w{i}") for i in range(3)]
    assert all(c.verdict is Verdict.EQUIVALENT for c in eq)
    overall = equivalent_overall(eq)
    assert overall.equivalent and overall.verdict is Verdict.EQUIVALENT
    bad = _workload(rng, 0.93, "batch")
    overall = equivalent_overall([*eq, bad])
    assert not overall.equivalent and overall.verdict is Verdict.WORSE
    assert overall.not_equivalent == ["batch"]
    better = _workload(rng, 1.08, "pipes")
    assert equivalent_overall([*eq, better]).verdict is Verdict.BETTER


def test_intersection_union_needs_no_correction():
    """Three workloads all truly at the margin edge (0.97): P(equivalent overall) ≤ 5 %."""
    rng = np.random.default_rng(5)
    wins = 0
    trials = 300
    for _ in range(trials):
        family = [_workload(rng, 0.97, f"w{i}", cv=0.01, n=10) for i in range(3)]
        wins += equivalent_overall(family).equivalent
    assert wins / trials <= 0.05

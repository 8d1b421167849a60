"""Calibration of the comparison on simulated runs (statistics-and-capacity.md §6.1).

Runs are log-normal with a known CV and a known true ratio B/A; every block also gets a large
random block effect (the host's state that session), which pairing must cancel. The verdicts are
produced by the production code: `paired_log_interval` and `classify` on whole batches (the same
functions `compare` calls), checked against `compare` itself on a subset, and against the exact
`power` computation. All seeded. False-failure odds for another seed: with 60,000 trials a
rate's standard error is at most 0.20 points (at p = 0.5), so the tightest bands -- ±1 point
between the simulated and the exact rate, ±0.5 point around the nominal 5% one-sided error
(SE 0.09) -- are 4.9 and 5.6 standard errors wide: < 1e-6 per check, < 1e-4 for the file. (At
20,000 trials the same bands were 2.8 SE wide at p = 0.5: about 2% of seeds failed somewhere.)
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from perflab.stats import Verdict, classify, compare, paired_log_interval, power

TRIALS = 60_000


def simulate_blocks(rng, *, cv, n, ratio=1.0, trials=TRIALS, noise="normal", block_sd=0.05):
    """ln(A), ln(B) per block, shape (trials, n): log-normal runs plus a shared block effect."""
    s = math.sqrt(math.log(1.0 + cv * cv))
    if noise == "normal":
        e = rng.normal(0.0, s, (2, trials, n))
    elif noise == "t3":  # heavy tails, scaled to the same SD (Var t3 = 3)
        e = rng.standard_t(3, (2, trials, n)) * s / math.sqrt(3.0)
    else:
        raise ValueError(noise)
    block = rng.normal(0.0, block_sd, (trials, n))
    return block + e[0], block + math.log(ratio) + e[1]


def verdicts(log_a, log_b, *, confidence=0.90, margin=0.03, higher_is_better=True):
    iv = paired_log_interval(log_b - log_a, confidence)
    lo, hi = np.exp(iv.low), np.exp(iv.high)
    v, material = classify(lo, hi, margin=margin, higher_is_better=higher_is_better)
    return v, material, lo, hi


def rate(mask) -> float:
    return float(np.mean(mask))


def test_identical_configurations_rarely_called_worse_or_better():
    rng = np.random.default_rng(101)
    for cv, n in [(0.01, 6), (0.02, 6), (0.03, 10)]:
        a, b = simulate_blocks(rng, cv=cv, n=n)
        v, _, lo, hi = verdicts(a, b)
        assert rate(v == Verdict.WORSE) <= 0.05, (cv, n)
        assert rate(v == Verdict.BETTER) <= 0.05, (cv, n)
        # The one-sided error of "interval below 1" is exactly the nominal 5 %, whatever the
        # CV: that is what makes WORSE a test at α = 0.05.
        assert abs(rate(hi < 1.0) - 0.05) < 0.005, (cv, n)
        assert abs(rate(lo > 1.0) - 0.05) < 0.005, (cv, n)


@pytest.mark.parametrize("cv,n,ratio", [(0.005, 3, 1.0), (0.01, 6, 1.0), (0.01, 6, 0.98),
                                        (0.02, 10, 1.03), (0.03, 20, 0.95)])
def test_ci_coverage_is_nominal(cv, n, ratio):
    rng = np.random.default_rng(202)
    a, b = simulate_blocks(rng, cv=cv, n=n, ratio=ratio)
    _, _, lo, hi = verdicts(a, b)
    assert abs(rate((lo <= ratio) & (ratio <= hi)) - 0.90) <= 0.01


def test_heavy_tailed_noise_keeps_coverage_and_false_alarms():
    rng = np.random.default_rng(303)
    a, b = simulate_blocks(rng, cv=0.01, n=6, noise="t3")
    v, _, lo, hi = verdicts(a, b)
    coverage = rate((lo <= 1.0) & (1.0 <= hi))
    assert 0.89 <= coverage <= 0.93  # the spec's 0.90–0.92: t3 makes the t-interval conservative
    assert rate(v == Verdict.WORSE) <= 0.05
    assert rate(v == Verdict.BETTER) <= 0.05


def test_one_outlier_run_widens_rather_than_alarms():
    """One run per session 8 % off (a bad run that passed the gates): the interval widens."""
    rng = np.random.default_rng(404)
    a, b = simulate_blocks(rng, cv=0.01, n=6)
    rows = np.arange(TRIALS)
    block = rng.integers(0, 6, TRIALS)
    which = rng.integers(0, 2, TRIALS)  # the bad run is A or B
    shift = math.log(0.92)
    a[rows[which == 0], block[which == 0]] += shift
    b[rows[which == 1], block[which == 1]] += shift
    v, *_ = verdicts(a, b)
    assert rate(v == Verdict.WORSE) <= 0.05
    assert rate(v == Verdict.BETTER) <= 0.05
    assert rate(v == Verdict.INCONCLUSIVE) > 0.5  # the outlier is noticed as noise, not as a change


# §5.2: P(EQUIVALENT | true ratio 1.00), paired, margin ±3 %.
TABLE_52 = [
    (0.005, 6, 1.00),
    (0.005, 10, 1.00),
    (0.010, 6, 0.995),
    (0.010, 10, 1.00),
    (0.015, 6, 0.83),
    (0.015, 10, 0.99),
    (0.020, 6, 0.50),
    (0.020, 10, 0.86),
]


@pytest.mark.parametrize("cv,n,expected", TABLE_52)
def test_probability_of_equivalent_reproduces_table_52(cv, n, expected):
    rng = np.random.default_rng(505)
    a, b = simulate_blocks(rng, cv=cv, n=n)
    v, *_ = verdicts(a, b)
    simulated = rate(v == Verdict.EQUIVALENT)
    exact = power(cv, n, confidence=0.90).equivalent  # §5.2 is at 90%
    assert abs(simulated - expected) <= 0.03
    assert abs(exact - expected) <= 0.03
    assert abs(simulated - exact) <= 0.01  # two independent routes to the same number


# §5.4, CV 1 %, n = 6: (true ratio, P(EQUIVALENT), P(CI < 1), P(WORSE)); None = not tabulated.
TABLE_54 = [(1.00, 0.995, 0.05, 0.001), (0.98, 0.46, 0.91, 0.52), (0.95, None, None, 1.00)]


@pytest.mark.parametrize("ratio,eq,below,worse", TABLE_54)
def test_power_table_54(ratio, eq, below, worse):
    rng = np.random.default_rng(606)
    a, b = simulate_blocks(rng, cv=0.01, n=6, ratio=ratio)
    v, material, _, hi = verdicts(a, b)
    exact = power(0.01, 6, ratio, confidence=0.90)  # §5.4 is at 90%
    for simulated, formula, table in [
        (rate(v == Verdict.EQUIVALENT), exact.equivalent, eq),
        (rate(hi < 1.0), exact.ci_below_one, below),
        (rate(v == Verdict.WORSE), exact.worse, worse),
    ]:
        if table is not None:
            assert abs(simulated - table) <= 0.03
            assert abs(formula - table) <= 0.03
        assert abs(simulated - formula) <= 0.01
    if ratio == 0.95:
        assert rate(material) > 0.9  # −5 % is beyond the margin: WORSE and material


def test_lower_is_better_metric_flips_the_direction():
    """CPU per command (PBT/CMD) up 5 %: a ratio above 1 is WORSE for a lower-is-better metric."""
    rng = np.random.default_rng(707)
    a, b = simulate_blocks(rng, cv=0.01, n=6, ratio=1.05)
    v, *_ = verdicts(a, b, higher_is_better=False)
    assert rate(v == Verdict.WORSE) > 0.99
    exact = power(0.01, 6, 1.05, higher_is_better=False, confidence=0.90)
    assert abs(exact.worse - rate(v == Verdict.WORSE)) <= 0.01


def test_compare_agrees_with_the_vectorized_core():
    """`compare` on individual trials gives the batch verdicts (the simulations are honest)."""
    rng = np.random.default_rng(808)
    a, b = simulate_blocks(rng, cv=0.015, n=6, ratio=0.985, trials=300)
    v, material, lo, hi = verdicts(a, b)
    for i in range(300):
        c = compare(list(np.exp(a[i]) * 200.0), list(np.exp(b[i]) * 200.0), confidence=0.90)
        assert c.verdict == v[i]
        assert c.material == material[i]
        assert c.ci_low == pytest.approx(lo[i], rel=1e-12)
        assert c.ci_high == pytest.approx(hi[i], rel=1e-12)

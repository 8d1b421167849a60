"""The bias bound as a prediction for the next study (perflab.stats.bias.fit_bias): simulated
accuracy studies whose magnification and offset differ from study to study, as a host's state
makes them differ; the bound fitted from a few of them must hold a new study's (k, a) at its
stated level, and find k and a themselves when there are many."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perflab.stats.bias import BiasObservation, fit_bias


def _studies(rng, n_aa, n_change, k, tau_k, a, tau_a, se=0.003, truth=math.log(1 / 1.1), truth_se=0.002):
    out = []
    for i in range(n_aa + n_change):
        x = 0.0 if i < n_aa else truth
        x_se = 0.0 if i < n_aa else truth_se
        measured_truth = x + (rng.normal(0.0, x_se) if x_se else 0.0)
        y = (1 + k + rng.normal(0, tau_k)) * x + a + rng.normal(0, tau_a) + rng.normal(0, se)
        out.append(BiasObservation(measured_truth, x_se, y, se))
    return out


def test_many_studies_find_the_magnification_and_the_offset():
    rng = np.random.default_rng(7)
    fit = fit_bias(_studies(rng, 40, 40, k=0.15, tau_k=0.0, a=0.002, tau_a=0.0))
    assert fit is not None and fit.studies == 80
    # k's standard error here is about 0.003 / 0.095 / sqrt(40) plus the truth's 0.002 / 0.095 / sqrt(40):
    # 0.0055; 0.03 is five of them. a's: 0.003 / sqrt(40) = 0.0005; 0.0025 is five.
    assert fit.k == pytest.approx(0.15, abs=0.03) and fit.a == pytest.approx(0.002, abs=0.0025)
    assert fit.tau_k < 0.05 and fit.tau_a < 0.002


def test_the_bound_holds_the_next_study_at_its_level_when_the_host_s_state_moves_k():
    # Eight studies per fit (4 A/A, 4 of a 10% change), k spread 0.08 from study to study: the
    # 95% prediction box must hold a new study's (k, a) in about 95% of fits or more (Bonferroni
    # over the two makes it conservative). 400 fits; the box's true coverage in this model is
    # about 0.96 (measured over 300 fits: 0.963). False failure for any seed: P(Binomial(400, 0.95)
    # < 360) = 1.4e-5 (5.6e-8 at the measured 0.96).
    rng = np.random.default_rng(20261206)
    held, widths = 0, []
    for _ in range(400):
        fit = fit_bias(_studies(rng, 4, 4, k=0.1, tau_k=0.08, a=0.0, tau_a=0.001))
        assert fit is not None
        bound = fit.bound()
        k_new, a_new = 0.1 + rng.normal(0, 0.08), rng.normal(0, 0.001)
        low, high = bound.offsets
        held += bound.k_low <= k_new <= bound.k_high and low <= a_new <= high
        widths.append(bound.k_high - bound.k_low)
    assert held >= 360
    # and it is a prediction, not a confidence interval for the mean: wider than the spread alone
    assert float(np.median(widths)) > 2 * 1.96 * 0.08


def test_no_bound_without_a_change_an_a_a_or_enough_studies():
    rng = np.random.default_rng(1)
    only_aa = _studies(rng, 6, 0, k=0.1, tau_k=0.0, a=0.0, tau_a=0.0)
    only_change = _studies(rng, 0, 6, k=0.1, tau_k=0.0, a=0.0, tau_a=0.0)
    too_few = _studies(rng, 1, 2, k=0.1, tau_k=0.0, a=0.0, tau_a=0.0)
    assert fit_bias(only_aa) is None and fit_bias(only_change) is None and fit_bias(too_few) is None


def test_a_widened_interval_and_the_de_biased_centre():
    rng = np.random.default_rng(3)
    fit = fit_bias(_studies(rng, 10, 10, k=0.2, tau_k=0.0, a=0.0, tau_a=0.0))
    assert fit is not None
    bound = fit.bound()
    truth = math.log(1 / 1.05)
    design = 1.2 * truth
    assert bound.truth(design) == pytest.approx(truth, abs=0.0015)
    low, high = bound.widen(design - 0.003, design + 0.003)
    assert low < truth < high
    # the margin an A/A's own interval must meet for its widened one to meet ±3%: the offset takes
    # from it, and the least magnification scales what is left (a shrinking design leaves less)
    m = math.log(1 / 0.97)
    a_low, a_high = bound.offsets
    assert bound.effective_margin(m) == pytest.approx(min(m - a_high, m + a_low) * (1 + bound.k_low))
    from perflab.stats.bias import BiasBound

    diluting = BiasBound(-0.4, 0.0, 0.002)
    assert diluting.effective_margin(m) == pytest.approx((m - 0.002) * 0.6)
    assert BiasBound(-0.4, 0.0, 0.05).effective_margin(m) == 0.0   # no blocks reach EQUIVALENT

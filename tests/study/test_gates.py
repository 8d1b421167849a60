"""The steadiness gate: a real drift across the window fails it; a short last interval does not."""

from __future__ import annotations

import pytest

from perflab.study.gates import etr_trend


def rows(rates, width=1.0, last=None):
    out = [{"t_start": i * width, "t_end": (i + 1) * width, "etr_t": r} for i, r in enumerate(rates)]
    if last is not None:  # a final sliver of `last` = (length, rate)
        t = len(rates) * width
        out.append({"t_start": t, "t_end": t + last[0], "etr_t": last[1]})
    return out


def test_a_steady_rate_has_no_trend():
    assert etr_trend(rows([1000.0] * 6)) == pytest.approx(0.0, abs=1e-12)


def test_a_linear_drift_is_measured_as_its_change_across_the_window():
    # 1000 -> 600 in 1 s steps: slope -100/s, over the 5 s window -500, against the mean 800
    assert etr_trend(rows([1000.0, 900.0, 800.0, 700.0, 600.0])) == pytest.approx(-0.625)


def test_a_sliver_at_the_end_is_not_the_steady_state():
    # An external driver's last 0.05 s: only its in-flight requests finishing (rate 4% of the rest).
    assert etr_trend(rows([6000.0] * 5, last=(0.05, 250.0))) == pytest.approx(0.0, abs=1e-12)
    # a shorter last interval that is still a real share of one counts, weighted by its length
    drift = rows([1000.0, 900.0, 800.0, 700.0], last=(0.8, 600.0))
    assert -0.8 < etr_trend(drift) < -0.4
    # the same low rate over a whole interval is a real drop, and is still caught
    assert etr_trend(rows([6000.0] * 5 + [250.0])) < -0.5


def test_too_few_intervals_give_no_verdict():
    assert etr_trend(rows([1.0, 2.0, 3.0])) is None
    assert etr_trend(None) is None


def test_a_noisy_stationary_rate_is_not_called_unsteady_but_a_real_drift_is():
    import numpy as np

    from perflab.study.gates import SIGNIFICANT_Z, etr_trend_fit
    from perflab.study.model import Gates
    from perflab.study.gates import check_run

    rng = np.random.default_rng(7)
    gates = Gates()
    run = {"status": "complete"}
    metrics = {"etr_t": 3000.0, "error_pct_t": 0.0}
    excluded_flat = excluded_drift = 0
    trials = 400
    for _ in range(trials):
        noise = rng.normal(0.0, 0.10, 20)  # 10% second-to-second scatter, as PostgreSQL showed
        flat = rows(list(3000.0 * (1 + noise)))
        drift = rows(list(3000.0 * (1 - 0.4 * np.arange(20) / 19 + noise)))  # -40% across the window
        excluded_flat += any(r.startswith("not steady") for r in check_run(run, metrics, flat, gates, None, True))
        excluded_drift += any(r.startswith("not steady") for r in check_run(run, metrics, drift, gates, None, True))
    # the flat series: under the test's one-sided 1% per direction (2% two-sided) plus sampling slack
    assert excluded_flat / trials < 0.05
    assert excluded_drift / trials > 0.9
    change, se = etr_trend_fit(rows([3000.0, 3010.0, 2990.0, 3005.0, 2995.0, 3000.0]))
    assert se < 0.02 and abs(change) < SIGNIFICANT_Z * se + 0.01

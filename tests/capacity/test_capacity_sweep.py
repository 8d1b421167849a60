"""Sweep-based capacity models on study documents whose answer is known (made by exact MVA or a
known USL): the closed-loop model, users supported, bounds, USL from a sweep, the summary, and
the "no curve" refusals."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from capacity_studies import closed_sweep, concurrency_sweep, source

from perflab.capacity.beside import bounds, knee, predictions
from perflab.capacity.closed import fit_closed_model, supported_at_response, supported_at_utilization
from perflab.capacity.mva import mva
from perflab.capacity.points import sweep_data
from perflab.capacity.summary import capacity_summary
from perflab.capacity.usl import usl
from perflab.capacity.uslsweep import fit_sweep_usl
from perflab.caveats import Code
from perflab.errors import InputError

USERS = [1, 2, 4, 8, 12, 16, 24]


def test_closed_model_recovers_the_parameters_of_exact_mva_data():
    data = sweep_data(source(closed_sweep(USERS, demand_ms=2.0, think=0.02, delay=0.001)))
    m = fit_closed_model(data)
    assert m.demand == pytest.approx(0.002, rel=1e-12)
    assert m.think == pytest.approx(0.02)
    assert m.delay == pytest.approx(0.001, rel=1e-4)
    for p in predictions(m, data):
        assert abs(p.etr_error) < 1e-4 and abs(p.avg_last_error) < 1e-4
    # fitted on two levels, the others are predicted just as well (the data are the model)
    held = fit_closed_model(data, fit=[1, 24])
    assert held.fit_levels == (1.0, 24.0)
    assert max(abs(p.avg_last_error) for p in predictions(held, data) if not p.fit) < 1e-4


def test_the_scalar_recursion_is_the_exact_mva_of_the_library():
    data = sweep_data(source(closed_sweep(USERS, delay=0.0)))
    m = fit_closed_model(data)
    ref = mva([m.demand], 40, think_time=m.think)
    for n in (1, 7, 40):
        p = m.predict(n)
        assert p.x == pytest.approx(ref.at(n).throughput, rel=1e-12)
        assert p.r == pytest.approx(ref.at(n).response, rel=1e-12)


def test_users_supported_match_a_brute_force_search():
    data = sweep_data(source(closed_sweep(USERS, demand_ms=2.0, think=0.5, delay=0.002)))
    m = fit_closed_model(data)
    res = mva([m.demand], 2000, think_time=m.think + m.delay)
    util = res.utilization[:, 0]
    resp = res.response + m.delay
    s = supported_at_utilization(m, 0.90)
    assert s.users == int(np.max(np.nonzero(util <= 0.90)[0])) + 1
    assert s.u <= 0.90 < m.predict(s.users + 1).u
    r = supported_at_response(m, 0.1)
    assert r.users == int(np.max(np.nonzero(resp <= 0.1)[0])) + 1
    assert r.r <= 0.1 < m.predict(r.users + 1).r
    # the seeds' rule in numbers: X at 90 % is 0.9 / D, so N ≈ 0.9/D · (R + Z)
    assert s.x == pytest.approx(0.9 / m.demand, rel=0.02)


def test_users_supported_intervals_come_from_the_demands_spread():
    data = sweep_data(source(closed_sweep(USERS, think=0.05, blocks=4, cv=0.03, seed=7)))
    m = fit_closed_model(data)
    assert m.demand_ci[0] < m.demand < m.demand_ci[1]
    w = np.array([lv.values("tx_ok")[i] for lv in data.levels for i in range(4)])
    assert m.demand_df == int(w.sum() ** 2 / (w**2).sum()) - 1  # Kish's effective number of runs − 1
    s = supported_at_utilization(m, 0.90)
    assert s.low <= s.users <= s.high and s.low < s.high  # more CPU per command supports fewer users
    # the interval is what the model gives at the demand's interval ends
    from dataclasses import replace

    assert supported_at_utilization(replace(m, demand=m.demand_ci[1]), 0.9).users == s.low
    assert supported_at_utilization(replace(m, demand=m.demand_ci[0]), 0.9).users == s.high
    # one run per level and no spread: no interval, said so
    single = fit_closed_model(sweep_data(source(closed_sweep([4]))))
    assert single.demand_ci != single.demand_ci or math.isnan(single.demand_ci[0])
    assert supported_at_utilization(single, 0.9).low is None
    assert any("no run-to-run spread" in n.text for n in single.notes)


def test_demand_is_weighted_by_transactions():
    def costly_low_level(n, m):
        if n == 1:
            m["pbt_cmd_s"], m["tx_ok"] = 4.0, 10.0  # 10 commands at twice the cost
    m = fit_closed_model(sweep_data(source(closed_sweep(USERS, tamper=costly_low_level))))
    tx = [x * 60.0 for x in (m.predict(n).x for n in USERS[1:])]
    expected = math.exp((10 * math.log(0.004) + sum(tx) * math.log(0.002)) / (10 + sum(tx)))
    assert m.demand == pytest.approx(expected, rel=1e-3) and m.demand < 0.00201


def test_extrapolation_beyond_twice_the_largest_level_is_labelled():
    data = sweep_data(source(closed_sweep([1, 2, 4, 8], think=0.02)))
    m = fit_closed_model(data)
    near = supported_at_utilization(m, 0.5)
    far = supported_at_response(m, 1.0)  # ~500 users from a sweep that stopped at 8
    assert near.users <= 16 and not near.extrapolated and near.note == ""
    assert far.users > 16 and far.extrapolated and far.note.startswith("extrapolated")


def test_processors_use_seidmann_and_say_so():
    data = sweep_data(source(closed_sweep([1, 2, 4, 8, 16], demand_ms=4.0, processors=2, delay=0.0)))
    m = fit_closed_model(data)
    assert m.processors == 2 and any("Seidmann" in n.text for n in m.notes)
    # saturation at C/D, not 1/D
    assert m.predict(400).x == pytest.approx(2 / 0.004, rel=1e-3)


def test_bounds_contain_exact_mva_and_the_knee_is_where_asymptotes_cross():
    data = sweep_data(source(closed_sweep(USERS, demand_ms=2.0, think=0.02, delay=0.001)))
    m = fit_closed_model(data)
    assert knee(m) == pytest.approx((0.002 + 0.001 + 0.02) / 0.002, rel=1e-3)
    for b in bounds(m, data):
        # (the fitted delay is exact to ~1e-6, hence the slack)
        assert b.inside and b.x_low <= b.etr_t_measured * (1 + 1e-6) and b.etr_t_measured <= b.x_high * (1 + 1e-6)
        assert b.r_low <= b.avg_last_t_measured * (1 + 1e-6) <= b.r_high * (1 + 1e-6)


def test_a_level_faster_than_its_bound_is_flagged():
    def faster(n, m):
        if n == 24:
            m["etr_t"] *= 1.5  # throughput beyond C/D: impossible for the pooled demand
    data = sweep_data(source(closed_sweep(USERS, tamper=faster)))
    rows = bounds(fit_closed_model(data), data)
    assert [b.n for b in rows if not b.inside] == [24.0] and "above the bound" in rows[-1].note


def test_non_monotone_throughput_is_no_curve():
    def dip(n, m):
        if n == 8:
            m["etr_t"] *= 0.4  # falls below the level before and rises again
    data = sweep_data(source(closed_sweep(USERS, tamper=dip)))
    with pytest.raises(InputError, match="no curve: ETR \\(T\\) is not monotone"):
        fit_closed_model(data)
    with pytest.raises(InputError, match="no curve"):
        fit_sweep_usl(data)


def test_retrograde_throughput_is_a_curve_not_an_error():
    n = [1, 2, 4, 8, 16, 32, 48, 64]
    data = sweep_data(source(concurrency_sweep("workers", n, lambda k: usl(k, 0.05, 0.001, 100.0))))
    fit, residuals = fit_sweep_usl(data)
    assert fit.peak_n == pytest.approx(math.sqrt(0.95 / 0.001), rel=1e-3)
    assert fit.peak_ci[0] <= fit.peak_n <= fit.peak_ci[1]
    assert fit.peak_throughput_ci[0] <= fit.peak_throughput <= fit.peak_throughput_ci[1]
    assert all(abs(r.residual) < 1e-6 for r in residuals) and len(residuals) == len(n)


def test_falling_response_time_is_no_curve():
    def quick(n, m):
        if n == 16:
            m["avg_last_t"] *= 0.3
    with pytest.raises(InputError, match="no curve: AVG LAST"):
        fit_closed_model(sweep_data(source(closed_sweep(USERS, tamper=quick))))


def test_too_few_levels_and_missing_metrics_are_no_curve():
    with pytest.raises(InputError, match="no curve: a USL fit needs ≥ 6"):
        fit_sweep_usl(sweep_data(source(closed_sweep([1, 2, 4]))))

    def no_cpu(n, m):
        m["pbt_cmd_s"] = None
    with pytest.raises(InputError, match="needs PBT/CMD \\(S\\)"):
        fit_closed_model(sweep_data(source(closed_sweep(USERS, tamper=no_cpu))))


def test_usl_that_does_not_converge_or_cannot_separate_is_no_curve(monkeypatch):
    from scipy import optimize

    doc = concurrency_sweep("workers", [1, 2, 4, 8, 16, 32], lambda k: 10.0 * k / (1 + 0.1 * k))
    data = sweep_data(source(doc))

    def fails(*a, **k):
        raise RuntimeError("Optimal parameters not found: The maximum number of function evaluations is exceeded.")
    monkeypatch.setattr(optimize, "curve_fit", fails)
    with pytest.raises(InputError, match="no curve: the USL fit did not converge"):
        fit_sweep_usl(data)
    monkeypatch.setattr(optimize, "curve_fit", lambda *a, **k: (np.array([0.1, 0.0, 10.0]), np.full((3, 3), np.inf)))
    with pytest.raises(InputError, match="no curve: the USL parameters cannot be separated"):
        fit_sweep_usl(data)


def test_not_a_sweep_or_wrong_factor():
    from capacity_studies import ab_study

    with pytest.raises(InputError, match="not a sweep study"):
        sweep_data(source(ab_study("A", "B", 1.05, (1.0, 1.1))))
    rate = concurrency_sweep("rate", [10, 20], lambda k: k)
    with pytest.raises(InputError, match="no concurrency to model"):
        sweep_data(source(rate))
    workers = sweep_data(source(concurrency_sweep("workers", [1, 2, 4], lambda k: k)))
    with pytest.raises(InputError, match="needs a sweep over users"):
        fit_closed_model(workers)


def test_summary_is_pure_and_json_ready():
    doc = closed_sweep(USERS, think=0.02)
    before = json.dumps(doc, sort_keys=True)
    s = capacity_summary(source(doc), target_util=0.9, response_limit=1.0)
    assert json.dumps(doc, sort_keys=True) == before  # the document is not changed
    text = json.dumps(s.to_dict(), allow_nan=False)
    assert "NaN" not in text and "Infinity" not in text
    assert [p.n for p in s.measured] == [float(u) for u in USERS]
    assert s.model is not None and s.usl is not None and len(s.usl_residuals) == len(USERS)
    assert {x.rule for x in s.supported} == {"utilization", "response"}
    assert s.knee == pytest.approx(knee(s.model))
    assert s.curve[0].n == 1 and s.curve[-1].n == 48 and s.curve[-1].beyond_data and not s.curve[0].beyond_data
    assert all(c.mva_etr_t <= c.bound_x_high * (1 + 1e-9) for c in s.curve)


def test_summary_of_a_short_sweep_has_notes_not_errors():
    s = capacity_summary(source(closed_sweep([1, 4, 8])))
    assert s.usl is None and any(n.code == Code.NO_CURVE and n.text.startswith("USL: no curve: a USL fit needs ≥ 6")
                                 for n in s.notes)
    assert s.model is not None  # MVA needs only measured demand and think time

    def dip(n, m):
        if n == 4:
            m["etr_t"] *= 0.3
    bad = capacity_summary(source(closed_sweep([1, 2, 4, 8, 16, 24], tamper=dip)))
    assert bad.model is None and bad.usl is None and bad.curve == [] and bad.supported == []
    assert sum(n.code == Code.NO_CURVE for n in bad.notes) == 2


def test_disturbed_levels_are_noted():
    def busy(n, m):
        m.update({"busy_sec_h": 3.0, "busy_sec_s": 1.0, "driver_sec": 0.2, "monitor_sec": 0.0, "window_s": 2.0})
    data = sweep_data(source(closed_sweep([1, 2], tamper=busy)))
    assert any(n.code == Code.OTHER_WORK and "other processes used 0.90 CPU" in n.text for n in data.notes)


def test_summary_of_a_cpus_sweep_has_the_scaling_table():
    from capacity_studies import concurrency_sweep

    doc = concurrency_sweep("sut_cpus", [[1], [0, 1]], lambda k: 500.0 * (1.0 if k == 1 else 1.8), blocks=3,
                            cv=0.01, key="itr_s")
    s = capacity_summary(source(doc))
    assert s.scaling is not None and s.scaling.levels[1].itrr == pytest.approx(1.8, rel=0.03)
    assert s.model is None and s.usl is None  # scaling only: no users to model, 2 levels
    json.dumps(s.to_dict(), allow_nan=False)

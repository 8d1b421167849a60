"""The steadiness gate against autocorrelated noise (issue 23 item 4), through the production code
(perflab.study.steadiness and the gates of perflab.study.validity).

Stationary series are AR(1) with rho up to 0.9 -- the host's wander and a queue's memory -- at
a per-interval noise of 10%, where the change limit (5%) no longer protects and the significance
test alone must hold the false exclusions: at most 2% at 8, 20 and 60 intervals, both for a run
judged alone and for runs of a study judged against one another. A 10% drift at realistic noise
is still found, and so are a 2% overload in open loop and a response time that climbs 100x.
Every simulation is seeded; each assertion states its false-failure probability for another seed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from perflab.study.steadiness import MIN_POOL, Scale, Series, drifted, fit
from perflab.study.validity import GateSettings, pooled_scales, run_trends, steady_gates, steady_series

LIMIT = 0.05


def _ar1(rng, n: int, rho: float, sigma: float) -> np.ndarray:
    x = np.empty(n)
    x[0] = rng.normal(0.0, sigma)
    shocks = rng.normal(0.0, sigma * math.sqrt(1.0 - rho * rho), n)
    for i in range(1, n):
        x[i] = rho * x[i - 1] + shocks[i]
    return x


def _series(values: np.ndarray, offset: float = 0.0) -> Series:
    t = np.arange(len(values), dtype=float) + offset
    return Series(t, t + 1.0, np.asarray(values, dtype=float))


def _stationary(rng, n, rho, sigma=0.10):
    return np.clip(1000.0 * (1.0 + _ar1(rng, n, rho, sigma)), 1.0, None)


@pytest.mark.parametrize("n", [8, 20, 60])
@pytest.mark.parametrize("rho", [0.0, 0.5, 0.9])
def test_a_stationary_run_judged_alone_is_rarely_excluded(n, rho):
    # 1,500 runs per cell. The measured rate is at most ~0.45% in the worst cell (rho 0.9); for
    # another seed a rate above 2% is > 4.5 binomial standard errors away: P < 1e-5 per cell.
    rng = np.random.default_rng(1000 + 10 * n + int(10 * rho))
    excluded = 0
    for _ in range(1500):
        trend = fit(_series(_stationary(rng, n, rho)))
        excluded += drifted(trend, LIMIT, Scale.alone(trend))
    assert excluded / 1500 <= 0.02, excluded


@pytest.mark.parametrize("n", [8, 20, 60])
@pytest.mark.parametrize("rho", [0.0, 0.5, 0.9])
def test_stationary_runs_of_a_study_judged_against_one_another_are_rarely_excluded(n, rho):
    # 125 studies of 12 runs per cell (1,500 runs), each run against the other 11. The measured
    # rate is ~0.5%; for another seed a rate above 2% is > 5 standard errors away (P < 1e-6).
    rng = np.random.default_rng(2000 + 10 * n + int(10 * rho))
    excluded = runs = 0
    for _ in range(125):
        trends = [fit(_series(_stationary(rng, n, rho))) for _ in range(12)]
        changes = [t.change for t in trends]
        for i, trend in enumerate(trends):
            excluded += drifted(trend, LIMIT, Scale.between_runs(changes[:i] + changes[i + 1:]))
            runs += 1
    assert excluded / runs <= 0.02, excluded


@pytest.mark.parametrize("n,rho,sigma", [(20, 0.0, 0.02), (20, 0.5, 0.01), (60, 0.5, 0.02), (8, 0.0, 0.01)])
def test_a_run_that_drifts_10_percent_among_steady_runs_is_found(n, rho, sigma):
    # A run falling 10% across its window among 11 stationary ones, at per-interval noise up to
    # 2%: the measured power is >= 99.5% in these cells. 300 studies; a false failure needs more
    # than 15 misses where ~1.5 are expected: P < 1e-9.
    rng = np.random.default_rng(3000 + n)
    ramp = 1.0 - 0.10 * np.linspace(0.0, 1.0, n)
    found = 0
    for _ in range(300):
        others = [fit(_series(_stationary(rng, n, rho, sigma))).change for _ in range(11)]
        trend = fit(_series(1000.0 * ramp * (1.0 + _ar1(rng, n, rho, sigma))))
        found += drifted(trend, LIMIT, Scale.between_runs(others))
    assert found >= 285, found


def test_every_run_drifting_the_same_way_is_found():
    # A stabilization too short for the workload: all 12 runs warm up +12% across the window.
    rng = np.random.default_rng(4)
    n = 20
    ramp = 1.0 + 0.12 * np.linspace(0.0, 1.0, n)
    trends = [fit(_series(1000.0 * ramp * (1.0 + _ar1(rng, n, 0.3, 0.01)))) for _ in range(12)]
    changes = [t.change for t in trends]
    assert all(drifted(t, LIMIT, Scale.between_runs(changes[:i] + changes[i + 1:])) for i, t in enumerate(trends))


def test_a_lone_run_drifting_10_percent_at_low_noise_is_found():
    # Judged alone the null allows a rho = 0.9 wander, so only a clear drift is found: 10% over
    # 60 intervals at 1% noise, measured power 100%. 200 runs; > 10 misses: P < 1e-9.
    rng = np.random.default_rng(5)
    ramp = 1.0 - 0.10 * np.linspace(0.0, 1.0, 60)
    found = sum(drifted(t, LIMIT, Scale.alone(t)) for t in
                (fit(_series(1000.0 * ramp * (1.0 + _ar1(rng, 60, 0.0, 0.01)))) for _ in range(200)))
    assert found >= 190, found


def _rows(n: int, **columns: np.ndarray) -> list[dict]:
    return [{"t_start": float(i), "t_end": float(i + 1), **{k: float(v[i]) for k, v in columns.items()}}
            for i in range(n)]


def test_a_two_percent_overload_in_open_loop_is_caught_by_its_response_time():
    # Arrivals 2% above what the SUT completes: the queue grows by 0.02 x rate every second, so a
    # request waits 0.02 s longer for every second of the window (service 10 ms).
    n = 20
    t = np.arange(n) + 0.5
    rng = np.random.default_rng(6)
    response = (0.010 + 0.02 * t) * np.exp(rng.normal(0.0, 0.05, n))
    etr = 980.0 * np.exp(rng.normal(0.0, 0.01, n))
    rows = _rows(n, etr_t=etr, itr_s=etr * 1.1, avg_last_t=response)
    values = {"tx_offered": 20_000.0, "tx_ok": float(etr.sum()), "errors_t": 0.0}
    gates = steady_gates(values, rows, False, GateSettings(), ["itr_s"])
    failed = {g.gate for g in gates if g.outcome == "fail"}
    assert "steady AVG LAST (T)" in failed
    assert gates[-1].caveat is not None or failed


def test_a_response_time_rising_100x_in_closed_loop_is_caught_while_etr_barely_moves():
    # 10 s thinks: response time 5 ms -> 500 ms moves ETR by -4.7% (under the 5% limit).
    n = 30
    t = np.linspace(0.0, 1.0, n)
    response = 0.005 * np.exp(math.log(100.0) * t)
    etr = 100.0 / (10.0 + response)
    rows = _rows(n, etr_t=etr, itr_s=etr * 50.0, avg_last_t=response)
    gates = steady_gates({"tx_ok": float(etr.sum())}, rows, True, GateSettings(), ["itr_s"])
    outcome = {g.gate: g.outcome for g in gates}
    assert outcome["steady AVG LAST (T)"] == "fail"
    assert outcome["steady ETR (T)"] == "pass" and outcome["steady ITR (S)"] == "pass"


def test_a_pair_sharing_a_drift_is_steady_beside_its_partner_whatever_its_edges():
    # An external driver's window starts at its own first transaction: the partner's intervals
    # are offset by 0.37 s. Both slow by 8% across the window (the host): not excluded; one
    # slowing 8% more than the other: excluded.
    n = 30
    shared = 1.0 - 0.08 * np.linspace(0.0, 1.0, n)
    rng = np.random.default_rng(7)
    mine = _rows(n, itr_s=1000.0 * shared * np.exp(rng.normal(0, 0.003, n)),
                 etr_t=np.full(n, 200.0), avg_last_t=np.full(n, 0.01))
    partner = [{**r, "t_start": r["t_start"] + 0.37, "t_end": r["t_end"] + 0.37,
                "itr_s": r["itr_s"] * 1.05} for r in mine]
    settings = GateSettings()
    alone = {g.gate: g.outcome for g in steady_gates({}, mine, True, settings, ["itr_s"])}
    assert alone["steady ITR (S)"] == "fail"  # judged alone, the shared 8% is a drift
    beside = {g.gate: g.outcome for g in steady_gates({}, mine, True, settings, ["itr_s"], partner)}
    assert beside["steady ITR (S)"] == "pass"
    drifting = [{**r, "itr_s": r["itr_s"] * (1.0 - 0.08 * i / (n - 1))} for i, r in enumerate(partner)]
    judged = {g.gate: g.outcome for g in steady_gates({}, mine, True, settings, ["itr_s"], drifting)}
    assert judged["steady ITR (S)"] == "fail"


def test_the_study_pool_judges_each_run_against_the_others():
    rng = np.random.default_rng(8)
    n = 20
    specs = steady_series(["itr_s"], True, GateSettings())
    trends = {}
    for i in range(MIN_POOL + 3):
        itr = 1000.0 * (1.0 + _ar1(rng, n, 0.5, 0.02))
        if i == 0:
            itr *= 1.0 - 0.15 * np.linspace(0.0, 1.0, n)
        rows = _rows(n, itr_s=itr, etr_t=np.full(n, 200.0) * np.exp(rng.normal(0, 0.01, n)),
                     avg_last_t=0.01 * np.exp(rng.normal(0, 0.05, n)))
        trends[f"r{i}"] = run_trends(rows, specs)
    scales = pooled_scales(trends)
    assert scales["r1"]["itr_s"].basis == "between runs"
    assert drifted(trends["r0"]["itr_s"], LIMIT, scales["r0"]["itr_s"])
    assert not any(drifted(trends[f"r{i}"]["itr_s"], LIMIT, scales[f"r{i}"]["itr_s"]) for i in range(1, MIN_POOL + 3))


def test_the_pool_holds_only_runs_at_the_same_operating_point():
    # A sweep: five quiet levels (1% noise per interval) and one noisy level (a user's few
    # transactions per interval: 15% noise). Pooled with the quiet levels, the noisy level's
    # stationary wander would read as a drift; at its own point it has no pool and is judged alone.
    rng = np.random.default_rng(3)
    n = 8
    specs = steady_series(["itr_s"], True, GateSettings())
    trends, groups = {}, {}
    for i, noise in enumerate([0.15, 0.01, 0.01, 0.01, 0.01, 0.01]):
        itr = 1000.0 * np.exp(rng.normal(0.0, noise, n))
        itr[: n // 2] *= 1.2   # a stationary but unlucky first half (no drift in the process)
        trends[f"r{i}"] = run_trends(_rows(n, itr_s=itr, etr_t=np.full(n, 200.0), avg_last_t=np.full(n, 0.01)), specs)
        groups[f"r{i}"] = (i + 1, None)
    pooled_all = pooled_scales(trends)
    assert pooled_all["r0"]["itr_s"].basis == "between runs"
    by_point = pooled_scales(trends, groups)
    assert by_point["r0"] == {} and all(by_point[f"r{i}"] == {} for i in range(6))
    same = pooled_scales(trends, {k: (10, None) for k in trends})
    assert same["r0"]["itr_s"].se == pytest.approx(pooled_all["r0"]["itr_s"].se)

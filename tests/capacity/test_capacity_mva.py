"""MVA and the operational laws against closed forms and invariants that could fail."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perflab.capacity import asymptotic_bounds, mva, response_time, schweitzer, users_supported
from perflab.errors import InputError


def machine_repairman(s: float, z: float, n: int) -> tuple[float, float]:
    """M/M/1//N: N users thinking Exp(Z), one exponential server of mean S. Returns (X, R)."""
    rho = s / z
    terms = [math.perm(n, k) * rho**k for k in range(n + 1)]  # N!/(N−k)!·(S/Z)^k
    p0 = 1.0 / sum(terms)
    x = (1.0 - p0) / s
    return x, n / x - z


@pytest.mark.parametrize("s,z,n", [(0.05, 1.0, 1), (0.05, 1.0, 10), (0.05, 1.0, 40),
                                   (0.2, 3.0, 25), (0.01, 0.5, 120)])
def test_mva_matches_machine_repairman(s, z, n):
    res = mva([s], n, think_time=z)
    x, r = machine_repairman(s, z, n)
    assert res.at(n).throughput == pytest.approx(x, rel=1e-10)
    assert res.at(n).response == pytest.approx(r, rel=1e-10)


def random_networks(rng, count=40):
    for _ in range(count):
        k = int(rng.integers(1, 6))
        yield rng.uniform(0.001, 0.05, k), float(rng.choice([0.0, rng.uniform(0.1, 10.0)]))


def test_throughput_and_response_within_the_asymptotic_bounds():
    rng = np.random.default_rng(41)
    for d, z in random_networks(rng):
        res = mva(d, 200, think_time=z)
        for n in (1, 2, 5, 17, 60, 200):
            b = asymptotic_bounds(d, n, think_time=z)
            p = res.at(n)
            assert b.x_low * (1 - 1e-12) <= p.throughput <= b.x_high * (1 + 1e-12)
            assert b.r_low * (1 - 1e-12) <= p.response <= b.r_high * (1 + 1e-12)
        # far beyond the knee, the bottleneck saturates: X → 1/D_max
        assert res.throughput[-1] >= 0.9 / d.max() or 200 < 2 * b.n_star


def test_littles_law_and_utilization_law_hold_inside_mva():
    rng = np.random.default_rng(42)
    for d, z in random_networks(rng, 20):
        res = mva(d, 80, think_time=z)
        n = res.n.astype(float)
        # the whole population is somewhere: in queues or thinking (Little's law on each part)
        assert np.allclose(res.queue.sum(axis=1) + res.throughput * z, n, rtol=1e-10)
        assert np.allclose(res.queue, res.throughput[:, None] * res.residence, rtol=1e-12)
        assert np.allclose(res.utilization, res.throughput[:, None] * d[None, :])
        assert np.all(res.utilization <= 1.0 + 1e-12)
        # the interactive response time law recovers MVA's response time
        for i in (0, 39, 79):
            assert response_time(n[i], res.throughput[i], z) == pytest.approx(res.response[i])
        assert np.all(np.diff(res.throughput) >= -1e-12)  # more users never lower X here


def test_schweitzer_is_close_to_exact_and_exact_at_one_user():
    rng = np.random.default_rng(43)
    for d, z in random_networks(rng, 20):
        exact = mva(d, 100, think_time=z)
        assert schweitzer(d, 1, z).throughput == pytest.approx(exact.throughput[0], rel=1e-9)
        for n in (5, 30, 100):
            approx = schweitzer(d, n, z)
            assert approx.throughput == pytest.approx(exact.throughput[n - 1], rel=0.05)
            assert approx.queue.sum() + approx.throughput * z == pytest.approx(n, rel=1e-6)


def test_knee_of_the_bounds():
    b = asymptotic_bounds([0.02, 0.01, 0.005], 10, think_time=1.0)
    assert b.n_star == pytest.approx((0.035 + 1.0) / 0.02)
    assert b.x_high == pytest.approx(min(10 / 1.035, 50.0))


def test_users_supported():
    # 2 CPUs, ITR 250 tx per CPU-second, 90 % target: X_max = 450 tx/s; R_SLA 1 s, Z 29 s.
    cap = users_supported(250.0, cpus=2, target_util=0.9, response_sla=1.0, think_time=29.0)
    assert cap.x_max == pytest.approx(450.0)
    assert cap.users == pytest.approx(450.0 * 30.0)
    # An ITRR of 1.08 buys 8 % more users at the same utilization and SLA.
    more = users_supported(250.0 * 1.08, cpus=2, target_util=0.9, response_sla=1.0, think_time=29.0)
    assert more.users / cap.users == pytest.approx(1.08)
    # Cross-check with MVA: a CPU-bound network at that population runs the CPU near u*.
    d_cpu = 1.0 / (250.0 * 2)  # two CPUs as one server of twice the speed (an approximation)
    res = mva([d_cpu], round(cap.users), think_time=29.0).at(round(cap.users))
    assert res.utilization[0] == pytest.approx(0.9, abs=0.05)


def test_bad_inputs():
    with pytest.raises(InputError):
        mva([], 5)
    with pytest.raises(InputError):
        mva([0.1], 0)
    with pytest.raises(InputError):
        users_supported(100.0, cpus=1, target_util=1.5, response_sla=1.0, think_time=0.0)

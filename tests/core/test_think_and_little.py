"""Think times of seconds: users who start mid-think, AVG THINK (T) over every think that began
in the window (long ones included), and Little's law on a run within a tolerance computed from
the run itself."""

from __future__ import annotations

import math

import numpy as np
import pyarrow.parquet as pq
import pytest
from cli_helpers import load_run, perflab, run_dir_of, write_workload

from perflab.reduce.reduce import little_tolerance_pct, reduce_run
from perflab.reduce.transactions import read_window_transactions
from perflab.reduce.window import Window
from perflab.workload.rng import UserRandom
from perflab.workload.thinktime import (
    BACTRIAN_ACTIVE_SIGMA,
    BACTRIAN_IDLE_SIGMA,
    BactrianThink,
    ConstantThink,
    EmpiricalThink,
    ExponentialThink,
    LognormalThink,
    UniformThink,
)


def bactrian_moments(think: BactrianThink, k: int) -> float:
    """E[Z^k] of perflab's Bactrian: a mixture of lognormals, E[X^k] = mean^k exp(k(k-1) sigma^2 / 2)."""
    humps = ((1 - think.idle_fraction, think._active_mean(), BACTRIAN_ACTIVE_SIGMA),
             (think.idle_fraction, think.idle_mean(), BACTRIAN_IDLE_SIGMA))
    return sum(w * m ** k * math.exp(k * (k - 1) * s * s / 2) for w, m, s in humps)


RESIDUAL_CASES = [
    # distribution, E[Z], E[Z^2]: the stationary residual's mean is E[Z^2] / (2 E[Z])
    (ConstantThink(value=2.0), 2.0, 4.0),
    (UniformThink(dist="uniform", low=1.0, high=3.0), 2.0, 13.0 / 3.0),
    (ExponentialThink(dist="exponential", mean=2.0), 2.0, 8.0),
    (LognormalThink(dist="lognormal", mean=2.0, sigma=0.5), 2.0, 4.0 * math.exp(0.25)),
    (EmpiricalThink(dist="empirical", values=[1.0, 2.0, 6.0]), 3.0, 41.0 / 3.0),
]
bactrian = BactrianThink(dist="bactrian", mean=10.0)
RESIDUAL_CASES.append((bactrian, 10.0, bactrian_moments(bactrian, 2)))


@pytest.mark.parametrize("think, mean, second", RESIDUAL_CASES, ids=lambda x: getattr(x, "dist", None))
def test_a_user_starts_where_a_running_system_would_catch_it(think, mean, second):
    # The residual's mean E[Z^2]/(2E[Z]) and its variance E[Z^3]/(3E[Z]) - mean^2 are finite for
    # every case; the sample mean of 200,000 seeded draws is checked at 4.5 standard errors of the
    # draws themselves (a false failure for an unlucky seed: < 1e-5).
    rng = UserRandom(7, 1, 0)
    draws = np.array([think.sample_residual(rng) for _ in range(200_000)])
    expected = second / (2.0 * mean)
    assert (draws >= 0).all()
    assert abs(draws.mean() - expected) <= 4.5 * draws.std() / math.sqrt(len(draws)), (draws.mean(), expected)


USERS = """
name: thinkers
target: {{kind: python}}
transactions: [{{name: t, class: trivial, call: "perflab.sut.synthetic:noop"}}]
scripts: [{{name: s, steps: [t]}}]
think: {{dist: bactrian, mean: 1}}
load: {{users: {users}}}
timing: {{stagger: 0, stabilization: {stabilization}, measurement: {measurement}, first_think: {first}}}
placement: {{workers: 2}}
seed: 3
"""


def _run(tmp_path, store, name, **fields):
    path = write_workload(tmp_path, USERS.format(**fields), name)
    result = perflab("run", path, "-q", store=store)
    assert result.returncode == 0, result.stderr
    return run_dir_of(store, result.stdout.strip().splitlines()[-1])


def test_avg_think_counts_every_think_begun_in_the_window(tmp_path, store):
    # 2,000 users log on at once and each thinks a whole Bactrian think (mean 1 s; one in seven is
    # an idle think of about 5 s) with no stabilization: of the thinks that *end* in a 4 s window,
    # the long ones are mostly missing, so the old estimate is far below 1 s.
    run_dir = _run(tmp_path, store, "full.yaml", users=2000, stabilization=0, measurement="4s", first="full")
    run, tx = load_run(run_dir)
    think = BactrianThink(dist="bactrian", mean=1.0)
    metrics = reduce_run(run_dir)
    window = Window(run["window"]["start"], run["window"]["end"])
    started = read_window_transactions(run_dir / "transactions.parquet", window, run_dir / "thinks.parquet").thinks
    pending = pq.read_table(run_dir / "thinks.parquet").to_pandas()
    assert len(pending) > 100 and (pending.start + pending.think >= window.end - 1e-6).all()
    # Each think is drawn independently of when it begins, so the thinks begun in the window are
    # a fair sample (Wald): their mean is within 4.5 standard errors of the nominal 1 s (the
    # distribution's own SD; a false failure < 1e-5).
    sd = math.sqrt(bactrian_moments(think, 2) - 1.0)
    assert abs(metrics["avg_think_t"] - 1.0) <= 4.5 * sd / math.sqrt(len(started)), (metrics["avg_think_t"],
                                                                                      len(started))
    completed_in_window = tx[(tx.end >= window.start) & (tx.end < window.end) & tx.ok]
    assert completed_in_window.think.mean() < 0.7  # what the old estimate read: cut short by the window


def test_littles_law_holds_on_a_run_that_starts_in_steady_state(tmp_path, store):
    run_dir = _run(tmp_path, store, "residual.yaml", users=2000, stabilization="0.5s", measurement="8s",
                   first="residual")
    metrics = reduce_run(run_dir)
    values = metrics.values
    run, tx = load_run(run_dir)
    window = Window(run["window"]["start"], run["window"]["end"])
    thinks = read_window_transactions(run_dir / "transactions.parquet", window, run_dir / "thinks.parquet").thinks
    # The tolerance is the run's own: the edge and sampling errors of its users, window and
    # realized cycles (little_tolerance_pct), here at 4 standard errors (a false failure < 1e-4).
    tolerance = little_tolerance_pct(values, thinks, sigmas=4.0)
    assert values["tx_ok"] > 10_000
    assert abs(values["little_dev"]) <= tolerance, (values["little_dev"], tolerance)
    assert not [c for c in metrics.caveats if c.code == "little_law"] or abs(values["little_dev"]) > 5
    # A user's first think is only the rest of one: it is not a think and is recorded as none.
    first = tx.sort_values("intended_start").groupby("user").head(1)
    assert first.think.isna().all()

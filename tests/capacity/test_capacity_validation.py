"""MVA against perflab's own measurements: a real closed-loop sweep of the known-cost SUT.

The SUT is `perflab.sut.synthetic:work` behind one worker process on one CPU: a single FCFS
server. Its CPU per transaction is drawn per transaction from a 20-point discretized
exponential (mean 2 ms, CV exactly 1), so the network is the product-form one MVA solves
exactly (FCFS with exponential service); think times are exponential (mean 20 ms), which puts
the knee near 11 users. The sweep is run by `perflab study`, the model by `perflab capacity
mva` -- the commands a user runs.

The model is fitted (its one fitted number, the delay d) to the levels 1, 3 and 18 users and
predicts ETR (T) and AVG LAST (T) at the held-out 6, 9 and 12 -- the knee region, where
queueing matters. Each held-out level uses its own measured PBT/CMD (S) and AVG THINK (T): the
demand and think time that level actually had (a 3 s window of random service times has a
mean cost that differs from 2 ms by a few %, and that sampling noise is not the model's error).

Tolerance, computed from the run: |predicted/measured − 1| ≤ 5 % (the accuracy claimed for
the model) + t·SE, SE the relative standard error of the measured value from 40 batch means
of the window's transactions, plus (for AVG LAST (T)) the delay's fitting uncertainty carried
to the prediction, plus what other processes' measured CPU could have moved the level (a shared
machine widens the tolerance; the test never skips for it). t is the Student-t quantile (39 df) for a two-sided 1e-4/6 per comparison,
so with the model within 5 % the test fails falsely with probability ≤ 1e-4 (Bonferroni over
the 6 comparisons). No timing assertion: only ratios of the run's own measurements.

The window is 3 s (the batch means' SE, and so each tolerance, carry the shorter window; the false
failure stays <= 1e-4) and its edges fall on the monitor's samples (every 0.5 s from the run's
start): each level's demand, PBT/CMD (S), and the other work are read between two samples, not
interpolated across a 1 s gap that held the workers' start-up.
"""

from __future__ import annotations

import json
import math
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from cli_helpers import perflab, write_workload
from scipy import stats

from perflab.capacity.closed import mva_steps
from perflab.capacity.points import DISTURBED_CPU

MODEL_ACCURACY = 0.05
BATCHES = 40
FIT = (1, 3, 18)
HELD_OUT = (6, 9, 12)
FALSE_FAILURE = 1e-4


def exponential_points(mean_ms: float, k: int = 20) -> list[float]:
    """k values with mean *mean_ms* and CV exactly 1: quantile midpoints of an exponential,
    scaled, with the largest value set so the second moment is 2·mean² (the exponential's)."""
    v = [-math.log(1 - (i + 0.5) / k) for i in range(k - 1)]
    s1, s2 = sum(v), sum(x * x for x in v)
    # a²·s2 + (k − a·s1)² = 2k  (mean 1): the root that keeps the top value positive
    qa, qb, qc = s2 + s1 * s1, -2 * k * s1, k * k - 2 * k
    a = (-qb - math.sqrt(qb * qb - 4 * qa * qc)) / (2 * qa)
    return [round(mean_ms * x, 4) for x in [a * y for y in v] + [k - a * s1]]


def test_exponential_points_have_cv_one():
    pts = np.array(exponential_points(2.0))
    assert pts.min() > 0
    assert pts.mean() == pytest.approx(2.0, rel=1e-3)
    assert pts.std() / pts.mean() == pytest.approx(1.0, rel=2e-3)


def _other_cpu(m: dict) -> float | None:
    """CPUs' worth of other processes' work in the window (as perflab capacity notes it)."""
    keys = ("busy_sec_h", "busy_sec_s", "driver_sec", "monitor_sec", "window_s")
    if any(m.get(k) is None for k in keys):
        return None
    return (m["busy_sec_h"] - m["busy_sec_s"] - m["driver_sec"] - m["monitor_sec"]) / m["window_s"]


def _dlog(level: dict, delay: float, what: str, h: float = 1e-6) -> float:
    """∂ ln(prediction)/∂d at this level's own demand and think time (central difference)."""
    def value(d):
        last = None
        for last in mva_steps(level["demand"], 1.0, d, level["think"], int(level["n"])):
            pass
        return math.log(last.r if what == "r" else last.x)

    return (value(delay + h) - value(max(0.0, delay - h))) / (delay + h - max(0.0, delay - h))


def batch_se(run_dir: Path, kind: str) -> float:
    """Relative SE of the window's mean response (kind 'r') or throughput ('x') from batch means."""
    run = json.loads((run_dir / "run.json").read_text())
    w = run["window"]
    tx = pq.read_table(run_dir / "transactions.parquet").to_pandas()
    tx = tx[(tx.end >= w["start"]) & (tx.end < w["end"]) & tx.ok]
    edges = np.linspace(w["start"], w["end"], BATCHES + 1)
    which = np.clip(np.searchsorted(edges, tx.end.to_numpy(), side="right") - 1, 0, BATCHES - 1)
    if kind == "x":
        counts = np.bincount(which, minlength=BATCHES).astype(float)
        return float(counts.std(ddof=1) / math.sqrt(BATCHES) / counts.mean())
    resp = (tx.end - tx.intended_start).to_numpy()
    sums = np.bincount(which, weights=resp, minlength=BATCHES)
    counts = np.bincount(which, minlength=BATCHES)
    keep = counts > 0
    means = sums[keep] / counts[keep]
    return float(means.std(ddof=1) / math.sqrt(keep.sum()) / resp.mean())


def test_mva_predicts_held_out_levels_of_a_real_sweep(tmp_path):
    cost = exponential_points(2.0)
    write_workload(tmp_path, f"""
        name: known-cost-mva
        target: {{kind: python}}
        transactions:
          - name: t
            call: "perflab.sut.synthetic:work"
            params: {{cpu_ms: {{choice: {cost}}}}}
        scripts: [{{name: s, steps: [t]}}]
        think: {{dist: exponential, mean: 0.02}}
        load: {{users: 1}}
        timing: {{stabilization: 0.5s, measurement: 3s}}
        monitor_interval: 0.5s
        placement: {{workers: 1}}
    """, "w.yaml")
    values = sorted(FIT + HELD_OUT)
    (tmp_path / "sweep.yaml").write_text(textwrap.dedent(f"""
        name: mva-validation
        workload: w.yaml
        sweep: {{factor: users, values: {values}}}
        blocks: 1
        metrics: [etr_t, avg_last_t, avg_think_t, pbt_cmd_s, util_proc_s, itr_s, tx_ok, processors, busy_sec_h,
                  busy_sec_s, driver_sec, monitor_sec, window_s]
    """).lstrip())
    store = tmp_path / "store"
    run = perflab("study", tmp_path / "sweep.yaml", "--store", store, timeout=240)
    assert run.returncode == 0, run.stderr[-2000:]
    study_dir = Path(run.stdout.strip().splitlines()[-1])
    doc = json.loads((study_dir / "study.json").read_text())
    # A machine shared with other work (other tests, other sessions) takes CPU from the SUT. The
    # test never skips for it: it measures the other work per level and widens honestly (below).
    other = {r["users"]: max(0.0, _other_cpu(r["metrics"]) or 0.0) for r in doc["runs"]}
    # The gates have no reason to exclude a run of a quiet level; a disturbed one they may.
    excluded = {r["users"] for r in doc["runs"] if r["exclusions"]}
    assert all(other[n] > DISTURBED_CPU for n in excluded), [(r["users"], r["exclusions"]) for r in doc["runs"]]
    fit = [n for n in FIT if n not in excluded]
    held_out = [n for n in HELD_OUT if n not in excluded]
    if excluded:
        warnings.warn(f"the gates excluded the disturbed level(s) {sorted(excluded)} (other work {other}): "
                      f"MVA is checked at {held_out}, fitted at {fit}")
    assert fit and held_out, f"every fit or every held-out level excluded on a disturbed host: {other}"

    res = perflab("capacity", "mva", study_dir, "--fit", ",".join(map(str, fit)), "--demand", "point", "--json")
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout)
    levels = {int(p["n"]): p for p in out["levels"]}
    assert {n for n, p in levels.items() if p["fit"]} == set(fit)
    run_of = {r["users"]: store / "runs" / r["run_id"] for r in doc["runs"]}

    se_r = {n: batch_se(run_of[n], "r") for n in fit + held_out}
    se_x = {n: batch_se(run_of[n], "x") for n in fit + held_out}
    d_hat = out["model"]["delay"]
    # The delay's fitting uncertainty by the delta method: d minimizes Σ(ln R_i − ln R_i(d))²,
    # so SE(d) = √(Σ w_i² s_i²) / Σ w_i², w_i = ∂ln R_i/∂d, s_i the relative SE of R_i.
    w = {n: _dlog(levels[n], d_hat, "r") for n in fit}
    delay_se = math.sqrt(sum(w[n] ** 2 * se_r[n] ** 2 for n in fit)) / sum(w[n] ** 2 for n in fit)
    # Other work u (CPUs' worth, all of it counted as if on the SUT's CPU) leaves the SUT's server
    # at least 1 - u of its speed (the shadow-server bound: other work served first): the truth lies
    # between MVA at the measured demand D and at D / (1 - u), so each tolerance widens by that
    # distance, at its own level and through the fitted delay (whose fit levels it moved as well).
    slow_r = {n: _shadow(levels[n], d_hat, other[n], "r") for n in fit + held_out}
    slow_x = {n: _shadow(levels[n], d_hat, other[n], "x") for n in held_out}
    delay_shift = sum(abs(w[n]) * slow_r[n] for n in fit) / sum(w[n] ** 2 for n in fit)
    t = stats.t.ppf(1 - FALSE_FAILURE / (2 * 2 * len(held_out)), BATCHES - 1)
    report = []
    for n in held_out:
        p = levels[n]
        tol_x = (MODEL_ACCURACY + t * math.hypot(se_x[n], _dlog(p, d_hat, "x") * delay_se)
                 + slow_x[n] + abs(_dlog(p, d_hat, "x")) * delay_shift)
        tol_r = (MODEL_ACCURACY + t * math.hypot(se_r[n], _dlog(p, d_hat, "r") * delay_se)
                 + slow_r[n] + abs(_dlog(p, d_hat, "r")) * delay_shift)
        report.append((n, p["etr_error"], tol_x, p["avg_last_error"], tol_r))
    print("delay", d_hat, "SE", delay_se, "other work", other, "; n, ETR error, tolerance, AVG LAST error, tolerance:",
          report)
    for n, ex, tx_, er, tr in report:
        assert abs(ex) <= tx_, f"ETR (T) at {n} users: MVA off by {100 * ex:+.1f}% (tolerance {100 * tx_:.1f}%)"
        assert abs(er) <= tr, f"AVG LAST (T) at {n} users: MVA off by {100 * er:+.1f}% (tolerance {100 * tr:.1f}%)"
    # The check has teeth: a model without queueing (R = D + d) misses the knee level by more
    # than the model's own allowance, so passing is not automatic. Whether it also misses by more
    # than this run's whole tolerance depends on the run's sampling noise (its batch-means SE at
    # the knee is 5-12%) and on other work: when the tolerance came out wider than the miss, every
    # check above still held, and the test says that this run could not tell the two models apart.
    n, *_, tol = report[-1]
    p = levels[n]
    miss = abs((p["demand"] + out["model"]["delay"]) / p["avg_last_t_measured"] - 1)
    assert miss > MODEL_ACCURACY, (miss, MODEL_ACCURACY)
    if miss <= tol:
        quiet = all(other[m] <= DISTURBED_CPU for m in fit + held_out)
        cause = "its sampling noise" if quiet else f"other work {other} and its sampling noise"
        warnings.warn(f"{cause} widened the tolerance at {n} users to {100 * tol:.0f}%, past what a model "
                      f"without queueing misses by ({100 * miss:.0f}%): this run could not tell them apart")


def _shadow(level: dict, delay: float, other: float, what: str) -> float:
    """|ln prediction(D / (1 - u)) - ln prediction(D)|: how far other work u may move the level."""
    def value(demand):
        last = None
        for last in mva_steps(demand, 1.0, delay, level["think"], int(level["n"])):
            pass
        return math.log(last.r if what == "r" else last.x)

    u = min(other, 0.9)
    return abs(value(level["demand"] / (1 - u)) - value(level["demand"])) if u > 0 else 0.0

"""Error control over a whole report, simulated through the production code (perflab.study.compare):
identical configurations rarely produce any claim of a change anywhere in the report, and a real
-5% on the primary metric is called WORSE.

Each trial builds the per-run values of a two-configuration study (lognormal run-to-run noise,
one CV per metric) and judges it with `judge_all`, exactly as `perflab study` does. Seeded:
the outcomes are fixed; the false-failure probabilities stated are for another seed.
"""

from __future__ import annotations

import math

import numpy as np

from perflab.records.study import StudyRun
from perflab.stats.criteria import Criteria
from perflab.study.compare import CLAIMS, judge_all

# A primary metric and nine secondary ones, with the noise they show in real studies: ITR (S)
# and CPU per command are quiet, response-time percentiles noisy.
METRICS = {"itr_s": 0.02, "pbt_cmd_s": 0.02, "etr_t": 0.01, "itr_h": 0.03, "avg_last_t": 0.08,
           "resp_p90_t": 0.15, "emul_cmd_s": 0.03, "cp_cmd_s": 0.05, "wkset_s": 0.01, "util_proc_s": 0.02}


def _study(rng, blocks: int, effects: dict[str, float]) -> list[StudyRun]:
    runs = []
    for block in range(blocks):
        for config in ("A", "B"):
            metrics = {}
            for key, cv in METRICS.items():
                true = 1000.0 * (1.0 + (effects.get(key, 0.0) if config == "B" else 0.0))
                metrics[key] = true * math.exp(rng.normal(0.0, cv))
            runs.append(StudyRun(run_id=f"{config}{block}", config=config, block=block, metrics=metrics))
    return runs


def _trials(seed: int, n: int, blocks: int, effects: dict[str, float]) -> list[list]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        comparisons, _verdict = judge_all(_study(rng, blocks, effects), [("A", "B")], list(METRICS), ["itr_s"],
                                          Criteria())
        out.append(comparisons[0].metrics)
    return out


def test_identical_configurations_claim_a_change_anywhere_in_at_most_5_percent_of_reports():
    # 3,000 reports of 10 metrics each, the primary at CV 1.5%. The design bounds the rate by 5%
    # at any noise (the secondary rows are only tested when the primary is rejected, at 5%); at
    # this noise it is ~1.6%, while the same reports unadjusted claim a change about half the
    # time. For another seed, an observed rate above 5% has probability < 1e-30 (14 standard
    # errors). (At CV 2% the rate is ~4.4%: the 5% bound is nearly reached, by design.)
    METRICS["itr_s"] = 0.015
    try:
        reports = _trials(1, 3000, 6, {})
    finally:
        METRICS["itr_s"] = 0.02
    any_claim = sum(any(m.verdict in CLAIMS for m in metrics) for metrics in reports)
    assert any_claim / len(reports) <= 0.05, any_claim
    # and without the error control, the same reports would have claimed a change far more often
    unadjusted = sum(any(m.verdict_unadjusted in CLAIMS for m in metrics) for metrics in reports)
    assert unadjusted / len(reports) > 0.25, unadjusted


def test_a_true_5_percent_loss_of_capacity_is_called_worse():
    # Power of the two-sided 5% claim at -5%, per-run CV 2%: 93.9% at 6 blocks (noncentral t,
    # 5 df) and 97% at 7; 99.6% at 6 blocks when the CV is 1.5%. (A one-sided 5% claim would reach
    # 98% at 6 blocks, but then identical configurations would see a claim in 6.8% of reports
    # at CV 2%, 10% at high CV: the report's error rate is the constraint that wins.)
    # 1,000 trials each; the floors sit 4+ standard errors below the exact power, so for another
    # seed a false failure has probability < 1e-4.
    for blocks, cv, floor in ((6, 0.02, 0.905), (7, 0.02, 0.945), (6, 0.015, 0.975)):
        METRICS["itr_s"] = cv
        try:
            reports = _trials(blocks * 100 + int(cv * 1000), 1000, blocks, {"itr_s": -0.05})
        finally:
            METRICS["itr_s"] = 0.02
        worse = sum(next(m for m in metrics if m.key == "itr_s").verdict == "WORSE" for metrics in reports)
        assert worse / len(reports) >= floor, (blocks, cv, worse)


def test_a_true_5_percent_loss_at_the_blocks_the_aa_sizing_recommends_is_worse_in_95_percent():
    # The study's own A/A sizing (perflab.study.aa.aa_result: blocks for EQUIVALENT with
    # power 0.80 at the observed CV) at a per-run CV of 2%: 12 blocks. At those blocks a true -5%
    # is WORSE with power 1 - 2e-6 (noncentral t, 11 df); and A/A reports make a claim anywhere
    # in at most 5% (Bonferroni and gatekeeping). 1,000 trials each: for another seed, fewer than
    # 950 WORSE has probability < 1e-100; more than 80 claims under A/A (8%, 4.35 binomial sd
    # above 5%, and the true rate is at most 5%) has probability < 1e-5.
    from perflab.stats.verdict import blocks_needed
    from perflab.study.aa import AA_POWER

    blocks = blocks_needed(0.02, power=AA_POWER)
    assert blocks == 12
    METRICS["itr_s"] = 0.02
    reports = _trials(31, 1000, blocks, {"itr_s": -0.05})
    worse = sum(next(m for m in metrics if m.key == "itr_s").verdict == "WORSE" for metrics in reports)
    assert worse >= 950, worse
    reports = _trials(32, 1000, blocks, {})
    claims = sum(any(m.verdict in CLAIMS for m in metrics) for metrics in reports)
    assert claims <= 80, claims

"""Several claims at once: Bonferroni intervals that decide, gatekeeping, intersection–union for
"equivalent overall". Seeded simulations; each states its false-failure probability for another
seed."""

from __future__ import annotations

import math

import numpy as np

from perflab.records.study import StudyRun
from perflab.stats import Verdict, compare, equivalent_overall, gate_opens
from perflab.stats.criteria import Criteria
from perflab.study.compare import CLAIMS, judge_all


def test_the_gate_opens_only_when_every_primary_claims_a_change():
    assert gate_opens(["WORSE", "BETTER"])
    assert not gate_opens(["WORSE", "EQUIVALENT"])
    assert not gate_opens(["WORSE", None])
    assert not gate_opens([])


def test_criteria_take_one_alpha_and_refuse_two_that_disagree():
    assert Criteria().alpha == 0.05 and Criteria().confidence == 0.95
    assert Criteria.from_fields(confidence=0.90).alpha == 0.10
    assert Criteria.from_fields(family_alpha=0.01).alpha == 0.01
    assert Criteria.from_fields(confidence=0.95, family_alpha=0.05).alpha == 0.05
    assert Criteria().level(4) == 1 - 0.05 / 4
    try:
        Criteria.from_fields(confidence=0.90, family_alpha=0.05)
    except ValueError as exc:
        assert "disagree" in str(exc)
    else:
        raise AssertionError("two alphas that disagree were accepted")


def _runs(rng, blocks: int, cvs: dict[str, float], effects: dict[str, float]) -> list[StudyRun]:
    runs = []
    for block in range(blocks):
        for config in ("A", "B"):
            metrics = {key: 100.0 * (1.0 + (effects.get(key, 0.0) if config == "B" else 0.0))
                       * math.exp(rng.normal(0.0, cv)) for key, cv in cvs.items()}
            runs.append(StudyRun(run_id=f"{config}{block}", config=config, block=block, metrics=metrics))
    return runs


def test_two_primary_metrics_share_the_error_rate_and_each_interval_decides_its_verdict():
    # ITR (S) and AVG LAST (T) both primary, identical configurations, 8 blocks: any claim in at
    # most 5% of reports (Bonferroni: each row's interval at 97.5%; with independent rows the rate
    # is 1 - 0.975^2 = 4.94%). 2,000 reports; the bound sits 4 binomial standard errors above 5%,
    # so for another seed a false failure has probability < 4e-5.
    rng = np.random.default_rng(21)
    cvs = {"itr_s": 0.02, "avg_last_t": 0.10}
    claims = 0
    for _ in range(2000):
        comparisons, _ = judge_all(_runs(rng, 8, cvs, {}), [("A", "B")], list(cvs), ["itr_s", "avg_last_t"],
                                   Criteria())
        entries = comparisons[0].metrics
        claims += any(m.verdict in CLAIMS for m in entries)
        for m in entries:
            assert m.level == 1 - 0.05 / 2 and m.adjustment == "bonferroni"
            # the printed interval decides: a claim exactly when it excludes 1 and does not lie
            # inside the margin (a detectable change within it is EQUIVALENT)
            inside = 0.97 <= m.ci_low and m.ci_high <= 1 / 0.97
            assert (m.verdict in CLAIMS) == ((m.ci_low > 1 or m.ci_high < 1) and not inside)
            assert (m.verdict == "EQUIVALENT") == inside
    assert claims / 2000 <= 0.05 + 4.0 * math.sqrt(0.05 * 0.95 / 2000), claims


def test_a_response_time_regression_named_primary_is_claimed_with_itr_unchanged():
    # A 2x response time with ITR unchanged, AVG LAST (T) primary beside ITR (S): WORSE in
    # (nearly) every report at CV 10%, 6 blocks (the exact power is > 0.9999). 300 reports; a
    # false failure needs more than 6 misses: probability < 1e-6 for another seed.
    rng = np.random.default_rng(22)
    cvs = {"itr_s": 0.02, "avg_last_t": 0.10}
    worse = 0
    for _ in range(300):
        comparisons, verdict = judge_all(_runs(rng, 6, cvs, {"avg_last_t": 1.0}), [("A", "B")], list(cvs),
                                         ["itr_s", "avg_last_t"], Criteria())
        worse += comparisons[0].entry("avg_last_t").verdict == "WORSE"
    assert worse >= 294, worse


def test_untested_secondary_rows_show_their_call_but_claim_nothing():
    rng = np.random.default_rng(23)
    cvs = {"itr_s": 0.01, "pbt_cmd_s": 0.01}
    comparisons, _ = judge_all(_runs(rng, 6, cvs, {"pbt_cmd_s": 0.10}), [("A", "B")], list(cvs), ["itr_s"],
                               Criteria())
    entry = comparisons[0].entry("pbt_cmd_s")
    assert comparisons[0].entry("itr_s").verdict == "EQUIVALENT"  # the gate stays shut
    assert entry.adjustment == "untested" and entry.verdict is None and entry.verdict_unadjusted == "WORSE"
    assert entry.level == 0.95


def test_a_secondary_family_is_tested_at_its_own_bonferroni_level_when_the_gate_opens():
    rng = np.random.default_rng(24)
    cvs = {"itr_s": 0.01, "pbt_cmd_s": 0.01, "emul_cmd_s": 0.01}
    comparisons, _ = judge_all(_runs(rng, 6, cvs, {"itr_s": -0.10, "pbt_cmd_s": 0.10, "emul_cmd_s": 0.10}),
                               [("A", "B")], list(cvs), ["itr_s"], Criteria())
    assert comparisons[0].entry("itr_s").verdict == "WORSE"
    for key in ("pbt_cmd_s", "emul_cmd_s"):
        entry = comparisons[0].entry(key)
        assert entry.adjustment == "bonferroni" and entry.level == 1 - 0.05 / 2 and entry.verdict == "WORSE"


def _workload(rng, ratio, name, cv=0.01, n=6):
    a = 100 * np.exp(rng.normal(0, cv, n))
    b = 100 * ratio * np.exp(rng.normal(0, cv, n))
    return compare(a.tolist(), b.tolist(), metric=name)


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
    """Three workloads all truly at the margin edge (0.97): P(equivalent overall) ≤ 2.5 % (each
    EQUIVALENT is a TOST at 2.5% per side with the default 95% interval). 1,000 families: for
    another seed a rate above 5% is > 4.9 standard errors away: probability < 1e-6."""
    rng = np.random.default_rng(5)
    wins = 0
    trials = 1000
    for _ in range(trials):
        family = [_workload(rng, 0.97, f"w{i}", cv=0.01, n=10) for i in range(3)]
        wins += equivalent_overall(family).equivalent
    assert wins / trials <= 0.05

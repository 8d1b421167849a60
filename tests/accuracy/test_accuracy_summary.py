"""The accuracy studies' arithmetic (perflab.accuracy.summary, perflab.stats.bias) on results whose
answers are known: the truth pooled from one-at-a-time blocks, bias, coverage, claims, and the
bound that widens an arrangement's intervals. No study runs here (the experiment itself is
`perflab accuracy --studies`, published in docs/accuracy.md)."""

from __future__ import annotations

import math

import pytest

from perflab.accuracy.experiment import KnobCalibration, Plan, StudyResult
from perflab.accuracy.render import render, with_section
from perflab.accuracy.summary import cells, check_rows, fit_bounds, truth
from perflab.accuracy.truth import TruthMeasurement
from perflab.records.bias import HostIdentity
from perflab.stats.bias import BiasBound

HOST = HostIdentity(cpu_model="Test CPU", cores=2, kernel="6.0-test", arch="x86_64", virtualized=True)
OTHER = HOST.model_copy(update={"kernel": "6.0-other"})


def _result(arrangement, effect, ratio, low, high, blocks=(), verdict=None, study="s", exit_code=0, knob_value=100,
            **kw):
    return StudyResult(case="synthetic", arrangement=arrangement, effect=effect, knob=knob_value, repeat=0,
                       study_id=study,
                       seconds=60.0, ratio=ratio, ci_low=low, ci_high=high, verdict=verdict, exit_code=exit_code,
                       block_logs=list(blocks), n_blocks=len(blocks), **kw)


def test_the_truth_pools_one_at_a_time_blocks_and_leaves_a_study_out():
    solo = [_result("one-at-a-time", 0.1, 0.91, 0.89, 0.93, blocks=[-0.10, -0.09], study="a"),
            _result("one-at-a-time", 0.1, 0.90, 0.88, 0.92, blocks=[-0.11, -0.10], study="b"),
            _result("duet", 0.1, 0.88, 0.875, 0.885, blocks=[-0.13, -0.12], study="c")]
    t = truth(solo, "synthetic", 0.1)
    assert t.log_ratio == pytest.approx(-0.10) and t.blocks == 4  # the duet's blocks are not the truth
    assert truth(solo, "synthetic", 0.1, leave_out="a").log_ratio == pytest.approx(-0.105)
    assert truth(solo, "synthetic", 0.0).ratio == 1.0


def test_bias_coverage_and_claims_of_a_magnifying_arrangement():
    # One at a time measures exp(-0.10); the duet magnifies by 20% (exp(-0.12)) with narrow
    # intervals that miss the truth.
    results = [_result("one-at-a-time", 0.1, math.exp(-0.10), 0.88, 0.93, blocks=[-0.10, -0.10, -0.10], study=f"o{i}",
                       verdict="WORSE") for i in range(3)]
    results += [_result("duet", 0.1, math.exp(-0.12 + d), math.exp(-0.125 + d), math.exp(-0.115 + d),
                        verdict="WORSE", study=f"d{i}") for i, d in enumerate((-0.001, 0.0, 0.001))]
    results += [_result("duet", 0.0, math.exp(a), math.exp(a - 0.004), math.exp(a + 0.004), verdict="EQUIVALENT",
                        study=f"aa{i}") for i, a in enumerate((0.001, -0.001, 0.0))]
    table = cells(results)
    duet = next(c for c in table if c.arrangement == "duet" and c.effect == 0.1)
    assert duet.bias_points == pytest.approx(100 * (math.exp(-0.12) - math.exp(-0.10)), abs=0.05)
    assert duet.coverage == 0.0 and duet.claims == 3 and duet.worse == 3
    k, se = duet.magnification
    assert k == pytest.approx(0.2, abs=0.01)
    aa = next(c for c in table if c.arrangement == "duet" and c.effect == 0.0)
    assert aa.coverage == 1.0 and aa.claims == 0


def _fit_result(study, effect, knob, design_log, design_se, host=HOST, role="fit", session="s1", case="sqlite"):
    return StudyResult(case=case, arrangement="duet", effect=effect, knob=knob, repeat=0, study_id=study, seconds=60.0,
                       ratio=math.exp(design_log), design_ratio=math.exp(design_log), design_se=design_se,
                       host=host.model_dump(mode="json"), session=session, role=role, day="2026-12-06",
                       base_pbt_ms=0.4)


def _truths(per_unit=1e-4, se=1e-6, host=HOST, session="s1", case="sqlite"):
    from perflab.accuracy.experiment import measure_key

    measurement = TruthMeasurement(case=case, method="mixed", knob=1000, per_unit=per_unit, se=se, values=[0.1],
                                   host=host.model_dump(mode="json"), session=session)
    return {measure_key(case, host.model_dump(mode="json"), session): measurement}


def test_a_host_s_bound_is_fitted_from_its_own_fit_studies_only():
    # Knob 1000 adds 10% (truth ln(1/1.1)); this host's duet magnifies it by 20%, its A/As sit at 0.
    # Another host's studies, and this host's fresh `check` studies, are far off: neither may move
    # the fit, and a kind with no case of its own gets no bound.
    truths = {**_truths(), **_truths(host=OTHER)}
    x = math.log(1 / 1.1)
    results = [_fit_result(f"e{i}", 0.1, 1000, 1.2 * x + d, 0.002) for i, d in enumerate((-0.001, 0.0, 0.001))]
    results += [_fit_result(f"a{i}", 0.0, 0, d, 0.002) for i, d in enumerate((0.0005, -0.0005, 0.0))]
    results += [_fit_result(f"x{i}", 0.1, 1000, 3.0 * x, 0.002, host=OTHER) for i in range(3)]
    results += [_fit_result(f"y{i}", 0.0, 0, 0.05, 0.002, host=OTHER) for i in range(3)]
    results += [_fit_result(f"c{i}", 0.1, 1000, 0.5 * x, 0.002, role="check") for i in range(3)]
    # studies that ran each configuration alone state no bound: none is fitted for them
    results += [_fit_result(f"{alone[0]}{i}", e, k, x * e * 10, 0.003).model_copy(update={"arrangement": alone})
                for alone in ("interleaved", "one-at-a-time") for i, (e, k) in enumerate(((0.0, 0), (0.1, 1000)) * 2)]
    (bound,) = fit_bounds(results, truths, HOST.model_dump(mode="json"))
    assert (bound.arrangement, bound.target, bound.fit.studies) == ("duet", "sqlite", 6)
    assert bound.fit.k == pytest.approx(0.2, abs=0.01) and abs(bound.fit.a) < 0.001
    assert bound.k_low < 0.2 < bound.k_high and bound.a_low < 0 < bound.a_high
    assert set(bound.study_ids) == {"e0", "e1", "e2", "a0", "a1", "a2"} and bound.days == ["2026-12-06"]
    other = fit_bounds(results, truths, OTHER.model_dump(mode="json"))
    assert other[0].fit.k == pytest.approx(2.0 - 0.05 / x, abs=0.01)   # the other host's own, apart
    # widened by it, a study of this host with the same magnification holds the truth
    b = BiasBound(bound.k_low, bound.k_high, max(-bound.a_low, bound.a_high), bound.a_low, bound.a_high,
                  bound.k_mid, bound.a_mid)
    low, high = b.widen(1.2 * x - 0.004, 1.2 * x + 0.004)
    assert low <= x <= high and b.truth(1.2 * x) == pytest.approx(x, abs=0.002)


def test_fresh_studies_give_coverage_with_its_lower_bound_and_the_gate_s_errors():
    truths = _truths()
    x = math.log(1 / 1.1)

    def check(study, effect, knob, low, high, verdict):
        r = _fit_result(study, effect, knob, (low + high) / 2, 0.002, role="check")
        return r.model_copy(update={"ci_low": math.exp(low), "ci_high": math.exp(high), "verdict": verdict,
                                    "route": "host"})

    results = [check(f"a{i}", 0.0, 0, -0.01, 0.01, "EQUIVALENT") for i in range(9)]
    results += [check("a9", 0.0, 0, 0.001, 0.04, "INCONCLUSIVE")]
    results += [check(f"s{i}", 0.01, 100, -0.02, 0.0, "EQUIVALENT") for i in range(4)]
    results += [check("s4", 0.01, 100, -0.05, -0.005, "WORSE")]
    results += [check(f"l{i}", 0.05, 500, x - 0.01, x + 0.01, "WORSE") for i in range(2)]  # misses the -4.8% truth
    (row,) = check_rows(results, truths)
    assert (row.arrangement, row.kind, row.studies, row.routes) == ("duet", "sqlite", 17, {"host"})
    assert (row.aa, row.aa_equivalent) == (10, 9) and (row.small, row.small_failed) == (5, 1)
    assert (row.large, row.large_worse) == (2, 2)
    assert (row.covered, row.judged) == (14, 17)     # the A/A at [0.1%, 4%] and both 5% studies miss
    # one-sided 95% Clopper-Pearson: P(X >= 14 | n = 17, p) = 0.05 at p = 0.6039 (scipy.stats.beta.ppf(0.05, 14, 4))
    assert row.coverage_lower == pytest.approx(0.6039, abs=0.0005)


def test_the_five_percent_cell_counts_by_what_it_was_set_to_add():
    """A +5% cell whose truth reads a 4.5% loss (its knob set from the solo calibration, the truth
    measured anew: PostgreSQL's +4.71% of CPU on 2026-12-07) is still the row's power to call a 5%
    loss; a cell whose truth lies inside the margin is the gate's row whatever it was set to."""
    truths = _truths()

    def check(study, effect, knob, verdict):
        r = _fit_result(study, effect, knob, -0.046, 0.002, role="check")
        return r.model_copy(update={"ci_low": 0.93, "ci_high": 0.97, "verdict": verdict, "route": "host"})

    (row,) = check_rows([check("l0", 0.05, 471, "WORSE"), check("l1", 0.05, 471, "INCONCLUSIVE"),
                         check("s0", 0.05, 250, "EQUIVALENT")], truths)
    assert (row.large, row.large_worse) == (2, 1) and (row.small, row.small_failed) == (1, 0)


def test_fresh_studies_of_two_bounds_are_two_rows_each_naming_its_bound():
    """A host's bound refitted is a new claim: its check studies are counted apart from those of
    the bound before (PostgreSQL on 2026-12-07: the first bound failed the -1% goal, the refitted
    one met it), and each row names the bound its studies were widened by."""
    from perflab.accuracy.experiment import bound_label
    from perflab.records.study import DesignBias

    old = bound_label(DesignBias(arrangement="duet", k_low=-0.303, k_high=-0.051, a_max=0.0114, a_low=-0.0114,
                                 a_high=0.0068, widened=True, studies=6))
    new = bound_label(DesignBias(arrangement="duet", k_low=-0.176, k_high=-0.088, a_max=0.0043, a_low=-0.0043,
                                 a_high=0.0026, widened=True, studies=14))
    assert old == "k [-0.303, -0.051], a [-1.14, +0.68] pts, 6 studies"
    assert new == "k [-0.176, -0.088], a [-0.43, +0.26] pts, 14 studies"
    assert bound_label(DesignBias(arrangement="duet", widened=False)) is None
    truths = _truths()

    def check(study, bound, verdict):
        r = _fit_result(study, 0.01, 100, -0.01, 0.002, role="check")
        return r.model_copy(update={"ci_low": 0.97, "ci_high": 1.005, "verdict": verdict, "route": "host",
                                    "bound": bound})

    rows = check_rows([check("o1", old, "INCONCLUSIVE"), check("o2", old, "INCONCLUSIVE"),
                       check("n1", new, "EQUIVALENT")], truths)
    assert [(r.bound, r.studies, r.small_failed) for r in rows] == [(new, 1, 0), (old, 2, 2)]
    section = render([], {}, "here", checks=rows)
    assert f"| duet | sqlite | host | {new} | 2026-12-06 | 1 |" in section and f"| {old} | 2026-12-06 | 2 |" in section


def test_the_rows_of_every_bound_and_host_are_summed_per_arrangement_and_kind():
    """The goal of 20 fresh studies over two days is counted on the procedure (each host fits its
    own bound, then studies with it on), so the rows of two hosts' bounds are summed -- counts,
    days and hosts -- and a kind with one row gets no sum."""
    from perflab.accuracy.summary import pooled_check_rows
    from perflab.records.bias import HostIdentity

    other = HostIdentity(cpu_model="Other CPU", cores=2, kernel="6.18.44-fc-v1300", arch="x86_64", virtualized=True)
    truths = {**_truths(), **_truths(host=other, session="s2"), **_truths(case="postgres")}

    def check(study, effect, knob, host, session, day, verdict, bound, case="sqlite"):
        r = _fit_result(study, effect, knob, -0.001 if effect == 0 else -0.0099, 0.002, host=host, role="check",
                        session=session, case=case)
        return r.model_copy(update={"ci_low": 0.985, "ci_high": 1.0 if effect == 0 else 0.995, "verdict": verdict,
                                    "route": "host", "bound": bound, "day": day})

    results = [check("a1", 0.0, 0, HOST, "s1", "2026-12-07", "EQUIVALENT", "bound one"),
               check("m1", 0.01, 100, HOST, "s1", "2026-12-07", "WORSE", "bound one"),
               check("a2", 0.0, 0, other, "s2", "2026-12-08", "EQUIVALENT", "bound two"),
               check("a3", 0.0, 0, other, "s2", "2026-12-08", "INCONCLUSIVE", "bound two"),
               check("p1", 0.0, 0, HOST, "s1", "2026-12-07", "EQUIVALENT", "pg bound", case="postgres")]
    rows = check_rows(results, truths)
    assert len(rows) == 3
    (total,) = pooled_check_rows(rows)
    assert (total.kind, total.pooled, total.studies, total.judged) == ("sqlite", 2, 4, 4)
    assert (total.aa, total.aa_equivalent, total.small, total.small_failed) == (3, 2, 1, 1)
    # every interval holds its truth: the A/As' [0.985, 1.0] holds 1, the -1%'s [0.985, 0.995] 1/1.01
    assert total.covered == 4
    assert total.days == {"2026-12-07", "2026-12-08"} and total.hosts == {HOST.key, other.key}
    section = render([], {}, "here", checks=rows)
    assert "| duet | sqlite | host | **each host's own, 2 bounds on 2 hosts** | 2026-12-07, 2026-12-08 | 4 | 4/4 |" \
        in section
    assert section.count("each host's own") == 1        # postgres has one row: nothing to sum


def test_a_bound_never_turns_a_sign_by_magnification_and_widens_by_the_offset():
    b = BiasBound(0.0, 0.25, 0.0)
    low, high = b.widen(math.log(0.94), math.log(0.95))
    assert high < 0  # a magnification cannot make a loss into a gain
    assert low == pytest.approx(math.log(0.94)) and high == pytest.approx(math.log(0.95) / 1.25)
    offset = BiasBound(0.0, 0.0, 0.01)
    assert offset.widen(-0.002, 0.002) == pytest.approx((-0.012, 0.012))
    with pytest.raises(ValueError):
        BiasBound(0.3, 0.1, 0.0)


def test_the_section_is_written_from_the_table_the_bounds_and_the_checks():
    results = [_result("one-at-a-time", 0.05, 0.95, 0.93, 0.97, blocks=[-0.05, -0.05], study="o"),
               _result("split-duet", 0.05, 0.951, 0.945, 0.957, verdict="WORSE", study="s")]
    table = cells(results)
    knobs = {("synthetic", None, None): KnobCalibration(case="synthetic", base_ms=1.0, probe=8000, probe_ms=1.4,
                                                       runs=["r1"])}
    assert knobs[("synthetic", None, None)].value_for(0.05) == 1000
    section = render(table, knobs, "here")
    assert "| split-duet | +5% | 1 |" in section and "1/1" in section
    assert "No host has a bound yet." in section and "No fresh studies yet." in section
    page = with_section("# Accuracy\n\ntext\n", section)
    assert page.count("accuracy studies") == 2 and with_section(page, section) == page


def test_the_plan_interleaves_cells_and_is_seeded():
    plan = Plan(cases=("synthetic",), effects=(0.0, 0.1), repeats=2)
    order = plan.order()
    assert len(order) == 2 * 2 * 3 and order == Plan(cases=("synthetic",), effects=(0.0, 0.1), repeats=2).order()
    assert {o[0] for o in order[:6]} == {0}  # repetition by repetition


def test_each_session_draws_seeds_of_its_own_and_the_same_session_the_same():
    from perflab.accuracy.experiment import session_seed

    c1, c2 = session_seed(20261127, "c1"), session_seed(20261127, "c2")
    assert c1 != c2 and c1 == session_seed(20261127, "c1") and min(c1, c2) >= 20261127
    # a study's seed adds at most 1000 * repeat + 1000 * effect + 500,000 to it: sessions stay apart
    assert abs(c1 - c2) >= 1_000_000 and max(c1, c2) < 2**31


def test_a_cell_without_one_at_a_time_studies_takes_the_scaled_truth_of_the_largest():
    # +10% measured one at a time (ITR ratio exp(-0.0953) = 1/1.10); +5% with half the knob:
    # PBT/CMD rises 5%, so ITR falls to 1/1.05.
    results = [_result("one-at-a-time", 0.10, 1 / 1.1, 0.89, 0.93, blocks=[math.log(1 / 1.1)] * 4, study="o",
                       knob_value=200),
               _result("duet", 0.05, 0.95, 0.94, 0.96, study="d", knob_value=100)]
    t = truth(results, "synthetic", 0.05)
    assert t.ratio == pytest.approx(1 / 1.05, rel=1e-9)


def test_a_mixed_workload_twins_every_transaction_and_script_with_the_knob_raised():
    from pathlib import Path

    from perflab.accuracy.cases import CASES
    from perflab.accuracy.truth import TWIN, TruthMeasurement, _with_twins
    from perflab.workload.loader import load_workload
    from perflab.workload.model import Workload

    case = CASES["sqlite"]
    base = load_workload(case.path(Path(__file__).resolve().parents[2] / "examples"))
    twinned = Workload.model_validate(_with_twins(base.model_dump(mode="json", by_alias=True), case, 1234))
    names = [t.name for t in twinned.transactions]
    assert names == ["debit_credit", "branch_report", "debit_credit" + TWIN, "branch_report" + TWIN]
    knobs = {t.name: t.params["knob"].value for t in twinned.transactions}
    assert knobs == {"debit_credit": 0, "branch_report": 0, "debit_credit" + TWIN: 1234, "branch_report" + TWIN: 1234}
    scripts = {s.name: (s.weight, [step.transaction for step in s.steps]) for s in twinned.scripts}
    assert scripts["teller" + TWIN] == (scripts["teller"][0], ["debit_credit" + TWIN])
    # the truth of a knob: +2% at 1,000 units is ITR (S) 1/1.02, its se scaled alike
    measured = TruthMeasurement(case="sqlite", method="mixed", knob=1000, per_unit=2e-5, se=1e-7, values=[0.02])
    assert math.exp(measured.log_ratio(1000)) == pytest.approx(1 / 1.02)
    assert measured.log_se(500) == pytest.approx(500 * 1e-7 / 1.01)

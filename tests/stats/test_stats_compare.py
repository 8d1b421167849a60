"""`compare` and the verdict rules on constructed data whose answer is known."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from perflab.caveats import Code
from perflab.errors import InputError
from perflab.stats import (
    LEGACY_LABEL,
    Verdict,
    blocks_needed,
    classify,
    compare,
    judge,
    legacy_label,
    margin_bounds,
    power,
)

# Block differences with mean 0 and SD 1 (unit-free); scaled and shifted to build cases.
UNIT = np.array([-1.2, 0.4, 1.1, -0.3, 0.8, -0.8])
UNIT = (UNIT - UNIT.mean()) / UNIT.std(ddof=1)


def runs(ratio: float, sd_d: float, *, base=None, block_effects=None):
    """Base and new per-run values whose block log-differences are ln(ratio) + sd_d·UNIT."""
    n = len(UNIT)
    a = np.full(n, 100.0) if base is None else np.asarray(base, dtype=float)
    if block_effects is not None:
        a = a * np.exp(block_effects)
    b = a * np.exp(math.log(ratio) + sd_d * UNIT)
    return a.tolist(), b.tolist()


def t_half(n: int, sd: float, confidence=0.95) -> float:
    return stats.t.ppf(0.5 + confidence / 2, n - 1) * sd / math.sqrt(n)


def test_estimate_is_the_ratio_of_geometric_means_with_a_t_interval():
    a, b = runs(0.988, 0.004)
    c = compare(a, b)
    assert c.method == "paired" and c.n_blocks == 6
    assert c.ratio == pytest.approx(stats.gmean(b) / stats.gmean(a), rel=1e-12)
    h = t_half(6, 0.004)
    assert c.ci_low == pytest.approx(0.988 * math.exp(-h), rel=1e-12)
    assert c.ci_high == pytest.approx(0.988 * math.exp(h), rel=1e-12)
    assert c.cv == pytest.approx(0.004 / math.sqrt(2), rel=1e-12)  # per-run CV from s_d


def test_block_effects_cancel_in_the_paired_estimate():
    effects = np.array([0.10, -0.08, 0.03, 0.12, -0.05, 0.0])  # the host differs by ±10 %
    plain = compare(*runs(0.99, 0.005))
    shaken = compare(*runs(0.99, 0.005, block_effects=effects))
    assert shaken.ratio == pytest.approx(plain.ratio, rel=1e-12)
    assert shaken.ci_low == pytest.approx(plain.ci_low, rel=1e-12)
    assert shaken.verdict is plain.verdict is Verdict.EQUIVALENT
    assert shaken.secondary["verdict"] == "INCONCLUSIVE"  # Welch sees the block spread as noise
    assert not any(w.code == Code.ANALYSES_DISAGREE for w in shaken.warnings)  # less power is not a contradiction


def test_detectable_but_equivalent_gets_the_note():
    c = compare(*runs(0.988, 0.004))
    assert c.verdict is Verdict.EQUIVALENT and not c.material
    assert c.note.startswith("(detectable −1.2 % [")
    assert c.note.endswith("], within margin)")
    assert c.legacy == "slight −1.2 %"


def test_equivalent_interval_containing_one_has_no_note():
    c = compare(*runs(1.002, 0.004))
    assert c.verdict is Verdict.EQUIVALENT and c.note == "" and c.legacy == "equivalent"


def test_worse_material_and_not_material():
    c = compare(*runs(0.95, 0.005))
    assert c.verdict is Verdict.WORSE and c.material and "beyond the −3.0 % margin" in c.note
    c = compare(*runs(0.975, 0.012))  # interval straddles L = 0.97: real, maybe immaterial
    assert c.ci_high < 1.0 and c.ci_low < 0.97
    assert c.verdict is Verdict.WORSE and not c.material


def test_direction_of_lower_is_better_metrics():
    a, b = runs(1.05, 0.005)  # +5 % CPU per command
    assert compare(a, b, metric="pbt_cmd_s", higher_is_better=False).verdict is Verdict.WORSE
    assert compare(a, b, metric="itr_s").verdict is Verdict.BETTER
    c = compare(*runs(0.95, 0.005), higher_is_better=False)
    assert c.verdict is Verdict.BETTER and c.material


def test_inconclusive_reports_blocks_needed_from_the_observed_cv():
    c = compare(*runs(0.99, 0.035))  # per-run CV 2.5 %
    assert c.verdict is Verdict.INCONCLUSIVE
    assert c.blocks_needed == blocks_needed(c.cv, 0.03) > 6
    noisy = [w for w in c.warnings if w.code == Code.NOISY]
    assert [w.text for w in noisy][0] == f"CV {100 * c.cv:.1f} %: need ≥ {c.blocks_needed:,} blocks at margin 3 %"
    assert noisy[0].values["blocks_needed"] == c.blocks_needed
    assert any("reduce noise first" in w.text for w in noisy)
    assert c.note.startswith("(−1.0 % [")


def test_blocks_needed_matches_the_planning_formula_and_delivers_its_power():
    # 2·(z_0.95 + z_0.90)²·CV²/δ² + 2 at CV 2 %: 9.37 → 10 blocks, the §5.2 table's choice (at
    # its 90% intervals); at perflab's default 95%: 2·(z_0.975 + z_0.90)²·CV²/δ² + 2 = 11.0 → 12.
    assert blocks_needed(0.02, confidence=0.90) == 10
    assert blocks_needed(0.02) == 12
    for cv in [0.005, 0.01, 0.015, 0.02, 0.03]:
        n = blocks_needed(cv)
        assert power(cv, n).equivalent >= 0.80 - 0.03  # the "+2" t-correction is approximate
        assert n >= 3
    assert blocks_needed(0.02, 0.05) < blocks_needed(0.02, 0.03) < blocks_needed(0.03, 0.03)


def test_excluded_run_drops_its_block_and_says_so():
    a, b = runs(0.99, 0.004)
    b[2] = None  # the new configuration's run in block 2 failed its validity gate
    c = compare(a, b)
    assert c.method == "paired" and c.n_blocks == 5 and c.dropped_blocks == [2]
    assert c.n_base == 6 and c.n_new == 5
    dropped = [w for w in c.warnings if w.code == Code.INTERVAL_METHOD and w.values.get("dropped") == [2]]
    assert dropped and "dropped from the paired analysis" in dropped[0].text
    full = [x for i, x in enumerate(a) if i != 2], [x for i, x in enumerate(b) if i != 2]
    assert c.ratio == pytest.approx(compare(*full).ratio, rel=1e-12)


def test_broken_blocks_fall_back_to_welch():
    a, b = runs(0.99, 0.004)
    a[0] = a[1] = None
    b[2] = b[3] = None  # 2 complete blocks left, but 4 valid runs of each configuration
    c = compare(dict(enumerate(a)), dict(enumerate(b)))
    assert c.method == "welch" and c.dropped_blocks == [0, 1, 2, 3]
    assert any(w.code == Code.INTERVAL_METHOD and "fell back to the unpaired Welch" in w.text for w in c.warnings)
    va, vb = np.log([x for x in a if x]), np.log([x for x in b if x])
    assert c.ratio == pytest.approx(math.exp(vb.mean() - va.mean()), rel=1e-12)


def test_two_blocks_give_no_interval():
    c = compare([100.0, 101.0], [99.0, 99.5])
    assert math.isnan(c.ci_low) and math.isnan(c.ci_high)
    assert c.verdict is Verdict.INCONCLUSIVE
    assert [w.text for w in c.warnings if w.code == Code.NO_INTERVAL] == ["n=2 blocks: need ≥ 3 for an interval"]


def test_contradicting_analyses_are_flagged():
    # Six tight blocks say "no change"; four extra new-only runs (their base runs excluded)
    # are all 6 % lower, so the unpaired analysis of all valid runs sees a regression.
    a, b = runs(1.0, 0.002)
    base = dict(enumerate(a)) | {j: None for j in range(6, 10)}
    new = dict(enumerate(b)) | {j: 94.0 + 0.1 * j for j in range(6, 10)}
    c = compare(base, new)
    assert c.verdict is Verdict.EQUIVALENT and c.secondary["verdict"] == "WORSE"
    assert any(w.code == Code.ANALYSES_DISAGREE for w in c.warnings)


def test_pre_declared_second_look_uses_bonferroni():
    a, b = runs(0.99, 0.004)
    c = compare(a, b, looks=2)
    assert c.confidence == pytest.approx(0.975)
    assert c.ci_high - c.ci_low > compare(a, b).ci_high - compare(a, b).ci_low


def test_outlier_block_is_flagged():
    a, b = runs(1.0, 0.003)
    b[4] *= 0.80
    c = compare(a, b)
    assert [w.values["block"] for w in c.warnings if w.code == Code.OUTLIER] == [4]


def test_exact_metric_gives_a_point_interval():
    c = compare([1000.0] * 4, [1040.0] * 4, metric="instr_cmd_i", higher_is_better=False)
    assert c.ci_low == c.ci_high == pytest.approx(1.04)
    assert c.verdict is Verdict.WORSE and c.material and c.p_value == 0.0
    c = compare([1000.0] * 4, [1020.0] * 4, metric="instr_cmd_i", higher_is_better=False)
    assert c.verdict is Verdict.EQUIVALENT and c.note.startswith("(detectable +2.0 %")


@pytest.mark.parametrize("bad", [0.0, -3.0, math.inf])
def test_impossible_values_are_input_errors(bad):
    with pytest.raises(InputError):
        compare([100.0, 100.0, 100.0], [100.0, bad, 100.0])


def test_to_dict_is_strict_json():
    c = compare([100.0, 101.0], [99.0, 99.5])  # NaN interval
    text = json.dumps(c.to_dict(), allow_nan=False)
    d = json.loads(text)
    assert d["verdict"] == "INCONCLUSIVE" and d["ci_low"] is None
    d = compare(*runs(0.99, 0.004)).to_dict()
    assert d["verdict"] == "EQUIVALENT" and d["secondary"]["verdict"] == "EQUIVALENT"


def test_classify_follows_the_order_of_section_54():
    L, U = margin_bounds(0.03)
    assert (L, U) == pytest.approx((0.97, 1 / 0.97))
    lo = np.array([0.985, 0.975, 0.95, 0.96, 1.01, 1.04, 0.96])
    hi = np.array([0.995, 0.99, 0.96, 0.99, 1.02, 1.05, 1.04])
    v, mat = classify(lo, hi)
    assert v.tolist() == ["EQUIVALENT", "EQUIVALENT", "WORSE", "WORSE", "EQUIVALENT", "BETTER",
                          "INCONCLUSIVE"]
    assert mat.tolist() == [False, False, True, False, False, True, False]
    v, _ = classify(lo, hi, higher_is_better=False)
    assert v.tolist()[2] == "BETTER" and v.tolist()[5] == "WORSE"


def test_judge_note_for_a_regression_reaching_into_the_margin():
    j = judge(0.975, 0.96, 0.99)
    assert j.verdict is Verdict.WORSE and not j.material
    assert j.note == "(−2.5 % [−4.0, −1.0], reaching inside the −3.0 % margin)"


@pytest.mark.parametrize(
    "ratio,label",
    [(1.0, "equivalent"), (0.995, "equivalent"), (0.983, "slight −1.7 %"),
     (1.021, "slight +2.1 %"), (0.97, "change −3.0 %"), (1.042, "change +4.2 %")],
)
def test_legacy_bands_of_the_seeds(ratio, label):
    assert legacy_label(ratio) == label
    assert LEGACY_LABEL == "IBM ±3 % on point estimate"


def test_outlier_warning_is_rare_on_clean_data():
    """The bad-block warning's false-alarm rate is bounded by OUTLIER_ALPHA (1 %)."""
    rng = np.random.default_rng(61)
    trials = 1000
    flagged = 0
    for _ in range(trials):
        a = 100 * np.exp(rng.normal(0, 0.01, 6))
        b = 100 * np.exp(rng.normal(0, 0.01, 6))
        flagged += any(w.code == Code.OUTLIER for w in compare(a.tolist(), b.tolist()).warnings)
    assert flagged / trials <= 0.015


def test_a_split_duet_s_side_effect_is_taken_out_of_the_interval():
    # The new configuration is 5% slower; the side of the machine it ran on adds +-3% by block
    # (one CPU faster than the other), swapped block by block. Plain pairing reads the swap as
    # noise; the crossover takes it out, and the interval narrows to the runs' own noise.
    rng = np.random.default_rng(61)
    side = {j: 1 if j % 2 == 0 else -1 for j in range(8)}
    base = {j: 100.0 * math.exp(rng.normal(0.0, 0.002)) for j in range(8)}
    new = {j: 100.0 * 0.95 * math.exp(0.03 * side[j] + rng.normal(0.0, 0.002)) for j in range(8)}
    plain = compare(base, new)
    crossed = compare(base, new, side=side)
    assert crossed.method == "crossover" and plain.method == "paired"
    assert crossed.ratio == pytest.approx(0.95, rel=0.005)
    assert (crossed.ci_high - crossed.ci_low) < 0.2 * (plain.ci_high - plain.ci_low)
    # one side only: the side's speed is the change, so no interval, and the reason says so
    one_side = compare(base, new, side={j: 1 for j in range(8)})
    assert math.isnan(one_side.ci_low) and one_side.verdict.value == "INCONCLUSIVE"
    assert any("one side of the machine in all 8" in w.text for w in one_side.warnings)

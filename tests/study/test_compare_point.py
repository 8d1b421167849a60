"""A comparison states the paired estimate its interval belongs to; zero is a value."""

from __future__ import annotations

import pytest

from perflab.caveats import not_steady
from perflab.records.study import StudyRun
from perflab.stats.criteria import Criteria
from perflab.study.compare import compare_configs


def run(config, block, value, key="itr_s"):
    return StudyRun(run_id=f"{config}-{block}", config=config, block=block, metrics={key: value})


def test_the_stated_change_is_the_paired_ratio_inside_its_interval():
    # Block 3's new run was excluded: the columns' means include the lone base run (a high one),
    # the paired ratio does not.
    runs = [run("A", 0, 1000.0), run("B", 0, 1010.0), run("A", 1, 1100.0), run("B", 1, 1105.0),
            run("A", 2, 900.0), run("B", 2, 912.0), run("A", 3, 1400.0)]
    entry = compare_configs(runs, "A", "B", ["itr_s"], Criteria(), ["itr_s"]).metrics[0]
    assert entry.ratio is not None and entry.role == "primary"
    assert entry.rel_change == pytest.approx(entry.ratio - 1)
    assert entry.ci_low <= 1 + entry.rel_change <= entry.ci_high
    assert entry.abs_change == pytest.approx(entry.base_value * (entry.ratio - 1))
    # the columns still show every valid run
    assert entry.new_value / entry.base_value < 1 < entry.ratio


def test_zero_is_a_value_not_a_gap():
    # I/O per command 4 KB in the base, 0 in the new release: a real change, not a missing row.
    runs = [run(c, b, 4096.0 if c == "A" else 0.0, "io_bytes_cmd_s") for b in range(4) for c in "AB"]
    entry = compare_configs(runs, "A", "B", ["io_bytes_cmd_s"], Criteria(), ["itr_s"]).entry("io_bytes_cmd_s")
    assert entry is not None and entry.base_value == pytest.approx(4096.0) and entry.new_value == 0.0
    assert entry.rel_change == pytest.approx(-1.0) and entry.ratio == 0.0
    # zero on both sides is no change at all: exactly equivalent
    runs = [run(c, b, 0.0, "io_bytes_cmd_s") for b in range(4) for c in "AB"]
    both = compare_configs(runs, "A", "B", ["io_bytes_cmd_s"], Criteria(), ["itr_s"]).entry("io_bytes_cmd_s")
    assert both.verdict_unadjusted == "EQUIVALENT" and both.ratio == 1.0


def test_a_primary_metric_with_every_run_excluded_has_no_valid_comparison():
    runs = [run(c, b, 1000.0) for b in range(4) for c in "AB"]
    for r in runs:
        if r.config == "B":
            r.exclusions = [not_steady("ETR (T)", -0.205, 0.061, 0.10, 4)]
    comparison = compare_configs(runs, "A", "B", ["itr_s"], Criteria(), ["itr_s"])
    entry = comparison.entry("itr_s")
    assert entry.verdict is None and entry.no_comparison.startswith("no valid comparison")
    assert "0 valid of 4 run(s) of B (not steady (4x))" in entry.no_comparison


def test_runs_of_two_studies_with_the_same_block_numbers_pair_within_their_study():
    from perflab.study.groups import pair_by_block

    # label:A and label:B gather runs of two studies, each with blocks 0..2: six pairs, not three.
    runs = [StudyRun(run_id=f"{c}-{s}-{b}", config=c, block=b, metrics={"itr_s": 1.0})
            for s in ("s1", "s2") for b in range(3) for c in "AB"]
    studies = {r.run_id: r.run_id.split("-")[1] for r in runs}
    assert pair_by_block(runs, studies, ("A", "B")) is None
    blocks = {(r.config, r.run_id.split("-", 1)[1]): r.block for r in runs}
    assert len({r.block for r in runs}) == 6
    assert all(blocks[("A", key)] == blocks[("B", key)] for (_, key) in blocks)

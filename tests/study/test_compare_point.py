"""A comparison states the paired estimate its interval belongs to."""

from __future__ import annotations

import pytest

from perflab.study.compare import compare_configs


def run(config, block, itr):
    return {"config": config, "block": block, "excluded": False, "metrics": {"itr_s": itr}}


def test_the_stated_change_is_the_paired_ratio_inside_its_interval():
    # Block 3's new run was excluded: the columns' means include the lone base run (a high one),
    # the paired ratio does not.
    runs = [run("A", 0, 1000.0), run("B", 0, 1010.0), run("A", 1, 1100.0), run("B", 1, 1105.0),
            run("A", 2, 900.0), run("B", 2, 912.0), run("A", 3, 1400.0)]
    entry = compare_configs(runs, "A", "B", ["itr_s"], 0.03, 0.90)["metrics"][0]
    assert entry["ratio"] is not None
    assert entry["rel_change"] == pytest.approx(entry["ratio"] - 1)
    assert entry["ci_low"] <= 1 + entry["rel_change"] <= entry["ci_high"]
    assert entry["abs_change"] == pytest.approx(entry["base_value"] * (entry["ratio"] - 1))
    # the columns still show every valid run
    assert entry["new_value"] / entry["base_value"] < 1 < entry["ratio"]

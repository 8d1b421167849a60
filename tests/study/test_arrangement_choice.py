"""`arrangement: auto` and the measured bias an arrangement's reports state (perflab.study.arrangement)."""

from __future__ import annotations

import json
from importlib import resources

from perflab.study.arrangement import PREFERENCE, choose, measured_bias, traits


def test_auto_prefers_the_duet_when_its_drivers_keep_up():
    # the order docs/accuracy.md measured: the duet's intervals hold the truth within a point
    # on SQLite and the synthetic SUT; the split duet's are ten times wider
    assert PREFERENCE[0] == "duet"
    arrangement, why = choose(True, driver_util=30.0, sut_util=90.0, driver_cpus=1)
    assert arrangement == "duet" and "duet" in why


def test_auto_falls_back_when_the_drivers_cannot_keep_up():
    # a driver at 80% of a core cannot run beside its twin on one core; beside a SUT at 90% of the
    # other CPU, a split duet fits at 90 / 170 = 53% of the load; at 95% not even half fits
    arrangement, why = choose(True, driver_util=80.0, sut_util=90.0, driver_cpus=1)
    assert arrangement == "split-duet" and "53%" in why
    arrangement, _ = choose(True, driver_util=95.0, sut_util=90.0, driver_cpus=1)
    assert arrangement == "one-at-a-time"
    arrangement, why = choose(False, driver_util=10.0, sut_util=90.0, driver_cpus=1)
    assert arrangement == "one-at-a-time" and "cannot run its blocks as pairs" in why


def test_the_shipped_bias_file_widens_each_pair_arrangement_by_what_was_measured():
    shipped = json.loads(resources.files("perflab.study").joinpath("arrangement_bias.json").read_text())
    for arrangement in ("duet", "split-duet"):
        entry = shipped["arrangements"][arrangement]
        bias = measured_bias(arrangement)
        assert bias is not None and bias.k_low == entry["k_low"] and bias.k_high == entry["k_high"]
        assert entry["k_low"] <= 0.0 <= entry["k_high"] and entry["a_max"] >= 0.0
        design = traits(arrangement, bias)
        assert design.concurrent and (design.bias is not None) == entry["widened"]
    assert measured_bias("one-at-a-time") is None   # the reference

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


def test_a_study_of_a_measured_kind_states_its_own_kind_s_bound_and_others_the_pool():
    shipped = json.loads(resources.files("perflab.study").joinpath("arrangement_bias.json").read_text())
    duet = shipped["arrangements"]["duet"]
    own = duet["by_target"]["sqlite"]
    sqlite = measured_bias("duet", "sqlite")
    assert sqlite is not None and sqlite.target == "sqlite"
    assert (sqlite.k_low, sqlite.k_high, sqlite.a_max) == (own["k_low"], own["k_high"], own["a_max"])
    # the kind's own bound lies inside the pool (the pool spans every case's)
    assert duet["k_low"] <= own["k_low"] and own["k_high"] <= duet["k_high"] and own["a_max"] <= duet["a_max"]
    for kind in ("http", None):   # a kind no case stands for, or none given: the pool
        pooled = measured_bias("duet", kind)
        assert pooled is not None and pooled.target is None and pooled.k_low == duet["k_low"]


def test_bounds_per_kind_come_from_that_kind_s_cells_only():
    from perflab.accuracy.summary import Cell, Truth, bounds, bounds_by_kind

    def cell(case: str, effect: float, mean_log: float) -> Cell:
        return Cell(case, "duet", effect, studies=1, truth=Truth(-effect, 0.002, 6), mean_log=mean_log, se_log=None)

    table = [cell("sqlite", 0.1, -0.11), cell("sqlite", 0.0, 0.001), cell("postgres", 0.1, -0.05),
             cell("synthetic", 0.1, -0.1)]
    pooled, by_kind = bounds(table)["duet"], bounds_by_kind(table)
    assert set(by_kind) == {"sqlite", "postgres"}   # the synthetic case stands for no kind
    assert by_kind["sqlite"]["duet"].k_high > 0 > by_kind["postgres"]["duet"].k_low
    assert by_kind["sqlite"]["duet"].k_low >= 0 >= pooled.k_low   # PostgreSQL's dilution is in the pool only

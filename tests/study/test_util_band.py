"""The base runs' utilization band is centred on what the calibration reached, not on a target
it could not reach: a study whose SUT is held at 77% by a bottleneck still gets a verdict."""

from perflab.records.study import CalibrationStep, LoadRecord
from perflab.study.calibrate import calibrated_utilization


def _load(chosen: int, steps: list[tuple[int, float, bool]]) -> LoadRecord:
    return LoadRecord(mode="calibrated", users=chosen, target_util=90, tolerance=5,
                      calibration=[CalibrationStep(users=u, util_proc_s=util, valid=ok) for u, util, ok in steps])


def test_the_band_centres_on_the_chosen_load_s_measured_utilization():
    # Calibration stopped short of 90%: throughput stopped following load at 77%.
    load = _load(40, [(20, 52.0, True), (40, 77.4, True), (80, 77.9, True)])
    assert calibrated_utilization(load) == 77.4


def test_the_last_valid_step_at_the_chosen_load_counts():
    load = _load(40, [(40, 60.0, True), (80, 95.0, True), (40, 88.0, False), (40, 86.5, True)])
    assert calibrated_utilization(load) == 86.5


def test_no_measured_step_at_the_chosen_load_leaves_the_target():
    assert calibrated_utilization(_load(40, [(20, 52.0, True)])) is None
    assert calibrated_utilization(LoadRecord(mode="fixed", users=10)) is None
    assert calibrated_utilization(None) is None

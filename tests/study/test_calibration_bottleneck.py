"""Calibration that stops short of its target names what held the SUT below it, with the
measured evidence: the driver, other programs on the SUT's processors, the SUT's own lock
waits, WAL checkpoints -- or, without such evidence, a throughput that stopped following load."""

from __future__ import annotations

from perflab.caveats import Code
from perflab.study.calibrate import bottleneck, calibrate
from perflab.study.model import Calibration


def step(users, util, etr, **evidence):
    return {"users": users, "rate": None, "util_proc_s": util, "etr_t": etr, "valid": True, **evidence}


def test_each_cause_is_named_with_its_number():
    assert "driver CPU 95%" in bottleneck([step(100, 70, 700, driver_util=95.0)], 90)
    text = bottleneck([step(100, 60, 600, other_util_h=38.5)], 90)
    assert "other programs used 38.5% of the SUT's processors" in text and "the SUT had 60.0%" in text
    text = bottleneck([step(100, 70, 700, lock_wait_pct=22.0)], 90)
    assert "write lock between the SUT's processes" in text and "22.0%" in text
    text = bottleneck([step(100, 80, 800, checkpoint_pct=9.5, lock_wait_pct=1.0)], 90)
    assert "WAL checkpoints took 9.5%" in text and "write lock" not in text
    both = bottleneck([step(100, 50, 500, lock_wait_pct=30.0, other_util_h=20.0)], 90)
    assert "other programs" in both and "write lock" in both


def test_the_step_nearest_the_target_is_the_evidence():
    steps = [step(100, 40, 400, other_util_h=50.0), step(200, 75, 700, lock_wait_pct=12.0, other_util_h=1.0)]
    text = bottleneck(steps, 90)
    assert "write lock" in text and "other programs" not in text


def test_without_evidence_a_throughput_that_stopped_growing_is_named():
    text = bottleneck([step(100, 60, 600), step(400, 70, 700)], 90)
    assert "saturated below the target" in text and "4.0x" in text
    assert bottleneck([step(100, 60, 600), step(150, 89, 900)], 90) is None


def test_calibration_reports_the_lock_that_held_it():
    def measure(users, rate):
        util = min(75.0, users * 0.05)  # a SUT that cannot pass 75% however many users
        return {"util": util, "etr_t": users * 0.1, "run_id": f"r{users}", "valid": True, "driver_util": 20.0,
                "lock_wait_pct": 18.0 if util >= 75 else 2.0, "other_util_h": 0.5, "checkpoint_pct": 1.0}

    result = calibrate(Calibration(target_util=90, tolerance=5, start_users=1000, max_steps=4), measure,
                       closed=True, start_users=None, start_rate=None)
    assert result.bottleneck is not None and "write lock" in result.bottleneck and "18.0%" in result.bottleneck
    assert result.steps[-1]["lock_wait_pct"] == 18.0
    assert any(w.code == Code.CALIBRATION and "not the target 90%" in w.text and "write lock" in w.text
               for w in result.warnings)


def test_calibration_stops_when_more_users_bring_no_more_throughput():
    seen = []

    def measure(users, rate):  # throughput caps at 500/s whatever the load: more users, longer queue
        seen.append(users)
        etr = min(500.0, users * 0.1)
        return {"util": 50.0 * etr / 500.0, "etr_t": etr, "run_id": f"r{users}", "valid": True, "driver_util": 10.0}

    result = calibrate(Calibration(target_util=90, tolerance=5, start_users=6000, max_steps=5, max_users=100_000), measure,
                       closed=True, start_users=None, start_rate=None)
    assert seen == [6000, 10800]  # the second step bought nothing: no third, larger one
    assert any(w.code == Code.CALIBRATION and "did not grow" in w.text for w in result.warnings)
    assert result.users == 6000  # as near the target as the larger load, with a shorter queue


def test_a_step_that_reads_the_target_while_its_sut_queues_is_not_taken():
    # A SUT that costs 0.8 ms a transaction and cannot pass 93% (1,162.5 tx/s); users think
    # 10 s. 20,000 users offer 2,000/s: the SUT reads 93% -- inside 90 +- 5 -- with the excess
    # users in its queue (responses of seconds). 90% is 1,125 tx/s: 11,250 users.
    seen = []

    def measure(users, rate):
        seen.append(users)
        offered = users / 10.0
        etr = min(offered, 1162.5)
        util = 100.0 * etr * 0.0008
        response = 0.008 if offered <= etr else users / etr - 10.0
        values = {"avg_last_t": response, "pbt_cmd_s": 0.8, "avg_think_t": 10.0, "etr_t": etr, "util_proc_s": util}
        return {"util": util, "etr_t": etr, "run_id": f"r{users}", "valid": True, "driver_util": 10.0,
                "values": values}

    result = calibrate(Calibration(target_util=90, tolerance=5, start_users=20000, max_steps=4, max_users=100_000), measure,
                       closed=True, start_users=None, start_rate=None)
    assert seen == [20000, 11250] and result.steps[0]["queueing"] is True
    assert result.users == 11250 and not result.steps[1]["queueing"] and result.steps[1]["util_proc_s"] == 90.0
    assert any(w.code == Code.CALIBRATION and "queueing" in w.text for w in result.warnings)


def test_a_step_at_the_target_with_short_responses_is_taken_at_once():
    def measure(users, rate):
        values = {"avg_last_t": 0.01, "pbt_cmd_s": 0.4, "avg_think_t": 10.0, "etr_t": 2000.0, "util_proc_s": 89.0}
        return {"util": 89.0, "etr_t": 2000.0, "run_id": "r", "valid": True, "values": values}

    result = calibrate(Calibration(target_util=90, tolerance=5, start_users=20000, max_steps=4, max_users=100_000), measure,
                       closed=True, start_users=None, start_rate=None)
    assert result.users == 20000 and len(result.steps) == 1 and result.steps[0]["queueing"] is False


def test_a_slow_sut_without_a_queue_is_calibrated_as_ever():
    # responses of 40 ms at 0.05 ms of CPU each (an I/O wait, not a queue): 800x the CPU per
    # command, but 0.4% of a 10 s think -- the step at the target is taken
    def measure(users, rate):
        values = {"avg_last_t": 0.04, "pbt_cmd_s": 0.05, "avg_think_t": 10.0, "etr_t": users / 10.04,
                  "util_proc_s": 91.0}
        return {"util": 91.0, "etr_t": users / 10.04, "run_id": "r", "valid": True, "values": values}

    result = calibrate(Calibration(target_util=90, tolerance=5, start_users=5000, max_steps=4), measure,
                       closed=True, start_users=None, start_rate=None)
    assert result.users == 5000 and len(result.steps) == 1 and not result.steps[0]["queueing"]

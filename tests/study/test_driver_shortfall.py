"""A study whose every pair its drivers failed says by how much they fell short of the gate
(issue 28, item 5: the static-page duet's drivers at 97-98% of CPU 0 against 90%)."""

from __future__ import annotations

from types import SimpleNamespace

from perflab import caveats as cav
from perflab.study.runner import _shortfall


def _run(*exclusions):
    return SimpleNamespace(exclusions=list(exclusions))


def test_the_shortfall_names_the_drivers_cpu_the_gate_and_what_would_fit():
    runs = [_run(cav.driver_saturated(97.4)), _run(cav.driver_saturated(98.2)), _run(cav.driver_saturated(97.9))]
    text = _shortfall(runs)
    assert "97-98% of one core against the 90% gate: 8 points over" in text
    assert "about 92% of the transactions they issued would fit under it" in text   # 90 / 98.2


def test_a_gate_of_its_own_and_one_value():
    text = _shortfall([_run(cav.driver_saturated(96.0, "k6", 85.0)), _run(cav.driver_saturated(96.0, "k6", 85.0))])
    assert "96% of one core against the 85% gate: 11 points over" in text and "about 89%" in text


def test_nothing_to_say_without_a_measured_driver():
    assert _shortfall([_run(cav.driver_saturated(None))]) == ""
    assert _shortfall([_run()]) == ""

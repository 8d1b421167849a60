"""Two-factor designs: every configuration at every sweep value, compared with the base at the
same value (a verdict per level, a curve per configuration); any workload field can be swept;
equal utilization calibrates each configuration to the target."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from cli_helpers import perflab

WORKLOAD = """
name: known-cost
target: {kind: python}
transactions:
  - {name: work, class: nontrivial, call: "perflab.sut.synthetic:work", kwargs: {cpu_ms: 2.0}}
scripts: [{name: s, steps: [work]}]
load: {rate: 60, arrival: poisson}
timing: {stabilization: 0.3s, measurement: 1s}
placement: {workers: 1}
"""


def _study(tmp_path: Path, body: str) -> tuple[dict, Path]:
    (tmp_path / "w.yaml").write_text(textwrap.dedent(WORKLOAD).lstrip())
    study = tmp_path / "s.yaml"
    study.write_text("name: two-factor\nworkload: w.yaml\n" + textwrap.dedent(body).lstrip())
    result = perflab("study", study, "--store", tmp_path / "st", timeout=600)
    assert result.returncode in (0, 4), result.stderr[-3000:]
    directory = Path(result.stdout.strip().splitlines()[-1])
    return json.loads((directory / "study.json").read_text()), directory


def test_a_sweep_of_two_configurations_gives_a_verdict_per_level_and_a_curve_each(tmp_path):
    doc, directory = _study(tmp_path, """
        configurations:
          - name: base
          - name: heavier
            set: {transactions.work.kwargs.cpu_ms: 2.4}
        sweep: {factor: rate, values: [40, 80]}
        blocks: 3
        metrics: [itr_s, pbt_cmd_s, etr_t]
    """)
    names = [c["name"] for c in doc["configurations"]]
    assert names == ["base @ rate=40", "heavier @ rate=40", "base @ rate=80", "heavier @ rate=80"]
    pairs = [(c["base"], c["new"]) for c in doc["comparisons"]]
    assert pairs == [("base @ rate=40", "heavier @ rate=40"), ("base @ rate=80", "heavier @ rate=80")]
    for comparison in doc["comparisons"]:
        itr = next(m for m in comparison["metrics"] if m["key"] == "itr_s")
        assert itr["role"] == "primary" and itr["n_blocks"] == 3 and itr["ci_low"] is not None
    # every run ran at its level's rate
    for run in doc["runs"]:
        assert run["rate"] == (40 if "rate=40" in run["config"] else 80)
    series = {p["config"]: p["series"] for p in doc["sweep"]["points"]}
    assert series["heavier @ rate=80"] == "heavier" and series["base @ rate=40"] == "base"
    assert "<svg" in (directory / "report.html").read_text()


def test_any_workload_field_can_be_swept_and_a_bad_value_is_bad_input(tmp_path):
    doc, _ = _study(tmp_path, """
        sweep: {factor: transactions.work.kwargs.cpu_ms, values: [1.0, 3.0]}
        blocks: 1
        metrics: [pbt_cmd_s]
    """)
    cost = {p["value"]: p["metrics"]["pbt_cmd_s"] for p in doc["sweep"]["points"]}
    # the SUT's CPU per command follows the swept cost (plus the worker's own small share)
    assert cost[3.0] - cost[1.0] == pytest.approx(2.0, rel=0.2)
    (tmp_path / "bad.yaml").write_text("name: bad\nworkload: w.yaml\nsweep:\n  factor: users\n  values: [a, 2]\n")
    result = perflab("study", tmp_path / "bad.yaml", "--store", tmp_path / "st2")
    assert result.returncode == 2 and "Traceback" not in result.stderr and "bad.yaml:3" in result.stderr
    assert not (tmp_path / "st2" / "studies").exists() or not any((tmp_path / "st2" / "studies").iterdir())


def test_equal_utilization_calibrates_each_configuration_to_the_target(tmp_path):
    doc, _ = _study(tmp_path, """
        configurations:
          - name: base
          - name: twice the cost
            set: {transactions.work.kwargs.cpu_ms: 4.0}
        load:
          calibrate: {target_util: 40, tolerance: 8, start_rate: 50, measurement: 1s, max_steps: 4,
                      equal_utilization: true}
        blocks: 3
        metrics: [itr_s, util_proc_s]
    """)
    loads = doc["design"]["loads"]
    assert set(loads) == {"base", "twice the cost"}
    # the same target, twice the cost per transaction: about half the arrival rate (a factor of 2
    # the calibration's few steps cannot blur into less than 1.4)
    assert loads["base"]["rate"] / loads["twice the cost"]["rate"] > 1.4
    for run in doc["runs"]:
        assert run["rate"] == loads[run["config"]]["rate"]

"""A sweep of any workload field on the real known-cost SUT: its measured CPU per command follows
the swept cost. The shapes of two-factor designs (a verdict per level, a curve per configuration)
and equal utilization are the fast tier's (tests/fast/test_model_designs.py), on the model driver."""

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

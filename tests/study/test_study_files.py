"""Study files: bad ones get exit 2 and file:line, like workload files."""

from __future__ import annotations

import textwrap

import pytest
from cli_helpers import REPO, perflab

from perflab.stats.schedule import interleaved_schedule
from perflab.study.configure import apply_changes
from perflab.study.model import parse_bytes

GOOD = f"""
name: s
workload: {REPO}/examples/debit-credit.yaml
configurations:
  - name: a
    set: {{target.driver: stdlib}}
  - name: b
    set: {{target.driver: apsw}}
blocks: 3
"""


@pytest.mark.parametrize("old, new, line, needle", [
    ("blocks: 3", "blockz: 3", 8, "unknown field 'blockz'"),
    ("set: {target.driver: apsw}", "set: {target.driver: oracle}", 7, "not valid"),
    ("set: {target.driver: apsw}", "set: {transactions.nope.sql: x}", 7, "no entry named 'nope'"),
    ("debit-credit.yaml", "missing.yaml", 2, "workload file not found"),
    ("  - name: b\n    set: {target.driver: apsw}\n", "", 3, "at least two configurations"),
])
@pytest.mark.fast   # refused before any run starts (tests/tiers.py)
def test_bad_study_files(tmp_path, old, new, line, needle):
    path = tmp_path / "study.yaml"
    path.write_text(textwrap.dedent(GOOD).lstrip().replace(old, new))
    result = perflab("study", path, "--store", tmp_path / "store")
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert f"{path}:{line}" in result.stderr and needle in result.stderr, result.stderr


def test_changes_by_path_and_by_name():
    data = {"target": {"kind": "sqlite"}, "transactions": [{"name": "x", "kwargs": {"cpu_ms": 1}}]}
    changed = apply_changes(data, {"target.driver": "apsw", "transactions.x.kwargs.cpu_ms": 2,
                                   "transactions.0.class": "trivial"})
    assert changed["target"]["driver"] == "apsw"
    assert changed["transactions"][0] == {"name": "x", "kwargs": {"cpu_ms": 2}, "class": "trivial"}
    assert data["transactions"][0]["kwargs"]["cpu_ms"] == 1  # the base is not modified


def test_sizes():
    assert parse_bytes("512M") == 512 << 20 and parse_bytes("2G") == 2 << 30 and parse_bytes(4096) == 4096
    with pytest.raises(ValueError):
        parse_bytes("lots")


def test_schedule_recorded_order_is_reproducible():
    a = interleaved_schedule(["x", "y"], 6, seed=9)
    assert a == interleaved_schedule(["x", "y"], 6, seed=9)
    assert a != interleaved_schedule(["x", "y"], 6, seed=10)


@pytest.mark.fast   # refused before any run starts (tests/tiers.py)
def test_misspelled_metrics_few_blocks_and_bad_margins_are_bad_input(tmp_path):
    workload = (REPO / "examples" / "debit-credit.yaml").resolve()
    for extra, field in (("metrics: [itr_s, itrs]", "metrics.1"), ("gate_metrics: [etr_tt]", "gate_metrics.0"),
                         ("blocks: 2", "blocks"), ("margin: 0.9", "margin")):
        study = tmp_path / "s.yaml"
        study.write_text(f"name: s\nworkload: {workload}\nconfigurations: [{{name: a}}, {{name: b}}]\n{extra}\n")
        result = perflab("study", study, "--store", tmp_path / "store")
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
        assert f"s.yaml:4: {field}" in result.stderr, result.stderr
    bad = perflab("compare", "a", "b", "--margin", "3", "--store", tmp_path / "store")
    assert bad.returncode == 2 and "--margin" in bad.stderr and "Traceback" not in bad.stderr
    bad = perflab("compare", "a", "b", "--metric", "itr_x", "--store", tmp_path / "store")
    assert bad.returncode == 2 and "--metric" in bad.stderr and "itr_x" in bad.stderr

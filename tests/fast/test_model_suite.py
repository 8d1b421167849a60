"""`perflab suite` through the model driver: one change under three workloads (two open-loop
rates and closed-loop users), each a study of its own, then their average -- the
LSPR's shape. The model's noise is seeded, so every outcome is the same on every run; the
assertions are ones sound statistics make at the stated noise (a +10% cost is many standard
errors from no change), not interval widths."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from model_helpers import KNOWN_COST, KNOWN_COST_USERS, perflab_model, write

from perflab.drive.model_driver import Model
from perflab.records.suite import read_suite_document
from perflab.stats.across_workloads import MemberRatio, average_ratio

QUIET = Model(noise=0.005, block_noise=0.02, seed=1)

#: A third shape of load: the same SUT at a light open-loop rate (the model driver runs closed
#: and open loops, not job streams; the lab's example suite has a real job stream).
LIGHT = KNOWN_COST.replace("name: known-cost", "name: known-cost-light").replace("rate: 150", "rate: 40")

METRICS = "metrics: [itr_s, pbt_cmd_s, etr_t]"


def _study(tmp_path: Path, name: str, workload_file: str, candidate_ms: float, base: str = "base",
           new: str = "candidate") -> None:
    write(tmp_path, f"{name}-study.yaml", f"""
name: {name}
workload: {workload_file}
configurations:
  - name: {base}
  - name: {new}
    set: {{transactions.work.kwargs.cpu_ms: {candidate_ms}}}
blocks: 4
seed: 2
{METRICS}
""")


def _suite(tmp_path: Path, candidate_ms: float = 2.2, extra: str = "") -> Path:
    write(tmp_path, "rate.yaml", KNOWN_COST)
    write(tmp_path, "users.yaml", KNOWN_COST_USERS)
    write(tmp_path, "jobs.yaml", LIGHT)
    for name, workload in (("rate", "rate.yaml"), ("users", "users.yaml"), ("jobs", "jobs.yaml")):
        _study(tmp_path, name, workload, candidate_ms)
    return write(tmp_path, "suite.yaml", f"""
name: three-workloads
studies:
  - {{name: Open loop, study: rate-study.yaml}}
  - {{name: Users, study: users-study.yaml}}
  - {{name: Light, study: jobs-study.yaml}}
metrics: [itr_s, pbt_cmd_s]
{extra}""")


def _suite_dir(done) -> Path:
    assert done.stdout.strip(), done.stderr[-3000:]
    return Path(done.stdout.strip().splitlines()[-1])


def test_a_known_10_percent_cost_under_three_workloads_is_worse_in_each_and_on_average(tmp_path):
    done = perflab_model("suite", _suite(tmp_path), "--gate", model=QUIET, store=tmp_path / "st")
    directory = _suite_dir(done)
    doc = read_suite_document(directory)
    assert done.returncode == 1 == doc.verdict.exit_code, done.stderr[-3000:]
    assert doc.status == "complete" and [m.name for m in doc.members] == ["Open loop", "Users", "Light"]
    assert doc.base == "base" and doc.new == "candidate"
    for member in doc.members:
        assert member.status == "complete" and member.study_id
        itr = next(r for r in member.rows if r.key == "itr_s")
        assert itr.verdict == "WORSE" and itr.ratio == pytest.approx(1 / 1.1, rel=0.02), (member.name, itr)
        # the member's own study is in the store with its own report
        assert (tmp_path / "st" / "studies" / member.study_id / "report.md").is_file()
    itr_avg, pbt_avg = doc.average
    assert (itr_avg.key, pbt_avg.key) == ("itr_s", "pbt_cmd_s")
    rows = [next(r for r in m.rows if r.key == "itr_s") for m in doc.members]
    # the average is the geometric mean of the members' ratios and of their bounds
    assert itr_avg.ratio == pytest.approx(math.exp(sum(math.log(r.ratio) for r in rows) / 3), rel=1e-12)
    assert itr_avg.ci_low == pytest.approx(math.exp(sum(math.log(r.ci_low) for r in rows) / 3), rel=1e-12)
    assert itr_avg.ci_high == pytest.approx(math.exp(sum(math.log(r.ci_high) for r in rows) / 3), rel=1e-12)
    assert itr_avg.level == pytest.approx(1 - sum(1 - r.level for r in rows), abs=1e-12)
    assert itr_avg.verdict == "WORSE" and pbt_avg.verdict == "WORSE"
    assert itr_avg.ci_low < 1 / 1.1 < itr_avg.ci_high
    report = (directory / "report.md").read_text()
    assert "| Average |" in report and "Light" in report and "General Observations" in report
    assert "ITR (S) averaged over 3 workloads" in done.stderr or "averaged over 3 workloads" in done.stderr


def test_no_change_under_three_workloads_is_equivalent_and_exits_0(tmp_path):
    done = perflab_model("suite", _suite(tmp_path, candidate_ms=2.0), "--gate", model=QUIET, store=tmp_path / "st")
    doc = read_suite_document(_suite_dir(done))
    assert done.returncode == 0, done.stderr[-3000:]
    assert doc.average[0].verdict == "EQUIVALENT", doc.average[0]


def test_the_studies_must_compare_the_same_change(tmp_path):
    path = _suite(tmp_path)
    _study(tmp_path, "jobs", "jobs.yaml", 2.2, new="other")
    done = perflab_model("suite", path, model=QUIET, store=tmp_path / "st")
    assert done.returncode == 2, done.stderr
    assert "suite.yaml:5" in done.stderr and "one change under several workloads" in done.stderr
    assert not (tmp_path / "st" / "studies").exists()   # nothing ran


def test_a_study_that_does_not_compare_the_averaged_metric_is_refused_before_anything_runs(tmp_path):
    path = _suite(tmp_path, extra="")
    path.write_text(path.read_text().replace("metrics: [itr_s, pbt_cmd_s]", "metrics: [itr_s, avg_last_t]"))
    done = perflab_model("suite", path, model=QUIET, store=tmp_path / "st")
    assert done.returncode == 2 and "does not compare avg_last_t" in done.stderr, done.stderr
    assert "metrics[1]" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("body, message", [
    ("name: x\nstudies: [{name: a, study: a.yaml}]\n", "at least 2"),
    ("name: x\nstudies: [{name: a, study: a.yaml}, {name: a, study: b.yaml}]\n", "unique"),
    ("name: x\nstudies: [{name: a, study: nope.yaml}, {name: b, study: b.yaml}]\n", "study file not found"),
    ("name: x\nstudies: [{name: a, study: a.yaml}, {name: b, study: b.yaml}]\nmetrics: [itr_zz]\n", "unknown metric"),
    ("name: x\nstudiez: []\n", "studiez"),
])
def test_bad_suite_files_exit_2_naming_the_line(tmp_path, body, message):
    path = write(tmp_path, "bad.yaml", body)
    done = perflab_model("suite", path, model=QUIET, store=tmp_path / "st")
    assert done.returncode == 2 and message in done.stderr and "bad.yaml" in done.stderr, done.stderr


def test_the_average_needs_every_workload_s_interval():
    members = [MemberRatio("a", 0.9, 0.88, 0.92, 0.95), MemberRatio("b", 0.95, None, None, 0.95)]
    avg = average_ratio(members, margin=0.03, higher_is_better=True)
    assert avg.ratio is None and avg.verdict is None and "b" in (avg.reason or "")


def test_the_average_s_level_is_the_union_bound_and_its_verdict_the_members_rule():
    members = [MemberRatio("a", 1.00, 0.99, 1.01, 0.95), MemberRatio("b", 1.01, 1.00, 1.02, 0.95)]
    avg = average_ratio(members, margin=0.03, higher_is_better=True)
    assert avg.level == pytest.approx(0.90) and avg.verdict == "EQUIVALENT"
    assert avg.ratio == pytest.approx(math.sqrt(1.00 * 1.01)) and avg.low == pytest.approx(math.sqrt(0.99 * 1.00))
    # a lower-is-better metric whose average interval lies above 1 beyond the margin: WORSE, material
    worse = average_ratio([MemberRatio("a", 1.1, 1.05, 1.15, 0.95)] * 2, margin=0.03, higher_is_better=False)
    assert worse.verdict == "WORSE" and worse.material
    # twenty intervals at 95% bound no common level
    many = average_ratio([MemberRatio(str(i), 1.0, 0.99, 1.01, 0.95) for i in range(20)], margin=0.03,
                         higher_is_better=True)
    assert many.verdict is None and "no common level" in (many.reason or "")


def test_suite_json_is_written_before_the_first_study_ends(tmp_path):
    """Nothing lost: an interrupted suite keeps suite.json, marked so, with the studies that ran."""
    model = Model(noise=0.005, seed=1, interrupt_at=2)
    done = perflab_model("suite", _suite(tmp_path), model=model, store=tmp_path / "st")
    assert done.returncode == 130, done.stderr[-3000:]
    doc = json.loads((_suite_dir(done) / "suite.json").read_text())
    assert doc["status"] == "interrupted" and doc["members"][0]["status"] == "interrupted"
    assert doc["members"][1]["status"] == "pending" and doc["verdict"]["exit_code"] == 130


def test_validate_reads_a_suite_and_every_study_it_names_without_running(tmp_path):
    path = _suite(tmp_path)
    done = perflab_model("validate", path, store=tmp_path / "st")
    assert done.returncode == 0 and "suite 'three-workloads'" in done.stdout and "under 3 workloads" in done.stdout
    assert not (tmp_path / "st").exists()
    (tmp_path / "users-study.yaml").write_text((tmp_path / "users-study.yaml").read_text().replace("blocks: 4",
                                                                                                  "blocks: 1"))
    bad = perflab_model("validate", path, store=tmp_path / "st")
    assert bad.returncode == 2 and "users-study.yaml" in bad.stderr and "blocks" in bad.stderr, bad.stderr

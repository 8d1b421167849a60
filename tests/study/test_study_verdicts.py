"""Studies end to end on the known-cost SUT: the verdicts a user relies on.

Identical configurations must come out EQUIVALENT; a configuration that adds 10% CPU per
transaction must come out WORSE with an interval that contains the true ratio 1/1.1; and
`perflab compare` must return its documented exit codes.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from cli_helpers import perflab

CPU_MS = 4.0

WORKLOAD = f"""
name: known-cost
target: {{kind: python}}
transactions:
  - {{name: work, class: nontrivial, call: "perflab.sut.synthetic:work", kwargs: {{cpu_ms: {CPU_MS}}}}}
scripts: [{{name: s, steps: [work]}}]
load: {{rate: 80, arrival: constant}}
timing: {{stabilization: 0.5s, measurement: 2s}}
placement: {{workers: 1}}
seed: 5
"""


def _study(tmp_path: Path, second_cpu_ms: float, name: str) -> Path:
    (tmp_path / "known-cost.yaml").write_text(textwrap.dedent(WORKLOAD).lstrip())
    study = tmp_path / f"{name}.yaml"
    study.write_text(textwrap.dedent(f"""
        name: {name}
        workload: known-cost.yaml
        configurations:
          - name: base
          - name: candidate
            set: {{transactions.work.kwargs.cpu_ms: {second_cpu_ms}}}
        load: {{rate: 80}}
        blocks: 6
        seed: 2
        metrics: [itr_s, pbt_cmd_s, etr_t, avg_last_t]
    """).lstrip())
    return study


def _run_study(study: Path, store: Path) -> tuple[dict, Path]:
    result = perflab("study", study, store=store, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    directory = Path(result.stdout.strip().splitlines()[-1])
    return json.loads((directory / "study.json").read_text()), directory


def _metric(doc: dict, key: str) -> dict:
    return next(m for m in doc["comparisons"][0]["metrics"] if m["key"] == key)


@pytest.fixture(scope="module")
def studies(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("studies")
    store = tmp / "store"
    same, same_dir = _run_study(_study(tmp, CPU_MS, "identical"), store)
    worse, worse_dir = _run_study(_study(tmp, CPU_MS * 1.1, "ten-percent"), store)
    return {"store": store, "same": same, "same_dir": same_dir, "worse": worse, "worse_dir": worse_dir}


def test_identical_configurations_are_equivalent(studies):
    doc = studies["same"]
    assert doc["status"] == "complete"
    assert len(doc["runs"]) == 12 and not any(r["excluded"] for r in doc["runs"])
    # the interleaved schedule: every block holds both configurations once
    blocks = {}
    for block, config in doc["design"]["schedule"]:
        blocks.setdefault(block, []).append(config)
    assert all(sorted(v) == ["base", "candidate"] for v in blocks.values()) and len(blocks) == 6
    itr = _metric(doc, "itr_s")
    assert itr["verdict"] == "EQUIVALENT", itr
    assert itr["ci_low"] <= 1.0 <= itr["ci_high"] or itr["note"]


def test_ten_percent_more_cpu_is_worse_and_the_interval_holds_the_truth(studies):
    doc = studies["worse"]
    itr = _metric(doc, "itr_s")
    assert itr["verdict"] == "WORSE", itr
    assert itr["ci_low"] <= 1 / 1.1 <= itr["ci_high"], itr
    pbt = _metric(doc, "pbt_cmd_s")
    assert pbt["verdict"] == "WORSE"  # lower is better: more CPU per command is worse
    assert pbt["ci_low"] <= 1.1 <= pbt["ci_high"], pbt


def test_reports_have_the_five_sections(studies):
    html = (studies["worse_dir"] / "report.html").read_text()
    for section in ("general-observations", "workload", "hardware", "software", "discussion", "data"):
        assert f'id="{section}' in html
    assert "<svg" in html and "http://" not in html and "https://" not in html
    markdown = (studies["worse_dir"] / "report.md").read_text()
    assert "ITR (S)" in markdown and "WORSE" in markdown


def test_compare_exit_codes(studies):
    store = studies["store"]
    same_id, worse_id = studies["same"]["study_id"], studies["worse"]["study_id"]
    equivalent = perflab("compare", f"study:{same_id}:base", f"study:{same_id}:candidate", store=store)
    assert equivalent.returncode == 0, equivalent.stderr
    worse = perflab("compare", f"study:{worse_id}:base", f"study:{worse_id}:candidate", store=store)
    assert worse.returncode == 1, worse.stderr
    runs = studies["worse"]["runs"]
    two_base = ",".join(r["run_id"] for r in runs if r["config"] == "base")
    too_few = ",".join(r["run_id"] for r in runs if r["config"] == "candidate")
    few = perflab("compare", two_base.split(",")[0] + "," + two_base.split(",")[1],
                  too_few.split(",")[0] + "," + too_few.split(",")[1], store=store)
    assert few.returncode == 3, few.stderr  # two runs each: no interval, INCONCLUSIVE
    bad = perflab("compare", "no-such-run", "label:nothing", store=store)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr

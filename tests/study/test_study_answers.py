"""A study answers loudly: no valid comparison is exit code 4 with the reasons, never a silent 0;
an A/A study reports the lab's noise; the answer is in study.json and in the report."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from cli_helpers import perflab

WORKLOAD = """
name: known-cost
target: {kind: python}
transactions:
  - {name: work, class: nontrivial, call: "perflab.sut.synthetic:work", kwargs: {cpu_ms: 2.0}}
scripts: [{name: s, steps: [work]}]
load: {rate: 100, arrival: poisson}
timing: {stabilization: 0.3s, measurement: 1s}
placement: {workers: 1}
"""


def _files(tmp_path: Path, extra: str) -> Path:
    (tmp_path / "w.yaml").write_text(textwrap.dedent(WORKLOAD).lstrip())
    study = tmp_path / "s.yaml"
    study.write_text(textwrap.dedent("""
        name: answers
        workload: w.yaml
        configurations: [{name: base}, {name: same}]
        blocks: 3
        metrics: [itr_s, etr_t]
    """).lstrip() + extra)
    return study


def _doc(result) -> tuple[dict, Path]:
    directory = Path(result.stdout.strip().splitlines()[-1])
    return json.loads((directory / "study.json").read_text()), directory


def test_a_study_whose_every_pair_is_excluded_exits_4_and_says_why(tmp_path):
    # The base runs at ~20% utilization; a band of 99-100% excludes every base run, so no pair
    # is valid: deterministic, whatever the machine's noise.
    result = perflab("study", _files(tmp_path, "gates: {util_band: [99, 100]}\n"), "--store", tmp_path / "st",
                     timeout=300)
    assert result.returncode == 4, result.stderr[-2000:]
    doc, directory = _doc(result)
    assert doc["verdict"]["exit_code"] == 4
    assert all(r["exclusions"][0]["code"] == "util_out_of_band" for r in doc["runs"] if r["config"] == "base")
    itr = next(m for m in doc["comparisons"][0]["metrics"] if m["key"] == "itr_s")
    assert itr["verdict"] is None and itr["no_comparison"].startswith("no valid comparison")
    assert "UTIL/PROC (S)" in itr["no_comparison"]   # the reason, not "not measured"
    report = (directory / "report.md").read_text()
    assert "no valid comparison" in report and "was not measured" not in report
    assert "no valid comparison" in result.stderr


def test_an_a_a_study_reports_the_noise_and_the_blocks_the_margin_needs(tmp_path):
    result = perflab("study", _files(tmp_path, ""), "--aa", "--store", tmp_path / "st", timeout=300)
    doc, directory = _doc(result)
    assert doc["design"]["aa"] is True and [c["name"] for c in doc["configurations"]] == ["base", "base (A/A)"]
    aa = doc["aa"]
    itr = next(m for m in doc["comparisons"][0]["metrics"] if m["key"] == "itr_s")
    # the A/A numbers are the comparison's own: its CV, its blocks, and every claim it made
    assert aa["metric"] == "itr_s" and aa["cv"] == itr["cv"] and aa["n_blocks"] == itr["n_blocks"] == 3
    claims = [m for m in doc["comparisons"][0]["metrics"] if m["verdict"] in ("WORSE", "BETTER")]
    assert aa["false_claims"] == len(claims)
    assert aa["blocks_needed"] >= 3
    assert "A/A study" in (directory / "report.md").read_text()
    assert result.returncode in (0, 4) and "Traceback" not in result.stderr

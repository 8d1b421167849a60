"""Studies and a suite stored as `perflab study` and `perflab suite` leave them, for the book's tests."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from perflab.records.study import as_study_document
from perflab.report.write import write_reports

from .study_data import BASE, NEW, comparison_metrics, make_study

SECOND = "20261123-050000-release-cd34"


def store_study(store: Path, study: dict) -> Path:
    directory = store / "studies" / study["study_id"]
    directory.mkdir(parents=True)
    (directory / "study.json").write_text(json.dumps(study))
    write_reports(as_study_document(study), directory)
    return directory


def second_study() -> dict:
    """The first study's shape with another id and a change a little larger (ITR +10%)."""
    study = copy.deepcopy(make_study())
    study["study_id"] = SECOND
    study["title"] = "Release A -> Release C"
    for entry in study["comparisons"][0]["metrics"]:
        if entry["key"] == "itr_s":
            entry.update(ratio=1.1012, ci_low=1.0903, ci_high=1.1122, new_value=1079.2)
    return study


def store_suite(store: Path, members: list[tuple[str, str | None]]) -> Path:
    """A suite of the given (workload name, study id) members; each row is the study's itr_s."""
    itr = next(e for e in comparison_metrics() if e["key"] == "itr_s")
    doc = {
        "format": 1, "suite_id": "20261124-060000-three-workloads-ef56", "name": "three-workloads",
        "title": f"{BASE} -> {NEW} under {len(members)} workloads", "status": "complete",
        "created": "2026-11-24T06:00:00+00:00", "finished": "2026-11-24T06:20:00+00:00",
        "suite_path": "examples/lspr/suite.yaml", "base": BASE, "new": NEW, "margin": 0.03, "metrics": ["itr_s"],
        "members": [{"name": name, "study_file": f"{name}-study.yaml", "study_id": study_id, "status": "complete",
                     "workload": f"{name}.yaml", "load": "10 users", "arrangement": "duet", "rows": [itr]}
                    for name, study_id in members],
        "average": [{"key": "itr_s", "label": "ITR (S)", "unit": "tx/s", "direction": "higher", "ratio": 1.0527,
                     "ci_low": 1.041, "ci_high": 1.065, "level": 0.9, "verdict": "BETTER"}],
        "verdict": {"exit_code": 0, "meaning": "the average is BETTER"},
    }
    directory = store / "suites" / doc["suite_id"]
    directory.mkdir(parents=True)
    (directory / "suite.json").write_text(json.dumps(doc))
    (directory / "report.md").write_text(f"# {doc['title']}\n")
    return directory

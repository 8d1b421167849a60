"""report.json (the study plus the generated prose) and write_reports (three files, atomically)."""

from __future__ import annotations

import json
import os

import pytest

from perflab.records.study import as_study_document
from perflab.report import write as write_module
from perflab.report.html import render_html
from perflab.report.json_export import render_json
from perflab.report.markdown import render_markdown
from perflab.report.write import EXPORTERS, Exporter, write_reports


def _contains(out, given, where="") -> None:
    """Every value the study gave is in the JSON as given (the model adds its defaults beside them)."""
    if isinstance(given, dict):
        for key, value in given.items():
            _contains(out[key], value, f"{where}.{key}")
    elif isinstance(given, list) and given and isinstance(given[0], str) and out and isinstance(out[0], dict):
        assert [c["text"] for c in out] == given, where   # caveats: stored as {code, text, values}
    elif isinstance(given, list) and given and isinstance(given[0], (dict, list)):
        assert len(out) == len(given), where
        for i, (o, g) in enumerate(zip(out, given)):
            _contains(o, g, f"{where}[{i}]")
    else:
        assert out == json.loads(json.dumps(given)), where


def test_json_is_the_study_plus_the_generated_prose(study):
    doc = json.loads(render_json(as_study_document(study)))
    for key in ("study_id", "design", "configurations", "runs", "comparisons", "warnings"):
        _contains(doc[key], study[key], key)
    report = doc["report"]
    assert report["format"] == "perflab-report"
    first = report["general_observations"][0]
    assert first["sentences"][0]["text"].startswith("Internal throughput (ITR (S)) increased by 5.3%")
    assert first["sentences"][0]["verdict"] == "BETTER" and first["sentences"][0]["keys"] == ["itr_s"]
    sentences = report["discussion"][0]["sentences"]
    linked = next(s for s in sentences if s["keys"] == ["pbt_cmd_s", "itr_s"])
    assert "[90% CI 4.1% to 6.5%]: BETTER" in linked["text"]
    # A legend of the catalog keys used, from the registry.
    assert report["metrics"]["pbt_cmd_s"]["label"] == "PBT/CMD (S)"
    assert report["metrics"]["pbt_cmd_s"]["unit"] == "ms" and report["metrics"]["pbt_cmd_s"]["direction"] == "lower"


def test_json_has_no_nan(study):
    study["runs"][0]["metrics"]["etr_t"] = float("nan")
    study["runs"][1]["metrics"]["itr_s"] = float("inf")
    text = render_json(as_study_document(study))
    doc = json.loads(text)   # strict JSON: NaN would not be valid
    assert doc["runs"][0]["metrics"]["etr_t"] is None and doc["runs"][1]["metrics"]["itr_s"] is None
    assert "NaN" not in text and "Infinity" not in text


def test_write_reports_writes_the_three_files(study, tmp_path):
    paths = write_reports(as_study_document(study), tmp_path / "out")
    assert set(paths) == {"markdown", "html", "json"}
    assert [p.name for p in (paths["markdown"], paths["html"], paths["json"])] == \
        ["report.md", "report.html", "report.json"]
    assert paths["markdown"].read_text(encoding="utf-8") == render_markdown(as_study_document(study))
    assert paths["html"].read_text(encoding="utf-8") == render_html(as_study_document(study))
    assert paths["json"].read_text(encoding="utf-8") == render_json(as_study_document(study))
    assert sorted(os.listdir(tmp_path / "out")) == ["report.html", "report.json", "report.md"]  # no temp files


def test_a_failing_exporter_leaves_the_previous_reports(study, tmp_path):
    paths = write_reports(as_study_document(study), tmp_path)
    before = {k: p.read_bytes() for k, p in paths.items()}

    def broken(_study):
        raise RuntimeError("render failed")

    exporters = EXPORTERS[:2] + (Exporter("json", "report.json", broken),)
    study["title"] = "changed"
    with pytest.raises(RuntimeError):
        write_reports(as_study_document(study), tmp_path, exporters)
    assert {k: p.read_bytes() for k, p in paths.items()} == before
    assert sorted(os.listdir(tmp_path)) == ["report.html", "report.json", "report.md"]


def test_writes_go_through_the_atomic_writer(study, tmp_path, monkeypatch):
    seen = []
    real = write_module.write_atomic
    monkeypatch.setattr(write_module, "write_atomic", lambda path, fn: (seen.append(path.name), real(path, fn)))
    write_reports(as_study_document(study), tmp_path)
    assert seen == ["report.md", "report.html", "report.json"]


@pytest.mark.parametrize("study", [
    {},
    {"status": "interrupted", "reason": "SIGINT", "runs": [{"run_id": "r1", "config": "a", "metrics": {}}]},
    {"comparisons": [{"base": "a", "new": "b", "metrics": [
        {"key": "itr_s", "base_value": 1.0, "new_value": 2.0},
        {"key": "not_in_the_registry", "base_value": 3, "new_value": None, "verdict": "INCONCLUSIVE"}]}]},
], ids=["empty", "interrupted-without-comparisons", "sparse-entries"])
def test_sparse_studies_still_render(study, tmp_path):
    """A study interrupted early, or built by hand, still gets all three reports; what is absent reads na."""
    paths = write_reports(as_study_document(study), tmp_path)
    md = paths["markdown"].read_text(encoding="utf-8")
    json.loads(paths["json"].read_text(encoding="utf-8"))
    assert "## General Observations" in md
    if study.get("comparisons"):
        assert "| not_in_the_registry | - | 3.000 | na | na | na | na | na | na | INCONCLUSIVE | na |" in md
        assert "(no verdict: no interval)" in md

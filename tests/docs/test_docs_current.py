"""Generated documents stay in step with the code they describe."""

from __future__ import annotations

from pathlib import Path

from perflab.report.metric_reference import render_metric_reference

REPO = Path(__file__).resolve().parents[2]


def test_metric_reference_matches_the_registry():
    assert (REPO / "docs/metrics.md").read_text() == render_metric_reference(), \
        "docs/metrics.md is stale: run `perflab metrics --markdown > docs/metrics.md`"


def test_readme_opens_with_the_two_commands_and_ci_calls_the_test_one():
    readme = (REPO / "README.md").read_text()
    block = readme.split("```sh", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in block.strip().splitlines()]
    assert commands == ["make demo", "make test"]
    assert "make test" in (REPO / ".ci/run").read_text()


def test_the_record_reference_matches_the_models():
    from perflab.records.reference import splice

    text = (REPO / "docs/architecture.md").read_text()
    assert splice(text) == text, \
        "docs/architecture.md is stale: run `python -m perflab.records.reference docs/architecture.md`"

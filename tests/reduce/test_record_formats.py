"""Stored records of the previous format load through the models; a newer one is refused with
a message naming both versions; the CLI shows either without a traceback."""

from __future__ import annotations

import json

from cli_helpers import perflab

from perflab.caveats import Code
from perflab.records.run import read_run_record
from perflab.records.study import parse_study_document


def test_a_format_1_run_loads_and_shows(make_run):
    run_dir = make_run("old-run", transactions={"end": [10.5, 11.5, 12.5]},
                        status="interrupted", reason="SIGTERM", invalid_reasons=["run interrupted: SIGTERM"])
    record = read_run_record(run_dir)
    assert record.format == 2 and [c.code for c in record.invalid] == [Code.LEGACY]
    assert record.invalid[0].text == "run interrupted: SIGTERM"
    shown = perflab("show", str(run_dir), "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["values"]["tx_ok"] == 3.0


def test_a_newer_format_is_refused_with_both_versions(make_run):
    run_dir = make_run("new-run", transactions={"end": [10.5]}, format=3)
    shown = perflab("show", str(run_dir))
    assert shown.returncode == 2 and "Traceback" not in shown.stderr
    assert "format 3 is newer than this perflab reads (format 2)" in shown.stderr


def test_a_format_1_study_loads_with_its_verdicts_unadjusted():
    doc = parse_study_document({
        "study_id": "s", "name": "s", "status": "complete",
        "runs": [{"run_id": "r1", "config": "a", "excluded": True, "exclusion_reasons": ["driver CPU 97%"],
                  "warnings": ["x"], "metrics": {"itr_s": 1.0},
                  "per_interval": {"t": [0.0, 1.0], "etr_t": [10.0, 11.0]}}],
        "comparisons": [{"base": "a", "new": "b", "metrics": [{"key": "itr_s", "verdict": "WORSE"}]}]})
    run = doc.runs[0]
    assert run.excluded and run.exclusions[0].text == "driver CPU 97%" and run.caveats[0].text == "x"
    # per-interval columns (an older shape) become rows
    assert run.per_interval == [{"t_start": 0.0, "etr_t": 10.0}, {"t_start": 1.0, "etr_t": 11.0}]
    entry = doc.comparisons[0].metrics[0]
    assert entry.verdict == entry.verdict_unadjusted == "WORSE" and entry.adjustment == "unadjusted"

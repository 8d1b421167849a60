"""report.md: the seeds' sections, a table row for every metric, na for missing values."""

from __future__ import annotations

import re

from perflab.records.study import as_study_document
from perflab.report.markdown import render_markdown

from .study_data import EXCLUDED_RUN, EXCLUSION


def _rows(md: str, first_cell: str) -> list[list[str]]:
    rows = []
    for line in md.splitlines():
        if line.startswith(f"| {first_cell} |"):
            rows.append([c.strip() for c in line.strip().strip("|").split(" | ")])
    return rows


def test_title_and_sections_in_the_seeds_order(study):
    md = render_markdown(as_study_document(study))
    headings = [line for line in md.splitlines() if line.startswith("#")]
    assert headings[0].startswith("# Release A (stdlib) -> Release B")
    wanted = ["## General Observations", "### 1. Workload", "### 2. Hardware configuration",
              "### 3. Software configuration", "### 4. Measurement discussion", "### 5. Measurement data",
              "#### Design", "#### Runs", "#### Warnings"]
    positions = [headings.index(h) for h in wanted]
    assert positions == sorted(positions)


def test_a_table_row_for_every_metric_in_its_group(study):
    md = render_markdown(as_study_document(study))
    for entry in study["comparisons"][0]["metrics"]:
        rows = _rows(md, entry["label"])
        assert len(rows) == 1, entry["label"]
        assert rows[0][1] == entry["unit"]
    # Row groups as in the seeds' tables, in their order.
    groups = [line.split("**")[1] for line in md.splitlines() if line.startswith("| **")]
    # The primary metric first, under its own heading: the row that carries the study's verdict.
    assert groups == ["Primary (the study's verdict)", "Response Time", "Throughput", "Proc. Usage",
                      "Processor Util."]


def test_values_deltas_interval_verdict_and_legacy_columns(study):
    row = _rows(render_markdown(as_study_document(study)), "ITR (S)")[0]
    # To two significant digits of the interval's half-width (±1.1% of ~1,000 tx/s: ±11), with
    # thousands separators: people read 1,032, not 1031.60.
    assert row == ["ITR (S)", "tx/s", "980", "1,032", "+52", "+5.3%", "1.053", "[1.041, 1.065]", "0.001",
                   "BETTER", "change +5.3 %"]
    worse = _rows(render_markdown(as_study_document(study)), "AVG LAST (T)")[0]
    assert worse[9] == "WORSE (material)"


def test_na_for_missing_values(study):
    row = _rows(render_markdown(as_study_document(study)), "INSTR/CMD (I)")[0]
    assert row[2:] == ["na"] * 9
    # A metric without a direction has no verdict (not "na": there is nothing to decide).
    util = _rows(render_markdown(as_study_document(study)), "UTIL/PROC (S)")[0]
    assert util[6:10] == ["na", "na", "na", "-"]


def test_missing_run_metric_prints_na(study):
    study["runs"][0]["metrics"]["itr_s"] = None
    study["runs"][0]["metrics"]["etr_t"] = float("nan")
    row = _rows(render_markdown(as_study_document(study)), study["runs"][0]["run_id"])[0]
    assert row[6:8] == ["na", "na"]


def test_runs_table_shows_the_excluded_run_and_its_reason(study):
    md = render_markdown(as_study_document(study))
    row = _rows(md, EXCLUDED_RUN)[0]
    assert row[5] == f"excluded: {EXCLUSION}"
    assert len(_rows(md, "run-A-0")) == 1 and sum(len(_rows(md, r["run_id"])) for r in study["runs"]) == 12


def test_workload_hardware_software_and_design(study):
    md = render_markdown(as_study_document(study))
    assert "- **scripts (mix)**: teller weight 9: debit\\_credit" not in md  # underscores stay readable
    assert "- **scripts (mix)**: teller weight 9: debit_credit; inquiry weight 1: balance" in md
    assert "- **think time**: exponential (mean 0.02 s)" in md
    assert "- **load**: 37 users (closed loop); calibrated to 90% UTIL/PROC of the base" in md
    assert "| CPU model | Example CPU @ 3.0GHz |" in md and "| memory | 8.0 GiB |" in md
    assert "| SUT version | SQLite 3.40.1 (Python sqlite3 module) | SQLite 3.54.1 (apsw) |" in md
    assert "| what changed | nothing (base) | target.driver: apsw |" in md
    assert "- **seed**: 7" in md and "- **margin**: ±3%" in md and "- **observed CV (ITR (S))**: 0.8%" in md
    assert "block 1: Release B \\<apsw> & co, Release A (stdlib)" in md


def test_warnings_are_listed(study):
    md = render_markdown(as_study_document(study))
    warnings = md.split("#### Warnings", 1)[1]
    assert "- RESP P90 (T): CV 4.5 %: need ≥ 38 blocks at margin 3 %" in warnings
    assert "- run run-A-2: Little's law deviation 2.1%" in warnings


def test_user_text_cannot_inject_markdown(study):
    md = render_markdown(as_study_document(study))
    assert not re.search(r"(?<!\\)<apsw>", md) and "\\<apsw>" in md
    study["comparisons"][0]["metrics"][0]["label"] = "A|B"
    assert "| A\\|B |" in render_markdown(as_study_document(study))


def test_sweep_study_has_a_sweep_table_and_the_runs(sweep_study):
    md = render_markdown(as_study_document(sweep_study))
    assert "## Sweep" in md and "| users=8 | 8 | 2 |" in md
    assert "## Runs" in md and "Sweep over users (4, 8, 16): 3 points" in md


def test_legacy_column_is_named_as_the_statistics_name_it():
    from perflab.report.view import LEGACY_LABEL
    from perflab.stats.verdict import LEGACY_LABEL as STATS_LABEL

    assert LEGACY_LABEL == STATS_LABEL


def _trend_study(study):
    import copy

    third = copy.deepcopy(study["comparisons"][0])
    third["new"] = "Release C"
    for entry in third["metrics"]:
        if entry["key"] == "itr_s":
            entry.update(new_value=1120.0, ratio=1.1429, ci_low=1.125, ci_high=1.161, verdict="BETTER")
    study["comparisons"].append(third)
    conf = copy.deepcopy(study["configurations"][1])
    conf.update(name="Release C", software={**conf["software"], "sut_version": "SQLite 3.60.0 (apsw 3.60.0.0)"})
    study["configurations"].append(conf)
    return study


def test_several_releases_against_one_base_make_a_release_trend(study):
    from perflab.report.html import render_html

    study = _trend_study(study)
    md = render_markdown(as_study_document(study))
    assert "## Release trend" in md
    trend = md.split("## Release trend", 1)[1].split("\n## ", 1)[0]
    base = _rows(trend, "Release A (stdlib)")[0]
    assert base[:4] == ["Release A (stdlib)", "SQLite 3.40.1 (Python sqlite3 module)", "980", "1 (base)"]
    c = _rows(trend, "Release C")[0]
    assert c[1:6] == ["SQLite 3.60.0 (apsw 3.60.0.0)", "1,120", "1.143", "[1.125, 1.161]", "BETTER"]
    assert c[7:10] == ["1.065", "[1.040, 1.090]", "WORSE (material)"]  # AVG LAST (T), to its interval's digits
    html = render_html(as_study_document(study))
    assert 'id="trend"' in html and 'id="chart-trend"' in html and "<svg" in html.split('id="chart-trend"', 1)[1]
    # One comparison is no trend.
    assert "Release trend" not in render_markdown(as_study_document({**study, "comparisons": study["comparisons"][:1]}))


def test_a_field_set_to_null_is_a_change_the_software_table_shows(study):
    # `load.batch: null` takes a job stream away: the row must say so, not drop it as a None
    study["configurations"][1]["changes"] = {"load.batch": None, "scripts.job.weight": 0}
    md = render_markdown(as_study_document(study))
    assert "| what changed | nothing (base) | load.batch: removed (null), scripts.job.weight: 0 |" in md

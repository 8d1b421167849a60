"""The single-run report (perflab.report.run: `perflab show`, `show --html`, the run page of
`perflab serve`): what it shows is what the run stored, every rendering shows the same rows, it
escapes every user string, and its HTML opens from disk with nothing fetched."""

from __future__ import annotations

import html
import json
import math
import re

import numpy as np
import pyarrow.parquet as pq
import pytest
from cli_helpers import perflab
from markdown_it import MarkdownIt
from rich.console import Console

from perflab.reduce.reduce import reduce_run
from perflab.report import markdown as md
from perflab.report import numbers as fmt
from perflab.report.run.export import render_html, render_json, render_markdown
from perflab.report.run.model import CLASSES_TITLE, build_report
from perflab.report.terminal import render_run

from .serve_data import (
    THRESHOLD_MET,
    THRESHOLD_VIOLATED,
    XSS_CLASS,
    XSS_DESCRIPTION,
    XSS_ERROR,
    XSS_LABEL,
    XSS_TX,
    XSS_WORKLOAD,
    fake_running_run,
)


@pytest.fixture(scope="module")
def xss_report(stored):
    run_dir = stored.home / "runs" / stored.xss_run
    return run_dir, build_report(run_dir)


def test_the_numbers_are_the_reductions(xss_report):
    run_dir, report = xss_report
    metrics = reduce_run(run_dir, timeline=True)   # the report draws its charts over the whole run
    summary = dict(report.summary)
    assert summary["ETR (T)"] == fmt.quantity(metrics.values["etr_t"], "etr_t")
    rows = {label: value for _, group in report.data.groups for label, value, _, _ in group}
    assert rows["ITR (S)"] == fmt.value(metrics.values["itr_s"], "itr_s")
    assert rows["AVG LAST (T)"] == fmt.value(metrics.values["avg_last_t"], "avg_last_t")
    assert [g for g, _ in report.data.groups][:2] == ["Environment", "Response Time"]
    table = report.table(CLASSES_TITLE)
    classes = {row[0]: row for row in table.rows}
    assert set(classes) == set(metrics.per_class)
    column = table.columns.index("RESP P90 (T) (s)")
    assert classes["default"][column] == fmt.value(metrics.per_class["default"]["resp_p90_t"], "resp_p90_t")
    assert json.loads(render_json(report))["metrics"] == json.loads(json.dumps(metrics.to_json()))


def test_interval_percentiles_are_nearest_rank_per_interval(xss_report):
    """The reduction's per-interval percentiles (the response chart draws them), recomputed here
    from the parquet file with a sort (not the partition the reduction uses)."""
    run_dir, _ = xss_report
    metrics = reduce_run(run_dir)
    tx = pq.read_table(run_dir / "transactions.parquet").to_pandas()
    tx = tx[tx.ok & (tx.end >= metrics.window.start) & (tx.end < metrics.window.end)]
    assert len(metrics.per_interval) > 0
    for row in metrics.per_interval:
        inside = tx[(tx.end >= row["t_start"]) & (tx.end < row["t_end"])]
        response = np.sort((inside.end - inside.intended_start).to_numpy())
        for q in (50, 90, 99):
            expected = response[max(0, math.ceil(q / 100 * len(response)) - 1)] if len(response) else None
            assert row[f"resp_p{q}_t"] == expected


def test_every_rendering_shows_the_same_rows(xss_report):
    """`perflab show` (terminal), the HTML, the Markdown and the JSON are rendered from one
    model: every metric row, every per-class cell and every gate appears in each of them."""
    _, report = xss_report
    console = Console(record=True, width=400, color_system=None)
    render_run(report, console)
    terminal = console.export_text()
    markdown, page = render_markdown(report), html.unescape(render_html(report))
    document = json.loads(render_json(report))
    terminal_lines = terminal.splitlines()
    rows = [row for _, group in report.data.groups for row in group]
    assert len(rows) > 50
    for label, value, unit, key in rows:
        assert f"| {md.cell(label)} | {md.cell(value)} | {md.cell(unit)} | {md.cell(key)} |" in markdown, key
        assert re.search(rf"<th scope=\"row\">{re.escape(label)}</th><td[^>]*>{re.escape(value)}</td>", page), key
        line = next((line for line in terminal_lines if re.search(rf"\s{re.escape(key)}\s*│?\s*$", line)), None)
        assert line is not None and label in line and f" {value} " in line, key
    for titled in report.tables:
        table = titled.table
        assert [dict(zip(table.columns, row)) for row in table.rows] == document["tables"][titled.title]
        for row in table.rows:
            cells = [html.unescape(c) for c in row]
            assert "| " + " | ".join(md.cell(c) for c in cells) + " |" in markdown
            line = next(line for line in terminal_lines if line.strip("│ ").startswith(cells[0]))
            assert all(c in line for c in cells[1:]), line
    for gate in report.gates:
        assert [gate.name, gate.measured, gate.limit, gate.result] in \
            [[g["name"], g["measured"], g["limit"], g["result"]] for g in document["gates"]["rows"]]
        assert gate.name in terminal and gate.name in page and gate.name in markdown
    assert report.little and report.little in page and report.little.split(":")[0] in terminal


def test_errors_are_counted_from_the_stored_transactions(xss_report):
    run_dir, report = xss_report
    tx = pq.read_table(run_dir / "transactions.parquet").to_pandas()
    failed = tx[~tx.ok]
    # One script in ten fails; of the ~400 transactions none failing has probability 0.9^400 < 1e-18.
    assert len(failed) > 0
    messages = set(failed.error)
    assert len(messages) == 1 and XSS_ERROR in messages.pop()   # "RuntimeError: <img ...>"
    assert report.errors.rows == [[str(failed.error.iloc[0]), XSS_TX, str(len(failed)),
                                   str(int(((failed.end >= report.metrics["window"]["start"])
                                            & (failed.end < report.metrics["window"]["end"])).sum()))]]


def test_gates_show_each_limit_and_the_verdict(xss_report):
    _, report = xss_report
    gates = {g.name: g for g in report.gates}
    assert gates["run completed"].result == "pass"
    errors = gates["error rate"]
    # One script in ten fails, against the 1% default limit: at ~400 transactions a measured
    # rate at or below 1% is a binomial tail far below 1e-18.
    assert errors.result == "FAIL" and errors.limit == "at most 1%"
    assert not report.counted and report.gate_verdict.startswith("a study would exclude it: error rate")
    assert report.exclusions[0].code == "error_rate"
    assert '<code class="code">error_rate</code>' in render_html(report)
    assert json.loads(render_json(report))["gates"]["exclusions"][0]["code"] == "error_rate"


def test_thresholds_are_evaluated_against_the_reduction(xss_report):
    """The workload's thresholds (serve_data.XSS_YAML): transactions completed (met by any run
    that completes one) and an error rate below 1%, violated by the one-in-ten failing script
    (at ~400 transactions, a rate at or below 1% has a binomial probability far below 1e-18)."""
    run_dir, report = xss_report
    values = reduce_run(run_dir).values
    rows = {t.expression: t for t in report.thresholds}
    assert list(rows) == [THRESHOLD_MET, THRESHOLD_VIOLATED]
    assert rows[THRESHOLD_MET].result == "pass" and rows[THRESHOLD_MET].why == ""
    assert rows[THRESHOLD_MET].measured == fmt.quantity(values["tx_ok"], "tx_ok")
    violated = rows[THRESHOLD_VIOLATED]
    assert violated.result == "FAIL" and violated.measured == fmt.quantity(values["error_pct_t"], "error_pct_t")
    assert violated.why.startswith(f"error_pct_t is {values['error_pct_t']:.6g}, not < 1")
    assert report.thresholds_violated == 1
    text = render_html(report)
    assert '<section id="thresholds">' in text and "1 of 2 violated" in text
    assert "## Thresholds" in render_markdown(report)
    assert [t["result"] for t in json.loads(render_json(report))["thresholds"]] == ["pass", "FAIL"]


def test_html_is_self_contained_and_escapes_user_text(xss_report):
    _, report = xss_report
    text = render_html(report)
    assert "<script" not in text.lower().replace(html.escape("<script>").lower(), "")
    for raw in (XSS_WORKLOAD, XSS_DESCRIPTION, XSS_ERROR, XSS_TX, XSS_CLASS, XSS_LABEL):
        assert raw not in text, raw
        assert html.escape(raw, quote=False) in text or html.escape(raw) in text, raw
    assert re.search(r'<meta http-equiv="Content-Security-Policy" content="default-src \'none\'', text)
    assert not re.search(r'(src|href)="(https?:)?//', text), "the report must fetch nothing"
    for chart in ("chart-etr", "chart-response", "chart-util"):
        assert re.search(rf'<figure id="{chart}">\s*<figcaption>[^<]*</figcaption>\s*<svg', text), chart
    for section in ("summary", "gates", "charts", "data", "classes", "errors", "workload", "configuration",
                    "fingerprint"):
        assert f'<section id="{section}">' in text


def test_markdown_escapes_user_text_as_the_study_report_does(xss_report):
    """report.md of a run goes through report/markdown.py's escaping: the workload's name, the
    SUT's error text, the transaction and class names stay literal text in a CommonMark reader."""
    _, report = xss_report
    text = render_markdown(report)
    assert f"| workload | {md.cell(XSS_WORKLOAD)} |" in text
    assert "## Gates" in text and "## Measurement data" in text
    page = MarkdownIt("commonmark").enable("table").render(text)
    for raw in (XSS_WORKLOAD, XSS_ERROR, XSS_TX, XSS_CLASS, XSS_LABEL):
        assert raw not in page and html.escape(raw, quote=False) in page, raw


def test_a_run_in_progress_reports_what_run_json_says(tmp_path):
    run_dir = fake_running_run(tmp_path / "store", "20260101-000000-live-0001")
    report = build_report(run_dir)
    assert report.problem is not None and "no measurement window" in report.problem
    assert report.data is None and report.charts == []
    assert "running" in dict(report.header)["status"]
    assert "<section id=\"gates\">" in render_html(report)


def test_show_html_writes_the_report_into_the_run_directory(stored, tmp_path):
    result = perflab("show", stored.a_runs[0], "--html", store=stored.home)
    assert result.returncode == 0, result.stderr
    path = stored.home / "runs" / stored.a_runs[0] / "report.html"
    assert result.stdout.strip() == str(path)
    text = path.read_text()
    assert text.startswith("<!DOCTYPE html>") and f"Run {stored.a_runs[0]}: plain" in text
    path.unlink()  # the shared store stays as built
    bad = perflab("show", "no-such-run", "--html", store=stored.home)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "no run 'no-such-run'" in bad.stderr


def test_a_study_run_is_judged_as_its_study_judged_it(stored):
    """The run's report and the study's runs table say the same of each run: counted or
    excluded, by the study's own gates."""
    from perflab.records.study import read_study_document
    from perflab.report.view import runs_table

    doc = read_study_document(stored.home / "studies" / stored.study_id / "study.json")
    assert len(doc.runs) == len(stored.a_runs) + len(stored.b_runs)
    for entry in doc.runs:
        report = build_report(stored.home / "runs" / entry.run_id, doc, charts=False)
        assert report.gate_source == f"the gates of study {doc.study_id}, as it applied them"
        assert report.counted == (not entry.exclusions) and report.exclusions == entry.exclusions
        row = next(row for row in runs_table(doc, [entry.config]).rows if row[0] == entry.run_id)
        assert row[5].startswith("valid") == report.counted

"""A SUT's hostile error text through every format of both reports (issue 41, item 2).

A run's and a study's reports share one exporter shape and one writer per format
(perflab.report.write, report/markdown.py, report/html.py, report/json_export.py). The SUT
here answers every failing transaction with text that is markup in each of them: rich markup,
Markdown (a pipe that splits a table cell, a link, emphasis, a heading after a line break),
HTML (a tag, an event handler, a script), ANSI and OSC escapes and a C1 CSI. Every format must
show it as literal text: no raw control character, no tag, no link, no extra table cell, and
report.json must carry it exactly (a program reads the value, not a rendering of it).
"""

from __future__ import annotations

import html
import json
import re
import textwrap
from functools import partial
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from rich.console import Console

from perflab import caveats as cav
from perflab.drive.model_driver import Model, execute_model_run
from perflab.drive.run import RunRequest
from perflab.report.run import export as run_export
from perflab.report.run.errors import COLUMNS as ERRORS
from perflab.report.run.model import build_report
from perflab.report.terminal import render_run, render_verdicts
from perflab.report.write import EXPORTERS, write_exports, write_reports
from perflab.store.catalog import Store
from perflab.study.groups import comparison_document
from perflab.workload.loader import load_workload

#: What the SUT says when it fails.
HOSTILE = ("a|b || [bold]loud[/bold] [/x] \x1b[2J\x1b[31mred\x1b[0m \x1b]8;;http://evil.example/\x1b\\link"
           "\x1b]8;;\x1b\\ \x9b31m \x07 <img src=x onerror=alert(3)> <script>alert(4)</script> "
           "[click](http://evil.example/) *em* `code`\n# heading | cell")
#: The characters no report file may hold raw (C0 but line breaks and tab, DEL, C1).
CONTROL = {chr(c) for c in [*range(0x00, 0x09), *range(0x0b, 0x20), *range(0x7f, 0xa0)]}

WORKLOAD = textwrap.dedent("""
    name: hostile
    target: {kind: python}
    transactions:
      - {name: ok, call: "perflab.sut.synthetic:noop"}
      - {name: bad, call: "perflab.sut.synthetic:fail", kwargs: {message: MESSAGE}}
    scripts:
      - {name: main, weight: 3, steps: [ok]}
      - {name: rare, weight: 1, steps: [bad]}
    think: 0.01
    load: {users: 2}
    timing: {stagger: 0.2s, stabilization: 0.5s, measurement: 1.5s}
    placement: {workers: 1}
    """).lstrip().replace("MESSAGE", json.dumps(HOSTILE))   # a JSON string is a YAML one


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """A run's and a study's three files, written by their exporters, and their terminal text."""
    root = tmp_path_factory.mktemp("hostile")
    path = root / "hostile.yaml"
    path.write_text(WORKLOAD)
    store = Store(root / "store")
    run = partial(execute_model_run, model=Model(noise=0.005, seed=5))
    results = [run(RunRequest(load_workload(path), path, label=label, seed=seed), store)
               for seed in (1, 2) for label in ("A", "B")]
    run_dir = store.home / "runs" / results[0].run_id
    report = build_report(run_dir)
    # One script in four fails, as synthetic:fail does: of some 100 transactions in the run, none
    # failing has probability 0.75^100 < 1e-12.
    assert report.errors is not None and report.errors.rows, "the run must have recorded the SUT's error"
    run_files = write_exports(report, root / "run", run_export.EXPORTERS)
    doc = comparison_document(store, "label:A", "label:B")
    doc.runs[0].reason = "SUT error: " + HOSTILE          # a failed run's reason is the SUT's own text
    doc = doc.model_copy(update={"title": HOSTILE, "warnings": [*doc.warnings, cav.note(cav.Code.RUN_NOT_STORED, HOSTILE)]})
    study_files = write_reports(doc, root / "study")
    terminal = Console(record=True, width=300, color_system=None, emoji=False)
    render_run(report, terminal)
    render_verdicts(doc, terminal)
    return {"run": run_files, "study": study_files, "terminal": terminal.export_text(styles=False)}


def files(reports: dict, kind: str) -> list[Path]:
    return [reports["run"][kind], reports["study"][kind]]


def test_every_file_of_both_reports_is_written_by_the_same_exporters(reports):
    assert set(reports["run"]) == set(reports["study"]) == {e.format for e in EXPORTERS}
    for kind in ("run", "study"):
        assert not [p for p in reports[kind]["html"].parent.iterdir() if p.name.startswith(".")], \
            "a temporary file was left behind"


def test_no_format_writes_a_raw_control_character(reports):
    for path in [*files(reports, "markdown"), *files(reports, "html"), *files(reports, "json")]:
        text = path.read_text(encoding="utf-8")
        assert not CONTROL & set(text), (path, sorted(hex(ord(c)) for c in CONTROL & set(text)))
    assert not CONTROL & set(reports["terminal"])


def test_markdown_shows_the_text_as_text(reports):
    for path in files(reports, "markdown"):
        text = path.read_text(encoding="utf-8")
        assert "\\x1b[2J" in text and "\\x9b31m" in text, path
        page = MarkdownIt("commonmark").enable("table").render(text)
        assert "<img" not in page and "<script" not in page and "<a " not in page, path
        assert "<em>em</em>" not in page and "<code>code</code>" not in page and "<h1>heading" not in page, path
        assert "&lt;img src=x onerror=alert(3)&gt;" in page, path


def test_a_pipe_in_the_error_does_not_split_the_errors_table(reports):
    text = reports["run"]["markdown"].read_text(encoding="utf-8")
    page = MarkdownIt("commonmark").enable("table").render(text)
    errors = page.split('<h2>Errors</h2>', 1)[1].split("</table>", 1)[0]
    head = errors.split("</tr>", 1)[0]
    rows = [r for r in errors.split("</tr>")[1:] if "<td" in r]
    assert rows and all(len(re.findall("<td[ >]", r)) == len(re.findall("<th[ >]", head)) for r in rows)
    assert "a|b || [bold]loud[/bold]" in html.unescape(rows[0])


def test_html_escapes_the_markup(reports):
    for path in files(reports, "html"):
        text = path.read_text(encoding="utf-8")
        assert "<img src=x" not in text and "<script>alert(4)" not in text, path
        assert "&lt;img src=x onerror=alert(3)&gt;" in text and "\\x1b[2J" in text, path


def test_json_carries_the_text_exactly(reports):
    run = json.loads(reports["run"]["json"].read_text(encoding="utf-8"))
    assert [row[ERRORS[0]] for row in run["errors"]] == [f"RuntimeError: {HOSTILE}"]
    study = json.loads(reports["study"]["json"].read_text(encoding="utf-8"))
    assert study["title"] == HOSTILE and study["runs"][0]["reason"] == "SUT error: " + HOSTILE


def test_the_terminal_shows_the_markup_as_text(reports):
    text = reports["terminal"]
    assert "[bold]loud[/bold]" in text and "\\x1b[2J" in text

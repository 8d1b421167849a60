"""Pages whose numbers trace to stored reports (perflab.report.book): the layout a report is kept
in, the tables a page generates from it, the quotes it checks, and `perflab page`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import perflab

from perflab.records.study import as_study_document
from perflab.report import numbers as fmt
from perflab.report.book.cited import NumberPool, Quoted, citations, quote_blocks, quoted_numbers, record_values
from perflab.report.book.layout import Library, keep_report, reports_dir
from perflab.report.book.page import read_page, regenerate, side_by_side
from perflab.report.book.waiting import read_reruns
from perflab.report.write import write_reports

from .study_data import BASE, NEW, make_study

STUDY = "20261122-040000-release-ab12"


def store_study(store: Path, study: dict) -> Path:
    """A study directory as `perflab study` leaves it: study.json and the three reports."""
    directory = store / "studies" / study["study_id"]
    directory.mkdir(parents=True)
    (directory / "study.json").write_text(json.dumps(study))
    write_reports(as_study_document(study), directory)
    return directory


def checkout(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "docs" / "case-studies").mkdir(parents=True)
    (root / "pyproject.toml").write_text("")
    return root


PAGE = f"""# A case study

<!-- perflab page: study examples/release-study.yaml -->
**Rerun this page:** `perflab page docs/case-studies/page.md --run`.

<!-- perflab table: comparison examples/release-study.yaml {STUDY} metrics=itr_s,etr_t -->
<!-- /perflab table -->

Medians:

<!-- perflab table: medians examples/release-study.yaml {STUDY} metrics=itr_s -->
<!-- /perflab table -->
"""


@pytest.fixture
def page(tmp_path) -> Path:
    root = checkout(tmp_path)
    path = root / "docs" / "case-studies" / "page.md"
    path.write_text(PAGE)
    keep_report(store_study(tmp_path / "store", make_study()), path)
    return path


def test_a_kept_report_is_found_by_its_id_and_lists_its_runs(page):
    kept = reports_dir(page) / STUDY
    assert sorted(p.name for p in kept.iterdir()) == ["report.json", "report.md"]
    library = Library.scan(page.parents[1])
    assert library.find(STUDY) is not None and library.holds(STUDY)
    runs = {r["run_id"] for r in make_study()["runs"]}
    assert runs and all(library.holds(r) for r in runs)
    assert not library.holds("20261122-040000-release-ffff")


def test_a_page_is_made_from_its_stored_report(page):
    library = Library.scan(page.parents[1])
    read = read_page(page)
    assert [r.command() for r in read.reruns] == ["perflab study examples/release-study.yaml"]
    text = regenerate(read, library)
    # The comparison's row as the report prints it: ITR (S) 980 -> 1,031.6, ratio 1.053 [1.041, 1.065]
    study = as_study_document(make_study())
    entry = study.comparisons[0].entry("itr_s")
    assert entry is not None and entry.ratio == pytest.approx(1.0527)
    row = next(line for line in text.splitlines() if "| ITR (S) |" in line)
    assert row.endswith("| ITR (S) | tx/s | 980 | 1,032 | 1.053 | [1.041, 1.065] | BETTER |")
    assert f"[{STUDY}](reports/{STUDY}/report.md)" in text
    # medians of the valid runs, per configuration, as the report prints the metric
    for config in study.configurations:
        valid = [r.metrics["itr_s"] for r in study.runs_of(config.name) if r.valid]
        line = next(li for li in text.splitlines() if li.startswith("| ") and f"| {len(valid)} of " in li
                    and config.name.split(" ")[1] in li)
        assert line.endswith(f"| {fmt.value(float(np.median(valid)), 'itr_s')} |"), line
    # made again from the same report, the page does not change
    page.write_text(text)
    assert regenerate(read_page(page), library) == text


def test_perflab_page_checks_rewrites_and_keeps_a_rerun(page, tmp_path):
    done = perflab("page", page)
    assert done.returncode == 1 and "differ" in done.stderr
    assert perflab("page", page, "--write").returncode == 0
    written = page.read_text()
    assert "| ITR (S) |" in written
    done = perflab("page", page)
    assert done.returncode == 0 and "agree" in done.stderr
    # an edited number on the page: it no longer agrees with its report
    page.write_text(written.replace("| 1.053 |", "| 1.063 |", 1))
    assert perflab("page", page).returncode == 1
    page.write_text(written)
    # a rerun (another study of the same file) shown beside the page, then kept
    rerun = make_study()
    rerun["study_id"] = "20261201-101010-release-cd34"
    for run in rerun["runs"]:
        run["metrics"]["itr_s"] = run["metrics"]["itr_s"] * 1.1
    directory = store_study(tmp_path / "store2", rerun)
    done = perflab("page", page, "--from", directory)
    assert done.returncode == 0, done.stderr
    assert f"page: {STUDY}" in done.stdout and "yours: 20261201-101010-release-cd34" in done.stdout
    assert perflab("page", page, "--from", directory, "--keep").returncode == 0
    kept = page.read_text()
    assert "20261201-101010-release-cd34 metrics=itr_s,etr_t -->" in kept
    assert (reports_dir(page) / "20261201-101010-release-cd34" / "report.json").is_file()


def test_a_rerun_beside_the_page_pairs_rows_by_table(page, tmp_path):
    library = Library.scan(page.parents[1])
    rerun = as_study_document({**make_study(), "study_id": "20261201-101010-release-cd34"})
    shown = side_by_side(read_page(page), library, {"/somewhere/examples/release-study.yaml":
                                                    ("20261201-101010-release-cd34", rerun)})
    assert len(shown) == 2
    title, table = shown[0]
    assert table.columns[0] == "source"
    assert [r[0] for r in table.rows] == [f"page: {STUDY}", "yours: 20261201-101010-release-cd34"] * 2


@pytest.mark.parametrize("text,value,decimals,percent", [
    ("1.104", 1.104, 3, False), ("-4.9%", -4.9, 1, True), ("3,668,000", 3668000.0, 0, False),
    ("+10.9 %", 10.9, 1, True),
])
def test_a_quoted_number_reads_as_printed(text, value, decimals, percent):
    (found,) = quoted_numbers(f"it read {text} there")
    assert (found.value, found.decimals, found.percent) == (value, decimals, percent)


def test_what_a_quote_check_reads_and_leaves_out():
    text = ("study 20261128-003516-sqlite-release-a05c on 2026-11-28 00:35, SQLite 3.40.1, `apsw==3.54.1.0`, "
            "4 blocks, [x](reports/20261126-1/report.md), …235202…b2e6: ITR (S) 1.104 [1.080, 1.116]")
    assert [q.text for q in quoted_numbers(text)] == ["1.104", "1.080", "1.116"]


def test_a_number_is_found_as_printed_rounded_in_ms_or_as_a_change():
    pool = NumberPool([0.000765, 1.1043, 3667912.0])
    assert pool.holds(Quoted("0.765", 0.765, 3, False))          # s in the record, ms on the page
    assert pool.holds(Quoted("1.104", 1.104, 3, False))          # rounded as printed
    assert pool.holds(Quoted("+10.4%", 10.4, 1, True))           # a ratio as a percent change
    assert pool.holds(Quoted("3,668,000", 3668000.0, 0, False, 3))  # written to its thousands
    assert not pool.holds(Quoted("1.107", 1.107, 3, False))      # a slip of the last digit
    assert not pool.holds(Quoted("0.766", 0.766, 3, False))


def test_record_values_leave_the_chart_series_out():
    values = record_values({"runs": [{"metrics": {"itr_s": 5.0}, "per_interval": [{"etr_t": 99.0}]}]})
    assert values == [5.0]


def test_quote_blocks_and_citations_of_a_page(tmp_path):
    path = tmp_path / "p.md"
    path.write_text(f"intro {STUDY}\n<!-- quote: {STUDY} -->\nITR 1.053\n<!-- /quote -->\nthen …040000…ab12\n")
    (block,) = quote_blocks(path)
    assert block.ids == (STUDY,) and [n.text for n in block.numbers()] == ["1.053"]
    cited = citations(path)
    assert [c.text for c in cited] == [STUDY, STUDY, "…040000…ab12"]
    assert cited[2].elided == (None, "040000", "ab12")


def test_the_reruns_list_is_read_by_page(tmp_path):
    path = tmp_path / "reruns.md"
    path.write_text("# x\n\n## docs/a.md\n\n- command: `perflab page docs/a.md --run --keep`\n- machine minutes: 5\n"
                    "- ids:\n  - 20261127-201449-pg-durable-writes-3445\n  - …214737…e468\n\n"
                    "## Reports kept as Markdown only\n\n- 20261126-184234-io-depth-3406\n")
    reruns = read_reruns(path)
    (entry,) = reruns.waiting
    assert (entry.page, entry.command, entry.minutes) == ("docs/a.md", "perflab page docs/a.md --run --keep", 5.0)
    assert entry.ids == ["20261127-201449-pg-durable-writes-3445", "…214737…e468"]
    assert reruns.markdown_only == ["20261126-184234-io-depth-3406"]
    assert reruns.entry("…214737…e468", "docs/a.md") is entry and reruns.entry("…214737…e468", "docs/b.md") is None


def test_a_malformed_page_marker_is_one_line_of_bad_input(tmp_path):
    path = tmp_path / "p.md"
    path.write_text("# p\n\n<!-- perflab page: studies examples/x.yaml -->\n")
    done = perflab("page", path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{path}:3: perflab page: expected `study FILE` or `suite FILE`" in done.stderr


def test_a_rerun_no_table_names_is_shown_with_its_own_answer(page, tmp_path):
    other = make_study()
    other["study_id"] = "20261201-111111-other-ef01"
    other["study_path"] = "/elsewhere/examples/other-study.yaml"
    done = perflab("page", page, "--from", store_study(tmp_path / "store3", other))
    assert done.returncode == 0, done.stderr
    assert "yours: 20261201-111111-other-ef01" in done.stdout and "no table of the page names it" in done.stdout
    assert "ITR (S)" in done.stdout and "BETTER" in done.stdout

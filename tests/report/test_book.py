"""`perflab book`: several studies or a suite bound into one document in the seeds' form -- title
page, contents, the key findings (one line per comparison: the change, the verdict, the interval
that decided it), a chapter per study as its report renders it, a glossary -- as Markdown and
self-contained HTML. (The HTML in a real browser: test_book_chromium.py.)"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from cli_helpers import perflab

from perflab.catalog.registry import REGISTRY
from perflab.records.study import as_study_document
from perflab.report.book.book import Sources, assemble
from perflab.report.book.render import render_html, render_markdown, reprefixed
from perflab.report.markdown import render_markdown as study_markdown

from . import dom
from .book_data import SECOND, second_study, store_study, store_suite
from .study_data import make_study

FIRST = "20261122-040000-release-ab12"


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> list[str]:
    """Two studies stored once for the module (their reports' charts take seconds to draw)."""
    store = tmp_path_factory.mktemp("book") / "store"
    return [str(store_study(store, make_study())), str(store_study(store, second_study()))]


@pytest.fixture(scope="module")
def book(stored):
    return assemble(stored, Sources(None, None), "Two releases")


@pytest.fixture(scope="module")
def markdown(book) -> str:
    return render_markdown(book)


def test_the_markdown_book_has_the_seeds_parts_in_order(markdown):
    text = markdown
    heads = [line for line in text.splitlines() if line.startswith("## ")]
    assert heads == ["## Contents", "## Summary of key findings", "## Chapter 1: Release A (stdlib) -> Release B \\<apsw> & co",
                     "## Chapter 2: Release A -> Release C", "## Glossary"]
    assert text.startswith("# Two releases\n")
    order = [text.index(s) for s in ("## Contents", "## Summary of key findings", "## Chapter 1:", "## Chapter 2:",
                                     "## Glossary")]
    assert order == sorted(order)
    # the contents link each part
    assert "2. [Chapter 1: " in text and "](#chapter-1)" in text and "4. [Glossary](#glossary)" in text


def test_one_finding_per_comparison_the_change_verdict_and_deciding_interval(book, markdown):
    findings = [(c.id, f) for c in book.chapters for f in c.findings]
    assert [i for i, _ in findings] == [FIRST, SECOND]
    first, second = (f for _, f in findings)
    assert (first.metric, first.verdict, first.interval) == ("ITR (S)", "BETTER", "1.053 [1.041, 1.065]")
    assert (second.metric, second.verdict, second.interval) == ("ITR (S)", "BETTER", "1.101 [1.090, 1.112]")
    assert first.change == "Release A (stdlib) → Release B <apsw> & co"
    row = next(line for line in markdown.splitlines() if line.startswith("| 1. "))
    assert row.endswith("| ITR (S) | BETTER | 1.053 [1.041, 1.065] |")


def test_each_chapter_is_its_study_report_one_level_down(markdown):
    text = markdown
    report = study_markdown(as_study_document(make_study()))
    chapter = text.split('<a id="chapter-1"></a>', 1)[1].split('<a id="chapter-2"></a>', 1)[0]
    # every line of the study's own report is in its chapter, headings one level down
    body = report.splitlines()[1:]
    demoted = [("#" + line) if line.startswith("#") else line for line in body]
    assert "\n".join(demoted).strip() in chapter
    for section in ("### General Observations", "#### 1. Workload", "#### 2. Hardware configuration",
                    "#### 3. Software configuration", "#### 4. Measurement discussion", "#### 5. Measurement data"):
        assert section in chapter


def test_the_glossary_defines_the_words_and_every_row_compared(markdown):
    glossary = markdown.split("## Glossary", 1)[1]
    for word in ("Duet", "Block", "EQUIVALENT", "INCONCLUSIVE", "Margin"):
        assert f"**{word}" in glossary
    metric = REGISTRY.get("pbt_cmd_s")
    assert metric is not None and f"**PBT/CMD (S) (ms)**: {metric.description}" in glossary


def test_a_suite_is_its_lspr_table_then_a_chapter_per_stored_workload(tmp_path):
    store = tmp_path / "store"
    store_study(store, make_study())
    suite = store_suite(store, [("oltp", FIRST), ("batch", "20261124-070000-release-ffff")])
    book = assemble([str(suite)], Sources(store, None))
    assert [c.id for c in book.chapters] == ["20261124-060000-three-workloads-ef56", FIRST]
    assert book.chapters[0].findings[0].interval == "+5.3% [+4.1%, +6.5%]"
    assert book.chapters[1].title.startswith("oltp: ")
    # the workload whose study is not stored is said, not dropped silently
    assert any("batch" in n and "not stored" in n for n in book.notes)
    text = render_markdown(book)
    assert "### General Observations" in text and "| Average |" in text


def test_a_report_kept_as_markdown_only_is_a_chapter_of_its_text(tmp_path):
    stored = tmp_path / "docs" / "reports" / FIRST
    stored.mkdir(parents=True)
    (stored / "report.md").write_text(study_markdown(as_study_document(make_study())))
    book = assemble([str(tmp_path / "docs")], Sources(None, None))
    (chapter,) = book.chapters
    assert chapter.markdown is not None and chapter.study is None
    finding = chapter.findings[0]
    assert finding.metric == "Internal throughput (ITR (S))" and finding.verdict == "BETTER"
    assert finding.interval == "[90% CI 4.1% to 6.5%, 5 blocks]"
    assert any("Markdown only" in n for n in book.notes)


def test_the_html_book_keeps_each_chapters_ids_apart(book):
    elements = dom.parse(render_html(book))
    ids = Counter(e.id for e in elements if e.id)
    assert not [i for i, n in ids.items() if n > 1], "duplicate ids"
    for number in (1, 2):
        for section in ("general-observations", "workload", "hardware", "software", "discussion", "data", "runs",
                        "charts"):
            assert dom.by_id(elements, f"chapter-{number}-{section}") is not None, (number, section)
        assert dom.inside(elements, f"chapter-{number}-chart-itr", "svg")
    for part in ("title-page", "contents", "findings", "glossary"):
        assert dom.by_id(elements, part) is not None
    verdicts = [dom.text_of(e) for e in elements if e.tag == "td" and "verdict-better" in e.classes
                and "findings" in e.ancestors]
    assert verdicts == ["BETTER", "BETTER"]
    links = {e.attrs["href"] for e in elements if e.tag == "a" and "href" in e.attrs}
    assert {"#findings", "#chapter-1", "#chapter-2", "#glossary"} <= links


def test_a_charts_ids_and_references_are_prefixed_together():
    svg = '<svg><defs><clipPath id="chart-itr-p1"/></defs><g clip-path="url(#chart-itr-p1)"><use href="#x"/></g></svg>'
    assert reprefixed(svg, "chapter-2-") == ('<svg><defs><clipPath id="chapter-2-chart-itr-p1"/></defs>'
                                            '<g clip-path="url(#chapter-2-chart-itr-p1)"><use href="#x"/></g></svg>')


def test_perflab_book_writes_markdown_and_html_and_refuses_what_is_not_a_study(stored, tmp_path):
    out = tmp_path / "book"
    done = perflab("book", *stored, "--out", out, "--no-pdf", "--title", "Two releases")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["book.html", "book.md"]
    html = (out / "book.html").read_text()
    assert "<title>Two releases</title>" in html and not re.search(r"""(?:src|href)=["']https?:""", html)
    done = perflab("book", tmp_path / "nothing-here", "--out", out, "--no-pdf")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "not a study or suite directory" in done.stderr and len(done.stderr.strip().splitlines()) == 1

"""The report book opens from disk in a real browser (headless Chromium, no network): the rendered
DOM has the title page, contents, findings, each chapter's sections and SVG charts, the glossary;
and the same browser prints it to PDF."""

from __future__ import annotations

import subprocess
from pathlib import Path

import programs

from perflab.report.book.book import Sources, assemble
from perflab.report.book.render import write_book

from . import dom
from .book_data import store_study, second_study
from .study_data import make_study

CHROMIUM = Path(programs.path("chromium"))

CHAPTER_SECTIONS = ("general-observations", "workload", "hardware", "software", "discussion", "data", "runs", "charts")


@programs.needs("chromium")
def test_the_book_renders_in_headless_chromium_and_prints_to_pdf(tmp_path):
    store = tmp_path / "store"
    sources = [str(store_study(store, make_study())), str(store_study(store, second_study()))]
    paths, missing = write_book(assemble(sources, Sources(None, None), "Two releases"), tmp_path / "book")
    assert not missing, missing
    result = subprocess.run(
        [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
         paths["html"].resolve().as_uri()],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    elements = dom.parse(result.stdout)
    for part, tag in (("title-page", "section"), ("contents", "nav"), ("findings", "section"), ("glossary", "section")):
        element = dom.by_id(elements, part)
        assert element is not None and element.tag == tag, part
    for number in (1, 2):
        chapter = dom.by_id(elements, f"chapter-{number}")
        assert chapter is not None and chapter.tag == "article"
        for section in CHAPTER_SECTIONS:
            assert dom.by_id(elements, f"chapter-{number}-{section}") is not None, (number, section)
        for chart in ("chart-itr", "chart-response", "chart-timeline"):
            assert dom.inside(elements, f"chapter-{number}-{chart}", "svg"), (number, chart)
            assert dom.inside(elements, f"chapter-{number}-{chart}", "text"), (number, chart)
    findings = [dom.text_of(e) for e in elements if e.tag == "td" and "findings" in e.ancestors]
    assert "1.053 [1.041, 1.065]" in findings and "1.101 [1.090, 1.112]" in findings
    pdf = paths["pdf"].read_bytes()
    assert pdf.startswith(b"%PDF") and pdf.count(b"/Type /Page") + pdf.count(b"/Type/Page") >= 3

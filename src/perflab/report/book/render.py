"""A book as Markdown (book.md), as one self-contained HTML file (book.html) and, where a browser
that prints is installed, as PDF (book.pdf).

Each chapter is its study's report as report/ renders it: the Markdown report (report/markdown.py)
with its headings one level down under the chapter's, and in HTML the report's own body
(templates/_study_body.html.j2, the one report.html includes), its element ids prefixed with the
chapter's so that thirty chapters' sections and charts stay apart. A suite's chapter is its LSPR
table and observations (report/suite.py); a report kept as Markdown only is its text.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from markdown_it import MarkdownIt
from markupsafe import Markup

from perflab.report import charts as charts_module
from perflab.report import view as v
from perflab.report.book.book import Book, Chapter
from perflab.report.book.glossary import glossary
from perflab.report.html import environment
from perflab.report.markdown import escape, table
from perflab.report.markdown import render as render_study_markdown
from perflab.report.suite import HOW_AVERAGED, member_tables, observations, render_suite_markdown, summary_table
from perflab.report.write import Exporter, write_exports
from perflab.tools import find_browser

FINDING_COLUMNS = ["chapter", "change", "metric", "verdict", "interval (the one that decided)"]


def finding_rows(book: Book) -> list[list[str]]:
    return [[f"{c.number}. {c.title}", f.change, f.metric, f.verdict, f.interval]
            for c in book.chapters for f in c.findings]


# -- Markdown ------------------------------------------------------------------------------------

def _demoted(text: str, levels: int = 1) -> list[str]:
    """A report's Markdown under a chapter heading: its own title dropped, every heading one level
    down (report/markdown.py escapes a `#` that opens a line of text, so a line starting with `#`
    is a heading)."""
    lines = text.splitlines()
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    return [("#" * levels + line) if line.startswith("#") else line for line in lines]


def chapter_markdown(chapter: Chapter) -> list[str]:
    out = [f'<a id="{chapter.anchor}"></a>', "", f"## Chapter {chapter.number}: {escape(chapter.title)}", "",
           f"_Source: {escape(chapter.id)}._", ""]
    if chapter.study is not None:
        out += _demoted(render_study_markdown(v.study_view(chapter.study)))
    elif chapter.suite is not None:
        out += _demoted(render_suite_markdown(chapter.suite))
    elif chapter.markdown is not None:
        out += _demoted(chapter.markdown)
    return out + [""]


def render_markdown(book: Book) -> str:
    out = [f"# {escape(book.title)}", "", f"_{escape(book.subtitle)}_", "",
           f"Bound by perflab on {book.created} from the stored records named in each chapter.", ""]
    out += ["## Contents", "", "1. [Summary of key findings](#summary-of-key-findings)"]
    out += [f"{c.number + 1}. [Chapter {c.number}: {escape(c.title)}](#{c.anchor})" for c in book.chapters]
    out += [f"{len(book.chapters) + 2}. [Glossary](#glossary)", ""]
    out += ["## Summary of key findings", "",
            "One line per comparison: the change, its headline metric, the verdict and the interval that decided "
            "it (ratio, new ÷ base).", "", *table(FINDING_COLUMNS, finding_rows(book)), ""]
    out += [f"- {escape(note)}" for note in book.notes] + ([""] if book.notes else [])
    for chapter in book.chapters:
        out += chapter_markdown(chapter)
    out += ["## Glossary", ""]
    out += [f"- **{escape(term)}**: {escape(text)}" for term, text in glossary(book.metric_keys())]
    return "\n".join(out).rstrip() + "\n"


# -- HTML ----------------------------------------------------------------------------------------

_ID = re.compile(r'\bid="([^"]+)"')
_REF = re.compile(r'(href="#|url\(#)([^")]+)')


def reprefixed(svg: str, prefix: str) -> str:
    """A chart's SVG with every id (and every reference to one) prefixed: the same study's charts
    in two chapters must not share clip paths."""
    ids = set(_ID.findall(svg))
    svg = _ID.sub(lambda m: f'id="{prefix}{m.group(1)}"', svg)
    return _REF.sub(lambda m: f"{m.group(1)}{prefix}{m.group(2)}" if m.group(2) in ids else m.group(0), svg)


def chapter_context(chapter: Chapter) -> dict[str, Any]:
    prefix = f"{chapter.anchor}-"
    context: dict[str, Any] = {"chapter": chapter, "prefix": prefix, "sv": None, "charts": [], "suite": None,
                               "text": None}
    if chapter.study is not None:
        charts = charts_module.build(chapter.study)
        for chart in charts:
            chart.id = prefix + chart.id
            if chart.svg is not None:
                chart.svg = Markup(reprefixed(chart.svg, prefix))   # matplotlib's own output (html.py)
        context.update(sv=v.study_view(chapter.study), charts=charts)
    elif chapter.suite is not None:
        tables = [summary_table(chapter.suite), *member_tables(chapter.suite)]
        context["suite"] = {"observations": observations(chapter.suite), "how": HOW_AVERAGED,
                            "tables": [(t.title, v.Table(t.columns, t.rows)) for t in tables]}
    elif chapter.markdown is not None:
        # perflab's own report, escaped as report/markdown.py writes it; raw HTML stays text.
        context["text"] = Markup(MarkdownIt("commonmark", {"html": False}).enable("table").render(
            "\n".join(_demoted(chapter.markdown))))
    return context


def render_html(book: Book) -> str:
    template = environment().get_template("book.html.j2")
    return template.render(book=book, chapters=[chapter_context(c) for c in book.chapters],
                           findings=finding_rows(book), finding_columns=FINDING_COLUMNS,
                           glossary=glossary(book.metric_keys()), sections={key: title for key, title in v.SECTIONS})


# -- PDF -----------------------------------------------------------------------------------------

def write_pdf(html: Path, pdf: Path, timeout: float = 300) -> str | None:
    """Print the HTML book to PDF with a headless browser; the reason when it cannot (none
    installed, or it failed) -- the Markdown and HTML stand without it."""
    browser = find_browser()
    if browser is None:
        return "no browser to print with (chromium): the PDF is not made"
    with tempfile.TemporaryDirectory(prefix="perflab-book-") as profile:
        try:
            done = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                   "--disable-background-networking", "--disable-component-update",
                                   f"--user-data-dir={profile}", "--no-pdf-header-footer",
                                   f"--print-to-pdf={pdf}", html.resolve().as_uri()],
                                  capture_output=True, text=True, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"{browser} could not print the PDF: {exc}"
    if done.returncode != 0 or not pdf.is_file() or not pdf.read_bytes().startswith(b"%PDF"):
        return f"{browser} could not print the PDF (exit {done.returncode}): {done.stderr.strip()[-300:]}"
    return None


#: A book's files (the PDF is printed from book.html after them, where a browser prints).
EXPORTERS: tuple[Exporter[Book], ...] = (Exporter("markdown", "book.md", render_markdown),
                                        Exporter("html", "book.html", render_html))


def write_book(book: Book, directory: Path, pdf: bool = True) -> tuple[dict[str, Path], list[str]]:
    """book.md, book.html (and book.pdf) in *directory*; the paths, and why a format was not made."""
    paths = write_exports(book, directory, EXPORTERS)
    missing: list[str] = []
    if pdf:
        reason = write_pdf(paths["html"], directory / "book.pdf")
        if reason is None:
            paths["pdf"] = directory / "book.pdf"
        else:
            missing.append(reason)
    return paths, missing

"""Every number the docs publish traces to a stored report (issue 39, DESIGN.md "its report is
stored in the repository, and one command reruns it").

* every study, suite and run id that README.md or a page under docs/ cites -- in full, or
  shortened to its time and suffix -- is stored (docs/**/reports/<id>/, perflab.report.book.layout),
  or is listed in docs/reruns.md with its page and the command that reruns it; an entry whose
  report is now stored, or that its page no longer cites, fails too, so the list only shrinks;
* every number in a quote block (`<!-- quote: ID -->` ... `<!-- /quote -->`) is in a report the
  block names (perflab.report.book.cited);
* every generated table (`<!-- perflab table: ... -->`) is what its stored report makes today;
  one without a stored report is waiting on a page docs/reruns.md lists;
* every stored report holds its Markdown and its record (report.json, suite.json), but the ones
  docs/reruns.md lists as kept as Markdown only.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from perflab.report.book.cited import NumberPool, citations, quote_blocks, quoted_numbers, record_values, unclosed
from perflab.report.book.layout import Library
from perflab.report.book.page import read_page, regenerate
from perflab.report.book.waiting import read_reruns

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
RERUNS = DOCS / "reruns.md"


def _rel(path: Path) -> str:
    return str(path.relative_to(REPO))


@cache
def library() -> Library:
    return Library.scan(DOCS)


@cache
def reruns():
    return read_reruns(RERUNS)


def pages() -> list[Path]:
    """README.md and every page under docs/ that is not a stored report or the reruns list."""
    found = [REPO / "README.md"]
    for path in sorted(DOCS.rglob("*")):
        if path.suffix not in (".md", ".jsonl") or path == RERUNS:
            continue
        if any(part == "reports" for part in path.relative_to(DOCS).parts[:-1]):
            continue     # a stored report, or a report directory's own file
        found.append(path)
    return found


def test_the_layout_is_found_and_holds_reports():
    # The scan finds the stored reports (a test of the test: an empty library would pass nothing).
    assert len(library().reports) >= 19
    assert len(library().runs) > 300


def test_every_cited_id_is_stored_or_waits_for_its_rerun():
    lib, waiting = library(), reruns()
    wrong = []
    for page in pages():
        for cited in citations(page):
            where = f"{_rel(page)}:{cited.line}: {cited.text}"
            if cited.elided is not None:
                if lib.expand(*cited.elided):
                    continue
                if waiting.entry(cited.text, _rel(page)) is None:
                    wrong.append(f"{where}: no stored report has this time and suffix, and docs/reruns.md does not "
                                 "list it under this page")
                continue
            if lib.holds(cited.text):
                continue
            if waiting.entry(cited.text, _rel(page)) is None:
                wrong.append(f"{where}: no stored report (keep it beside the page: `perflab page PAGE --run --keep`, "
                             "or list it in docs/reruns.md under this page with the command that reruns it)")
    assert not wrong, "\n".join(wrong)


def test_the_reruns_list_only_shrinks():
    lib, waiting = library(), reruns()
    assert waiting.waiting, "docs/reruns.md lists nothing: delete it and this check once every report is stored"
    cited: dict[str, set[str]] = {}
    for page in pages():
        for c in citations(page):
            cited.setdefault(_rel(page), set()).add(c.text)
    wrong = []
    for entry in waiting.waiting:
        if not entry.command or entry.minutes is None or not entry.ids:
            wrong.append(f"docs/reruns.md:{entry.line}: {entry.page}: each entry needs a command, machine minutes "
                         "and ids")
        for id_ in entry.ids:
            if lib.holds(id_):
                wrong.append(f"docs/reruns.md: {id_} is stored now: remove it from the list")
            elif id_ not in cited.get(entry.page, set()):
                wrong.append(f"docs/reruns.md: {entry.page} no longer cites {id_}: remove it from the list")
    assert not wrong, "\n".join(wrong)


def test_every_stored_report_holds_its_markdown_and_record():
    waiting = reruns()
    wrong = []
    for report in library().reports.values():
        if not report.markdown.is_file():
            wrong.append(f"{_rel(report.directory)}: no report.md")
        if report.record is None and report.id not in waiting.markdown_only:
            wrong.append(f"{_rel(report.directory)}: no report.json or suite.json (keep both: perflab page --keep)")
        if report.record is not None and report.id in waiting.markdown_only:
            wrong.append(f"docs/reruns.md: {report.id} has its record now: remove it from the Markdown-only list")
    assert not wrong, "\n".join(wrong)


@cache
def pool(id_: str) -> NumberPool:
    report = library().find(id_)
    assert report is not None
    values = [q.value for q in quoted_numbers(report.text(), small=True)]
    return NumberPool(values + record_values(report.data()))


def test_every_quoted_number_is_in_the_report_it_cites():
    lib = library()
    wrong = []
    checked = 0
    for page in pages():
        text = page.read_text(encoding="utf-8")
        wrong += [f"{_rel(page)}:{line}: a quote block without its <!-- /quote -->" for line in unclosed(text)]
        for block in quote_blocks(page, text):
            missing = [i for i in block.ids if lib.find(i) is None]
            if not block.ids or missing:
                wrong.append(f"{_rel(page)}:{block.line}: a quote block must name stored reports; not stored: "
                             f"{', '.join(missing) or '(none named)'}")
                continue
            for number in block.numbers():
                checked += 1
                if not any(pool(i).holds(number) for i in block.ids):
                    wrong.append(f"{_rel(page)}:{block.line}: {number.text} is in none of {', '.join(block.ids)}")
    assert not wrong, "\n".join(wrong)
    assert checked >= 50, f"only {checked} quoted numbers checked: the quote blocks are missing from the pages"


def test_every_generated_table_is_what_its_stored_report_makes():
    lib, waiting = library(), reruns()
    waiting_pages = {w.page for w in waiting.waiting}
    wrong = []
    for path in pages():
        if path.suffix != ".md":
            continue
        page = read_page(path)
        for block in page.blocks:
            if block.id is None and _rel(path) not in waiting_pages:
                wrong.append(f"{_rel(path)}:{block.line}: a table waiting for a rerun on a page docs/reruns.md does "
                             "not list")
        if page.blocks and regenerate(page, lib) != page.text:
            wrong.append(f"{_rel(path)}: its tables differ from its stored reports (perflab page {_rel(path)} "
                         "--write)")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("page", sorted((DOCS / "case-studies").glob("*.md")), ids=lambda p: p.name)
def test_every_case_study_names_its_rerun_at_the_top(page):
    if page.name == "README.md":
        return
    read = read_page(page)
    assert read.reruns, f"{_rel(page)}: no `<!-- perflab page: study FILE -->` marker"
    for item in read.reruns:
        assert (REPO / item.file).is_file(), f"{_rel(page)}: {item.file} does not exist"
    head = "\n".join(read.text.splitlines()[:12])
    assert f"perflab page docs/case-studies/{page.name} --run" in head, \
        f"{_rel(page)}: the command that reruns it is not at its top"

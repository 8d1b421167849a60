"""A page that reruns with one command: its study files at the top, its tables generated.

A page names what measured it in a marker at its top, and each measured table in a block:

    <!-- perflab page: study examples/postgres/durable-writes-study.yaml -->
    ...
    <!-- perflab table: comparison examples/postgres/durable-writes-study.yaml 20261127-201449-... metrics=itr_s,commit_ms_t -->
    (generated: the table, and the study it came from)
    <!-- /perflab table -->

The page marker lists `study FILE` and `suite FILE` entries (`;` between them); a table block
names its kind (tables.py), the study or suite file it belongs to (how a rerun finds it), the
stored report that fills it (absent: waiting for a rerun) and, for a study, the metrics.

`perflab page PAGE` regenerates every block from the stored reports (and says whether the page
agrees with them); `--run` runs the page's studies and prints each table beside the rerun's;
`--keep` stores the rerun's reports beside the page and points the page's tables at them.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from perflab.errors import InputError
from perflab.records.study import StudyDocument
from perflab.records.suite import SuiteDocument
from perflab.report.book.layout import ID, Library, reports_dir
from perflab.report.book.tables import KINDS, PageTable, make_table
from perflab.report.markdown import table as markdown_table

# A marker opens its line (one in a code span, or in a sentence about markers, is not a marker).
PAGE_MARK = re.compile(r"^<!--\s*perflab page:\s*(?P<body>.*?)\s*-->", re.S | re.M)
TABLE_OPEN = re.compile(r"^<!--\s*perflab table:\s*(?P<body>[^>]*?)\s*-->", re.M)
TABLE_CLOSE = re.compile(r"^<!--\s*/perflab table\s*-->", re.M)
Record = StudyDocument | SuiteDocument


@dataclass(frozen=True)
class Rerun:
    kind: str          # "study" or "suite"
    file: str          # relative to the checkout

    def command(self) -> str:
        return f"perflab {self.kind} {self.file}"


@dataclass
class TableBlock:
    line: int
    kind: str
    file: str
    id: str | None
    metrics: list[str]
    start: int           # offsets of the generated body in the page's text
    end: int
    body: str
    marker: str = ""     # the opening marker as written

    def opening(self) -> str:
        parts = [self.kind, self.file] + ([self.id] if self.id else [])
        if self.metrics:
            parts.append(f"metrics={','.join(self.metrics)}")
        return f"<!-- perflab table: {' '.join(parts)} -->"


@dataclass
class Page:
    path: Path
    text: str
    reruns: list[Rerun] = field(default_factory=list)
    blocks: list[TableBlock] = field(default_factory=list)


def read_page(path: Path, text: str | None = None) -> Page:
    path = Path(path)
    if text is None:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise InputError(f"cannot read the page: {exc.strerror or exc}", file=path) from None
    page = Page(path, text)
    mark = PAGE_MARK.search(text)
    if mark is not None:
        line = text.count("\n", 0, mark.start()) + 1
        for item in (part.strip() for part in mark.group("body").split(";")):
            words = item.split()
            if len(words) != 2 or words[0] not in ("study", "suite"):
                raise InputError(f"expected `study FILE` or `suite FILE`, got {item!r}", file=path, line=line,
                                 field="perflab page")
            page.reruns.append(Rerun(words[0], words[1]))
    for match in TABLE_OPEN.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        close = TABLE_CLOSE.search(text, match.end())
        following = TABLE_OPEN.search(text, match.end())
        if close is None or (following is not None and following.start() < close.start()):
            raise InputError("a `perflab table` block without its `<!-- /perflab table -->`", file=path, line=line)
        page.blocks.append(_block(path, line, match, close.start(), text))
    return page


def _block(path: Path, line: int, match: re.Match[str], end: int, text: str) -> TableBlock:
    words = match.group("body").split()
    if len(words) < 2 or words[0] not in KINDS:
        raise InputError(f"expected `perflab table: KIND FILE [ID] [metrics=...]` with KIND one of "
                         f"{', '.join(KINDS)}", file=path, line=line, field="perflab table")
    kind, file, rest = words[0], words[1], words[2:]
    id_ = None
    metrics: list[str] = []
    for word in rest:
        if ID.fullmatch(word):
            id_ = word
        elif word.startswith("metrics="):
            metrics = [k for k in word.split("=", 1)[1].split(",") if k]
        else:
            raise InputError(f"unexpected {word!r}: expected a stored report's id or metrics=KEY,KEY", file=path,
                             line=line, field="perflab table")
    return TableBlock(line, kind, file, id_, metrics, match.end(), end, text[match.end():end], match.group(0))


def record_of(library: Library, id_: str, page: Path, line: int) -> Record:
    stored = library.find(id_)
    if stored is None:
        raise InputError(f"no stored report {id_} (keep it beside the page: perflab page PAGE --run --keep)",
                         file=page, line=line)
    return stored.suite() if stored.kind == "suite" else stored.study()


def render_block(page: Path, block: TableBlock, record: Record | None, command: str) -> str:
    """The body of a table block: the table and where it came from (or that it waits)."""
    if block.id is None or record is None:
        return f"\n_Waiting for a rerun: `{command}` measures it and fills this table._\n"
    made = make_table(block.kind, record, block.metrics)
    link = os.path.relpath(reports_dir(page) / block.id / "report.md", Path(page).parent)
    source = f"From the stored report [{block.id}]({link}); `perflab page {_shown(page)}` regenerates this table."
    return "\n" + "\n".join(markdown_table(made.columns, made.rows)) + "\n\n" + source + "\n"


def _shown(page: Path) -> str:
    """The page as a command names it: relative to the checkout when it is inside one."""
    path = Path(page).resolve()
    for parent in path.parents:
        if (parent / "docs").is_dir() and (parent / "pyproject.toml").is_file():
            return str(path.relative_to(parent))
    return str(page)


def regenerate(page: Page, library: Library) -> str:
    """The page's text with every table block made again from its stored report."""
    out: list[str] = []
    at = 0
    command = f"perflab page {_shown(page.path)} --run --keep"
    for block in page.blocks:
        record = record_of(library, block.id, page.path, block.line) if block.id else None
        out += [page.text[at:block.start - len(block.marker)], block.opening(),
                render_block(page.path, block, record, command)]
        at = block.end
    out.append(page.text[at:])
    return "".join(out)


def point_at(page: Page, kept: dict[str, str]) -> Page:
    """The page with each table block of a rerun file pointing at the rerun's stored report
    (*kept*: study or suite file -> the id kept)."""
    for block in page.blocks:
        for file, id_ in kept.items():
            if same_file(block.file, file):
                block.id = id_
    return page


def same_file(page_file: str, other: str | None) -> bool:
    """A study file as a page names it (examples/x.yaml) and as a record holds it (often an
    absolute path of the machine that ran it)."""
    if not other:
        return False
    a, b = Path(page_file).parts, Path(other).parts
    n = min(len(a), len(b))
    return n > 0 and a[-n:] == b[-n:]


def side_by_side(page: Page, library: Library, yours: dict[str, tuple[str, Record]]) -> list[tuple[str, PageTable]]:
    """Each table of the page beside the same table of a rerun (*yours*: file -> (id, record)):
    one table per block, a row of the page's then the rerun's, labelled by id."""
    shown: list[tuple[str, PageTable]] = []
    for block in page.blocks:
        mine = record_of(library, block.id, page.path, block.line) if block.id else None
        theirs = next(((i, r) for f, (i, r) in yours.items() if same_file(block.file, f)), None)
        title = f"{block.kind} of {block.file} (line {block.line})"
        tables = []
        if mine is not None:
            tables.append((f"page: {block.id}", make_table(block.kind, mine, block.metrics)))
        if theirs is not None:
            tables.append((f"yours: {theirs[0]}", make_table(block.kind, theirs[1], block.metrics)))
        if not tables:
            continue
        columns = ["source", *tables[0][1].columns]
        rows: list[list[str]] = []
        for i in range(max(len(t.rows) for _, t in tables)):
            for name, made in tables:
                if i < len(made.rows):
                    rows.append([name, *made.rows[i]])
        shown.append((title, PageTable(columns, rows)))
    return shown

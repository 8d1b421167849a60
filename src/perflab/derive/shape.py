"""Which shape a printed table has: which row is its heading, which way round it is, and a row
printed short.

derive reads a table in one of its shapes (docs/derive.md): a metric table (one row per metric,
one column per run), a parameter-first table (change columns such as `Delta (%)`), a summary
table (pairs, release matrix, run summary) or an average table (an `Average` row under rows of
one kind). The seeds do not always print them the way the shared transcriptions are written:

* the heading may be blank (`\\tV1.11\\tV1.12 ...`, 001's GRS table) or a caption
  (`Run Id:`): rows the metric registry names make it a metric table whatever the first
  heading says -- all of them when the heading is blank, most of them otherwise;
* a Markdown table may carry caption rows above its `Metrics` heading (000's JES3 table):
  the heading is the `metric`/`Metrics` row, the rows above it are captions (noted);
* a table may be transposed -- runs or n-ways down the side, metrics or workloads across the
  top (`n-way,WASDB,OLTP-W,...,Average`): when the table read as printed has no shape and
  read transposed it has one, it is read transposed, and the notes say so;
* a row may be printed short at its end: 001 prints the LSPR table's Average row without the
  last (Comments) cell. A row may end early only where the columns it leaves out hold no
  number in any other row (the Comments column): those cells are blank, which derive never
  reads as a value. A row short where other rows print numbers is refused -- which of its
  cells moved is not in the file.

A table that fits no shape is refused with one message that says what was seen (the
separator, the first heading, the columns, the row labels) and the shapes expected.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from perflab.catalog.registry import REGISTRY
from perflab.derive.headers import change_heading
from perflab.derive.metric_table import PARAMETER
from perflab.derive.printed import Printed, PrintedRow
from perflab.derive.resolve import resolve_rows
from perflab.derive.table import AVERAGE, Cell, Kind, is_average
from perflab.errors import InputError

METRIC = "metric"
_METRIC_HEADINGS = {"metric", "metrics"}
#: How far down a caption may push the heading row (000's JES3 table: two caption rows).
_CAPTION_ROWS = 4

EXPECTED = ("expected the seed-table format (first column `metric` holding the printed row label, one column per "
            "run), a parameter-first table (the parameter, one column per release, and a change column such as "
            "`Delta (%)`), a table with an `Average` row (rows such as workloads, one column per configuration), "
            "or one of these transposed")


@dataclass
class Arranged:
    """A table ready to be read: its heading row, its rows (each as wide as the heading), its
    shape, and what was done to read it as printed."""
    header: list[str]
    header_line: int
    rows: list[PrintedRow]
    layout: str
    notes: list[str] = field(default_factory=list)


def arrange(printed: Printed, path: Path) -> Arranged:
    if not printed.rows:
        raise InputError("empty table: no header row", file=path, line=1)
    notes: list[str] = []
    if printed.separator != "comma":
        notes.append(f"read as printed: {'tab-separated' if printed.separator == 'tab' else 'a Markdown table'}")
    if printed.prose:
        notes.append(f"text above the table left out (line{'s' if len(printed.prose) > 1 else ''} "
                     f"{', '.join(map(str, printed.prose))})")
    start = _heading_index(printed.rows)
    if start:
        notes.append(f"caption rows above the heading (line {printed.rows[start].line}) left out: "
                     + "; ".join(" ".join(c for c in r.cells if c) for r in printed.rows[:start]))
    heading, *body = printed.rows[start:]
    header = _trimmed(heading.cells)
    if len(header) < 2:
        raise InputError("no run columns after `metric`" if header and header[0].lower() in _METRIC_HEADINGS
                         else f"one column only: {EXPECTED}", file=path, line=heading.line,
                         field=header[0] if header and header[0] else "(empty)")
    rows = _widened(header, body, path, notes)
    layout = _layout(header, [r.cells[0] for r in rows])
    if layout is not None:
        return Arranged(header, heading.line, rows, layout, notes)
    turned_header, turned_rows = _transposed(header, heading.line, rows)
    layout = _layout(turned_header, [r.cells[0] for r in turned_rows], explicit=False)
    if layout is not None:
        notes.append(f"read transposed: its columns ({_list(header[1:])}) are the rows, its rows "
                     f"({_list([r.cells[0] for r in rows])}) the columns")
        return Arranged(turned_header, heading.line, turned_rows, layout, notes)
    raise InputError(f"no shape derive reads: saw {_seen(printed.separator, header, rows)}; {EXPECTED}",
                     file=path, line=heading.line, field=header[0] or "(empty)")


def _heading_index(rows: list[PrintedRow]) -> int:
    """The heading row: the first, unless a `metric`/`Metrics` row a little below it says the
    rows above are captions."""
    for i, row in enumerate(rows[:_CAPTION_ROWS + 1]):
        if row.cells and row.cells[0].strip().lower() in _METRIC_HEADINGS:
            return i
    return 0


def _trimmed(cells: list[str]) -> list[str]:
    """Without trailing blank cells (a tab-separated line that ends in a tab)."""
    end = len(cells)
    while end > 0 and not cells[end - 1].strip():
        end -= 1
    return [c.strip() for c in cells[:end]]


def _widened(header: list[str], body: list[PrintedRow], path: Path, notes: list[str]) -> list[PrintedRow]:
    """Every row as wide as the heading: trailing blanks past it dropped, a row short only where
    the columns it leaves out hold no numbers padded with blanks; anything else refused."""
    width = len(header)
    rows: list[PrintedRow] = []
    for row in body:
        cells = [c.strip() for c in row.cells]
        while len(cells) > width and not cells[-1]:
            cells.pop()
        if len(cells) > width:
            raise InputError(f"row has {len(cells)} cells but the header has {width} columns: a row may not run "
                             "past the heading row", file=path, line=row.line, field=cells[0] or "(first cell)")
        rows.append(PrintedRow(row.line, cells))
    padded: list[str] = []
    for row in rows:
        if len(row.cells) == width:
            continue
        missing = list(range(len(row.cells), width))
        holding = [header[j] for j in missing if any(_holds_number(other, j) for other in rows if other is not row)]
        if holding:
            raise InputError(f"row has {len(row.cells)} cells but the header has {width} columns; a row may end "
                             f"early only where the columns it leaves out hold no numbers (a Comments column), and "
                             f"{_list(holding)} holds numbers in other rows: which of this row's cells moved is not "
                             "in the file", file=path, line=row.line, field=row.cells[0] or "(first cell)")
        padded.append(f"{row.cells[0] or 'a row'} (line {row.line}) has {len(row.cells)} cells under {width} "
                      f"headings: {_list([header[j] for j in missing])} read as blank")
        row.cells.extend([""] * len(missing))
    if padded:
        notes.append("; ".join(padded))
    return rows


def _holds_number(row: PrintedRow, column: int) -> bool:
    return column < len(row.cells) and Cell.parse(row.cells[column]).kind in (Kind.NUMBER, Kind.UNKNOWN)


def _layout(header: list[str], labels: list[str], explicit: bool = True) -> str | None:
    """The shape of a table with this heading row and these row labels, or None. *explicit*:
    also the summary shapes, which are known by their column names (never transposed)."""
    first = header[0].strip().lower()
    names = {h.strip().lower() for h in header}
    if first in _METRIC_HEADINGS:
        return METRIC
    if explicit:
        if {"pair", "itr_ratio"} <= names:
            return "pairs"
        if "derivation" in names and any(n.startswith("itrr") for n in names):
            return "matrix"
        if "run_id" in names:
            return "runs"
    if _names_metrics(labels, all_needed=bool(first)):
        return METRIC
    if any(change_heading(h) for h in header[1:]):
        return PARAMETER
    if any(is_average(label) for label in labels):
        return AVERAGE
    return None


def _names_metrics(labels: list[str], all_needed: bool) -> bool:
    """Rows the registry names: a metric table under any first heading. Under a blank heading
    one such row settles it; under a heading that says something else (`Run Id:`, `Workload`),
    most of the rows must be metrics (a workload named like a metric does not make a table)."""
    labels = [label for label in labels if label.strip() and not is_average(label)]
    if not labels:
        return False
    meanings, _ = resolve_rows(labels, REGISTRY)
    known = sum(1 for m in meanings if m is not None)
    return known >= 1 if not all_needed else 2 * known > len(labels)


def _transposed(header: list[str], line: int, rows: list[PrintedRow]) -> tuple[list[str], list[PrintedRow]]:
    """Rows for columns: the corner heading stays, each printed column becomes a row (numbered
    with the heading's line: it is printed across the file, not on one line)."""
    turned_header = [header[0]] + [r.cells[0] for r in rows]
    turned = [PrintedRow(line, [header[j]] + [r.cells[j] for r in rows]) for j in range(1, len(header))]
    return turned_header, turned


def _list(items: list[str], limit: int = 6) -> str:
    shown = [f"`{i}`" for i in items[:limit]]
    return ", ".join(shown) + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _seen(separator: str, header: list[str], rows: list[PrintedRow]) -> str:
    what = {"comma": "a CSV table", "tab": "a tab-separated table", "markdown": "a Markdown table"}[separator]
    first = f"headed `{header[0]}`" if header[0] else "with a blank first heading"
    return (f"{what} {first}, {len(header) - 1} columns ({_list(header[1:])}) and {len(rows)} rows "
            f"({_list([r.cells[0] for r in rows])}), read as printed and transposed: no `metric` heading, no row "
            "or column the metric registry names, no change column (`Delta`, `Pct.`, `Delta (%)`), no row or "
            "column labelled `Average`")

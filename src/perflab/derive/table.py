"""Reading a published table in the seed-table CSV format, and what each printed cell means.

Format (../shared/spec/seed-tables/README.md): first column `metric` = the printed row label,
every other column one run headed by its run id. Summary tables (measurement pairs, release
ITRR matrix, run summaries) have their own columns instead; `layout` tells them apart by
header. A table whose first column is a parameter (LRECL, BLKSIZE, trace No.) with one column
per release and change columns (`Delta (%)`: the z/OS IEBCOPY tables, the VM/ESA trace tables
47-51) is the `parameter` layout: its rows are parameter values, not metrics. A table with
none of those headings but an `Average` row (the z/OS LSPR release table: workloads × n-way, an
Average row under them) is the `average` layout: its rows are of one kind, and each Average row
is the mean of the rows above it. How a table printed another way is read -- tab-separated or
Markdown, transposed, a blank first heading, a row short at its end -- is printed.py's and
shape.py's. Cell conventions: `na` printed by the report; a trailing `?` suspected OCR damage or a
reconstruction (unknown); `105K` = 105 × 1024.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from perflab.derive.interval import Interval


class Kind(str, Enum):
    NUMBER = "number"
    NA = "na"            # the report printed na: the source had no value
    UNKNOWN = "unknown"  # trailing '?': suspected OCR damage, treat as unknown
    TEXT = "text"        # a descriptive cell ("ESA 1.1", "512M", "1 dedicated")
    EMPTY = "empty"


_NUMBER = re.compile(r"^(?P<sign>[+-]?)(?P<int>\d{1,3}(?:,\d{3})+|\d*)(?:\.(?P<frac>\d*))?"
                     r"(?:[eE](?P<exp>[+-]?\d+))?(?P<k>[Kk])?(?P<pct>\s*%)?$")
# A lone dash is the seeds' "no value" in a change column (DFW tables: Pct Read 26 26 - -;
# IEBCOPY: ---); a lone `*` is a footnote standing in for a value ("Test not executed").
_NA = {"na", "n/a", "n.a.", "-", "--", "---", "\u2013", "\u2014", "*"}


@dataclass(frozen=True)
class Cell:
    text: str
    kind: Kind
    value: float | None = None
    half: float = 0.0      # half a unit in the last printed digit, in the value's units

    @classmethod
    def parse(cls, raw: str) -> Cell:
        text = raw.strip().replace("\u2212", "-")     # a typeset minus sign is a minus
        if not text:
            return cls(text, Kind.EMPTY)
        if text.endswith("?"):
            return cls(text, Kind.UNKNOWN)
        if text.lower() in _NA:
            return cls(text, Kind.NA)
        m = _NUMBER.match(text)
        if not m or not (m.group("int") or m.group("frac")):
            return cls(text, Kind.TEXT)
        digits = m.group("int").replace(",", "")
        frac = m.group("frac") or ""
        value = float(f"{m.group('sign')}{digits or '0'}.{frac or '0'}")
        exponent = int(m.group("exp") or 0)
        scale = 10.0 ** exponent * (1024.0 if m.group("k") else 1.0)
        half = 0.5 * 10.0 ** (-len(frac)) * scale
        return cls(text, Kind.NUMBER, value * scale, half)

    @property
    def known(self) -> bool:
        return self.kind is Kind.NUMBER

    def reading(self) -> Cell | None:
        """The number a cell reads as: itself when it is one; for a doubtful cell (`1.064?`) its
        text without the `?`, when that is a number; None otherwise (a bare `?`, na, text).

        A reading of a doubtful cell is never evidence (checks.py, docs/derive.md): it is
        carried only so that what is computed from it can be shown, marked doubtful."""
        if self.kind is Kind.NUMBER:
            return self
        if self.kind is not Kind.UNKNOWN:
            return None
        inner = Cell.parse(self.text.rstrip("?"))
        return inner if inner.kind is Kind.NUMBER else None

    @property
    def decimals(self) -> int:
        """Digits after the point of the (last) printed number: "0.76-0.77" has 2."""
        fractions = re.findall(r"\.(\d+)", self.text)
        return len(fractions[-1]) if fractions else 0

    def interval(self, exact: bool = False) -> Interval:
        assert self.value is not None
        return Interval.point(self.value) if exact else Interval.around(self.value, self.half)


@dataclass
class Row:
    label: str
    cells: list[Cell]
    line: int
    raw: list[str] = field(default_factory=list)
    section: str = ""      # parameter layout: the first column's heading over this row (LRECL, BLKSIZE)


@dataclass
class Table:
    path: Path
    header: list[str]
    rows: list[Row]
    layout: str            # "metric", "parameter", "pairs", "matrix", "runs" or "average"
    notes: list[str] = field(default_factory=list)   # how it was read as printed (shape.py): shown with the result

    @property
    def columns(self) -> list[str]:
        return self.header[1:]

    def column_name(self, index: int) -> str:
        """A data column's heading, with its position when the heading repeats (Delta, Pct.)."""
        head = self.columns[index]
        if sum(1 for h in self.columns if h.strip().lower() == head.strip().lower()) > 1:
            return f"{head} (column {index + 2})"
        return head

    def column_index(self, name: str) -> int | None:
        wanted = name.strip().lower()
        for i, head in enumerate(self.header):
            if head.strip().lower() == wanted:
                return i
        return None

    def cell(self, row: Row, column: str) -> Cell:
        """The cell of *row* under the heading *column* (the first column is the row's label);
        an empty cell when the table has no such column."""
        index = self.column_index(column)
        if index is None:
            return Cell("", Kind.EMPTY)
        return Cell.parse(row.label) if index == 0 else row.cells[index - 1]

    def text(self, row: Row, column: str) -> str:
        """The printed text of `cell(row, column)`."""
        return self.cell(row, column).text


AVERAGE = "average"
_AVERAGE_LABEL = re.compile(r"^(?:average|avg\.?|mean)$", re.IGNORECASE)


def is_average(label: str) -> bool:
    """A row label that says the row is the mean of the rows above it ("Average", "Avg", "Mean")."""
    return bool(_AVERAGE_LABEL.match(label.strip()))


def _repeats_header(raw: list[str], header: list[str]) -> bool:
    """A parameter table that stacks several printed tables (Elapsed Time, then CPU Time)
    repeats the heading row before each; its first cell may name another parameter."""
    return [c.strip().lower() for c in raw[1:]] == [h.lower() for h in header[1:]]


def read_table(path: Path) -> Table:
    """Parse one table as printed (printed.py: comma, tab or Markdown; shape.py: which shape,
    which way round, a row printed short); any malformation is an InputError naming file, line
    and field, and a table of no shape one naming the shape seen and the shapes expected."""
    # shape.py reads cells (Cell) and the registry: imported here, not at the top, so that
    # this module stays the one every derive module imports without a cycle.
    from perflab.derive.printed import read_printed
    from perflab.derive.shape import PARAMETER, arrange

    arranged = arrange(read_printed(Path(path)), Path(path))
    header = arranged.header
    section = header[0]
    rows: list[Row] = []
    for printed in arranged.rows:
        if arranged.layout == PARAMETER and _repeats_header(printed.cells, header):
            section = printed.cells[0].strip() or section
            continue
        cells = printed.cells
        rows.append(Row(cells[0], [Cell.parse(c) for c in cells[1:]], printed.line, list(cells), section))
    return Table(Path(path), header, rows, arranged.layout, arranged.notes)

"""A table's rows as printed, whatever separates its cells.

The seeds print their tables three ways: separated by tabs (001, 002, 003: a table copied from
the text is tab-separated, `<b>` around its Average row), as Markdown pipe tables (000, 004:
`| Metrics | IBM JES3<br>Single LPAR |`, a `|---|` rule under the heading), and the shared
seed tables are CSV. A user transcribing a table copies whichever they have, so the
separator is read from the file's first non-blank line, not required to be a comma:

* a first line opening with `|`, or a `|---|` rule anywhere, is a Markdown table: lines
  that do not open with `|` (prose around it) and the rule are skipped, the outer pipes are
  dropped, `<br>` is a space;
* a line with a tab is tab-separated: quotes are text (a seed prints `"` inside cells, never as
  CSV quoting);
* anything else is CSV.

Only the splitting is done here: which row is the heading, whether the table is transposed,
and a row printed short are `shape.py`'s. Emphasis copied from a rendered report (`<b>`,
`<sup>`, `**`) is dropped from every cell.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

from perflab.errors import InputError

_EMPHASIS = re.compile(r"</?(?:b|strong|i|em|sup|sub)>|^\*\*|\*\*$", re.IGNORECASE)
_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)
_RULE = re.compile(r"^\|?(?:\s*:?-{2,}:?\s*\|)+\s*:?-*:?\s*$")


def unmark(text: str) -> str:
    """A cell without emphasis copied from a rendered report ("<b>Average</b>" -> "Average")."""
    return " ".join(_EMPHASIS.sub("", _BREAK.sub(" ", text.strip())).split())


@dataclass(frozen=True)
class PrintedRow:
    line: int            # 1-based line of the file
    cells: list[str]     # as printed, emphasis dropped, surrounding space trimmed


@dataclass(frozen=True)
class Printed:
    rows: list[PrintedRow]          # every non-blank row, the heading first
    separator: str                  # "comma", "tab" or "markdown": said when a refusal explains the shape
    prose: tuple[int, ...] = ()     # lines of text above a tab-separated table, left out


def decode(path: Path) -> str:
    """The file's text: a regular file within the size limit, UTF-8, not binary."""
    from perflab.files import read_regular_bytes

    data = read_regular_bytes(Path(path))   # a regular file within the size limit (no FIFO, no /dev/zero)
    if b"\x00" in data:
        raise InputError("not a CSV file (binary content)", file=path)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"not a UTF-8 CSV file (byte {exc.start})", file=path) from None


def separator_of(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    if any(_RULE.match(line.strip()) and line.strip().startswith("|") for line in lines):
        return "markdown"     # a pipe table with prose around it (a page's table copied whole)
    if lines and lines[0].lstrip().startswith("|"):
        return "markdown"
    # Tab-separated when most lines hold a tab: a seed's table copied with a sentence above it
    # (its first line holds no tab) is still the seed's table.
    if lines and 2 * sum("\t" in line for line in lines) >= len(lines):
        return "tab"
    return "comma"


def read_printed(path: Path) -> Printed:
    text = decode(path)
    separator = separator_of(text)
    rows: list[PrintedRow] = []
    if separator == "markdown":
        for number, line in enumerate(text.splitlines(), start=1):
            stripped = line.strip()
            if not stripped.startswith("|") or _RULE.match(stripped):
                continue     # prose around the table, or the rule under its heading
            inner = stripped[1:-1] if stripped.endswith("|") and len(stripped) > 1 else stripped[1:]
            cells = [unmark(c) for c in re.split(r"(?<!\\)\|", inner)]
            if any(cells):
                rows.append(PrintedRow(number, [c.replace("\\|", "|") for c in cells]))
        return Printed(rows, separator)
    if separator == "tab":
        reader = csv.reader(io.StringIO(text, newline=""), delimiter="\t", quoting=csv.QUOTE_NONE)
    else:
        reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    prose: list[int] = []
    try:
        for raw in reader:
            if raw and any(c.strip() for c in raw):
                if separator == "tab" and not rows and len(raw) == 1:
                    prose.append(reader.line_num)     # a sentence above the table
                    continue
                rows.append(PrintedRow(reader.line_num, [unmark(c) for c in raw]))
    except csv.Error as exc:
        raise InputError(f"not valid CSV: {exc}", file=path, line=reader.line_num) from None
    return Printed(rows, separator, tuple(prose))

"""Tables whose Average row is the mean of the rows above it: the z/OS LSPR release table.

The z/OS performance update prints a release's ITR change per LSPR workload (rows: WASDB,
OLTP-W, OLTP-T, CB-L) and per n-way (columns: 1w, 12w, 32w, 64w on z10), with an Average row
under them ("Average system ITR delta with LSPR workloads"). Each Average cell is the
registry's `mean_of` of the cells above it in its column:

* a cell the report leaves as `-` (that workload was not measured at that n-way: OLTP-T and
  CB-L at 64w) is not part of the mean -- the 64w average 3.0% is (2.5 + 3.4) / 2;
* a blank cell above is not derivable (the report printed nothing there: not guessed as a
  missing measurement); text above it, or an Average cell that is text or blank (a Comments
  column), is not checked;
* a doubtful cell (`?`) follows derive's one rule (checks.py): its reading enters the mean shown,
  and the Average cell is then not judged.

Every input is known to ± half a unit of its last printed digit, so the mean is an interval
and the printed Average must overlap it within its own rounding (the 32w average 2.7% beside
a mean of 2.75%). A table may stack several blocks: each Average row averages the rows since
the previous one. Also read when a `metric` table has an Average row and no row the registry
knows (the same shape under the seed-table heading).
"""

from __future__ import annotations

import re

from perflab.catalog.registry import mean_of
from perflab.derive.checks import Check, Gap, Outcome, Reading, Status, Unknown, judge, judge_doubtful, reading
from perflab.derive.interval import Interval
from perflab.derive.table import Kind, Row, Table, is_average

_NWAY = re.compile(r"^\s*(\d+)\s*-?\s*(?:w|way)\b", re.IGNORECASE)


def n_way(heading: str) -> int | None:
    """The processors a column heading names ("1w on z10", "12w on z10 with HD=YES", "32-way")."""
    m = _NWAY.match(heading)
    return int(m.group(1)) if m else None


def has_average(table: Table) -> bool:
    return any(is_average(r.label) for r in table.rows)


def _short(label: str) -> str:
    """A row's name without its description: "WASDB (WAS and DB2 OLTP)" -> "WASDB"."""
    return label.split(" (")[0].strip() or label


def check_averages(table: Table) -> list[Check]:
    """Every numeric cell of every Average row against the mean of the rows above it."""
    checks: list[Check] = []
    block: list[Row] = []
    for row in table.rows:
        if not is_average(row.label):
            block.append(row)
            continue
        for col, printed in enumerate(row.cells):
            if printed.kind in (Kind.EMPTY, Kind.TEXT):
                continue      # a Comments column
            checks.append(_check_mean(table, row, col, block))
        block = []
    return checks


def _check_mean(table: Table, average: Row, col: int, block: list[Row]) -> Check:
    printed = average.cells[col]
    used: list[tuple[Row, Reading]] = []
    skipped: list[str] = []
    blank: list[str] = []
    unread: list[str] = []
    for row in block:
        cell = row.cells[col]
        value = reading(cell)
        if cell.kind is Kind.NA:
            skipped.append(_short(row.label))
        elif cell.kind is Kind.EMPTY:
            blank.append(_short(row.label))
        elif value is not None:
            used.append((row, value))
        elif cell.kind is Kind.UNKNOWN:
            unread.append(f"{_short(row.label)} printed {cell.text!r}")
    text = f"mean_of({', '.join(_short(r.label) for r, _ in used)})"
    if skipped:
        text += f", not measured: {', '.join(skipped)}"

    def check(status: Status, reason: str, value: Interval | None = None) -> Check:
        return Check(average.label, table.column_name(col), average.line, printed, value, status, text, reason,
                     col=col)

    if blank and printed.kind is not Kind.NA:
        return check(Status.NOT_DERIVABLE, f"{', '.join(blank)} blank in this column: the mean is not determined")
    outcome: Outcome
    if unread:
        outcome = Unknown(", ".join(unread))
    elif not used:
        outcome = Gap.NA
    else:
        doubt = ", ".join(f"{_short(r.label)} printed {v.text!r}" for r, v in used if v.doubtful) or None
        judged = judge_doubtful(printed, mean_of([v.interval for _, v in used]), None, doubt)
        return check(judged.status, judged.reason, judged.value)
    status, reason, _ = judge(printed, outcome)
    return check(status, reason)

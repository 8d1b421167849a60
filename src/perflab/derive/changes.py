"""Change columns: the delta (later run minus earlier) or the percent (the delta as a percent
of the earlier run's value) printed beside the runs it compares.

Which two runs a change column compares:

* a heading that names them with a direction ("Delta V1.11 to V1.12") names them; if one of
  them is not a column of this table ("... to V.12 w/GRS and allocation"), the change is not
  derivable: the heading says it is not the adjacent pair;
* a heading (or a `Run Id` row's cell in the column, as Table 33 is printed) that names two
  runs that are both not columns of this table -- with a direction, or joined by a hyphen
  ("Y64F4809 - Y64F480E Delta": Table 33, whose text reads each pair as "moving from the first
  run to the second") -- compares them where they are tabulated: the row's printed values in
  a table beside this one (siblings.py; Table 34 for Table 33). With no such table, or for a
  row the registry does not know, it is not derivable. Within one table a hyphen decides
  nothing (it reads both as a transition and as a subtraction): the rule below applies;
* otherwise the two run columns printed since the previous change columns (RUN1 RUN2 DELTA
  PERCENT; the trace tables' repeated groups PRPQ VM Delta Pct.). One run, more than two, or
  several deltas in one block leave the pair undetermined: not derivable, never guessed;
* a percent column that follows a delta column is that delta as a percent of the earlier run:
  it compares the delta's runs. In Table 33 without its run ids (Delta Pct. Delta Pct. ..., no
  run columns) the earlier run is not in the table, so neither is derivable.

A change is recomputed from the row's printed cells only, never from a value recomputed for a
`?` cell: the report computed it from the figures it printed (Table 43: DELTA -165.6 =
143.4 - 309.0, the printed, mistaken, sum). A `?` on a compared cell, or on the delta a percent
follows, makes the change unknown.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from perflab.catalog.registry import delta, percent_change
from perflab.derive.checks import Gap, Outcome, Underivable, Unknown, first_problem
from perflab.derive.headers import Change, ChangeHeading, change_heading
from perflab.derive.table import Cell, Kind, Row, Table


@dataclass(frozen=True)
class ChangeColumn:
    index: int                 # among the table's data columns
    kind: Change
    old: int | None = None     # the earlier run's column
    new: int | None = None
    follows: int | None = None  # the delta column a percent column was computed from
    why_not: str = ""          # why the table does not determine it
    #: (earlier, later) runs the heading names that are not columns of this table: their values
    #: come from a table beside it (`change_outcome`'s *elsewhere*), else `why_not` stands
    elsewhere: tuple[str, str] | None = None

    def formula(self, columns: list[str]) -> str:
        if self.elsewhere is not None:
            old, new = self.elsewhere
        elif self.why_not or self.old is None or self.new is None:
            return "not derivable"
        else:
            old, new = columns[self.old], columns[self.new]
        return f"{new} - {old}" if self.kind is Change.DELTA else f"100 * ({new} - {old}) / {old}"


#: A row's printed value in another table: (run id, the row) -> that value (Gap.ABSENT: no
#: table beside this one prints it). Given by `perflab.derive.siblings`.
Elsewhere = Callable[[str, Row], Outcome]


def plan_changes(table: Table) -> tuple[list[ChangeColumn], list[int]]:
    """The change columns with the runs each compares, and the run columns (all others)."""
    headings = {i: _heading(table, i) for i in range(len(table.columns))}
    changes = {i: h for i, h in headings.items() if h is not None}
    runs = [i for i in range(len(table.columns)) if i not in changes]
    planned: dict[int, ChangeColumn] = {}
    for block, since in _blocks(table, changes):
        for i in block:
            planned[i] = _plan_one(table, i, changes, block, since, runs, planned)
    return [planned[i] for i in sorted(planned)], runs


def _heading(table: Table, index: int) -> ChangeHeading | None:
    heading = change_heading(table.columns[index])
    if heading is None or heading.kind is Change.PERCENT:
        return heading
    # "Delta" over "-50%", "+100%": a relative change headed like an absolute one (z/OS GRS table).
    printed = [r.cells[index].text for r in table.rows if r.cells[index].kind is Kind.NUMBER]
    if printed and all(t.endswith("%") for t in printed):
        return ChangeHeading(Change.PERCENT, heading.names)
    return heading


def _blocks(table: Table, changes: dict[int, ChangeHeading]) -> list[tuple[list[int], list[int]]]:
    """Each run of adjacent change columns, with the run columns printed since the last one
    (columns of text only, such as a `Format` column, compare nothing and are left out)."""
    blocks: list[tuple[list[int], list[int]]] = []
    since: list[int] = []
    for i in range(len(table.columns)):
        if i not in changes:
            if _holds_values(table, i):
                since.append(i)
            continue
        if blocks and blocks[-1][0][-1] == i - 1:
            blocks[-1][0].append(i)
        else:
            blocks.append(([i], since))
            since = []
    return blocks


def _holds_values(table: Table, index: int) -> bool:
    return any(r.cells[index].kind in (Kind.NUMBER, Kind.UNKNOWN, Kind.NA) for r in table.rows) or not table.rows


def _plan_one(table: Table, i: int, changes: dict[int, ChangeHeading], block: list[int], since: list[int],
              runs: list[int], planned: dict[int, ChangeColumn]) -> ChangeColumn:
    heading = changes[i]
    kind = heading.kind
    before = changes.get(i - 1)
    follows = i - 1 if kind is Change.PERCENT and before is not None and before.kind is Change.DELTA else None
    if not heading.bare:
        named = heading.pair()
        if named is not None:
            return _named(table, i, kind, named, runs, follows)
        hyphen = heading.hyphen_pair()
        if hyphen is not None and all(_find_run(table, name, runs) is None for name in hyphen):
            return ChangeColumn(i, kind, follows=follows, elsewhere=hyphen,
                                why_not=f"its heading names runs {hyphen[0]!r} and {hyphen[1]!r}, which are not "
                                        "columns of this table")
    caption = _run_id_caption(table, i, kind)
    if caption is not None and all(_find_run(table, name, runs) is None for name in caption):
        return ChangeColumn(i, kind, follows=follows, elsewhere=caption,
                            why_not=f"its Run Id row names runs {caption[0]!r} and {caption[1]!r}, which are not "
                                    "columns of this table")
    if follows is not None and heading.bare:
        # The delta as a percent of the earlier run: the delta's two runs, or not derivable with it.
        delta_column = planned[follows]
        why = delta_column.why_not
        if why and not since and delta_column.elsewhere is None:
            why = "the delta as a percent of the earlier run's value, which is not in the table"
        return ChangeColumn(i, kind, delta_column.old, delta_column.new, follows, why, delta_column.elsewhere)
    if not since:
        what = "the runs it compares are" if kind is Change.DELTA else "the earlier run's value is"
        return ChangeColumn(i, kind, follows=follows, why_not=f"{what} not in the table")
    same_kind = [j for j in block if changes[j].kind is kind]
    if len(same_kind) > 1:
        return ChangeColumn(i, kind, follows=follows,
                            why_not=f"{len(same_kind)} {kind.value} columns side by side: which runs each compares "
                                    "is not in the table")
    if len(since) == 2:
        return ChangeColumn(i, kind, since[0], since[1], follows)
    if len(since) == 1:
        return ChangeColumn(i, kind, follows=follows,
                            why_not=f"only one run column ({table.columns[since[0]]}) before it")
    return ChangeColumn(i, kind, follows=follows,
                        why_not=f"{len(since)} run columns before it and its heading does not say which two it "
                                "compares")


_RUN_ID_ROW = re.compile(r"^run\s*ids?\b", re.IGNORECASE)


def _run_id_caption(table: Table, index: int, kind: Change) -> tuple[str, str] | None:
    """The runs a `Run Id` row names in a change column ("Y64F4809 - Y64F480E" over a bare
    Delta: Table 33 as printed, the run ids in a row above `Delta Pct.`)."""
    for row in table.rows:
        cell = row.cells[index]
        if _RUN_ID_ROW.match(row.label) and cell.kind is Kind.TEXT:
            named = ChangeHeading(kind, cell.text)
            return named.pair() or named.hyphen_pair()
    return None


def _named(table: Table, i: int, kind: Change, named: tuple[str, str], runs: list[int],
           follows: int | None) -> ChangeColumn:
    found = [_find_run(table, name, runs) for name in named]
    missing = [name for name, index in zip(named, found) if index is None]
    if len(missing) == 2:
        return ChangeColumn(i, kind, follows=follows, elsewhere=named,
                            why_not=f"its heading names runs {named[0]!r} and {named[1]!r}, which are not columns "
                                    "of this table")
    if missing:
        return ChangeColumn(i, kind, follows=follows,
                            why_not=f"its heading names {', '.join(repr(m) for m in missing)}, not a run column "
                                    "of this table")
    return ChangeColumn(i, kind, found[0], found[1], follows)


def _find_run(table: Table, name: str, runs: list[int]) -> int | None:
    """The run column a heading names: the same heading, else the only one containing the name
    as whole words ("Y34V3251" in "DFW OFF ESA 1.1 Y34V3251")."""
    wanted = " ".join(name.lower().split())
    heads = {j: " ".join(table.columns[j].lower().split()) for j in runs}
    exact = [j for j, h in heads.items() if h == wanted]
    if exact:
        return exact[0]
    inside = [j for j, h in heads.items() if f" {wanted} " in f" {h} "]
    return inside[0] if len(inside) == 1 else None


# -- one cell ---------------------------------------------------------------------------------

def change_outcome(table: Table, row: Row, change: ChangeColumn, exact: bool = False,
                   elsewhere: Elsewhere | None = None) -> Outcome | None:
    """The recomputed change of one row, or None where there is no change to check: a
    descriptive row (RELEASE ...) or a caption in the change column. *elsewhere* gives the
    row's printed values of runs tabulated in another table (`ChangeColumn.elsewhere`)."""
    printed = row.cells[change.index].kind
    if printed is Kind.NA:
        return Gap.NA          # the report printed no change (a dash, `---`): nothing to check
    if printed is Kind.TEXT:
        return None            # a caption over the column ("384M/1G - 320M/1G"), not a change
    if change.elsewhere is not None and elsewhere is not None:
        old_run, new_run = change.elsewhere
        inputs = [elsewhere(new_run, row), elsewhere(old_run, row)]
        if any(i is Gap.ABSENT for i in inputs):
            return Underivable(f"{change.why_not}, and no table beside it prints {row.label} for both")
    elif change.why_not or change.old is None or change.new is None:
        return Underivable(change.why_not or "the runs it compares are not determined")
    else:
        new, old = row.cells[change.new], row.cells[change.old]
        if new.kind is Kind.TEXT:
            return None
        inputs = [_printed(new, table.columns[change.new], exact), _printed(old, table.columns[change.old], exact)]
    if change.follows is not None and row.cells[change.follows].kind is Kind.UNKNOWN:
        inputs.append(Unknown(f"computed from the delta printed {row.cells[change.follows].text!r}"))
    problem = first_problem(inputs)
    if problem is not None:
        return problem
    a, b = inputs[0], inputs[1]
    return delta(a, b) if change.kind is Change.DELTA else percent_change(a, b)


def _printed(cell: Cell, column: str, exact: bool) -> Outcome:
    if cell.kind is Kind.NUMBER:
        return cell.interval(exact=exact)
    if cell.kind is Kind.NA:
        return Gap.NA
    if cell.kind is Kind.EMPTY:
        return Underivable(f"{column} is blank")
    if cell.kind is Kind.UNKNOWN:
        return Unknown(f"{column} printed {cell.text!r}")
    return Unknown(f"{column} printed {cell.text!r}, not a number")

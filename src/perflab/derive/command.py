"""`perflab derive TABLE.csv [--check]`: recompute a published table's derived rows with the
registry's formulas and show them beside the printed values.

Acceptance rule (methodology 6.5 item 7): given the raw rows of a seed table, perflab must
reproduce the derived rows within the printed rounding. `--check` turns that into an exit
code: 1 when any derivable cell disagrees, 0 otherwise. Approximate identities (RTM's own ITR
and EMUL ITR), cells marked unknown (`?`) and cells the table does not determine (a percent of
a run it does not print) are reported but never fail.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from perflab.catalog.registry import REGISTRY
from perflab.derive.average import check_averages, has_average, n_way
from perflab.derive.checks import Check, Status
from perflab.derive.metric_table import PARAMETER, check_metric_table
from perflab.derive.render import Tally, render_check_list, render_metric_table, render_tally
from perflab.derive.siblings import Siblings
from perflab.derive.summary_tables import check_matrix, check_pairs, check_runs
from perflab.derive.table import AVERAGE, Table, is_average, read_table


@dataclass
class DeriveResult:
    path: Path
    layout: str
    context: str
    checks: list[Check]
    notes: list[str] = field(default_factory=list)

    @property
    def tally(self) -> Tally:
        return Tally(self.checks)

    @property
    def disagreements(self) -> list[Check]:
        return [c for c in self.checks if c.status is Status.DISAGREE]


def derive_table(path: Path, console: Console | None = None) -> DeriveResult:
    """Check one table; print it when a console is given. Raises InputError for a malformed file."""
    path = Path(path)
    table = read_table(path)
    notes: list[str] = list(table.notes)      # how it was read as printed: transposed, a short row...
    if table.layout == AVERAGE or (table.layout == "metric" and has_average(table) and not any(
            check_metric_table(table, REGISTRY).meanings)):
        derived = _derive_averages(table, notes)
        if console is not None:
            kind = "workload × n-way" if derived.context == "n-way" else "rows averaged"
            render_metric_table(console, f"{path.name} (average table: {kind})", table.header,
                                [(row.label, row.line, row.cells, True) for row in table.rows], derived.checks)
    elif table.layout in ("metric", PARAMETER):
        result = check_metric_table(table, REGISTRY)
        if result.names_runs_elsewhere:
            # Change columns naming runs tabulated elsewhere (Table 33): the tables beside it.
            siblings = Siblings.load(path.parent, path, REGISTRY)
            result = check_metric_table(table, REGISTRY, siblings.printed)
            if siblings.used:
                notes.append(f"changes between runs of other tables, from their printed values in "
                             f"{', '.join(sorted(siblings.used))}")
            notes += [f"sibling {name} skipped: {reason}" for name, reason in siblings.skipped]
        by_parameter = table.layout == PARAMETER
        unregistered = [row.label for row, meaning in zip(table.rows, result.meanings) if meaning is None]
        if by_parameter:
            notes.append(f"rows are values of {table.header[0]}, not metrics: only the change columns are derivable")
        elif unregistered:
            notes.append(f"rows not in the registry, shown as printed: {', '.join(unregistered)}")
        derived = DeriveResult(path, table.layout, result.context, result.checks, notes)
        if console is not None:
            title = f"{path.name} ({'parameter-first' if by_parameter else result.context} table)"
            # Dimmed: rows derive cannot read. A parameter table's rows are all read (as values).
            rows = [(row.label, row.line, row.cells, by_parameter or meaning is not None)
                    for row, meaning in zip(table.rows, result.meanings)]
            render_metric_table(console, title, table.header, rows, result.checks)
    else:
        siblings = Siblings.load(path.parent, path, REGISTRY)
        if siblings.skipped:
            notes += [f"sibling {name} skipped: {reason}" for name, reason in siblings.skipped]
        if table.layout == "pairs":
            checks = check_pairs(table, REGISTRY, siblings)
        elif table.layout == "matrix":
            checks, more = check_matrix(table, siblings)
            notes += more
        else:
            checks = check_runs(table, REGISTRY, siblings)
        if siblings.metric_tables and table.layout != "matrix":
            notes.append(f"cross-references from {len(siblings.metric_tables)} sibling tables in {path.parent}")
        derived = DeriveResult(path, table.layout, "summary", checks, notes)
        if console is not None:
            render_check_list(console, f"{path.name} ({table.layout} table)", checks)
    if console is not None:
        render_tally(console, derived.tally, notes)
    return derived


def _derive_averages(table: Table, notes: list[str]) -> DeriveResult:
    """The LSPR shape (average.py): each Average row against the mean of the rows above it."""
    ways = [n_way(h) for h in table.columns]
    numbered = [w for w in ways if w is not None]
    if numbered:
        notes.append(f"columns by n-way: {', '.join(f'{w}w' for w in numbered)}; rows: "
                     f"{', '.join(r.label for r in table.rows if not is_average(r.label))}")
    notes.append("each Average row is the mean of the rows above it; a row printing '-' in a column was not "
                 "measured there and is left out of that column's mean")
    return DeriveResult(table.path, AVERAGE, "n-way" if numbered else AVERAGE, check_averages(table), notes)


def run_derive(path: Path, check: bool, console: Console) -> int:
    """The CLI entry point: the exit code (0, or 1 with --check when a derivable cell disagrees)."""
    result = derive_table(path, console)
    if check:
        return 1 if result.disagreements else 0
    return 0

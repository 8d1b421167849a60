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

from perflab.derive.checks import Check, Status
from perflab.derive.metric_table import PARAMETER, check_metric_table
from perflab.derive.render import Tally, render_check_list, render_metric_table, render_tally
from perflab.derive.siblings import Siblings
from perflab.derive.summary_tables import check_matrix, check_pairs, check_runs
from perflab.derive.table import read_table
from perflab.catalog.registry import REGISTRY


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
    notes: list[str] = []
    if table.layout in ("metric", PARAMETER):
        result = check_metric_table(table, REGISTRY)
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


def run_derive(path: Path, check: bool, console: Console) -> int:
    """The CLI entry point: the exit code (0, or 1 with --check when a derivable cell disagrees)."""
    result = derive_table(path, console)
    if check:
        return 1 if result.disagreements else 0
    return 0

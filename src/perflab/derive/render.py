"""Printing a derived table: printed values with the recomputed ones beside them, then the
tally and every disagreement with its arithmetic."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from rich.console import Console, JustifyMethod
from rich.table import Table as RichTable

from perflab.derive.checks import Check, Status
from perflab.derive.interval import Interval
from perflab.derive.table import Cell, Kind
from perflab.safe_text import terminal as escape

# Worst first: the mark a cell shows when several formulas check it.
_SEVERITY = [Status.DISAGREE, Status.APPROX_OFF, Status.UNKNOWN, Status.APPROX, Status.AGREE, Status.DEFINES,
             Status.NOT_DERIVABLE, Status.NA]
_MARK = {
    Status.AGREE: "[green]✓[/green]",
    Status.DISAGREE: "[bold red]✗[/bold red]",
    Status.APPROX: "[cyan]≈[/cyan]",
    Status.APPROX_OFF: "[yellow]≈![/yellow]",
    Status.UNKNOWN: "[yellow]?[/yellow]",
    Status.DEFINES: "[dim]=[/dim]",
    Status.NOT_DERIVABLE: "[dim]–[/dim]",
    Status.NA: "",
}


@dataclass
class Tally:
    checks: list[Check]
    counts: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self.counts = Counter(c.status for c in self.checks)

    @property
    def checked(self) -> int:
        return self.counts[Status.AGREE] + self.counts[Status.DISAGREE]

    @property
    def rows(self) -> int:
        return len({(c.row, c.line) for c in self.checks if c.counted})

    @property
    def approximate(self) -> int:
        return self.counts[Status.APPROX] + self.counts[Status.APPROX_OFF]

    def of(self, status: Status) -> list[Check]:
        return [c for c in self.checks if c.status is status]


def format_like(cell: Cell, value: Interval | None) -> str:
    """A recomputed value in the printed cell's style, one digit finer (it is not rounded)."""
    if value is None or not value.bounded:
        return "—"
    decimals = cell.decimals + 1 if cell.kind is Kind.NUMBER else 4
    if cell.text.upper().rstrip("?").endswith("K"):
        return f"{value.mid / 1024:.{decimals}f}K"
    return f"{value.mid:.{decimals}f}"


def _worst(checks: list[Check]) -> Check:
    """The check a cell's mark shows: exact checks decide; an approximate identity only marks a
    cell no exact formula reaches (RTM's ITR)."""
    exact = [c for c in checks if c.tolerance is None] or checks
    return min(exact, key=lambda c: _SEVERITY.index(c.status))


def render_metric_table(console: Console, title: str, header: list[str], rows: list[tuple[str, int, list[Cell], bool]],
                        checks: list[Check]) -> None:
    """The table as published, each derived cell showing printed, recomputed and a mark.
    rows: (label, line, cells, in_registry). A table wider than the terminal is printed in
    several slices of its run columns rather than folded cell by cell."""
    by_cell: dict[tuple[int, int | None], list[Check]] = {}
    for check in checks:
        by_cell.setdefault((check.line, check.col), []).append(check)
    columns = header[1:]
    shown: list[list[tuple[str, int]]] = []          # per row, per column: (markup, plain width)
    for _label, line, cells, known in rows:
        row_cells = []
        for index, cell in enumerate(cells):
            found = by_cell.get((line, index))
            if not found:
                text = escape(cell.text) if known else f"[dim]{escape(cell.text)}[/dim]"
                row_cells.append((text, len(cell.text)))
                continue
            worst = _worst(found)
            recomputed = worst.recomputed or next((c.recomputed for c in found if c.recomputed is not None), None)
            beside = "" if recomputed is None else format_like(cell, recomputed)
            text = f"{escape(cell.text)}{f' [dim]{beside}[/dim]' if beside else ''} {_MARK[worst.status]}"
            row_cells.append((text, len(cell.text) + len(beside) + 4))
        shown.append(row_cells)
    label_width = max([len(header[0])] + [len(label) for label, *_ in rows])
    widths = [max([len(c)] + [r[i][1] for r in shown]) for i, c in enumerate(columns)]
    slices: list[list[int]] = [[]]
    used = label_width + 4
    for i, width in enumerate(widths):
        if slices[-1] and used + width + 3 > console.width:
            slices.append([])
            used = label_width + 4
        slices[-1].append(i)
        used += width + 3
    for part in slices:
        suffix = f" — columns {part[0] + 1}–{part[-1] + 1} of {len(columns)}" if len(slices) > 1 else ""
        table = RichTable(title=escape(title + suffix), title_justify="left", header_style="bold")
        table.add_column(escape(header[0]), no_wrap=True)
        for i in part:
            table.add_column(escape(columns[i]), justify="right", no_wrap=True)
        for (label, _line, _cells, known), row_cells in zip(rows, shown):
            first = escape(label) if known else f"[dim]{escape(label)}[/dim]"
            table.add_row(first, *[row_cells[i][0] for i in part])
        console.print(table)


def render_check_list(console: Console, title: str, checks: list[Check]) -> None:
    """Summary tables: one line per check (row, column, printed, recomputed, formula)."""
    table = RichTable(title=title, title_justify="left", header_style="bold")
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("row", "left"), ("column", "left"), ("printed", "right"), ("recomputed", "right"), ("", "center"),
        ("from", "left"))
    for name, justify in columns:
        table.add_column(name, justify=justify, overflow="fold")
    for check in checks:
        table.add_row(escape(check.row), escape(check.column), escape(check.printed.text),
                      format_like(check.printed, check.recomputed), _MARK[check.status],
                      escape(check.reason or check.formula))
    console.print(table)


def render_tally(console: Console, tally: Tally, notes: list[str]) -> None:
    for note in notes:
        console.print(f"[dim]{escape(note)}[/dim]")
    disagree = tally.of(Status.DISAGREE)
    verdict = "[bold red]" if disagree else "[green]"
    console.print(f"{verdict}checked {tally.checked} cells in {tally.rows} derivable rows: "
                  f"{tally.counts[Status.AGREE]} agree, {len(disagree)} disagree[/]")
    if tally.approximate:
        near, off = tally.of(Status.APPROX), tally.of(Status.APPROX_OFF)
        worst = max(near + off, key=lambda c: abs(c.deviation or 0.0))
        rows = sorted({c.row for c in near + off})
        console.print(f"approximate (identities that only hold approximately, not failing: {', '.join(rows)}): "
                      f"{len(near)} cells within tolerance, {len(off)} beyond; largest difference "
                      f"{100 * (worst.deviation or 0):+.2f} % ({escape(worst.row)}, {escape(worst.column)})")
        for check in off:
            console.print(f"  [yellow]beyond ±{100 * (check.tolerance or 0):g} %[/yellow] {escape(check.row)} / "
                          f"{escape(check.column)}: printed {check.printed.text}, recomputed "
                          f"{format_like(check.printed, check.recomputed)} ({100 * (check.deviation or 0):+.2f} %) "
                          f"= {escape(check.formula)}")
    _render_not_derivable(console, tally.of(Status.NOT_DERIVABLE))
    unknown = tally.of(Status.UNKNOWN)
    if unknown:
        console.print(f"unknown: {len(unknown)} cells (neither agree nor fail)")
        for check in unknown:
            console.print(f"  [yellow]?[/yellow] line {check.line} {escape(check.row)} / {escape(check.column)}: "
                          f"{escape(check.reason)}")
    for check in disagree:
        recomputed = check.recomputed
        span = "" if recomputed is None else f" [{recomputed.lo:.6g}, {recomputed.hi:.6g}]"
        console.print(f"  [bold red]✗[/bold red] line {check.line} {escape(check.row)} / {escape(check.column)}: "
                      f"printed {check.printed.text}, recomputed {format_like(check.printed, recomputed)}{span} "
                      f"= {escape(check.formula)}")


def _render_not_derivable(console: Console, checks: list[Check]) -> None:
    """One line per reason: a table of delta/pct pairs would otherwise list every cell."""
    if not checks:
        return
    console.print(f"not derivable: {len(checks)} cells (the table does not determine them; never failing)")
    by_reason: dict[str, list[str]] = {}
    for check in checks:
        columns = by_reason.setdefault(check.reason, [])
        if check.column not in columns:
            columns.append(check.column)
    for reason, columns in by_reason.items():
        console.print(f"  [dim]–[/dim] {escape(', '.join(columns))}: {escape(reason)}")

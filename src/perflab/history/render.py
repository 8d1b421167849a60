"""`perflab history` on the terminal: one block per series -- its key, its runs, and a table of
its change points (where, between which runs and versions, the size with its interval, the p of
the permutation test, whose change it is). Numbers are printed as every report prints them
(perflab.report.numbers)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from perflab.history.model import ChangePoint, HistoryDocument, Series
from perflab.report import numbers as fmt
from perflab.safe_text import terminal as escape

CAUSE_STYLE = {"host": "yellow", "software": "bold", "unknown": "dim"}
DIRECTION_STYLE = {"better": "green", "worse": "red", "none": ""}


def _p(p: float) -> str:
    return f"{p:.3f}" if p >= 0.001 else f"{p:.1e}"


def _where(cp: ChangePoint) -> str:
    versions = ""
    if cp.before_version or cp.after_version:
        versions = f"{cp.before_version or '?'} -> {cp.after_version or '?'}"
    return versions


def series_title(s: Series) -> str:
    k = s.key
    relative = " relative to the block's base run" if s.relative else ""
    reference = " [reference]" if s.reference else ""
    return (f"[bold]{escape(k.workload)}[/bold] on {escape(k.hostname)} ({escape(k.host)}), {escape(k.arrangement)}, "
            f"{escape(k.load)}, {escape(k.window)}: {escape(s.label)}{relative}{reference} -- series "
            f"[bold]{escape(s.id)}[/bold]")


def render_series(s: Series, console: Console) -> None:
    analysed = s.analysed()
    excluded = [p for p in s.points if p.excluded]
    console.print(series_title(s), highlight=False, soft_wrap=True)
    first, last = (analysed[0], analysed[-1]) if analysed else (None, None)
    span = f", {escape(first.created)} .. {escape(last.created)}" if first and last else ""
    console.print(f"  {len(analysed)} runs analysed{span}"
                  + (f"; {len(excluded)} excluded" if excluded else ""), highlight=False)
    for p in excluded[:5]:
        console.print(f"    [dim]excluded {escape(p.run_id)}: {escape('; '.join(p.excluded))}[/dim]", highlight=False,
                      soft_wrap=True)
    if len(excluded) > 5:
        console.print(f"    [dim]... and {len(excluded) - 5} more (--json lists every one)[/dim]", highlight=False)
    if s.note:
        console.print(f"  [dim]{escape(s.note)}[/dim]", highlight=False)
    if not s.change_points:
        if not s.note:
            console.print("  no change point", highlight=False)
        return
    table = Table(show_edge=False, pad_edge=False, box=None, padding=(0, 1))
    level = fmt.percent_level(s.change_points[0].level)
    for col in ("#", "first run after", "started", "versions", "before -> after", "ratio", f"{level} CI", "p", "",
                "cause"):
        table.add_column(col)
    for cp in s.change_points:
        style = DIRECTION_STYLE[cp.direction]
        direction = f"[{style}]{cp.direction}[/{style}]" if style else cp.direction
        cause = f"[{CAUSE_STYLE[cp.cause]}]{cp.cause}[/{CAUSE_STYLE[cp.cause]}]"
        new = " [bold]new[/bold]" if cp.recent else ""
        table.add_row(str(cp.index), escape(cp.after), escape(cp.after_created), escape(_where(cp)),
                      f"{fmt.value(cp.mean_before, s.metric)} -> {fmt.value(cp.mean_after, s.metric)}"
                      if not s.relative else f"{fmt.ratio(cp.mean_before)} -> {fmt.ratio(cp.mean_after)}",
                      fmt.ratio(cp.ratio), fmt.ci_ratio(cp.ci_low, cp.ci_high), _p(cp.p_value), direction + new, cause)
    console.print(table)
    for cp in s.change_points:
        console.print(f"    [dim]#{cp.index} {cp.cause}: {escape(cp.cause_reason)}[/dim]", highlight=False, soft_wrap=True)
        c = cp.confirmation
        if c is not None:
            if c.verdict:
                console.print(f"    #{cp.index} confirmed by study {escape(c.study_id or '?')} ({escape(c.base)} -> "
                              f"{escape(c.new)}, {escape(c.arrangement or '?')}): [bold]{escape(c.verdict)}[/bold] "
                              f"{fmt.ratio(c.ratio)} {fmt.ci_ratio(c.ci_low, c.ci_high)}", highlight=False, soft_wrap=True)
            else:
                console.print(f"    #{cp.index} not confirmed: {escape(c.reason or 'no verdict')}", highlight=False,
                              soft_wrap=True)


def render_history(doc: HistoryDocument, console: Console) -> None:
    if not doc.series:
        console.print("no series: the store has no complete runs that match", highlight=False)
    for s in doc.series:
        render_series(s, console)
        console.print()
    if doc.skipped:
        console.print(f"[dim]{len(doc.skipped)} runs in no series (calibration steps, running, unreadable): "
                      "--json lists them with the reason[/dim]", highlight=False)
    console.print(f"E-Divisive means, {doc.permutations} permutations, change points at p <= {doc.significance:g}; "
                  f"order: {doc.order}. {escape(doc.meaning)}", highlight=False, soft_wrap=True)

"""A suite's report: the LSPR's table (a row per workload and the Average), then one table per
workload -- one view model (`suite_tables`), rendered as Markdown and on the terminal."""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Console
from rich.table import Table

from perflab.records.study import MetricComparison
from perflab.records.suite import AverageRow, SuiteDocument
from perflab.report import numbers as fmt
from perflab.report.markdown import escape, table
from perflab.report.view import verdict_cell
from perflab.safe_text import terminal


@dataclass(frozen=True)
class SuiteTable:
    title: str
    columns: list[str]
    rows: list[list[str]]


def _interval(low: float | None, high: float | None, level: float | None) -> str:
    if low is None or high is None:
        return fmt.NA
    return f"{fmt.ci_pct(low, high)} ({fmt.percent_level(level) if level is not None else 'bias-bounded'})"


def _member_cells(entry: MetricComparison | None) -> list[str]:
    if entry is None:
        return [fmt.NA, fmt.NA, "not compared"]
    change = fmt.pct(entry.ratio - 1.0, entry=entry) if entry.ratio is not None else fmt.NA
    return [change, _interval(entry.ci_low, entry.ci_high, None if entry.design_ci_low is not None else entry.level),
            verdict_cell(entry)]


def _average_cells(row: AverageRow) -> list[str]:
    if row.ratio is None:
        return [fmt.NA, fmt.NA, f"na: {row.reason}"]
    verdict = row.verdict or (f"na: {row.reason}" if row.reason else "no direction: no verdict")
    return [fmt.pct(row.ratio - 1.0), _interval(row.ci_low, row.ci_high, row.level), verdict]


def summary_table(doc: SuiteDocument) -> SuiteTable:
    """The LSPR's shape: a row per workload and the Average, a change, interval and verdict per metric."""
    columns = ["workload"]
    for row in doc.average:
        columns += [f"{row.label} change", "interval (level)", "verdict"]
    rows = []
    for member in doc.members:
        cells = [member.name]
        for row in doc.average:
            cells += _member_cells(next((r for r in member.rows if r.key == row.key), None))
        rows.append(cells)
    rows.append(["Average", *(c for row in doc.average for c in _average_cells(row))])
    return SuiteTable(f"{doc.base} -> {doc.new}: change per workload and their average", columns, rows)


def member_tables(doc: SuiteDocument) -> list[SuiteTable]:
    tables = []
    for member in doc.members:
        rows = [[r.label, fmt.unit_of(r.key, r), fmt.value(r.base_value, r.key, r), fmt.value(r.new_value, r.key, r),
                 fmt.ratio(r.ratio, r) if r.ratio is not None else fmt.NA,
                 _interval(r.ci_low, r.ci_high, None if r.design_ci_low is not None else r.level),
                 verdict_cell(r)] for r in member.rows]
        where = f"study {member.study_id}" if member.study_id else "not run"
        tables.append(SuiteTable(f"{member.name}: {member.workload}, {member.load} ({member.arrangement}; {where})",
                                 ["metric", "unit", "base", "new", "ratio", "interval (level)", "verdict"], rows))
    return tables


def observations(doc: SuiteDocument) -> list[str]:
    """General Observations, in the seeds' manner: the answer first, then each workload."""
    lines = []
    if doc.status != "complete":
        lines.append(f"The suite is {doc.status}" + (f": {doc.reason}" if doc.reason else "") + ".")
    for row in doc.average:
        if row.ratio is None or row.ci_low is None:
            lines.append(f"{row.label} has no average over the {len(doc.members)} workloads: {row.reason}.")
            continue
        interval = (f"{fmt.ci_pct(row.ci_low, row.ci_high)}, bias-bounded: no probability level" if row.level is None
                    else f"{fmt.ci_pct(row.ci_low, row.ci_high)} at a level of at least "
                         f"{fmt.percent_level(row.level)} by the union bound")
        lines.append(f"{row.label} averaged over {len(doc.members)} workloads changed by {fmt.pct(row.ratio - 1.0)} "
                     f"({interval}): {row.verdict or 'no verdict'} against {fmt.margin(doc.margin)}.")
    primary = doc.average[0].key if doc.average else None
    for member in doc.members:
        entry = next((r for r in member.rows if r.key == primary), None)
        if entry is None or entry.ratio is None:
            lines.append(f"{member.name}: no comparison of {primary} ({member.status}).")
        else:
            lines.append(f"{member.name} ({member.load}): {fmt.pct(entry.ratio - 1.0, entry=entry)} "
                         f"({fmt.ci_pct(entry.ci_low, entry.ci_high)}), {verdict_cell(entry)}.")
    return lines


HOW_AVERAGED = (
    "The Average is the geometric mean of the workloads' ratios. Its interval is the geometric mean of their "
    "intervals' bounds -- the very intervals that decided each workload's verdict -- which holds the true "
    "average whenever every workload's interval holds its truth: by the union bound at least 1 minus the sum "
    "of their error rates, whatever the dependence between the studies (the level printed). That is "
    "conservative: it does not shrink with more workloads as an average of independent errors would. When a "
    "workload's interval is bias-bounded (a duet's, widened by its arrangement's bias bound), it has no "
    "probability of its own, and the average states no level."
)


def render_suite_markdown(doc: SuiteDocument, notes: list[str] | None = None) -> str:
    lines = [f"# {escape(doc.title)}", "",
             f"Suite `{doc.suite_id}` ({escape(doc.name)}), {doc.status}; one change, {escape(doc.base)} -> "
             f"{escape(doc.new)}, measured under {len(doc.members)} workloads, each in a study of its own.", "",
             "## General Observations", ""]
    lines += [f"- {escape(line)}" for line in observations(doc)]
    lines += [f"- {escape(note)}" for note in notes or []]
    for t in [summary_table(doc), *member_tables(doc)]:
        lines += ["", f"## {escape(t.title)}", "", *table(t.columns, t.rows)]
    lines += ["", "## How the average is made", "", escape(HOW_AVERAGED), ""]
    return "\n".join(lines)


def render_suite_terminal(doc: SuiteDocument, console: Console) -> None:
    for t in [*member_tables(doc), summary_table(doc)]:
        shown = Table(title=terminal(t.title), title_justify="left")
        for column in t.columns:
            shown.add_column(terminal(column))
        for row in t.rows:
            shown.add_row(*(terminal(c) for c in row))
        console.print(shown)
    if doc.verdict is not None:
        colour = {0: "green", 1: "red", 3: "yellow"}.get(doc.verdict.exit_code, "red")
        console.print(f"[{colour}]{terminal(doc.verdict.meaning)}[/{colour}]")

"""perflab on the terminal: one run (`perflab show`, from the run report's model, the rows its
HTML, Markdown and JSON hold), the summary after `perflab run`, and a study's verdicts.

A row perflab could not measure on this machine shows `na`, as the seeds print it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from perflab.catalog.registry import REGISTRY
from perflab.records.study import MetricComparison, StudyDocument
from perflab.report import numbers as fmt
from perflab.safe_text import terminal as escape
from perflab.stats.criteria import DEFAULT_MARGIN

if TYPE_CHECKING:
    from perflab.report.run.model import RunReport


#: An outcome's tone (perflab.store.outcome.TONES) as a terminal colour.
TONE_COLOURS = {"good": "green", "warn": "yellow", "bad": "red", "live": "cyan"}


def outcome_markup(outcome: Any) -> str:
    """A run's outcome in one line, coloured by its tone: "[red]errors (10.0%)[/red]"."""
    colour = TONE_COLOURS.get(outcome.tone, "red")
    return f"[{colour}]{escape(outcome.short)}[/{colour}]"


def _header(metrics: Any) -> str:
    window = metrics.window
    release = metrics.attributes.get("release")
    parts = [f"[bold]{escape(metrics.run_id)}[/bold]"]
    if release:
        parts.append(f"RELEASE {escape(str(release))}")
    parts.append(f"status {escape(metrics.status)}")
    if metrics.record is not None:
        from perflab.outcome import judge_outcome

        parts.append(f"outcome {outcome_markup(judge_outcome(metrics.record, metrics))}")
    parts.append(f"window {window.start:.1f}–{window.end:.1f} s ({window.duration:.1f} s)")
    return "  ".join(parts)


def render_run(report: RunReport, console: Console) -> None:
    """`perflab show`: one run's report (perflab.report.run.model, the rows its HTML, Markdown
    and JSON renderings hold): the header, the gates, the thresholds, every metric in the seeds'
    groups, the per-class, per-component and per-driver tables, Little's law, the errors and the
    warnings."""
    from perflab.report.run.model import RAW_GROUP

    console.print(f"[bold]{escape(report.title)}[/bold]")
    for name, value in report.header:
        shown = outcome_markup(report.outcome) if name == "outcome" else escape(value)
        console.print(f"  {escape(name)}: {shown}")
    if report.problem:
        console.print(f"[red]{escape(report.problem)}[/red]")
    colour = "green" if report.counted else "red"
    console.print(f"gates: [{colour}]{escape(report.gate_verdict)}[/{colour}] ({escape(report.gate_source)})")
    gates = Table(show_header=True, header_style="bold", pad_edge=False)
    for column in ("gate", "measured", "limit", "result"):
        gates.add_column(column)
    for g in report.gates:
        result = {"pass": "[green]pass[/green]", "FAIL": "[red]FAIL[/red]"}.get(g.result, escape(g.result))
        gates.add_row(escape(g.name), escape(g.measured), escape(g.limit), result)
    console.print(gates)
    for t in report.thresholds:
        met = "[green]threshold met[/green]" if t.result == "pass" else "[red]threshold violated[/red]"
        console.print(f"  {met} {escape(t.expression)}: {escape(t.measured)}" + (f" ({escape(t.why)})" if t.why else ""))
    if report.data is not None:
        table = Table(show_header=True, header_style="bold", title_justify="left", pad_edge=False)
        for column in report.data.columns:
            table.add_column(column, justify="right" if column == "value" else "left",
                             style="dim" if column == "key" else None)
        for group, rows in report.data.groups:
            table.add_row(f"[bold]{escape(group)}[/bold]", *[""] * (len(report.data.columns) - 1))
            for label, value, *rest in rows:
                shown = f"[dim]{escape(value)}[/dim]" if value == fmt.NA else escape(value)
                label = f"[dim]{escape(label)}[/dim]" if group == RAW_GROUP else escape(label)
                table.add_row(f"  {label}", shown, *[escape(c) for c in rest])
            table.add_section()
        console.print(table)
    for titled in report.tables:
        table = Table(title=escape(titled.title), title_justify="left", header_style="bold")
        for i, column in enumerate(titled.table.columns):
            table.add_column(escape(column), justify="left" if i == 0 else "right")
        for row in titled.table.rows:
            table.add_row(*[escape(cell) for cell in row])
        console.print(table)
    if report.little:
        console.print(escape(report.little))
    if report.errors is not None and report.errors.rows:
        table = Table(title="Errors (the whole run)", title_justify="left", header_style="bold")
        for column in report.errors.columns:
            table.add_column(column)
        for row in report.errors.rows:
            table.add_row(*[escape(cell) for cell in row])
        console.print(table)
    if report.warnings:
        console.print("[bold yellow]warnings[/bold yellow]")
        for warning in report.warnings:
            console.print(f"  [yellow]![/yellow] {escape(warning.text)} [dim]({warning.code.value})[/dim]")


def render_summary(metrics: Any, console: Console) -> None:
    """A few headline rows after `perflab run` (the full catalog is `perflab show`)."""
    parts = []
    for key in REGISTRY.role("summary"):
        value = metrics.values.get(key)
        if value is None:
            continue
        metric = REGISTRY[key]
        parts.append(f"{metric.label} {fmt.quantity(value, key)}")
    console.print(_header(metrics))
    console.print("  " + " · ".join(escape(p) for p in parts) if parts else "  no metrics measured")
    for warning in metrics.warnings:
        console.print(f"  [yellow]![/yellow] {escape(warning)}")


def render_thresholds(results: Any, console: Console) -> None:
    """`perflab run`'s thresholds (perflab.catalog.thresholds results), each with the value
    measured; a violated one says so (and `not measured` when the run has no value)."""
    from perflab.report.numbers import quantity

    for r in results:
        shown = f"{escape(r.threshold.expression)}: {escape(quantity(r.value, r.threshold.key))}"
        if r.passed:
            console.print(f"  [green]threshold met[/green] {shown}")
        else:
            console.print(f"  [red]threshold violated[/red] {shown}" + (" (not measured)" if r.value is None else ""))
    bad = sum(1 for r in results if not r.passed)
    if bad:
        console.print(f"[red]{bad} of {len(results)} threshold(s) violated[/red]")


# -- studies and comparisons ----------------------------------------------------------------

def verdict_cell(entry: MetricComparison) -> str:
    """The verdict column as the reports word it (perflab.report.view.verdict_cell), styled."""
    from perflab.report.view import verdict_cell as words

    shown = escape(words(entry))
    if entry.no_comparison:
        return f"[red]{shown}[/red]"
    return shown if entry.verdict else f"[dim]{shown}[/dim]"


def render_verdicts(doc: StudyDocument, console: Console) -> None:
    """A study's (or comparison's) warnings, comparison tables and its answer."""
    from perflab.report.view import interval_cell

    for warning in doc.warnings:
        console.print(f"[yellow]warning:[/yellow] {escape(warning.text)}")
    for comparison in doc.comparisons:
        table = Table(title=f"{escape(comparison.base)} -> {escape(comparison.new)}", title_justify="left")
        level = doc.design.confidence
        for col in ("metric", "unit", "role", "base", "new", "ratio",
                    "CI" if level is None else f"{fmt.percent_level(level)} CI", "p (adj.)", "verdict"):
            table.add_column(col, justify="right" if col in ("base", "new", "ratio", "p (adj.)") else "left")
        for m in comparison.metrics:
            ci = "" if m.ci_low is None else escape(interval_cell(doc, m))
            p = "" if m.p_adjusted is None else fmt.fixed(m.p_adjusted, 3)
            unit = fmt.unit_of(m.key, m)
            base = fmt.value(m.pair_value, m.key, m) + " (pair)" if m.role == "pair" else fmt.value(m.base_value, m.key, m)
            new = "" if m.role == "pair" else fmt.value(m.new_value, m.key, m)
            table.add_row(escape(m.label), escape(unit), m.role, base, new,
                          "" if m.ratio is None else fmt.ratio(m.ratio, m), ci, p, verdict_cell(m))
        console.print(table)
        for m in comparison.metrics:
            if m.role == "primary" and m.no_comparison:
                console.print(f"[red]{escape(m.label)}: {escape(m.no_comparison)}[/red]")
    if doc.aa is not None:
        aa = doc.aa
        console.print(f"A/A: {escape(REGISTRY.label_of(aa.metric))} CV {fmt.pct(aa.cv, signed=False, decimals=2)} over "
                      f"{aa.n_blocks} blocks; {aa.false_claims} false claim(s) of a change; blocks needed for "
                      f"{fmt.margin(aa.margin or DEFAULT_MARGIN)}: {fmt.fixed(aa.blocks_needed, 0)}"
                      + ("" if aa.power is None else f" (P(EQUIVALENT) at {aa.n_blocks} blocks: {aa.power:.2f})"))
    if doc.verdict is not None:
        colour = {0: "green", 1: "red", 3: "yellow", 4: "red"}.get(doc.verdict.exit_code, "yellow")
        console.print(f"[{colour}]{escape(doc.verdict.meaning)}[/{colour}]")

"""`perflab show`: a run's metrics on the terminal, laid out as the seed tables lay them out.

Rows come from the registry (label, unit, decimals, group), in the seeds' group order; a row
perflab could not measure on this machine shows `na`, as the seeds print it. Seed-only rows
(RTM, VMPRF, SFS counters...) are never shown for a perflab run.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from perflab.catalog.metric import Metric, Origin
from perflab.catalog.registry import GROUPS, REGISTRY
from perflab.records.study import MetricComparison, StudyDocument
from perflab.report import numbers as fmt
from perflab.safe_text import terminal as escape
from perflab.stats.criteria import DEFAULT_MARGIN

# The seeds' groups first; perflab's raw window totals (what every other row is made of) last.
SHOWN_GROUPS = tuple(g for g in GROUPS if g not in ("Measurement", "Servers")) + ("Measurement",)
CLASS_COLUMNS = ("tx_ok", "etr_t", "avg_first_t", "avg_last_t", "resp_p50_t", "resp_p90_t", "resp_p95_t",
                 "resp_p99_t", "errors_t")


def format_value(metric: Metric, value: Any) -> str:
    """A value as people read it (perflab.report.numbers: the registry's decimals, thousands
    separators), `na` when unmeasured."""
    if isinstance(value, str):
        return value
    return fmt.value(value, metric.key)


def _fmt(key: str, value: Any) -> str:
    metric = REGISTRY.get(key)
    return format_value(metric, value) if metric else ("na" if value is None else str(value))


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


def render_metrics(metrics: Any, console: Console) -> None:
    """The full catalog of one reduced run (a RunMetrics), then per-class response rows,
    per-component server rows, the Little's-law check and the warnings."""
    console.print(_header(metrics))
    table = Table(show_header=True, header_style="bold", title_justify="left", pad_edge=False)
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_column("unit")
    table.add_column("key", style="dim")
    for group in SHOWN_GROUPS:
        rows = [m for m in REGISTRY.in_group(group, Origin.PERFLAB) if not m.per_component]
        if not rows:
            continue
        table.add_row(f"[bold]{group}[/bold]", "", "", "", end_section=False)
        dim = group == "Measurement"
        for metric in rows:
            value = metrics.attributes.get(metric.key) if metric.text else metrics.values.get(metric.key)
            shown = escape(format_value(metric, value))   # text rows (workload, label...) are user text
            if value is None:
                shown = f"[dim]{shown}[/dim]"
            label = f"[dim]{escape(metric.label)}[/dim]" if dim else escape(metric.label)
            table.add_row(f"  {label}", shown, metric.unit, metric.key)
        table.add_section()
    console.print(table)
    _render_classes(metrics, console)
    _render_components(metrics, console)
    _render_drivers(metrics, console)
    _render_little(metrics, console)
    _render_warnings(metrics, console)


def _render_classes(metrics: Any, console: Console) -> None:
    if not metrics.per_class:
        return
    table = Table(title="Response Time per transaction class", title_justify="left", header_style="bold")
    table.add_column("class")
    for key in CLASS_COLUMNS:
        table.add_column(REGISTRY.label_of(key), justify="right")
    for name, row in metrics.per_class.items():
        table.add_row(escape(name), *[_fmt(key, row.get(key)) for key in CLASS_COLUMNS])
    console.print(table)


def _render_components(metrics: Any, console: Console) -> None:
    if not metrics.per_component:
        return
    keys = [k for k in REGISTRY.perflab_keys(per_component=True) if REGISTRY[k].group == "Servers"]
    table = Table(title="Servers (V): per SUT component", title_justify="left", header_style="bold")
    table.add_column("component")
    for key in keys:
        table.add_column(f"{REGISTRY.label_of(key)} {REGISTRY[key].unit}".strip(), justify="right")
    for name, row in metrics.per_component.items():
        table.add_row(escape(name), *[_fmt(key, row.get(key)) for key in keys])
    console.print(table)


def _render_drivers(metrics: Any, console: Console) -> None:
    from perflab.report.run_view import drivers_table

    view = drivers_table(metrics.record) if getattr(metrics, "record", None) is not None else None
    if view is None:
        return
    table = Table(title=view.title, title_justify="left", header_style="bold")
    for column in view.columns:
        table.add_column(column)
    for row in view.rows:
        table.add_row(*[escape(cell) for cell in row])
    console.print(table)


def _render_little(metrics: Any, console: Console) -> None:
    values = metrics.values
    users, think, last = values.get("users"), values.get("avg_think_t"), values.get("avg_last_t")
    if users is None:
        console.print("Little's law: open loop (no USERS): not applicable")
        return
    predicted, etr, deviation = values.get("little_etr_t"), values.get("etr_t"), values.get("little_dev")
    if predicted is None or etr is None:
        console.print("Little's law: na (think or response time not measured)")
        return
    colour = "green" if deviation is not None and abs(deviation) <= 5 else "yellow"
    console.print(f"Little's law: USERS / (AVG THINK (T) + AVG LAST (T)) = {fmt.fixed(users, 0)} / "
                  f"({_fmt('avg_think_t', think)} + {_fmt('avg_last_t', last)}) = {fmt.quantity(predicted, 'little_etr_t')}"
                  f" vs ETR (T) {fmt.quantity(etr, 'etr_t')}: "
                  f"[{colour}]{'na' if deviation is None else fmt.fixed(deviation, 1, signed=True)} %[/{colour}]")


def _render_warnings(metrics: Any, console: Console) -> None:
    if not metrics.warnings:
        return
    console.print("[bold yellow]warnings[/bold yellow]")
    for warning in metrics.warnings:
        console.print(f"  [yellow]![/yellow] {escape(warning)}")


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
        cv = "na" if aa.cv is None else f"{100 * aa.cv:.2f}%"
        console.print(f"A/A: {escape(REGISTRY.label_of(aa.metric))} CV {cv} over {aa.n_blocks} blocks; "
                      f"{aa.false_claims} false claim(s) of a change; blocks needed for ±"
                      f"{100 * (aa.margin or DEFAULT_MARGIN):g}%: {aa.blocks_needed if aa.blocks_needed is not None else 'na'}"
                      + ("" if aa.power is None else f" (P(EQUIVALENT) at {aa.n_blocks} blocks: {aa.power:.2f})"))
    if doc.verdict is not None:
        colour = {0: "green", 1: "red", 3: "yellow", 4: "red"}.get(doc.verdict.exit_code, "yellow")
        console.print(f"[{colour}]{escape(doc.verdict.meaning)}[/{colour}]")

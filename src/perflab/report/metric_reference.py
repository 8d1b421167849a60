"""docs/metrics.md, generated from the metric registry (the one place formulas live), so the
reference can never disagree with the code. `perflab metrics --markdown` prints it."""

from __future__ import annotations

from perflab.catalog.registry import REGISTRY


def _row(metric) -> str:
    if metric.formulas:
        how = "; ".join(f"`{f.expression}`" + (f" (≈ {100 * f.approx:g}%)" if f.approx else "") for f in metric.formulas)
    else:
        how = "measured: " + (metric.measurement or "raw")
    direction = getattr(metric.direction, "value", metric.direction)
    better = "" if direction == "none" else direction
    text = _cell(" ".join(metric.description.split()))
    return (f"| {metric.label} | `{metric.key}` | {metric.unit or ''} | {metric.source or ''} | "
            f"{better} | {_cell(how)} | {text} |")


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render_metric_reference() -> str:
    perflab_keys = set(REGISTRY.perflab_keys())
    lines = [
        "# Metric reference",
        "",
        "Generated from `src/perflab/catalog/registry.py` by `perflab metrics --markdown > docs/metrics.md`;",
        "a test keeps it in step with the code. The catalog it implements is ../shared/spec/metrics.md.",
        "Source suffixes: (T) the driver, (H) the whole machine (/proc/stat of the run's CPUs), (S) the",
        "SUT's processes or cgroup, (V) a SUT component, (I) CPU counters or valgrind, none: the SUT's own",
        "counters. Every per-command row divides by ETR (T) over the measurement window. `na` when a",
        "metric's inputs could not be measured; never a guess. Direction: which way is better in a verdict.",
        "",
    ]
    by_group: dict[str, list] = {}
    for metric in REGISTRY:
        if metric.key in perflab_keys:
            by_group.setdefault(metric.group, []).append(metric)
    for group, metrics in by_group.items():
        lines += [f"## {group}", "", "| label | key | unit | source | better | formula | meaning |",
                  "|---|---|---|---|---|---|---|"]
        lines += [_row(m) for m in metrics]
        lines.append("")
    seed = [m for m in REGISTRY if m.key not in perflab_keys]
    lines += ["## Seed-only rows", "",
              f"{len(seed)} further rows exist only in the seed reports (RTM, VMPRF, SFS counters, guest batch",
              "tables...). perflab cannot measure them, but `perflab derive` recomputes the derivable ones from",
              "published tables with these formulas:", "",
              "| label | key | formula |", "|---|---|---|"]
    for m in seed:
        if m.formulas:
            formula = _cell("; ".join(f"`{f.expression}`" for f in m.formulas))
            lines.append(f"| {m.label} | `{m.key}` | {formula} |")
    lines.append("")
    return "\n".join(lines)


def render_metric_table():
    """`perflab metrics` on the terminal: the perflab catalog as a rich table."""
    from rich.table import Table

    table = Table(title="perflab metric catalog", title_justify="left")
    for col in ("group", "label", "key", "unit", "formula"):
        table.add_column(col)
    keys = set(REGISTRY.perflab_keys())
    for m in REGISTRY:
        if m.key in keys:
            formula = "; ".join(f.expression for f in m.formulas) if m.formulas else "measured"
            table.add_row(m.group, m.label, m.key, m.unit or "", formula)
    return table

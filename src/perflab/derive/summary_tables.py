"""Summary tables with columns of their own (methodology 1.8), recognized by their headers.

* Measurement pairs (`pair`, `itr_ratio`, `symbol`, ...: the seeds' Table 3). An `avg` row is
  the transition's symbol, the mean of its numbered pairs' ITRRs; a pair's ITRR is
  ITR (H) of the `to` run over the `from` run and its base Pg/cmd is PAGE/CMD + XSTOR/CMD of
  the `from` run, checkable when those runs' tables are siblings.
* Release ITRR matrix (`derivation`, `itrr_*`: Table 2). Each migration's ITRR is the
  product of its transitions' symbols (`R20*R21*R1E`); symbols come from a sibling pairs
  table, or, for symbols no pairs table defines (R13A), from the matrix row that prints it.
  The computation, and the one rule for doubtful (`?`) cells, are in `release_matrix.py`,
  which `perflab capacity matrix` shares.
* Run summaries (`run_id` plus metric columns: Table 1). A ratio column is relative to the
  first row; other metric columns repeat values of runs tabulated elsewhere.

Every formula is the registry's: mean_of, compose, and the relative-to-base rule.
"""

from __future__ import annotations

from perflab.catalog.metric import SUMMARY, Metric, Registry
from perflab.catalog.registry import compose
from perflab.derive.checks import Check, Gap, Outcome, first_problem, judge
from perflab.derive.interval import Interval
from perflab.derive.release_matrix import PAIRS, judge_doubtful, pairs_mean, release_matrix
from perflab.derive.siblings import Siblings
from perflab.derive.table import Cell, Row, Table


def _check(row_label: str, column: str, row: Row, cell: Cell, outcome: Outcome, text: str) -> Check:
    status, reason, deviation = judge(cell, outcome)
    recomputed = outcome if isinstance(outcome, Interval) else None
    return Check(row_label, column, row.line, cell, recomputed, status, text, reason, None, deviation)


def _metric_for_column(registry: Registry, header: str) -> Metric | None:
    metric = registry.get(header.strip())
    if metric is not None:
        return metric
    found = registry.candidates(header)
    for candidate, context in found:
        if context == SUMMARY:
            return candidate
    return found[0][0] if found else None


# -- measurement pairs ---------------------------------------------------------------------

def check_pairs(table: Table, registry: Registry, siblings: Siblings | None) -> list[Check]:
    checks: list[Check] = []
    itrr = registry["itrr_h"]
    base_pg = _metric_for_column(registry, "base_pg_per_cmd")
    for row in table.rows:
        ratio = table.cell(row, "itr_ratio")
        label = f"pair {row.label}: {table.text(row, 'transition')}"
        if row.label.strip().lower() == "avg":
            mean = pairs_mean(table, row)
            if mean is None:
                continue
            judged = judge_doubtful(ratio, mean.value, mean.problem, mean.doubt)
            checks.append(Check(label, "itr_ratio", row.line, ratio, judged.value, judged.status, mean.formula,
                                judged.reason))
            continue
        if siblings is None:
            continue
        source, target = table.text(row, "from_runid"), table.text(row, "to_runid")
        if not source or source.endswith("?") or not target or target.endswith("?"):
            continue    # an uncertain run id cannot be looked up
        to_value, to_table = siblings.value(target, itrr.relative_to or "")
        from_value, from_table = siblings.value(source, itrr.relative_to or "")
        if to_value is not Gap.ABSENT and from_value is not Gap.ABSENT:
            outcome = first_problem([to_value, from_value]) or itrr.ratio_to_base(to_value, from_value)
            text = f"ITR (H) of {target} ({to_table}) / ITR (H) of {source} ({from_table})"
            checks.append(_check(label, "itr_ratio", row, ratio, outcome, text))
        if base_pg is not None and table.column_index("base_pg_per_cmd") is not None:
            value, name = siblings.value(source, base_pg.key)
            if value is not Gap.ABSENT:
                text = f"{base_pg.label} of {source} ({name})"
                checks.append(_check(label, "base_pg_per_cmd", row, table.cell(row, "base_pg_per_cmd"), value,
                                     text))
    return checks


# -- release ITRR matrix -------------------------------------------------------------------

def check_matrix(table: Table, siblings: Siblings | None) -> tuple[list[Check], list[str]]:
    """Every printed `itrr_*` cell against the product of its row's symbols (release_matrix.py)."""
    pairs = [t for t in siblings.summary_tables if t.layout == PAIRS] if siblings else []
    matrix = release_matrix(table, pairs)
    checks: list[Check] = []
    for composed in matrix.rows:
        for column in matrix.targets:
            judged = composed.judged(column)
            if judged is None:
                continue
            checks.append(Check(composed.label, column, composed.row.line, composed.cells[column], judged.value,
                                judged.status, composed.formula, judged.reason))
    return checks, matrix.notes


# -- run summaries -------------------------------------------------------------------------

def check_runs(table: Table, registry: Registry, siblings: Siblings | None) -> list[Check]:
    checks: list[Check] = []
    id_column = "run_id"
    rows = table.rows
    if not rows:
        return checks
    run_ids = [table.text(r, id_column) for r in rows]
    for header in table.header:
        metric = _metric_for_column(registry, header)
        if metric is None or header.strip().lower() == id_column or metric.text:
            continue
        if metric.relative:
            checks += _relative_column(table, header, metric, registry.label_of(metric.relative_to or ''), run_ids, siblings)
        elif siblings is not None:
            for row, run_id in zip(rows, run_ids):
                value, name = siblings.value(run_id, metric.key)
                if value is Gap.ABSENT:
                    continue
                text = f"{metric.label} of {run_id} ({name})"
                checks.append(_check(run_id, header, row, table.cell(row, header), value, text))
    return checks


def _relative_column(table: Table, header: str, metric: Metric, label: str, run_ids: list[str],
                     siblings: Siblings | None) -> list[Check]:
    """Ratio to the first row. The base run may not be tabulated anywhere; then any run that is
    (k) anchors the others through r/base = (r/k) · (k/base)."""
    checks: list[Check] = []
    rows = table.rows
    base_cell = table.cell(rows[0], header)
    checks.append(_check(run_ids[0], header, rows[0], base_cell, Interval.point(metric.relative_scale),
                         "base row"))
    if siblings is None or metric.relative_to is None:
        return checks
    known = {run_id: siblings.value(run_id, metric.relative_to) for run_id in run_ids}
    base_value, base_name = known[run_ids[0]]
    anchor = None
    if base_value is Gap.ABSENT:
        anchor = next((i for i in range(1, len(rows)) if isinstance(known[run_ids[i]][0], Interval)
                       and table.cell(rows[i], header).known), None)
        if anchor is None:
            return checks
    for i in range(1, len(rows)):
        value, name = known[run_ids[i]]
        if value is Gap.ABSENT or i == anchor:
            continue
        if anchor is None:
            outcome = first_problem([value, base_value]) or metric.ratio_to_base(value, base_value)
            text = f"{label} of {run_ids[i]} ({name}) / of {run_ids[0]} ({base_name})"
        else:
            k = run_ids[anchor]
            k_value, k_name = known[k]
            k_ratio = table.cell(rows[anchor], header).interval()
            outcome = first_problem([value, k_value]) or (
                compose([metric.ratio_to_base(value, k_value), k_ratio]) / metric.relative_scale)
            text = f"{label} of {run_ids[i]} ({name}) / of {k} ({k_name}) * {header} of {k}"
        checks.append(_check(run_ids[i], header, rows[i], table.cell(rows[i], header), outcome, text))
    return checks

"""Summary tables with columns of their own (methodology 1.8), recognized by their headers.

* Measurement pairs (`pair`, `itr_ratio`, `symbol`, ...: the seeds' Table 3). An `avg` row is
  the transition's symbol, the mean of its numbered pairs' ITRRs; a pair's ITRR is
  ITR (H) of the `to` run over the `from` run and its base Pg/cmd is PAGE/CMD + XSTOR/CMD of
  the `from` run, checkable when those runs' tables are siblings.
* Release ITRR matrix (`derivation`, `itrr_*`: Table 2). Each migration's ITRR is the
  product of its transitions' symbols (`R20*R21*R1E`); symbols come from a sibling pairs
  table, or, for symbols no pairs table defines (R13A), from the matrix row that prints it.
* Run summaries (`run_id` plus metric columns: Table 1). A ratio column is relative to the
  first row; other metric columns repeat values of runs tabulated elsewhere.

Every formula is the registry's: mean_of, compose, and the relative-to-base rule.
"""

from __future__ import annotations

import re

from perflab.derive.checks import Check, Gap, Outcome, Status, Unknown, first_problem, judge
from perflab.derive.interval import Interval
from perflab.derive.siblings import Siblings
from perflab.derive.table import Cell, Kind, Row, Table
from perflab.catalog.metric import SUMMARY, Metric, Registry
from perflab.catalog.registry import compose, mean_of


def _cell(table: Table, row: Row, column: str) -> Cell:
    index = table.column_index(column)
    if index is None:
        return Cell("", Kind.EMPTY)
    return Cell.parse(row.label) if index == 0 else row.cells[index - 1]


def _text(table: Table, row: Row, column: str) -> str:
    return _cell(table, row, column).text


def _as_outcome(cell: Cell, what: str) -> Outcome:
    if cell.kind is Kind.NUMBER:
        return cell.interval()
    if cell.kind is Kind.NA:
        return Gap.NA
    return Unknown(f"{what} printed {cell.text!r}")


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

def _transition(text: str) -> str:
    return " ".join(text.rstrip("?").split()).lower()


def pair_symbols(table: Table) -> dict[str, Outcome]:
    """Symbol → ITRR printed on the row that defines it (an avg row, or a single pair)."""
    symbols: dict[str, Outcome] = {}
    for row in table.rows:
        name = _text(table, row, "symbol").strip()
        if not name:
            continue
        if name.endswith("?"):
            symbols.setdefault(name.rstrip("?"), Unknown(f"symbol {name} is marked uncertain"))
            continue
        symbols.setdefault(name, _as_outcome(_cell(table, row, "itr_ratio"), f"{name}"))
    return symbols


def check_pairs(table: Table, registry: Registry, siblings: Siblings | None) -> list[Check]:
    checks: list[Check] = []
    itrr = registry["itrr_h"]
    base_pg = _metric_for_column(registry, "base_pg_per_cmd")
    numbered = [r for r in table.rows if r.label.strip().isdigit()]
    for row in table.rows:
        ratio = _cell(table, row, "itr_ratio")
        label = f"pair {row.label}: {_text(table, row, 'transition')}"
        if row.label.strip().lower() == "avg":
            members = [r for r in numbered if _transition(_text(table, r, "transition"))
                       == _transition(_text(table, row, "transition"))]
            if not members:
                continue
            values = [_as_outcome(_cell(table, r, "itr_ratio"), f"pair {r.label} itr_ratio") for r in members]
            outcome = first_problem(values) or mean_of(values)
            text = f"mean_of(itr_ratio of pairs {', '.join(r.label for r in members)})"
            checks.append(_check(label, "itr_ratio", row, ratio, outcome, text))
            continue
        if siblings is None:
            continue
        source, target = _text(table, row, "from_runid"), _text(table, row, "to_runid")
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
                checks.append(_check(label, "base_pg_per_cmd", row, _cell(table, row, "base_pg_per_cmd"), value,
                                     text))
    return checks


# -- release ITRR matrix -------------------------------------------------------------------

_SYMBOL = re.compile(r"^R[0-9A-Z]+$")
_RANGE = re.compile(r"^\s*(\d*\.\d+|\d+)\s*-\s*(\d*\.\d+|\d+)\s*$")


def _matrix_cell(text: str) -> Cell:
    """A printed ITRR; the recomputed column also holds ranges ("0.76-0.77") and notes
    ("1.04 (1.0465 unrounded)"): a range is the span of its ends' rounding intervals, a note
    after the number is ignored."""
    m = _RANGE.match(text)
    if m:
        low, high = Cell.parse(m.group(1)), Cell.parse(m.group(2))
        lo, hi = low.value - low.half, high.value + high.half
        return Cell(text, Kind.NUMBER, (lo + hi) / 2, (hi - lo) / 2)
    return Cell.parse(text.split("(")[0]) if "(" in text and not text.strip().endswith("?") else Cell.parse(text)


def _factors(derivation: str) -> list[str] | None:
    expression = derivation.split("=")[0]
    factors = [f.strip() for f in expression.split("*")]
    return factors if all(_SYMBOL.match(f) for f in factors) else None


def check_matrix(table: Table, registry: Registry, siblings: Siblings | None) -> tuple[list[Check], list[str]]:
    notes: list[str] = []
    symbols: dict[str, Outcome] = {}
    for other in (siblings.summary_tables if siblings else []):
        if other.layout == "pairs":
            found = pair_symbols(other)
            if found:
                notes.append(f"symbols {', '.join(sorted(found))} from {other.path.name}")
            for name, value in found.items():
                symbols.setdefault(name, value)
    targets = [h for h in table.header if h.strip().lower().startswith("itrr")]
    defined_here: dict[int, str] = {}
    for i, row in enumerate(table.rows):
        derivation = _text(table, row, "derivation")
        factors = _factors(derivation) if "?" not in derivation else None
        if factors and len(factors) == 1 and factors[0] not in symbols:
            printed = _cell(table, row, targets[0]) if targets else Cell("", Kind.EMPTY)
            if printed.kind is Kind.NUMBER:
                symbols[factors[0]] = printed.interval()
                defined_here[i] = factors[0]
    if defined_here:
        notes.append(f"symbols {', '.join(sorted(defined_here.values()))} defined by this table's own rows")

    checks: list[Check] = []
    for i, row in enumerate(table.rows):
        derivation = _text(table, row, "derivation")
        if not derivation:
            continue
        case = _text(table, row, "case")
        label = f"{row.label} -> {_text(table, row, 'to')}" + (f" ({case})" if case else "")
        factors = _factors(derivation)
        if "?" in derivation:
            outcome: Outcome = Unknown(f"derivation {derivation!r} is marked uncertain")
        elif factors is None:
            outcome = Unknown(f"derivation {derivation!r} is not a product of symbols")
        else:
            values = [symbols.get(f, Unknown(f"symbol {f} is not defined")) for f in factors]
            outcome = first_problem(values) or compose(values)
        text = f"compose({derivation.split('=')[0].strip()})"
        for column in targets:
            cell = _matrix_cell(_text(table, row, column))
            if i in defined_here:
                checks.append(Check(label, column, row.line, cell, None, Status.DEFINES, text,
                                    f"defines {defined_here[i]}"))
                continue
            if cell.kind is Kind.EMPTY:
                continue
            checks.append(_check(label, column, row, cell, outcome, text))
    return checks, notes


# -- run summaries -------------------------------------------------------------------------

def check_runs(table: Table, registry: Registry, siblings: Siblings | None) -> list[Check]:
    checks: list[Check] = []
    id_column = "run_id"
    rows = table.rows
    if not rows:
        return checks
    run_ids = [_text(table, r, id_column) for r in rows]
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
                checks.append(_check(run_id, header, row, _cell(table, row, header), value, text))
    return checks


def _relative_column(table: Table, header: str, metric: Metric, label: str, run_ids: list[str],
                     siblings: Siblings | None) -> list[Check]:
    """Ratio to the first row. The base run may not be tabulated anywhere; then any run that is
    (k) anchors the others through r/base = (r/k) · (k/base)."""
    checks: list[Check] = []
    rows = table.rows
    base_cell = _cell(table, rows[0], header)
    checks.append(_check(run_ids[0], header, rows[0], base_cell, Interval.point(metric.relative_scale),
                         "base row"))
    if siblings is None or metric.relative_to is None:
        return checks
    known = {run_id: siblings.value(run_id, metric.relative_to) for run_id in run_ids}
    base_value, base_name = known[run_ids[0]]
    anchor = None
    if base_value is Gap.ABSENT:
        anchor = next((i for i in range(1, len(rows)) if isinstance(known[run_ids[i]][0], Interval)
                       and _cell(table, rows[i], header).known), None)
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
            k_ratio = _cell(table, rows[anchor], header).interval()
            outcome = first_problem([value, k_value]) or (
                compose([metric.ratio_to_base(value, k_value), k_ratio]) / metric.relative_scale)
            text = f"{label} of {run_ids[i]} ({name}) / of {k} ({k_name}) * {header} of {k}"
        checks.append(_check(run_ids[i], header, rows[i], _cell(table, rows[i], header), outcome, text))
    return checks

"""Recomputing every derivable row of a metric-format table (first column `metric`).

A row is derivable when the registry gives its metric a formula whose inputs are rows of the
same table (or are themselves derivable from them). Each input is taken as printed, ± half a
unit in its last digit: the seeds computed derived rows from rounded intermediates (Table 24:
ETR % of Native = 100 × 0.444 / 0.467 = 95.1, where the unrounded ETRs give 95.17), so an
input's printed interval is the one that covers both ways of computing. Only where an input
is not printed, or is marked unknown (`?`), is it recomputed from the raw rows -- so a `?` on
an intermediate row does not block the rows that depend on it when the raw rows still
determine it.

Ratio rows (ITRR...) are relative to a base column: the first run column, or, when the table
restarts its comparison (VSE Table 30: cols 1→2 and 3→4), the latest earlier column whose
printed ratio is exactly the unit value (1.000, 100).

Change columns (DELTA, PERCENT, Pct., Delta (%)) hold the change between two run columns: which
two, and when the table does not say, in changes.py. A parameter-first table (first column LRECL,
BLKSIZE, a trace number...) is read the same way, but its rows are parameter values, not
metrics: only its change columns are derivable.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from perflab.catalog.metric import Formula, Metric, Registry
from perflab.derive.changes import Elsewhere, change_outcome, plan_changes
from perflab.derive.checks import Check, Gap, Outcome, Unknown, first_problem, judge
from perflab.derive.interval import Interval
from perflab.derive.resolve import RowMeaning, resolve_rows
from perflab.derive.table import Cell, Kind, Row, Table

PARAMETER = "parameter"


@dataclass
class MetricTableResult:
    table: Table
    context: str
    meanings: list[RowMeaning | None]
    checks: list[Check]
    run_columns: list[int]
    names_runs_elsewhere: bool = False


#: A run's printed value of a metric in a table beside this one: (run id, component, key) ->
#: the value (Gap.ABSENT when none prints it). Given by `Siblings.printed`.
Beside = Callable[[str, str, str], Outcome]


class MetricTable:
    def __init__(self, table: Table, registry: Registry, beside: Beside | None = None):
        self.table = table
        self.registry = registry
        self.beside = beside
        if table.layout == PARAMETER:
            # Rows are values of the parameter (LRECL 80, 132, 4096), never metric names.
            self.meanings: list[RowMeaning | None] = [None] * len(table.rows)
            self.context = PARAMETER
        else:
            self.meanings, self.context = resolve_rows([r.label for r in table.rows], registry)
        self.changes, self.run_columns = plan_changes(table)
        self.rows: dict[tuple[str, str], Row] = {}
        for row, meaning in zip(table.rows, self.meanings):
            if meaning is not None:
                self.rows.setdefault((meaning.component, meaning.metric.key), row)
        self._memo: dict[tuple[str, str, int], Outcome] = {}
        self._active: set[tuple[str, str, int]] = set()

    # values ------------------------------------------------------------------------------
    def _scope(self, component: str, key: str) -> str:
        return component if self.registry[key].per_component else ""

    def printed(self, component: str, key: str, col: int) -> Outcome:
        row = self.rows.get((self._scope(component, key), key))
        if row is None:
            return Gap.ABSENT
        cell = row.cells[col]
        if cell.kind is Kind.NUMBER:
            return cell.interval(exact=self.registry[key].exact_count)
        if cell.kind is Kind.NA:
            return Gap.NA
        if cell.kind is Kind.UNKNOWN:
            return Unknown(f"{row.label} printed {cell.text!r}")
        return Unknown(f"{row.label} printed {cell.text!r}, not a number")

    def _printed_half(self, component: str, key: str, col: int) -> float:
        """Half a unit of the row's printed precision, read from a `?` cell's digits."""
        row = self.rows.get((self._scope(component, key), key))
        if row is None:
            return 0.0
        guess = Cell.parse(row.cells[col].text.rstrip("?"))
        return guess.half if guess.kind is Kind.NUMBER else 0.0

    def value(self, component: str, key: str, col: int) -> Outcome:
        """The best-known value of a metric in one column (printed and/or recomputed)."""
        component = self._scope(component, key)
        memo_key = (component, key, col)
        if memo_key in self._memo:
            return self._memo[memo_key]
        printed = self.printed(component, key, col)
        if memo_key in self._active:      # a cycle of alternative formulas: stop at the printed value
            return printed
        self._active.add(memo_key)
        try:
            derived = self._derived(component, key, col)
        finally:
            self._active.discard(memo_key)
        result = _combine(printed, derived, self._printed_half(component, key, col))
        metric = self.registry[key]
        if result is Gap.ABSENT and metric.fallback:
            result = self.value(component, metric.fallback, col)
        self._memo[memo_key] = result
        return result

    def _derived(self, component: str, key: str, col: int) -> Outcome:
        metric = self.registry[key]
        if metric.relative:
            return self.relative(component, metric, col)
        outcomes = [self.recompute(component, formula, col) for formula in metric.formulas if formula.exact]
        intervals = [o for o in outcomes if isinstance(o, Interval)]
        if intervals:
            best = intervals[0]
            for other in intervals[1:]:
                if best.overlaps(other):
                    best = best.intersect(other)
            return best
        return first_problem(outcomes) or Gap.ABSENT

    def recompute(self, component: str, formula: Formula, col: int) -> Outcome:
        args: list[Outcome] = []
        for key in formula.inputs:
            value = self.value(component, key, col)
            if value is Gap.ABSENT and key in formula.optional:
                value = Interval.point(0.0)    # the block omits rows that are zero in every run
            args.append(value)
        problem = first_problem(args)
        if problem is not None:
            return problem
        return formula(*args)

    def base_column(self, component: str, metric: Metric, col: int) -> int:
        base = self.run_columns[0]
        row = self.rows.get((component, metric.key))
        if row is None:
            return base
        for i in self.run_columns:
            if i > col:
                break
            cell = row.cells[i]
            if cell.kind is Kind.NUMBER and cell.value == metric.relative_scale:
                base = i
        return base

    def relative(self, component: str, metric: Metric, col: int) -> Outcome:
        assert metric.relative_to is not None
        base = self.base_column(component, metric, col)
        base_value = self.value(component, metric.relative_to, base)
        if col == base:
            if isinstance(base_value, Interval):
                return Interval.point(metric.relative_scale)
            return base_value
        value = self.value(component, metric.relative_to, col)
        problem = first_problem([value, base_value])
        if problem is not None:
            return problem
        return metric.ratio_to_base(value, base_value)

    # checks ------------------------------------------------------------------------------
    def label_of(self, component: str) -> Callable[[str], str]:
        def label(key: str) -> str:
            metric = self.registry.get(key)
            if metric is None:
                return key
            return f"{component} {metric.label}" if component and metric.per_component else metric.label
        return label

    def checks(self) -> list[Check]:
        checks: list[Check] = []
        for row, meaning in zip(self.table.rows, self.meanings):
            if meaning is None or meaning.metric.text:
                continue
            if self.rows.get((meaning.component, meaning.metric.key)) is not row:
                continue          # a repeated row: the first one is checked
            checks += self._row_checks(row, meaning)
        checks += self._change_checks()
        return checks

    def _row_checks(self, row: Row, meaning: RowMeaning) -> list[Check]:
        metric, component = meaning.metric, meaning.component
        label = self.label_of(component)
        out: list[Check] = []
        for col in self.run_columns:
            column = self.table.columns[col]
            if metric.relative_to is not None:  # metric.relative
                outcome = self.relative(component, metric, col)
                if outcome is not Gap.ABSENT:
                    base = self.table.columns[self.base_column(component, metric, col)]
                    scale = "" if metric.relative_scale == 1 else f"{metric.relative_scale:g} * "
                    text = f"{scale}{label(metric.relative_to)} / {label(metric.relative_to)} of {base}"
                    out.append(self._check(row, col, column, outcome, text, None))
            for formula in metric.formulas:
                outcome = self.recompute(component, formula, col)
                if outcome is Gap.ABSENT:
                    continue
                out.append(self._check(row, col, column, outcome, formula.text(label), formula.approx))
        return out

    def _check(self, row: Row, col: int, column: str, outcome: Outcome, text: str,
               approx: float | None) -> Check:
        cell = row.cells[col]
        status, reason, deviation = judge(cell, outcome, approx)
        recomputed = outcome if isinstance(outcome, Interval) else None
        return Check(self.row_name(row), column, row.line, cell, recomputed, status, text, reason, approx, deviation,
                     col)

    @property
    def names_runs_elsewhere(self) -> bool:
        """A change column names runs that are not columns of this table (Table 33)."""
        return any(change.elsewhere is not None for change in self.changes)

    def _elsewhere(self, meaning: RowMeaning | None) -> Elsewhere:
        def printed(run: str, row: Row) -> Outcome:
            if meaning is None or self.beside is None:
                return Gap.ABSENT      # a row the registry does not know cannot be looked up
            return self.beside(run, meaning.component, meaning.metric.key)
        return printed

    def row_name(self, row: Row) -> str:
        """A row as the report names it: its label, or in a parameter table `LRECL 80`."""
        if self.table.layout == PARAMETER and row.section:
            return f"{row.section} {row.label}"
        return row.label

    def _change_checks(self) -> list[Check]:
        out: list[Check] = []
        for change in self.changes:
            column = self.table.column_name(change.index)
            text = change.formula(self.table.columns)
            for row, meaning in zip(self.table.rows, self.meanings):
                if row.cells[change.index].kind is Kind.EMPTY or (meaning is not None and meaning.metric.text):
                    continue
                exact = meaning is not None and meaning.metric.exact_count
                outcome = change_outcome(self.table, row, change, exact,
                                         self._elsewhere(meaning) if self.beside is not None else None)
                if outcome is None:
                    continue      # a descriptive row (RELEASE...) has no change to check
                out.append(self._check(row, change.index, column, outcome, text, None))
        return out


def _combine(printed: Outcome, derived: Outcome, half: float) -> Outcome:
    if isinstance(printed, Interval):
        return printed
    if isinstance(derived, Interval):
        # Standing in for a printed-but-unknown cell, the recomputed value keeps the row's
        # rounding: the seeds may have used the rounded figure downstream.
        return Interval(derived.lo - half, derived.hi + half)
    if printed is Gap.ABSENT:
        return derived
    return printed


def check_metric_table(table: Table, registry: Registry, beside: Beside | None = None) -> MetricTableResult:
    evaluator = MetricTable(table, registry, beside)
    return MetricTableResult(table, evaluator.context, evaluator.meanings, evaluator.checks(),
                             evaluator.run_columns, evaluator.names_runs_elsewhere)

"""What a metric is, and the registry that holds every one of them.

The catalog itself (which metrics exist, their labels and formulas) lives in `registry.py`;
this module is the machinery: the `Metric` and `Formula` records, label normalization and
lookup, and the evaluation rule that turns measured values into derived ones.

Formulas are written as small arithmetic expressions over other metrics' keys, for example
``"10 * total_h / etr_t"``. Each is compiled once into an ordinary Python function whose
parameters are those keys. Keeping formulas to + − × ÷ and constants is deliberate: the same
function then evaluates on floats (reduction of a run) and on rounding intervals (`perflab
derive`, which checks published tables), and its inputs and its printable text are read from
the expression itself rather than kept by hand beside it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from perflab.values import finite

Value = float | None


class Direction(str, Enum):
    """Which way is better; comparisons turn a delta into a verdict with it."""

    HIGHER = "higher"
    LOWER = "lower"
    NONE = "none"


class Origin(str, Enum):
    """Who can produce the metric.

    PERFLAB metrics are measured or derived for every perflab run and printed by `perflab show`.
    SEED metrics exist only in the seed reports (RTM, VMPRF, SFS counters, MVS/VSE guests...):
    perflab cannot measure them, but `perflab derive` must recompute them from published tables.
    """

    PERFLAB = "perflab"
    SEED = "seed"


class Span(str, Enum):
    """When a metric is measured, relative to the measurement window -- what a validity gate
    about the window protects (perflab.study.validity: each gate says which spans it protects).

    WINDOW metrics are measured over the window (rates, response times, CPU per command): they
    depend on the load's pace, so a run whose pace was not the SUT's (its driver saturated, its
    series not steady) is no evidence of them. AFTER metrics are measured once the window has
    ended (a server crashed after its load and timed as it recovers): they depend on what the
    load left behind (the write-ahead log its jobs wrote), not on how fast it was driven."""

    WINDOW = "window"
    AFTER = "after"


# Table contexts: the same printed label can mean different things in different families of
# published tables ("ITR" is RTM's ITR in a CMS table, jobs per CPU-minute in a VSE guest table).
# A label is looked up together with the context of the table it appears in.
CMS = "cms"            # CMS-intensive / OfficeVision measurement tables, and perflab's own layout
BATCH = "batch"        # MVS and VSE guest batch tables
SFS = "sfs"            # Appendix B SFS counters
ZOS = "zos"            # z/OS performance-update tables
SERVER = "server"      # server-capacity (DASD fast write) and server-state tables
INSTVER = "instver"    # ISFC/PWSCS communications sweeps
SUMMARY = "summary"    # column-oriented summary tables (pairs, release matrix, run summaries)
ANY = "any"            # environment rows that mean the same everywhere; they never decide a context


@dataclass(frozen=True)
class Alias:
    """Another printed spelling of a metric's label, optionally only in one table context,
    optionally a regular expression (for labels that embed a free-text unit)."""

    label: str
    context: str | None = None
    pattern: bool = False


_ALLOWED_NODES = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Name, ast.Constant, ast.Load,
                  ast.Add, ast.Sub, ast.Mult, ast.Div, ast.USub)


@dataclass(frozen=True)
class Formula:
    """One way to compute a metric from others.

    `approx` is a relative tolerance when the identity only holds approximately (RTM's own ITR,
    which the monitor computes internally). `optional` inputs are rows a published table leaves
    out when they are zero in every run (the SFS counter blocks do); they count as 0 when absent
    from a table, never when a measurement is missing.
    """

    expression: str
    approx: float | None = None
    optional: frozenset[str] = frozenset()
    note: str = ""
    inputs: tuple[str, ...] = field(init=False)
    fn: Callable[..., Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        tree = ast.parse(self.expression, mode="eval")
        found: list[ast.Name] = []
        for node in ast.walk(tree):
            if not isinstance(node, _ALLOWED_NODES):
                raise ValueError(f"formula {self.expression!r}: only + - * / and constants are allowed")
            if isinstance(node, ast.Name):
                found.append(node)
        # Parameters in the order they are written (ast.walk is breadth-first).
        names = list(dict.fromkeys(n.id for n in sorted(found, key=lambda n: n.col_offset)))
        # A real function, compiled once: `lambda a, b: <expression>`.
        source = f"lambda {', '.join(names)}: {self.expression}"
        fn = eval(compile(source, f"<formula {self.expression}>", "eval"), {"__builtins__": {}})
        object.__setattr__(self, "inputs", tuple(names))
        object.__setattr__(self, "fn", fn)

    @property
    def exact(self) -> bool:
        return self.approx is None

    def __call__(self, *args: Any) -> Any:
        return self.fn(*args)

    def text(self, label_of: Callable[[str], str]) -> str:
        """The expression with keys replaced by printed labels, e.g. "10 * TOTAL (H) / ETR (T)"."""
        return re.sub(r"\b[a-z_][a-z0-9_]*\b", lambda m: label_of(m.group(0)), self.expression)


def F(expression: str, approx: float | None = None, optional: Iterable[str] = (), note: str = "") -> Formula:
    """Short constructor used by the catalog."""
    return Formula(expression, approx, frozenset(optional), note)


@dataclass(frozen=True)
class Sampled:
    """Where a raw metric's value comes from in samples.parquet (the reduction reads it here and
    nowhere else). `columns`: groups of columns in order of preference -- the first group with
    a column present is used (every column of it, with `need_all`; else those present), the
    difference of their sum across the window, times `factor` to the registry's unit; absent:
    na, never 0. `gauge`: the mean of the one column over the window instead (a lag, a queue's
    size). `whole`: a count rounded to a whole number (a counter interpolated at the window's
    edges can put a fraction of a burst inside it). `driver`: the driver reads the counter
    itself at the window's edges too (run.json driver.window_counts, by the column's name
    without `driver.`), and that exact count replaces the sampled one."""

    columns: tuple[tuple[str, ...], ...]
    factor: float = 1.0
    need_all: bool = False
    gauge: bool = False
    whole: bool = False
    driver: bool = False

    @property
    def driver_count(self) -> str | None:
        """The name of the driver's own count (DriverRecord.window_counts), when it keeps one."""
        return self.columns[0][0].removeprefix("driver.") if self.driver else None


def S(*groups: str | tuple[str, ...], factor: float = 1.0, need_all: bool = False, gauge: bool = False,
      whole: bool = False, driver: bool = False) -> Sampled:
    """Short constructor used by the catalog: each argument a column, or a tuple of columns summed."""
    return Sampled(tuple((g,) if isinstance(g, str) else tuple(g) for g in groups), factor, need_all, gauge, whole,
                   driver)


@dataclass(frozen=True)
class Metric:
    """One row of the catalog.

    `formulas` are tried in order; the first whose inputs are all known gives the value, so a
    metric with several formulas (batch ITR from jobs, or from ETR) is still one number. Extra
    formulas also serve as identities that `perflab derive` checks. A metric with
    `relative_to` is a ratio to the same table's base (first) configuration:
    value = relative_scale × X / X[base], X being the `relative_to` metric.
    """

    key: str
    label: str
    unit: str
    source: str                 # T, H, S, V, I, Q, R or "" (none: the system's own counters)
    group: str
    description: str
    formulas: tuple[Formula, ...] = ()
    relative_to: str | None = None
    relative_scale: float = 1.0
    decimals: int = 2
    direction: Direction = Direction.NONE
    origin: Origin = Origin.PERFLAB
    context: str = CMS
    aliases: tuple[Alias, ...] = ()
    per_component: bool = False   # measured per server / SUT component (the seeds' (V) blocks)
    exact_count: bool = False     # a count printed exactly (users, processors): no rounding interval
    fallback: str | None = None   # when not measured, equal to this metric (see its description)
    text: bool = False            # a descriptive attribute (RELEASE), not a number
    measurement: str = ""         # for raw metrics: how perflab (or the seed lab) measured it
    span: Span = Span.WINDOW      # measured over the window, or after it (`Span`)
    # Counted, not timed (instructions): a partner sharing the machine cannot stretch it, so a
    # duet's bias bound does not widen it (study/compare.py). Cycles and CPI are time: not counted.
    counted: bool = False
    sampled: Sampled | None = None  # a raw metric's sample columns (`Sampled`), when it has them

    @property
    def raw(self) -> bool:
        return not self.formulas and self.relative_to is None

    @property
    def relative(self) -> bool:
        return self.relative_to is not None

    @property
    def seed_only(self) -> bool:
        return self.origin is Origin.SEED

    @property
    def primary(self) -> Formula | None:
        """The formula reduction uses: the first exact one."""
        return next((f for f in self.formulas if f.exact), None)

    @property
    def inputs(self) -> tuple[str, ...]:
        """Keys the value is computed from (the primary formula's, or the ratio's base metric)."""
        if self.relative_to:
            return (self.relative_to,)
        return self.primary.inputs if self.primary else ()

    @property
    def formula(self) -> Callable[..., Any] | None:
        """The primary formula as a plain function of `inputs`."""
        return self.primary.fn if self.primary else None

    def ratio_to_base(self, value: Any, base_value: Any) -> Any:
        """The `relative_to` rule: scale × value / base value (works on floats and intervals)."""
        return self.relative_scale * value / base_value

    def all_labels(self) -> Iterator[Alias]:
        yield Alias(self.label, self.context)
        for alias in self.aliases:
            yield alias if alias.context else Alias(alias.label, self.context, alias.pattern)


# -- labels ---------------------------------------------------------------------------------

_BRACKETED = re.compile(r"\s*\[[^\]]*\]")
_SPACE_BEFORE_PAREN = re.compile(r"(?<=[^\s(])\(")


def normalize_label(label: str) -> str:
    """The form labels are compared in.

    Case and runs of blanks do not matter; a bracketed editorial note is dropped ("ETR (T)
    [from Table 34]"); a suffix glued to its label gets its blank back ("TVR(H)" = "TVR (H)",
    "FP REQ/CMD(Q)" = "FP REQ/CMD (Q)"), because the seeds print both spellings.
    """
    text = _BRACKETED.sub("", label).strip()
    text = _SPACE_BEFORE_PAREN.sub(" (", text)
    return " ".join(text.split()).upper()


# -- values ---------------------------------------------------------------------------------

def clean(value: Any) -> Value:
    """A measured number as the registry keeps it: a finite float, or None (na) -- the one rule of
    perflab.values."""
    return finite(value)


def evaluate_formula(formula: Formula, values: Mapping[str, Value]) -> Value:
    """Apply a formula to floats; na (None) in any input gives na, and so does 0/0 or x/0."""
    args = []
    for key in formula.inputs:
        value = values.get(key)
        if value is None:
            return None
        args.append(value)
    try:
        return clean(formula(*args))
    except (ZeroDivisionError, OverflowError):
        return None


# -- the registry ---------------------------------------------------------------------------

class Registry:
    """All metrics, looked up by key or by printed label, in dependency order for evaluation."""

    def __init__(self, metrics: Sequence[Metric], groups: Sequence[str], phrases: Mapping[str, str] | None = None,
                 roles: Mapping[str, Sequence[str]] | None = None):
        self._metrics: dict[str, Metric] = {}
        for metric in metrics:
            if metric.key in self._metrics:
                raise ValueError(f"duplicate metric key {metric.key!r}")
            self._metrics[metric.key] = metric
        self.groups: tuple[str, ...] = tuple(groups)
        self._phrases = dict(phrases or {})
        self._roles = {name: tuple(keys) for name, keys in (roles or {}).items()}
        unknown = sorted({k for keys in [*self._roles.values(), self._phrases] for k in keys} - set(self._metrics))
        if unknown:
            raise ValueError(f"roles or phrases name unknown metrics {unknown}")
        self._check_references()
        self._order = self._dependency_order()
        self._by_label: dict[str, list[tuple[Metric, str]]] = {}
        self._patterns: list[tuple[re.Pattern[str], Metric, str]] = []
        for metric in metrics:
            for alias in metric.all_labels():
                context = alias.context or metric.context
                if alias.pattern:
                    self._patterns.append((re.compile(alias.label, re.IGNORECASE), metric, context))
                else:
                    entries = self._by_label.setdefault(normalize_label(alias.label), [])
                    if any(m.key == metric.key and c == context for m, c in entries):
                        continue
                    if any(c == context and m.per_component == metric.per_component for m, c in entries):
                        clash = [m.key for m, c in entries if c == context]
                        raise ValueError(f"label {alias.label!r} means both {clash} and {metric.key!r} in {context!r}")
                    entries.append((metric, context))

    # lookups
    def __getitem__(self, key: str) -> Metric:
        return self._metrics[key]

    def __contains__(self, key: object) -> bool:
        return key in self._metrics

    def __iter__(self) -> Iterator[Metric]:
        return iter(self._metrics.values())

    def __len__(self) -> int:
        return len(self._metrics)

    def get(self, key: str) -> Metric | None:
        return self._metrics.get(key)

    def keys(self) -> list[str]:
        return list(self._metrics)

    def machine_wide(self, key: str) -> bool:
        """Whether a metric counts the whole machine (every (H) row, and the `machine_wide` role:
        paging, block devices, network) rather than one run's SUT or driver."""
        metric = self._metrics.get(key)
        return metric is not None and (metric.source == "H" or key in self._roles.get("machine_wide", ()))

    def span(self, key: str) -> Span:
        """When a metric is measured (`Span`); a component row (`key:component`) as its metric, an
        unknown key as a window row (the gates about the window then protect it)."""
        metric = self._metrics.get(key.split(":", 1)[0])
        return metric.span if metric is not None else Span.WINDOW

    def role(self, name: str) -> tuple[str, ...]:
        """The keys that play a role (capacity, cost, response...), in order of preference."""
        return self._roles[name]

    def phrase(self, key: str) -> str | None:
        """A short noun phrase for prose ("internal throughput"), or None."""
        return self._phrases.get(key)

    def unknown_keys(self, keys: Iterable[str], component_keys: Iterable[str] = ()) -> list[str]:
        """Keys that name no perflab metric. `key:component` is allowed for the component keys."""
        components = set(component_keys)
        bad = []
        for key in keys:
            base, sep, component = str(key).partition(":")
            metric = self._metrics.get(base)
            if metric is None or metric.origin is not Origin.PERFLAB or (sep and (base not in components or not component)):
                bad.append(str(key))
        return bad

    def label_of(self, key: str) -> str:
        metric = self._metrics.get(key)
        return metric.label if metric else key

    def candidates(self, label: str, per_component: bool | None = None) -> list[tuple[Metric, str]]:
        """Every (metric, context) a printed label can mean."""
        found = list(self._by_label.get(normalize_label(label), []))
        plain = _BRACKETED.sub("", label).strip()
        for pattern, metric, context in self._patterns:
            if pattern.fullmatch(plain) and (metric, context) not in found:
                found.append((metric, context))
        if per_component is not None:
            found = [(m, c) for m, c in found if m.per_component == per_component]
        return found

    def by_label(self, label: str, context: str | None = None) -> Metric | None:
        """The metric a printed label names; with several meanings, the one of `context`
        (or the CMS/perflab one when no context is given)."""
        found = self.candidates(label)
        if not found:
            return None
        if len(found) == 1:
            return found[0][0]
        for wanted in (context, CMS, ANY):
            for metric, ctx in found:
                if ctx == wanted and not metric.per_component:
                    return metric
        return found[0][0]

    def in_group(self, group: str, origin: Origin | None = Origin.PERFLAB) -> list[Metric]:
        return [m for m in self if m.group == group and (origin is None or m.origin is origin)]

    def sampled(self) -> list[Metric]:
        """The metrics whose values the reduction takes from samples.parquet by their `sampled`
        columns, in the catalog's order."""
        return [m for m in self if m.sampled is not None]

    def perflab_keys(self, per_component: bool = False) -> list[str]:
        """The perflab catalog: numeric metrics every reduced run reports (na when unmeasured)."""
        return [m.key for m in self
                if m.origin is Origin.PERFLAB and not m.text and m.per_component == per_component]

    # evaluation
    def evaluate(self, measured: Mapping[str, Value], keys: Iterable[str] | None = None,
                 component: bool = False, outer: Mapping[str, Value] | None = None) -> dict[str, Value]:
        """Measured values in, every derived value out (the measured ones included).

        Rule: a metric with a formula whose inputs are all known is computed by it; otherwise it
        keeps a measured value if there is one (e.g. driver CPU % from run.json when samples do
        not have the driver's counters), then its fallback, else na. Relative metrics stay na
        here: one run has no base; see `fill_relative`.

        With `component=True` the values are one server/component's, and inputs that are not
        per-component metrics (ETR (T), COMMANDS (T)) are taken from `outer`.
        """
        wanted = None if keys is None else self._closure(keys)
        out: dict[str, Value] = {}
        scope: dict[str, Value] = dict(outer or {})
        for key, raw in measured.items():
            scope[key] = clean(raw)
        for metric in self._order:
            if metric.text or metric.per_component != component:
                continue
            if wanted is not None and metric.key not in wanted:
                continue
            value: Value = None
            for formula in metric.formulas:
                if formula.exact:
                    value = evaluate_formula(formula, scope)
                    if value is not None:
                        break
            if value is None:
                value = clean(measured.get(metric.key))
            if value is None and metric.fallback is not None:
                value = scope.get(metric.fallback)
            scope[metric.key] = value
            out[metric.key] = value
        return out

    def fill_relative(self, columns: Sequence[Mapping[str, Value]]) -> list[dict[str, Value]]:
        """Ratio rows (ITRR (H), ITRR (S), ...) of several configurations, relative to the first.

        The seeds' rule: "ITRR is always relative to the first column of the same table".
        """
        if not columns:
            return []
        base = columns[0]
        result = []
        for column in columns:
            filled = dict(column)
            for metric in self:
                if metric.relative_to is None or metric.relative_to not in column:
                    continue
                value, base_value = column.get(metric.relative_to), base.get(metric.relative_to)
                filled[metric.key] = None if value is None or base_value in (None, 0.0) else clean(
                    metric.ratio_to_base(value, base_value))
            result.append(filled)
        return result

    # internals
    def _check_references(self) -> None:
        for metric in self:
            refs = [k for f in metric.formulas for k in f.inputs]
            refs += [k for k in (metric.relative_to, metric.fallback) if k]
            missing = [k for k in refs if k not in self._metrics]
            if missing:
                raise ValueError(f"{metric.key}: formula names unknown metrics {missing}")
            window = [k for k in refs if self._metrics[k].span is not metric.span]
            if metric.span is Span.AFTER and window:
                raise ValueError(f"{metric.key}: measured after the window, but computed from {window}, which are not")

    def _dependency_order(self) -> list[Metric]:
        order: list[Metric] = []
        state: dict[str, int] = {}

        def visit(key: str, path: tuple[str, ...]) -> None:
            if state.get(key) == 2:
                return
            if state.get(key) == 1:
                raise ValueError(f"formula cycle: {' -> '.join(path + (key,))}")
            state[key] = 1
            metric = self._metrics[key]
            for formula in metric.formulas:
                for dep in formula.inputs:
                    visit(dep, path + (key,))
            for other in (metric.relative_to, metric.fallback):
                if other:
                    visit(other, path + (key,))
            state[key] = 2
            order.append(metric)

        for key in self._metrics:
            visit(key, ())
        return order

    def _closure(self, keys: Iterable[str]) -> set[str]:
        needed: set[str] = set()
        stack = list(keys)
        while stack:
            key = stack.pop()
            if key in needed or key not in self._metrics:
                continue
            needed.add(key)
            metric = self._metrics[key]
            stack.extend(k for f in metric.formulas for k in f.inputs)
            stack.extend(k for k in (metric.relative_to, metric.fallback) if k)
        return needed

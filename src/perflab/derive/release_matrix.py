"""The seeds' release ITRR matrix, computed once for `perflab derive` and `perflab capacity matrix`.

The VM/ESA 1.1 report states a release migration's ITRR as a product of transition symbols
(methodology 1.8). Two summary tables hold it:

* the measurement pairs (`pair`, `transition`, `itr_ratio`, `symbol`: Table 3). A row that
  prints a symbol defines it: an `avg` row is the mean of the numbered pairs of its transition
  that carry no symbol of their own (`averaged_pairs`); a numbered row with a symbol (R20, R13B)
  is a transition measured by that one pair;
* the release matrix (`from`, `to`, `case`, `derivation`, `itrr_*`: Table 2): each row's
  derivation is a product of symbols (`R5*R6*R13A`, `R21=avg(6,7)`). A symbol no pairs table
  defines (R13A, 4381 data) is defined by the matrix row that derives it alone, from that row's
  first `itrr_*` cell -- as the seeds did; that row is then a definition, not a check.

Each row's ITRR is the registry's `compose` (the product) of its symbols, evaluated on the
symbols' printed rounding intervals (± half a unit of their last digit), and each printed
`itrr_*` cell is judged the way derive judges every cell (`checks.judge`: the recomputed
interval must overlap the printed value ± half its last unit; a range such as `0.76-0.77` is
the span of its ends' rounding). The point product of the printed symbols is kept beside the
interval: it is the number the seeds wrote down (1.04 × 1.04 = 1.0816).

Doubtful cells (a trailing `?`) follow derive's one rule (checks.py, `judge_doubtful`): read,
shown, never judged -- and `perflab capacity matrix` leaves them out of its counts. Here the
readings are a cell's number (`0.91?`, a pair's `1.064?`) and a symbol's name (`R13C?` in a
derivation, `RH?` in the symbol column). A doubtful pair makes only what is computed from the
pairs doubtful (an avg check, capacity's estimate from the pairs), not the product of the
printed symbols.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from perflab.catalog.registry import compose, mean_of
from perflab.derive.checks import Judged, Reading, Status, judge_doubtful, reading
from perflab.derive.interval import Interval
from perflab.derive.table import Cell, Kind, Row, Table

PAIRS = "pairs"
MATRIX = "matrix"

_SYMBOL = re.compile(r"^(R[0-9A-Z]+)(\?)?$")
_RANGE = re.compile(r"^\s*(\d*\.\d+|\d+)\s*-\s*(\d*\.\d+|\d+)\s*$")


# -- measurement pairs -----------------------------------------------------------------------

@dataclass(frozen=True)
class Pair:
    """One measurement pair behind a symbol: its number as printed and its ITRR."""

    pair: str
    line: int
    ratio: Reading | None


@dataclass(frozen=True)
class Symbol:
    """A transition's ITRR as the tables define it.

    *value* is the ITRR printed on the defining row (None: printed `?` or na); *pairs* the
    measurement pairs it stands for (empty when a matrix row defines it); *name_doubtful* when
    the row prints the symbol itself with a `?` (RH?)."""

    name: str
    transition: str
    value: Reading | None
    pairs: tuple[Pair, ...]
    defined_by: str
    name_doubtful: bool = False

    @property
    def doubt(self) -> str | None:
        """Why the symbol's printed value is doubtful, None when it is not."""
        if self.name_doubtful:
            return f"symbol {self.name} is printed {self.name + '?'!r} ({self.defined_by})"
        if self.value is not None and self.value.doubtful:
            return f"{self.name} is printed {self.value.text!r} ({self.defined_by})"
        return None

    @property
    def pairs_doubt(self) -> str | None:
        """Why the pairs behind the symbol are doubtful (a `?` on a pair's ITRR), None if not."""
        doubtful = [p for p in self.pairs if p.ratio is not None and p.ratio.doubtful]
        if not doubtful:
            return None
        return ", ".join(f"pair {p.pair} printed {p.ratio.text!r}" for p in doubtful if p.ratio is not None)


def transition_key(text: str) -> str:
    """A transition as pairs are matched by it: without a `?`, spacing or case."""
    return " ".join(text.rstrip("?").split()).lower()


def averaged_pairs(table: Table, avg: Row) -> list[Row]:
    """The numbered pairs an `avg` row is the mean of: the same transition, no symbol of their own."""
    key = transition_key(table.text(avg, "transition"))
    return [r for r in table.rows if r.label.strip().isdigit()
            and transition_key(table.text(r, "transition")) == key and not table.text(r, "symbol").strip()]


def _pair(table: Table, row: Row) -> Pair:
    return Pair(row.label, row.line, reading(table.cell(row, "itr_ratio")))


def symbols_from_pairs(table: Table) -> dict[str, Symbol]:
    """Symbol → its definition, from the rows of a pairs table that print a symbol (the first
    definition of a name counts)."""
    symbols: dict[str, Symbol] = {}
    for row in table.rows:
        printed = table.text(row, "symbol").strip()
        name = printed.rstrip("?").strip()
        if not name or name in symbols:
            continue
        members = averaged_pairs(table, row) if row.label.strip().lower() == "avg" else [row]
        symbols[name] = Symbol(name, table.text(row, "transition"), reading(table.cell(row, "itr_ratio")),
                               tuple(_pair(table, m) for m in members), f"{table.path.name} line {row.line}",
                               printed.endswith("?"))
    return symbols


@dataclass(frozen=True)
class PairsMean:
    """The mean of a transition's pairs (registry `mean_of`), as an avg row prints it."""

    pairs: tuple[Pair, ...]
    value: Interval | None
    problem: str | None
    doubt: str | None

    @property
    def formula(self) -> str:
        return f"mean_of(itr_ratio of pairs {', '.join(p.pair for p in self.pairs)})"


def pairs_mean(table: Table, avg: Row) -> PairsMean | None:
    """The recomputed value of an avg row; None when it averages no pair."""
    rows = averaged_pairs(table, avg)
    if not rows:
        return None
    pairs = tuple(_pair(table, r) for r in rows)
    unread = [f"pair {r.label} itr_ratio printed {table.text(r, 'itr_ratio')!r}"
              for r, p in zip(rows, pairs) if p.ratio is None]
    if unread:
        return PairsMean(pairs, None, ", ".join(unread), None)
    readings = [p.ratio for p in pairs if p.ratio is not None]
    doubt = ", ".join(f"pair {p.pair} printed {r.text!r}" for p, r in zip(pairs, readings) if r.doubtful) or None
    return PairsMean(pairs, mean_of([r.interval for r in readings]), None, doubt)


# -- the matrix --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Factor:
    name: str
    doubtful: bool      # printed with a `?` in the derivation (R13C?)


def factors(derivation: str) -> list[Factor] | None:
    """The symbols of a derivation (`R5*R6*R13A`, `R21=avg(6,7)`, `R13C?`); None when it is not
    a product of symbols."""
    expression = derivation.split("=")[0]
    out = []
    for part in expression.split("*"):
        m = _SYMBOL.match(part.strip())
        if not m:
            return None
        out.append(Factor(m.group(1), bool(m.group(2))))
    return out


def matrix_cell(text: str) -> Cell:
    """A printed ITRR of the matrix. The recomputed column also holds ranges ("0.76-0.77") and
    notes ("1.04 (1.0465 unrounded)"): a range is the span of its ends' rounding intervals, a
    note after the number is ignored; a trailing `?` keeps the cell doubtful."""
    doubtful = text.strip().endswith("?")
    body = text.strip().rstrip("?").strip()
    m = _RANGE.match(body)
    if m:
        low, high = Cell.parse(m.group(1)), Cell.parse(m.group(2))
        assert low.value is not None and high.value is not None
        lo, hi = low.value - low.half, high.value + high.half
        if doubtful:
            return Cell(text, Kind.UNKNOWN)
        return Cell(text, Kind.NUMBER, (lo + hi) / 2, (hi - lo) / 2)
    if "(" in body and not doubtful:
        return Cell.parse(body.split("(")[0])
    return Cell.parse(text)


@dataclass(frozen=True)
class ComposedRow:
    """One release pair of the matrix and its ITRR from the symbols.

    *value*: the product of the symbols' rounding intervals (None with *problem* when there is
    none); *point*: the product of their printed values; *doubt*: why the value is doubtful;
    *defines*: the symbol this row defines (nothing to check); *cells*: the printed `itrr_*`
    cells by heading, as judged (`matrix_cell`), and *texts* as printed."""

    row: Row
    source: str
    target: str
    case: str
    derivation: str
    factors: tuple[str, ...]
    value: Interval | None
    point: float | None
    problem: str | None
    doubt: str | None
    defines: str | None
    cells: dict[str, Cell]
    texts: dict[str, str]

    @property
    def label(self) -> str:
        return f"{self.source} -> {self.target}" + (f" ({self.case})" if self.case else "")

    @property
    def formula(self) -> str:
        return f"compose({self.derivation.split('=')[0].strip()})"

    def judged(self, column: str) -> Judged | None:
        """The printed cell under *column* judged against the row's value; None when blank."""
        if self.defines is not None:
            return Judged(Status.DEFINES, f"defines {self.defines}", None)
        cell = self.cells[column]
        if cell.kind is Kind.EMPTY:
            return None
        return judge_doubtful(cell, self.value, self.problem, self.doubt)


@dataclass(frozen=True)
class ReleaseMatrix:
    """The matrix's rows composed from the symbols, which `itrr_*` columns it prints, and
    where the symbols came from."""

    symbols: dict[str, Symbol]
    rows: list[ComposedRow]
    targets: list[str]
    notes: list[str] = field(default_factory=list)


def release_matrix(matrix: Table, pairs: Sequence[Table] = ()) -> ReleaseMatrix:
    """Compose every row of *matrix* from the symbols of the *pairs* tables and its own
    single-symbol rows (see the module docstring)."""
    notes: list[str] = []
    symbols: dict[str, Symbol] = {}
    for table in pairs:
        found = symbols_from_pairs(table)
        if found:
            notes.append(f"symbols {', '.join(sorted(found))} from {table.path.name}")
        for name, symbol in found.items():
            symbols.setdefault(name, symbol)
    targets = [h for h in matrix.header if h.strip().lower().startswith("itrr")]
    defined: dict[int, str] = {}
    for row in matrix.rows:
        names = factors(matrix.text(row, "derivation"))
        if not names or len(names) != 1 or names[0].name in symbols or not targets:
            continue
        value = reading(matrix_cell(matrix.text(row, targets[0])))
        if value is None:
            continue
        name = names[0].name
        symbols[name] = Symbol(name, f"{row.label} -> {matrix.text(row, 'to')}", value, (),
                               f"{matrix.path.name} line {row.line}", names[0].doubtful)
        defined[row.line] = name
    if defined:
        notes.append(f"symbols {', '.join(sorted(defined.values()))} defined by this table's own rows")
    rows = [_compose(matrix, row, symbols, targets, defined.get(row.line)) for row in matrix.rows
            if matrix.text(row, "derivation")]
    return ReleaseMatrix(symbols, rows, targets, notes)


def _compose(matrix: Table, row: Row, symbols: dict[str, Symbol], targets: list[str],
             defines: str | None) -> ComposedRow:
    derivation = matrix.text(row, "derivation")
    names = factors(derivation)
    value: Interval | None = None
    point: float | None = None
    problem = doubt = None
    if names is None:
        problem = f"derivation {derivation!r} is not a product of symbols"
    else:
        missing = [f.name for f in names if f.name not in symbols]
        unread = [f.name for f in names if f.name in symbols and symbols[f.name].value is None]
        if missing:
            problem = f"symbol {', '.join(missing)} is not defined"
        elif unread:
            problem = f"symbol {', '.join(unread)} has no printed value"
        else:
            used = [symbols[f.name] for f in names]
            readings = [s.value for s in used if s.value is not None]
            value = compose([r.interval for r in readings])
            point = compose([r.value for r in readings])
            doubts = [f"derivation {derivation!r} is marked doubtful"] if any(f.doubtful for f in names) else []
            doubts += [d for d in (s.doubt for s in used) if d]
            doubt = "; ".join(doubts) or None
    return ComposedRow(row, row.label, matrix.text(row, "to"), matrix.text(row, "case"), derivation,
                       tuple(f.name for f in names or ()), value, point, problem, doubt, defines,
                       {t: matrix_cell(matrix.text(row, t)) for t in targets},
                       {t: matrix.text(row, t) for t in targets})

"""The seeds' release ITRR matrix, recomputed from the measurement pairs.

Inputs are the two seed summary tables (VM/ESA 1.1 report, Table 3 and Table 2), read by the
one seed-table reader (perflab.derive.table):

* the pairs CSV (21-t03): one row per measurement pair (from → to, processor, `itr_ratio`), and
  `avg` rows that print each transition's symbol (R5, R6, R21, R1E...) -- the average of its
  pairs; single pairs that are a transition by themselves carry their symbol on their own row;
* the matrix CSV (22-t02): one row per release pair, its `derivation` as a product of symbols
  (R5*R6*R13A), the printed ITRR where the report printed one, and the value recomputed from the
  rounded symbols.

Two recomputations per matrix row:

1. **from the printed symbols**, exactly as the seeds did (product of 2-decimal symbols): this is
   what must reproduce the table. It is `perflab.derive.release_matrix` -- the same computation,
   the same "within rounding" judgement and the same rule for doubtful (`?`) cells as
   `perflab derive` on the matrix CSV, so the two commands cannot disagree;
2. **from the pairs**, as perflab composes measurements: each transition is the geometric mean
   of its pairs with the SE of their logs (`transition`), and the product's interval adds log
   variances (`compose`). A transition measured by one pair has no spread to carry, so a
   product that uses one has no interval (printed "na"), never a made-up one.

R13A (4381 data) is in neither pairs table; like the seeds, its value is Table 2's printed
R13A cell: that row defines it (nothing to check), it is used for (1) and leaves (2) without a
value. A doubtful cell's reading is used for the numbers shown, never for a count of cells
reproduced (perflab.derive.checks states the rule). Called by `perflab capacity matrix`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perflab.capacity.compose import ITRR, compose, transition
from perflab.derive.checks import Status
from perflab.derive.release_matrix import MATRIX, PAIRS, ComposedRow, Judged, Symbol
from perflab.derive.release_matrix import release_matrix as seeds_matrix
from perflab.derive.table import Kind, Table, read_table
from perflab.errors import InputError
from perflab.stats.criteria import DEFAULT_CONFIDENCE

PRINTED = "itrr_printed"
RECOMPUTED = "itrr_recomputed_from_symbols"
_PAIRS_COLUMNS = ("pair", "transition", "itr_ratio", "symbol")
_MATRIX_COLUMNS = ("from", "to", "derivation", PRINTED, RECOMPUTED)


@dataclass(frozen=True)
class SymbolEstimate:
    """A transition symbol as the tables define it, and perflab's estimate from its pairs
    (None without pairs)."""

    symbol: Symbol
    measured: ITRR | None

    @property
    def doubtful(self) -> bool:
        return self.symbol.doubt is not None or self.symbol.pairs_doubt is not None

    @property
    def source(self) -> str:
        return "pairs" if self.symbol.pairs else "printed in the matrix (no pairs tabulated)"

    def to_dict(self, confidence: float) -> dict[str, Any]:
        s, m = self.symbol, self.measured
        lo, hi = m.ci(confidence) if m is not None and m.se > 0 else (None, None)
        used = [p for p in s.pairs if p.ratio is not None]
        return {"symbol": s.name, "transition": s.transition, "printed": s.value.value if s.value else None,
                "pairs": [p.pair for p in used], "pair_itrr": [p.ratio.value for p in used if p.ratio],
                "doubtful": self.doubtful, "doubt": "; ".join(filter(None, (s.doubt, s.pairs_doubt))) or None,
                "source": self.source, "perflab": m.ratio if m else None, "ci_low": lo, "ci_high": hi,
                "confidence": confidence}


@dataclass(frozen=True)
class MatrixRow:
    """One release pair of the matrix and how perflab reproduces it. `perflab` is the product
    of the printed symbols and `within` its range over their rounding; `printed_ok` and
    `recomputed_ok` are derive's judgement of the two printed cells (None: not judged -- a `?` in
    the way, a row that defines a symbol, or no value)."""

    source: str
    target: str
    case: str
    derivation: str
    symbols: tuple[str, ...]
    printed: float | None
    printed_text: str
    recomputed_text: str
    perflab: float | None
    within: tuple[float, float] | None
    printed_status: Status | None
    recomputed_status: Status | None
    from_pairs: float | None
    ci_low: float | None
    ci_high: float | None
    doubtful: bool
    printed_doubtful: bool = False
    recomputed_doubtful: bool = False
    defines: str | None = None
    note: str = ""

    @property
    def printed_ok(self) -> bool | None:
        return _ok(self.printed_status)

    @property
    def recomputed_ok(self) -> bool | None:
        return _ok(self.recomputed_status)

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "target": self.target, "case": self.case, "derivation": self.derivation,
                "symbols": list(self.symbols), "printed": self.printed, "printed_text": self.printed_text,
                "recomputed_text": self.recomputed_text, "perflab": self.perflab,
                "within": list(self.within) if self.within else None,
                "printed_ok": self.printed_ok, "recomputed_ok": self.recomputed_ok,
                "printed_status": self.printed_status.value if self.printed_status else None,
                "recomputed_status": self.recomputed_status.value if self.recomputed_status else None,
                "from_pairs": self.from_pairs, "ci_low": self.ci_low, "ci_high": self.ci_high,
                "doubtful": self.doubtful, "printed_doubtful": self.printed_doubtful,
                "recomputed_doubtful": self.recomputed_doubtful, "defines": self.defines, "note": self.note}


def _ok(status: Status | None) -> bool | None:
    return status.reproduced if status is not None else None


@dataclass(frozen=True)
class ReleaseMatrix:
    symbols: dict[str, SymbolEstimate]
    rows: list[MatrixRow]
    confidence: float
    notes: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """How many printed and recomputed cells perflab reproduces within rounding, and how many
        that print a number it did not judge because a `?` is in the way."""
        printed = [r.printed_ok for r in self.rows if r.printed_ok is not None]
        recomputed = [r.recomputed_ok for r in self.rows if r.recomputed_ok is not None]
        return {"rows": len(self.rows), "printed_cells": len(printed), "printed_reproduced": sum(printed),
                "printed_doubtful": sum(r.printed_doubtful for r in self.rows),
                "recomputed_cells": len(recomputed), "recomputed_reproduced": sum(recomputed),
                "recomputed_doubtful": sum(r.recomputed_doubtful for r in self.rows),
                "defining": sum(1 for r in self.rows if r.defines is not None),
                "not_derivable": sum(1 for r in self.rows if r.perflab is None)}

    def to_dict(self) -> dict[str, Any]:
        return {"confidence": self.confidence, "counts": self.counts(), "notes": list(self.notes),
                "symbols": [s.to_dict(self.confidence) for s in self.symbols.values()],
                "rows": [r.to_dict() for r in self.rows]}


def _table(path: Path, layout: str, columns: tuple[str, ...], what: str) -> Table:
    table = read_table(path)
    if table.layout != layout:
        raise InputError(f"not a {what} table (expected the columns {', '.join(columns)})", file=path, line=1)
    missing = [c for c in columns if table.column_index(c) is None]
    if missing:
        raise InputError(f"missing column(s) {', '.join(missing)}", file=path, line=1)
    return table


def release_matrix(pairs_csv: Path, matrix_csv: Path, confidence: float = DEFAULT_CONFIDENCE) -> ReleaseMatrix:
    """Recompute every row of the matrix table (see the module docstring)."""
    pairs = _table(pairs_csv, PAIRS, _PAIRS_COLUMNS, "measurement pairs")
    matrix = _table(matrix_csv, MATRIX, _MATRIX_COLUMNS, "release matrix")
    seeds = seeds_matrix(matrix, [pairs])
    symbols = {name: SymbolEstimate(s, _measured(s)) for name, s in seeds.symbols.items()}
    rows = [_row(c, symbols, confidence) for c in seeds.rows]
    return ReleaseMatrix(symbols, rows, confidence, seeds.notes)


def _measured(symbol: Symbol) -> ITRR | None:
    """The transition as perflab estimates it from its pairs (None without pairs)."""
    values = [p.ratio.value for p in symbol.pairs if p.ratio is not None]
    return transition(values, label=symbol.name) if values else None


def _status(judged: Judged | None) -> Status | None:
    return judged.status if judged is not None else None


def _unjudged_for_doubt(c: ComposedRow, column: str) -> bool:
    """The cell prints a number that was not judged because a `?` is in the way (on the cell or
    on an input)."""
    cell, judged = c.cells[column], c.judged(column)
    return (judged is not None and judged.status is Status.UNKNOWN and cell.reading() is not None
            and (cell.kind is Kind.UNKNOWN or c.doubt is not None))


def _row(c: ComposedRow, symbols: dict[str, SymbolEstimate], confidence: float) -> MatrixRow:
    printed_cell = c.cells[PRINTED]
    printed = printed_cell.reading()
    notes = [c.problem] if c.problem else []
    measured = [symbols[name].measured if name in symbols else None for name in c.factors]
    from_pairs = lo = hi = None
    if c.factors and all(m is not None for m in measured):
        total = compose(*[m for m in measured if m is not None])
        from_pairs = total.ratio
        single = [name for name, m in zip(c.factors, measured) if m is not None and m.se == 0.0]
        if single:
            notes.append(f"no CI: {', '.join(single)} is one pair")
        else:
            lo, hi = total.ci(confidence)
    elif c.factors and not c.problem:
        notes.append(", ".join(n for n, m in zip(c.factors, measured) if m is None) + ": no pairs")
    if c.defines:
        notes.append(f"defines {c.defines}")
    if c.doubt:
        notes.append(f"doubtful: {c.doubt}")
    pairs_doubt = [d for d in (symbols[n].symbol.pairs_doubt for n in c.factors if n in symbols) if d]
    if from_pairs is not None and pairs_doubt:
        notes.append(f"from pairs with {'; '.join(pairs_doubt)}")
    printed_doubtful = _unjudged_for_doubt(c, PRINTED)
    return MatrixRow(
        source=c.source, target=c.target, case=c.case, derivation=c.derivation, symbols=c.factors,
        printed=printed.value if printed is not None else None, printed_text=c.texts[PRINTED],
        recomputed_text=c.texts[RECOMPUTED], perflab=c.point,
        within=(c.value.lo, c.value.hi) if c.value is not None else None,
        printed_status=_status(c.judged(PRINTED)), recomputed_status=_status(c.judged(RECOMPUTED)),
        from_pairs=from_pairs, ci_low=lo, ci_high=hi,
        doubtful=c.doubt is not None or printed_doubtful, printed_doubtful=printed_doubtful,
        recomputed_doubtful=_unjudged_for_doubt(c, RECOMPUTED), defines=c.defines, note="; ".join(notes))

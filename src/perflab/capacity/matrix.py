"""The seeds' release ITRR matrix, recomputed from the measurement pairs.

Inputs are the two seed summary tables (VM/ESA 1.1 report, Table 3 and Table 2):

* the pairs CSV (21-t03): one row per measurement pair (from → to, processor, `itr_ratio`), and
  `avg` rows that print each transition's symbol (R5, R6, R21, R1E...) -- the average of its
  pairs; single pairs that are a transition by themselves carry their symbol on their own row;
* the matrix CSV (22-t02): one row per release pair, its `derivation` as a product of symbols
  (R5*R6*R13A), the printed ITRR where the report printed one, and the value recomputed from the
  rounded symbols.

Two recomputations per matrix row:

1. **from the printed symbols**, exactly as the seeds did (product of 2-decimal symbols): this is
   what must reproduce the table. "Within rounding" allows half a unit of the printed last digit
   plus the rounding of every symbol propagated through the product (seed-tables/README.md).
2. **from the pairs**, as perflab composes measurements: each transition is the geometric mean
   of its pairs with the SE of their logs (`transition`), and the product's interval adds log
   variances (`compose`). A transition measured by one pair has no spread to carry, so a
   product that uses one has no interval (printed "na"), never a made-up one.

R13A (4381 data) is in neither pairs table; like the seeds, its value is Table 2's printed
R13A cell, used for (1) and leaving (2) without a value. OCR-doubtful cells (a trailing "?")
are used but flagged. Called by `perflab capacity matrix`.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from perflab.capacity.compose import ITRR, compose, transition
from perflab.errors import InputError

HALF_UNIT = 0.005  # the tables print 2 decimals


@dataclass
class Symbol:
    """A per-transition ITRR: the printed value, the pair ratios behind it, doubts."""

    name: str
    transition: str
    printed: float | None = None
    pairs: list[float] = field(default_factory=list)
    pair_ids: list[str] = field(default_factory=list)
    doubtful: bool = False
    source: str = "pairs"

    def measured(self) -> ITRR | None:
        """The transition as perflab estimates it from its pairs (None without pairs)."""
        return transition(self.pairs, label=self.name) if self.pairs else None

    def to_dict(self, confidence: float) -> dict:
        m = self.measured()
        lo, hi = m.ci(confidence) if m is not None and m.se > 0 else (None, None)
        return {"symbol": self.name, "transition": self.transition, "printed": self.printed,
                "pairs": self.pair_ids, "pair_itrr": self.pairs, "doubtful": self.doubtful, "source": self.source,
                "perflab": m.ratio if m else None, "ci_low": lo, "ci_high": hi, "confidence": confidence}


@dataclass(frozen=True)
class MatrixRow:
    """One release pair of the matrix and how perflab reproduces it."""

    source: str
    target: str
    case: str
    derivation: str
    symbols: tuple[str, ...]
    printed: float | None
    printed_text: str
    seeds_recomputed: tuple[float, float] | None
    recomputed_text: str
    perflab: float | None
    tolerance: float | None
    printed_ok: bool | None
    recomputed_ok: bool | None
    from_pairs: float | None
    ci_low: float | None
    ci_high: float | None
    doubtful: bool
    note: str = ""

    def to_dict(self) -> dict:
        d = asdict(self)
        d["seeds_recomputed"] = list(self.seeds_recomputed) if self.seeds_recomputed else None
        d["symbols"] = list(self.symbols)
        return d


@dataclass(frozen=True)
class ReleaseMatrix:
    symbols: dict[str, Symbol]
    rows: list[MatrixRow]
    confidence: float

    def counts(self) -> dict[str, int]:
        """How many printed and recomputed cells perflab reproduces within rounding."""
        printed = [r.printed_ok for r in self.rows if r.printed_ok is not None]
        recomputed = [r.recomputed_ok for r in self.rows if r.recomputed_ok is not None]
        return {"rows": len(self.rows), "printed_cells": len(printed), "printed_reproduced": sum(printed),
                "printed_doubtful": sum(1 for r in self.rows if r.printed is not None and r.printed_text.endswith("?")),
                "recomputed_cells": len(recomputed), "recomputed_reproduced": sum(recomputed),
                "not_derivable": sum(1 for r in self.rows if r.perflab is None)}

    def to_dict(self) -> dict:
        return {"confidence": self.confidence, "counts": self.counts(),
                "symbols": [s.to_dict(self.confidence) for s in self.symbols.values()],
                "rows": [r.to_dict() for r in self.rows]}


def read_symbols(pairs_csv: Path) -> dict[str, Symbol]:
    """Transition symbols from the pairs table: printed values from symbol-bearing rows, pair
    ratios from the measurement rows of the same transition."""
    rows = _rows(pairs_csv, ("pair", "transition", "itr_ratio", "symbol"))
    by_transition: dict[str, list[dict]] = {}
    for row in rows:
        if row["pair"] != "avg":
            by_transition.setdefault(row["transition"], []).append(row)
    symbols: dict[str, Symbol] = {}
    for line, row in enumerate(rows, start=2):
        name = row["symbol"].strip()
        if not name:
            continue
        clean = name.rstrip("?")
        value, doubt = _value(row["itr_ratio"], pairs_csv, line, "itr_ratio")
        sym = Symbol(clean, row["transition"], value, doubtful=doubt or name.endswith("?"))
        members = by_transition.get(row["transition"], []) if row["pair"] == "avg" else [row]
        for m in members:
            if m["pair"] != "avg" and m["symbol"].strip() and m is not row:
                continue  # a pair that is its own symbol is not part of the average
            v, d = _value(m["itr_ratio"], pairs_csv, None, "itr_ratio")
            if v is not None:
                sym.pairs.append(v)
                sym.pair_ids.append(m["pair"])
                sym.doubtful |= d
        symbols[clean] = sym
    return symbols


def release_matrix(pairs_csv: Path, matrix_csv: Path, confidence: float = 0.90) -> ReleaseMatrix:
    """Recompute every row of the matrix table (see the module docstring)."""
    symbols = read_symbols(pairs_csv)
    rows = _rows(matrix_csv, ("from", "to", "derivation", "itrr_printed", "itrr_recomputed_from_symbols"))
    for row in rows:  # symbols only the matrix prints (R13A)
        names = _derivation(row["derivation"])
        if len(names) == 1 and names[0][0] not in symbols:
            v, d = _value(row["itrr_printed"], matrix_csv, None, "itrr_printed")
            if v is not None:
                symbols[names[0][0]] = Symbol(names[0][0], f"{row['from']} -> {row['to']}", v, doubtful=d,
                                              source="printed in the matrix (no pairs tabulated)")
    out = [_matrix_row(row, symbols, confidence) for row in rows]
    return ReleaseMatrix(symbols, out, confidence)


def _matrix_row(row: dict, symbols: dict[str, Symbol], confidence: float) -> MatrixRow:
    names = _derivation(row["derivation"])
    missing = [n for n, _ in names if n not in symbols or symbols[n].printed is None]
    printed, p_doubt = _value(row["itrr_printed"], None, None, "itrr_printed", strict=False)
    # doubtful: a '?' on a number the row uses (not a bare '?', which means "not printed")
    doubtful = (any(d for _, d in names) or (printed is not None and p_doubt)
                or any(symbols[n].doubtful for n, _ in names if n in symbols))
    recomputed = _range(row["itrr_recomputed_from_symbols"])
    base = dict(source=row["from"], target=row["to"], case=row.get("case", ""), derivation=row["derivation"],
                symbols=tuple(n for n, _ in names), printed=printed, printed_text=row["itrr_printed"],
                seeds_recomputed=recomputed, recomputed_text=row["itrr_recomputed_from_symbols"])
    if not names or missing:
        why = f"no value for {', '.join(missing)}" if missing else "no derivation"
        return MatrixRow(**base, perflab=None, tolerance=None, printed_ok=None, recomputed_ok=None, from_pairs=None,
                         ci_low=None, ci_high=None, doubtful=doubtful, note=why)
    values = [symbols[n].printed for n, _ in names]
    product = math.prod(values)
    # half a unit of the output plus each symbol's half unit times the other factors
    tol = HALF_UNIT + sum(HALF_UNIT * product / v for v in values)
    printed_ok = None if printed is None else abs(product - printed) <= tol + 1e-12
    recomputed_ok = None
    if recomputed is not None:
        recomputed_ok = recomputed[0] - HALF_UNIT - 1e-12 <= round(product, 2) <= recomputed[1] + HALF_UNIT + 1e-12
    measured = [symbols[n].measured() for n, _ in names]
    from_pairs = lo = hi = None
    note = ""
    if all(m is not None for m in measured):
        total = compose(*measured)
        from_pairs = total.ratio
        single = [n for (n, _), m in zip(names, measured) if m.se == 0.0]
        if single:
            note = f"no CI: {', '.join(single)} is one pair"
        else:
            lo, hi = total.ci(confidence)
    else:
        note = ", ".join(n for (n, _), m in zip(names, measured) if m is None) + ": no pairs"
    if doubtful:
        note = "; ".join(x for x in (note, "OCR-doubtful (?) input") if x)
    return MatrixRow(**base, perflab=product, tolerance=tol, printed_ok=printed_ok, recomputed_ok=recomputed_ok,
                     from_pairs=from_pairs, ci_low=lo, ci_high=hi, doubtful=doubtful, note=note)


def _derivation(text: str) -> list[tuple[str, bool]]:
    """Symbols of a derivation such as 'R5*R6*R13A', 'R13C?', 'R21=avg(6,7)', with doubt flags."""
    head = text.split("=")[0].strip()
    out = []
    for part in head.split("*"):
        part = part.strip()
        if not re.fullmatch(r"R\w+\??", part):
            return []
        out.append((part.rstrip("?"), part.endswith("?")))
    return out


def _range(text: str) -> tuple[float, float] | None:
    """'0.76-0.77' → (0.76, 0.77); '1.04 (1.0465 unrounded)' → (1.04, 1.04); '?' → None."""
    m = re.match(r"\s*(\d+\.\d+)(?:\s*-\s*(\d+\.\d+))?", text)
    if not m:
        return None
    low = float(m.group(1))
    return low, float(m.group(2)) if m.group(2) else low


def _value(text: str, path, line, field_name: str, strict: bool = True) -> tuple[float | None, bool]:
    """A cell as (number, doubtful): '1.059?' → (1.059, True); '?' or '' → (None, True/False)."""
    t = (text or "").strip()
    if t in ("", "?", "na"):
        return None, t == "?"
    try:
        return float(t.rstrip("?")), t.endswith("?")
    except ValueError:
        if strict:
            raise InputError(f"expected a ratio such as 1.04, got {t!r}", file=path, line=line,
                             field=field_name) from None
        return None, True


def _rows(path: Path, required: tuple[str, ...]) -> list[dict]:
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            missing = [c for c in required if c not in (reader.fieldnames or [])]
            if missing:
                raise InputError(f"missing column(s) {', '.join(missing)}", file=path, line=1)
            return [{k: (v or "") for k, v in row.items()} for row in reader]
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", file=path) from None

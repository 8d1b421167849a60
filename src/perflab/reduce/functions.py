"""One run's per-function tables (drive/pathlength/functions.py) as instructions per command.

The counted pass wrote each counted transaction's functions, and per transaction name each
call's instructions; a run's profile is their sum divided by the counted transactions: the
instructions per command of the pass's own mix -- the same draw in both configurations of a
study's block, so two runs of a block are paired transaction by transaction.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.parquet as pq

from perflab.drive.pathlength.functions import CALLS_FILE, FUNCTIONS_FILE

Key = tuple[str, str]               # (object, function)
Context = tuple[str, str, bool]     # (object, function, an inner activation of it)


@dataclass
class RunProfile:
    """Instructions per counted transaction: each function's own (and the part of it in its inner
    activations), its inclusive count, and each call's (caller -> callee, each a function's first
    or inner activations: the callee's instructions during the calls); and each counted
    transaction's own and inclusive counts by its number in the pass (what pairs two runs)."""

    transactions: int
    own: dict[Key, float] = field(default_factory=dict)
    inner: dict[Key, float] = field(default_factory=dict)
    inclusive: dict[Key, float] = field(default_factory=dict)
    calls: dict[tuple[Context, Context], float] = field(default_factory=dict)
    files: dict[Key, str] = field(default_factory=dict)
    per_transaction: dict[str, tuple[int, float]] = field(default_factory=dict)  # name: (counted, mean)
    by_transaction: dict[int, tuple[str, dict[Key, float], dict[Key, float]]] = field(default_factory=dict)

    @property
    def total(self) -> float:
        return sum(self.own.values())


def has_profile(run_dir: Path) -> bool:
    return (run_dir / FUNCTIONS_FILE).exists() and (run_dir / CALLS_FILE).exists()


def read_profile(run_dir: Path) -> RunProfile | None:
    """The run's profile per command, or None when its pass wrote no per-function tables."""
    if not has_profile(run_dir):
        return None
    functions = pq.read_table(run_dir / FUNCTIONS_FILE).to_pydict()
    by_tx: dict[int, tuple[str, dict[Key, float], dict[Key, float]]] = {}
    own: dict[Key, float] = defaultdict(float)
    inner: dict[Key, float] = defaultdict(float)
    incl: dict[Key, float] = defaultdict(float)
    files: dict[Key, str] = {}
    for name, index, obj, fn, file, value, inner_value, incl_value in zip(
            functions["transaction"], functions["index"], functions["object"], functions["function"],
            functions["file"], functions["exclusive"], functions["exclusive_inner"], functions["inclusive"]):
        key = (str(obj), str(fn))
        entry = by_tx.get(int(index))
        if entry is None:
            entry = by_tx[int(index)] = (str(name), {}, {})
        entry[1][key] = float(value)
        entry[2][key] = float(incl_value)
        own[key] += float(value)
        inner[key] += float(inner_value)
        incl[key] += float(incl_value)
        if file and file != "???":
            files.setdefault(key, str(file))
    total = len(by_tx)
    if total == 0:
        return None
    calls: dict[tuple[Context, Context], float] = defaultdict(float)
    table = pq.read_table(run_dir / CALLS_FILE).to_pydict()
    for c_obj, caller, c_rec, e_obj, callee, e_rec, cost in zip(
            table["caller_object"], table["caller"], table["caller_recursive"], table["callee_object"],
            table["callee"], table["callee_recursive"], table["inclusive"]):
        calls[((str(c_obj), str(caller), bool(c_rec)), (str(e_obj), str(callee), bool(e_rec)))] += float(cost)
    names: dict[str, list[float]] = defaultdict(list)
    for name, tx_own, _incl in by_tx.values():
        names[name].append(sum(tx_own.values()))
    return RunProfile(
        transactions=total,
        own={k: v / total for k, v in own.items()},
        inner={k: v / total for k, v in inner.items() if v},
        inclusive={k: v / total for k, v in incl.items()},
        calls={k: v / total for k, v in calls.items()},
        files=files,
        per_transaction={name: (len(v), sum(v) / len(v)) for name, v in sorted(names.items())},
        by_transaction=by_tx,
    )

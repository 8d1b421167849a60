"""Response-time and count rows from transactions.parquet, vectorized.

Only the columns needed are read, the class names stay dictionary-encoded (a small integer
per row), and every statistic is a numpy operation over arrays: no Python loop over
transactions, so ten million rows reduce in seconds.

Conventions (the registry's descriptions repeat them):
* a transaction belongs to the window when it completes in it;
* ok = false rows are errors: counted apart, not in ETR (T) and not in the response rows
  (a fast failure would flatter the response time);
* response = end − intended_start (coordinated-omission safe), service = end − actual_start,
  first = first_response − intended_start;
* percentiles are nearest-rank: the smallest observed value with at least q % of the values
  at or below it, so every reported percentile is a response some user actually saw.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from perflab.errors import InputError
from perflab.reduce.window import Window
from perflab.stats.quantiles import PERCENTILES, nearest_rank

_REQUIRED = ("end", "ok", "intended_start")
_OPTIONAL = ("actual_start", "first_response", "think", "class", "transaction", "instructions", "harness_cpu")


@dataclass
class WindowTransactions:
    """The window's finished transactions as arrays (one element per transaction)."""

    ok: np.ndarray            # bool
    end: np.ndarray
    response: np.ndarray
    service: np.ndarray       # NaN where actual_start is absent
    first: np.ndarray         # NaN where the adapter could not see a first response
    think: np.ndarray         # NaN for none
    instructions: np.ndarray  # NaN where not measured
    harness: np.ndarray       # the worker's CPU outside the SUT's call; NaN where not measured
    class_code: np.ndarray    # int; index into class_names
    class_names: list[str]
    offered: int = 0
    # The transaction's name (the workload's `transactions[].name`): what a load tester's
    # per-request table is keyed by; index into tx_names ("all" when the file has no column).
    tx_code: np.ndarray | None = None
    tx_names: list[str] | None = None          # every row whose intended start falls in the window (the arrivals offered)
    # Every think that *started* in the window (its transaction finished or not, or still
    # thinking at the end: thinks.parquet), and its class; None for runs without thinks.parquet.
    thinks: np.ndarray | None = None
    think_class: np.ndarray | None = None
    # Each transaction's user number: read only for mixed work, whose jobs are recorded under
    # numbers after the users' (drive/load/mixed.py); None otherwise.
    user: np.ndarray | None = None

    @property
    def count(self) -> int:
        return len(self.end)


def read_window_transactions(path: Path, window: Window, thinks_path: Path | None = None,
                             with_users: bool = False) -> WindowTransactions:
    """The window's transactions; with `thinks_path` (thinks.parquet) also every think that
    started in the window (see `WindowTransactions.thinks`); `with_users`: each one's user too."""
    try:
        schema = pq.read_schema(path)
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise InputError(f"not a readable parquet file: {exc}", file=path) from None
    missing = [c for c in _REQUIRED if c not in schema.names]
    if missing:
        raise InputError(f"missing column(s) {', '.join(missing)}", file=path, field=missing[0])
    columns = [c for c in _REQUIRED + _OPTIONAL + (("user",) if with_users else ()) if c in schema.names]
    table = pq.read_table(path, columns=columns, read_dictionary=[c for c in ("class", "transaction") if c in columns])

    def floats(name: str) -> np.ndarray:
        if name not in table.column_names:
            return np.full(table.num_rows, np.nan)
        return table.column(name).to_numpy(zero_copy_only=False).astype(np.float64, copy=False)

    end = floats("end")
    inside = window.contains(end)        # NaN (unfinished) compares False: never in the window
    # pyarrow-stubs 20 type fill_null's value as Scalar[Never] (a type variable left unbound)
    ok = table.column("ok").fill_null(False).to_numpy(zero_copy_only=False).astype(bool)[inside]  # type: ignore[arg-type]
    intended_all = floats("intended_start")
    offered = int(window.contains(intended_all).sum())
    intended = intended_all[inside]
    end = end[inside]
    codes, names = _classes(table, inside)
    tx_codes, tx_names = _classes(table, inside, "transaction")
    result = WindowTransactions(
        ok=ok, end=end, response=end - intended, service=end - floats("actual_start")[inside],
        first=floats("first_response")[inside] - intended, think=floats("think")[inside],
        instructions=floats("instructions")[inside], harness=floats("harness_cpu")[inside], class_code=codes,
        class_names=names, offered=offered, tx_code=tx_codes, tx_names=tx_names)
    if "user" in columns:
        result.user = floats("user")[inside]
    if thinks_path is not None and thinks_path.exists():
        think_all = floats("think")
        started = window.contains(intended_all - think_all) & ~np.isnan(think_all)
        all_codes, all_names = _classes(table, np.ones(table.num_rows, dtype=bool))
        to_window = np.array([names.index(n) if n in names else -1 for n in all_names] or [-1], dtype=np.int32)
        all_codes = to_window[all_codes] if len(all_codes) else all_codes
        pending, pending_codes = _pending_thinks(thinks_path, window, names)
        result.thinks = np.concatenate([think_all[started], pending])
        result.think_class = np.concatenate([all_codes[started], pending_codes])
    return result


def _pending_thinks(path: Path, window: Window, names: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Thinks still running at the end (thinks.parquet) that started in the window, with their
    class as an index into `names` (-1 for a class no transaction of the run has)."""
    try:
        table = pq.read_table(path, columns=["start", "think", "class"])
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise InputError(f"not a readable parquet file: {exc}", file=path) from None
    start = table.column("start").to_numpy(zero_copy_only=False).astype(np.float64)
    think = table.column("think").to_numpy(zero_copy_only=False).astype(np.float64)
    keep = window.contains(start) & ~np.isnan(think)
    index = {name: i for i, name in enumerate(names)}
    classes = [index.get(str(c), -1) for c in table.column("class").to_pylist()]
    return think[keep], np.array(classes, dtype=np.int32)[keep]


def _classes(table: pa.Table, inside: np.ndarray, name: str = "class") -> tuple[np.ndarray, list[str]]:
    """A dictionary column (`class`, `transaction`) of the rows `inside` as codes into its names,
    the names sorted; a file without the column has one name, "all"."""
    if name not in table.column_names:
        return np.zeros(int(inside.sum()), dtype=np.int32), ["all"]
    column = table.column(name)
    if not pa.types.is_dictionary(column.type):
        column = column.dictionary_encode()
    array = column.unify_dictionaries().combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if isinstance(array, pa.ChunkedArray):      # an empty table combines to a ChunkedArray
        array = array.combine_chunks()
    assert isinstance(array, pa.DictionaryArray)  # dictionary-encoded above
    names = [str(n) if n is not None else "(none)" for n in array.dictionary.to_pylist()]
    codes = array.indices.fill_null(len(names)).to_numpy(zero_copy_only=False).astype(np.int32)[inside]
    if (codes == len(names)).any():
        names.append("(none)")
    # Present classes in name order, so output never depends on dictionary order.
    order = sorted(range(len(names)), key=lambda i: names[i])
    remap = np.empty(len(names), dtype=np.int32)
    remap[order] = np.arange(len(names), dtype=np.int32)
    return remap[codes], [names[i] for i in order]


def _mean(values: np.ndarray) -> float | None:
    values = values[~np.isnan(values)]
    return float(values.mean()) if len(values) else None


def response_rows(tx: WindowTransactions, select: np.ndarray | None = None) -> dict[str, float | None]:
    """The raw response-time and count rows (registry keys) of the selected transactions."""
    ok = tx.ok if select is None else tx.ok & select
    errors = (~tx.ok) if select is None else (~tx.ok & select)
    response = tx.response[ok]
    if tx.thinks is not None:
        assert tx.think_class is not None  # set with thinks (read_window_transactions)
        thinks = tx.thinks if select is None else tx.thinks[np.isin(tx.think_class, np.unique(tx.class_code[select]))]
    else:  # a run from before thinks.parquet: the thinks of the window's completed transactions
        thinks = tx.think[ok]
    rows: dict[str, float | None] = {
        "tx_ok": float(ok.sum()),
        "errors_t": float(errors.sum()),
        "avg_last_t": float(response.mean()) if len(response) else None,
        "avg_first_t": _mean(tx.first[ok]),
        "avg_service_t": _mean(tx.service[ok]),
        "avg_think_t": _mean(thinks),
    }
    for q, value in zip(PERCENTILES, nearest_rank(response)):
        rows[f"resp_p{q}_t"] = value
    rows["resp_max_t"] = float(response.max()) if len(response) else None
    service = tx.service[ok]
    rows["service_p90_t"] = nearest_rank(service[~np.isnan(service)], (90,))[0]
    return rows


def read_run_transactions(path: Path) -> WindowTransactions:
    """Every finished transaction of the run, whatever its phase (stagger, stabilization, the
    window, stopping): what a whole-run timeline is made of."""
    return read_window_transactions(path, Window(-math.inf, math.inf))


def instructions_total(tx: WindowTransactions) -> tuple[float | None, str | None]:
    """Sum of per-transaction instruction counts (valgrind mode) when every completed
    transaction has one; a partial count would understate INSTR/CMD (I), so it is na."""
    values = tx.instructions[tx.ok]
    measured = ~np.isnan(values)
    if not measured.any():
        return None, None
    if not measured.all():
        return None, (f"instructions measured for {int(measured.sum())} of {len(values)} transactions: "
                      f"INSTR/CMD (I) is na")
    return float(values.sum()), None


def harness_total(tx: WindowTransactions) -> float | None:
    """The worker's CPU outside the SUT's calls, summed over every transaction that finished in
    the window (a failed one cost the worker as much); na unless each of them has it."""
    if len(tx.harness) == 0 or np.isnan(tx.harness).any():
        return None
    return float(tx.harness.sum())


def per_bucket(tx: WindowTransactions, edges: np.ndarray, percentiles: Sequence[int] = (90,)) -> list[dict[str, float | None]]:
    """Counts and response rows per time bucket (by completion time): the mean, and each of
    `percentiles` by nearest rank over the ok transactions completed in the bucket."""
    buckets = len(edges) - 1
    index = np.clip(np.searchsorted(edges, tx.end, side="right") - 1, 0, buckets - 1)
    ok_index = index[tx.ok]
    response = tx.response[tx.ok]
    counts = np.bincount(ok_index, minlength=buckets)
    errors = np.bincount(index[~tx.ok], minlength=buckets)
    sums = np.bincount(ok_index, weights=response, minlength=buckets)
    # Completion times are nearly sorted already, so a stable sort by bucket is close to linear.
    order = np.argsort(ok_index, kind="stable")
    grouped = response[order]
    starts = np.concatenate(([0], np.cumsum(counts)))
    rows = []
    for b in range(buckets):
        n = int(counts[b])
        ranks = nearest_rank(grouped[starts[b]:starts[b + 1]], tuple(percentiles))
        row: dict[str, float | None] = {"tx_ok": float(n), "errors_t": float(errors[b]),
                                        "avg_last_t": float(sums[b] / n) if n else None}
        row.update({f"resp_p{q}_t": value for q, value in zip(percentiles, ranks)})
        rows.append(row)
    return rows

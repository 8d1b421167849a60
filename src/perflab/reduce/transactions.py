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
from perflab.stats.quantiles import PERCENTILES

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


def read_parquet(path: Path, columns: Sequence[str] | None = None,
                 read_dictionary: Sequence[str] = ()) -> pa.Table:
    """One parquet file's `columns` (all when None). Through ParquetFile rather than
    pq.read_table: read_table goes through pyarrow.dataset, whose import (pandas with it) costs a
    third of a second of every `perflab show`. Raises what pyarrow raises for a damaged file."""
    with pq.ParquetFile(path, read_dictionary=list(read_dictionary) or None) as file:
        return file.read(columns=None if columns is None else list(columns))


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
    try:
        table = read_parquet(path, columns, [c for c in ("class", "transaction") if c in columns])
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise InputError(f"not a readable parquet file: {exc}", file=path) from None
    read: dict[str, np.ndarray] = {}

    def floats(name: str) -> np.ndarray:
        if name not in table.column_names:
            return np.full(table.num_rows, np.nan)
        if name not in read:  # each column converted once (think and intended_start are used twice)
            read[name] = table.column(name).to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
        return read[name]

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
        table = read_parquet(path, ["start", "think", "class"])
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
    nan = np.isnan(values)
    if nan.any():
        values = values[~nan]
    return float(values.mean()) if len(values) else None


def _ranks(values: np.ndarray, percentiles: Sequence[int]) -> list[float | None]:
    """nearest_rank(values, percentiles), partitioning `values` in place (the caller's own copy)."""
    n = len(values)
    if n == 0:
        return [None] * len(percentiles)
    ranks = [max(0, math.ceil(q / 100 * n) - 1) for q in percentiles]
    values.partition(sorted(set(ranks)))
    return [float(values[k]) for k in ranks]


def _rows(tx_ok: int, errors: int, response: np.ndarray, first: np.ndarray, service: np.ndarray,
          thinks: np.ndarray, own: bool = False) -> dict[str, float | None]:
    """The response rows of the ok transactions' `response`, `first` and `service` times (in
    their order in the file: a mean's rounding depends on it); `own`: the arrays are this call's
    to reorder."""
    rows: dict[str, float | None] = {
        "tx_ok": float(tx_ok),
        "errors_t": float(errors),
        "avg_last_t": float(response.mean()) if len(response) else None,
        "avg_first_t": _mean(first),
        "avg_service_t": _mean(service),
        "avg_think_t": _mean(thinks),
    }
    rows.update({f"resp_p{q}_t": value for q, value in
                 zip(PERCENTILES, _ranks(response if own else response.copy(), PERCENTILES))})
    rows["resp_max_t"] = float(response.max()) if len(response) else None
    nan = np.isnan(service)
    measured = service[~nan] if nan.any() else (service if own else service.copy())
    rows["service_p90_t"] = _ranks(measured, (90,))[0]
    return rows


def response_rows(tx: WindowTransactions, select: np.ndarray | None = None) -> dict[str, float | None]:
    """The raw response-time and count rows (registry keys) of the selected transactions."""
    ok = tx.ok if select is None else tx.ok & select
    tx_ok = int(ok.sum())
    errors = (len(tx.ok) if select is None else int(select.sum())) - tx_ok
    if tx.thinks is not None:
        assert tx.think_class is not None  # set with thinks (read_window_transactions)
        thinks = tx.thinks if select is None else tx.thinks[np.isin(tx.think_class, np.unique(tx.class_code[select]))]
    else:  # a run from before thinks.parquet: the thinks of the window's completed transactions
        thinks = tx.think[ok]
    return _rows(tx_ok, errors, tx.response[ok], tx.first[ok], tx.service[ok], thinks, own=True)


def grouped_response_rows(tx: WindowTransactions, codes: np.ndarray,
                          groups: int) -> list[dict[str, float | None] | None]:
    """response_rows(tx, codes == g) for each g in range(groups) (None for a group without a
    transaction), in one pass: the ok transactions are ordered by group once (a stable sort, so
    each group's times stay in file order and its means are the same to the last bit), and each
    group is a slice."""
    out: list[dict[str, float | None] | None] = [None] * groups
    present = np.bincount(codes, minlength=groups)
    if not len(codes):
        return out
    ok = tx.ok
    ok_codes = codes[ok]
    errors = present - np.bincount(ok_codes, minlength=groups)
    # a small key sorts by radix (linear); the codes index names, far fewer than 32,768
    key = ok_codes.astype(np.int16) if groups < (1 << 15) else ok_codes
    order = np.flatnonzero(ok)[np.argsort(key, kind="stable")]
    response, first, service = tx.response[order], tx.first[order], tx.service[order]
    think = tx.think[order] if tx.thinks is None else None
    starts = np.concatenate(([0], np.cumsum(np.bincount(ok_codes, minlength=groups))))
    for g in range(groups):
        if not present[g]:
            continue
        part = slice(int(starts[g]), int(starts[g + 1]))
        if think is not None:
            thinks = think[part]
        else:
            assert tx.thinks is not None and tx.think_class is not None  # set together
            classes = np.unique(tx.class_code[codes == g])
            thinks = tx.thinks[np.isin(tx.think_class, classes)]
        out[g] = _rows(int(starts[g + 1] - starts[g]), int(errors[g]), response[part], first[part], service[part],
                       thinks, own=True)
    return out


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
    # A stable sort of a small integer key is a radix sort (linear); the percentiles need no
    # order within a bucket, so each bucket's slice of this copy is partitioned in place.
    key = ok_index.astype(np.int16) if buckets < (1 << 15) else ok_index
    grouped = response[np.argsort(key, kind="stable")]
    starts = np.concatenate(([0], np.cumsum(counts)))
    rows = []
    for b in range(buckets):
        n = int(counts[b])
        ranks = _ranks(grouped[starts[b]:starts[b + 1]], percentiles)
        row: dict[str, float | None] = {"tx_ok": float(n), "errors_t": float(errors[b]),
                                        "avg_last_t": float(sums[b] / n) if n else None}
        row.update({f"resp_p{q}_t": value for q, value in zip(percentiles, ranks)})
        rows.append(row)
    return rows

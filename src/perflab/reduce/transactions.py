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
from perflab.reduce import arrow_numpy
from perflab.reduce.dictionary import Names
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


#: Rows read at a time: enough that the per-batch work is a small share, few enough that the
#: arrow buffers of one batch (tens of MB) are reused from the allocator's free lists by the
#: next instead of each column of the whole file being a fresh mapping of its own (the ten
#: columns of a 10M-row file read at once: 3.1 s on the lab's VM, 4.2 s of CPU in page faults;
#: by batches 0.7 s, 0.1 s of it in the kernel).
BATCH_ROWS = 1 << 20


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
    with_thinks = thinks_path is not None and thinks_path.exists()
    try:
        with pq.ParquetFile(path, read_dictionary=[c for c in ("class", "transaction") if c in columns]) as file:
            reader = _WindowReader(window, columns, file.metadata.num_rows, with_thinks)
            for groups in _batches(file, BATCH_ROWS):
                reader.add(file.read_row_groups(groups, columns=columns))
    except InputError:
        raise
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise InputError(f"not a readable parquet file: {exc}", file=path) from None
    result = reader.result()
    if with_thinks:
        assert thinks_path is not None and result.thinks is not None and result.think_class is not None
        pending, pending_codes = _pending_thinks(thinks_path, window, result.class_names)
        result.thinks = np.concatenate([result.thinks, pending])
        result.think_class = np.concatenate([result.think_class, pending_codes])
    return result


def _batches(file: pq.ParquetFile, rows: int) -> list[list[int]]:
    """The file's row groups in consecutive runs of about `rows` rows (a file spilled in small
    row groups is read a few at a time, not one by one)."""
    out: list[list[int]] = []
    size = 0
    for g in range(file.num_row_groups):
        if not out or size >= rows:
            out.append([])
            size = 0
        out[-1].append(g)
        size += file.metadata.row_group(g).num_rows
    return out


class _WindowReader:
    """The window's rows of each batch of row groups, copied into arrays sized for the whole
    file (np.empty: pages the window never reaches are never touched), in file order -- the
    order a mean's rounding depends on, so the numbers are those of reading the file at once."""

    _FLOATS = ("end", "response", "service", "first", "think", "instructions", "harness")
    #: Columns most runs never measure (valgrind's counts, the worker's own CPU): all NaN, they
    #: are not copied but made one read-only NaN view (150 MB fewer pages touched at 10M rows).
    _UNMEASURED = ("instructions", "harness")

    def __init__(self, window: Window, columns: list[str], rows: int, with_thinks: bool) -> None:
        self.window, self.columns, self.with_thinks = window, columns, with_thinks
        self.n = 0
        self.offered = 0
        wanted = self._FLOATS + (("user",) if "user" in columns else ())
        self.out = {name: np.empty(rows, dtype=np.float64) for name in wanted}
        self.ok = np.empty(rows, dtype=bool)
        self.codes = {name: np.empty(rows, dtype=np.int32) for name in ("class", "transaction")}
        self.names = {name: Names() for name in ("class", "transaction")}
        self.nan_rows: dict[str, list[slice]] = {name: [] for name in self._UNMEASURED}
        self.thinks: list[np.ndarray] = []
        self.think_codes: list[np.ndarray] = []

    def _floats(self, batch: pa.Table, name: str) -> np.ndarray | None:
        return arrow_numpy.floats(batch.column(name)) if name in self.columns else None

    def add(self, batch: pa.Table) -> None:
        end = arrow_numpy.floats(batch.column("end"))
        inside = self.window.contains(end)   # NaN (unfinished) compares False: never in the window
        k = int(np.count_nonzero(inside))
        rows = slice(self.n, self.n + k)
        out = {name: values[rows] for name, values in self.out.items()}
        intended_all = arrow_numpy.floats(batch.column("intended_start"))
        self.offered += int(np.count_nonzero(self.window.contains(intended_all)))
        intended = intended_all[inside]
        np.compress(inside, end, out=out["end"])
        np.subtract(out["end"], intended, out=out["response"])
        np.compress(inside, arrow_numpy.flags(batch.column("ok")), out=self.ok[rows])
        actual, first = self._floats(batch, "actual_start"), self._floats(batch, "first_response")
        if actual is None:
            out["service"].fill(np.nan)
        else:
            np.subtract(out["end"], actual[inside], out=out["service"])
        if first is None:
            out["first"].fill(np.nan)
        else:
            np.subtract(first[inside], intended, out=out["first"])
        think_all = self._floats(batch, "think")
        for column, name in (("think", "think"), ("instructions", "instructions"), ("harness_cpu", "harness"),
                             ("user", "user")):
            if name not in out:
                continue
            values = think_all if column == "think" else self._floats(batch, column)
            if name in self.nan_rows and (values is None or bool(np.isnan(values).all())):
                self.nan_rows[name].append(rows)  # NaN, written in result() unless all are
            elif values is None:
                out[name].fill(np.nan)
            else:
                np.compress(inside, values, out=out[name])
        codes_all: dict[str, np.ndarray] = {}
        for name, names in self.names.items():
            if name in self.columns:
                codes_all[name] = names.codes(batch.column(name))
                np.compress(inside, codes_all[name], out=self.codes[name][rows])
        if self.with_thinks and think_all is not None:
            started = self.window.contains(intended_all - think_all) & ~np.isnan(think_all)
            self.thinks.append(think_all[started])
            classes = codes_all.get("class")
            self.think_codes.append(classes[started] if classes is not None
                                    else np.zeros(int(np.count_nonzero(started)), dtype=np.int32))
        self.n += k

    def _names(self, name: str) -> tuple[np.ndarray, list[str]]:
        """A dictionary column's window codes and names; one name, "all", without the column."""
        if name not in self.columns:
            return np.zeros(self.n, dtype=np.int32), ["all"]
        return self.names[name].window_names(self.codes[name][:self.n])

    def result(self) -> WindowTransactions:
        n = self.n
        codes, names = self._names("class")
        tx_codes, tx_names = self._names("transaction")
        out = {name: values[:n] for name, values in self.out.items()}
        for name, slots in self.nan_rows.items():
            if sum(slot.stop - slot.start for slot in slots) == n:
                out[name] = np.broadcast_to(np.float64(np.nan), (n,))
            else:
                for slot in slots:
                    self.out[name][slot] = np.nan
        result = WindowTransactions(
            ok=self.ok[:n], end=out["end"], response=out["response"], service=out["service"], first=out["first"],
            think=out["think"], instructions=out["instructions"], harness=out["harness"], class_code=codes,
            class_names=names, offered=self.offered, tx_code=tx_codes, tx_names=tx_names)
        if "user" in self.columns:
            result.user = out["user"]
        if self.with_thinks:
            thinks = np.concatenate(self.thinks) if self.thinks else np.empty(0)
            raw = np.concatenate(self.think_codes) if self.think_codes else np.empty(0, dtype=np.int32)
            if "class" in self.columns:
                think_class = self.names["class"].to_window(raw, names)
            else:  # every think is of the one class, "all"
                think_class = raw
            result.thinks, result.think_class = thinks, think_class
        return result


def _pending_thinks(path: Path, window: Window, names: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Thinks still running at the end (thinks.parquet) that started in the window, with their
    class as an index into `names` (-1 for a class no transaction of the run has)."""
    try:
        table = read_parquet(path, ["start", "think", "class"])
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise InputError(f"not a readable parquet file: {exc}", file=path) from None
    start = arrow_numpy.floats(table.column("start"))
    think = arrow_numpy.floats(table.column("think"))
    keep = window.contains(start) & ~np.isnan(think)
    index = {name: i for i, name in enumerate(names)}
    classes = [index.get(str(c), -1) for c in table.column("class").to_pylist()]
    return think[keep], np.array(classes, dtype=np.int32)[keep]


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
    completed = int(np.count_nonzero(tx.ok))
    measured = int(np.count_nonzero(tx.ok & ~np.isnan(tx.instructions)))  # no gather: usually none is
    if not measured:
        return None, None
    if measured < completed:
        return None, (f"instructions measured for {measured} of {completed} transactions: "
                      f"INSTR/CMD (I) is na")
    return float(tx.instructions[tx.ok].sum()), None


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
    index = np.searchsorted(edges, tx.end, side="right")
    index -= 1  # in place: each step of 10M rows as a new array is 75 MB of fresh pages
    np.clip(index, 0, buckets - 1, out=index)
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

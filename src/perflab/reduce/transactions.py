"""The window's transactions from transactions.parquet, as numpy arrays (reduce/response.py
makes the response and count rows of them).

Only the columns needed are read, a batch of row groups at a time, and the class and
transaction names stay dictionary-encoded (a small integer per row).

Conventions (the registry's descriptions repeat them):
* a transaction belongs to the window when it completes in it;
* ok = false rows are errors: counted apart, not in ETR (T) and not in the response rows
  (a fast failure would flatter the response time);
* response = end − intended_start (coordinated-omission safe), service = end − actual_start,
  first = first_response − intended_start.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from perflab.errors import InputError
from perflab.reduce import arrow_numpy
from perflab.reduce.dictionary import Names
from perflab.reduce.window import Window

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
    # NaN for none; None when `thinks` holds the window's thinks (the per-row column is then
    # never read, so it is not kept)
    think: np.ndarray | None
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
    # How many rows are ok when they come ok first (read_window_transactions orders them so:
    # the ok rows in file order, then the failed ones in file order): `ok` is then true for
    # exactly the first `ok_prefix` rows, and a pass takes the ok rows as a view, not a copy.
    # None for rows in any other order.
    ok_prefix: int | None = None

    @property
    def count(self) -> int:
        return len(self.end)

    def ok_values(self, values: np.ndarray) -> tuple[np.ndarray, bool]:
        """`values` of the ok rows in file order, and whether they are a copy of the caller's
        own (False: a view of the column, never to be written)."""
        if self.ok_prefix is not None:
            return values[:self.ok_prefix], False
        return values[self.ok], True

    def failed_values(self, values: np.ndarray) -> np.ndarray:
        """`values` of the failed rows (a view when the rows come ok first)."""
        return values[self.ok_prefix:] if self.ok_prefix is not None else values[~self.ok]

    @cached_property
    def thinks_by_class(self) -> tuple[np.ndarray, np.ndarray]:
        """`thinks` ordered by class, each class's in file order, and where each class starts:
        class c's thinks are [starts[c + 1], starts[c + 2]) (index 0 holds the thinks of a
        class no transaction has, -1). Made once for every grouping that asks."""
        assert self.thinks is not None and self.think_class is not None  # set together
        classes = len(self.class_names)
        shifted = self.think_class + 1
        key = shifted.astype(np.int16) if classes < (1 << 15) else shifted  # radix: linear
        ordered = self.thinks.take(np.argsort(key, kind="stable"))
        starts = np.concatenate(([0], np.cumsum(np.bincount(shifted, minlength=classes + 1))))
        return ordered, starts


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
    """The window's transactions, ok rows first (see WindowTransactions.ok_prefix); with
    `thinks_path` (thinks.parquet) also every think that started in the window (see
    `WindowTransactions.thinks`); `with_users`: each one's user too."""
    try:
        schema = pq.read_schema(path)
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise InputError(f"not a readable parquet file: {exc}", file=path) from None
    missing = [c for c in _REQUIRED if c not in schema.names]
    if missing:
        raise InputError(f"missing column(s) {', '.join(missing)}", file=path, field=missing[0])
    columns = [c for c in _REQUIRED + _OPTIONAL + (("user",) if with_users else ()) if c in schema.names]
    pending = _pending_thinks(thinks_path, window) if thinks_path is not None and thinks_path.exists() else None
    try:
        with pq.ParquetFile(path, read_dictionary=[c for c in ("class", "transaction") if c in columns]) as file:
            reader = _WindowReader(window, columns, file.metadata.num_rows, pending)
            for batch in _read_ahead(file, _batches(file, BATCH_ROWS), columns):
                reader.add(batch)
                del batch  # gone before the next is asked for, when the one after it is decoded
    except InputError:
        raise
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise InputError(f"not a readable parquet file: {exc}", file=path) from None
    return reader.result()


def _read_ahead(file: pq.ParquetFile, batches: list[list[int]], columns: list[str]) -> Iterator[pa.Table]:
    """Each batch of row groups, the next one decoded on a thread of its own while the caller
    copies this one (pyarrow releases the GIL): 10M transactions read in 0.55 s against 0.61 s
    one after the other (measured). A failure reading is raised where that batch is asked for."""
    if len(batches) < 2:
        yield from (file.read_row_groups(groups, columns=columns) for groups in batches)
        return
    with ThreadPoolExecutor(1, thread_name_prefix="perflab-read") as pool:
        ahead = pool.submit(file.read_row_groups, batches[0], columns=columns)
        for following in [*batches[1:], None]:
            batch = ahead.result()
            if following is not None:
                ahead = pool.submit(file.read_row_groups, following, columns=columns)
            yield batch
            del batch  # its buffers go back before the one after next is decoded


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


def _take(out: np.ndarray, values: np.ndarray, rows: np.ndarray) -> None:
    """values[rows] into `out`, unbuffered ("clip": `rows` are in range). np.compress(out=...)
    and take's default mode copy through a buffer whose pages are new on every call, and
    values[select] is a temporary: either doubles the page faults of reading the file
    (measured), which cost more than the copying on the lab's VM."""
    np.take(values, rows, out=out, mode="clip")


class _WindowReader:
    """The window's rows of each batch of row groups, the ok ones copied into arrays sized for
    the whole file (np.empty: pages the window never reaches are never touched), in file order
    -- the order a mean's rounding depends on, so the numbers are those of reading the file at
    once -- and the failed ones (usually few) kept apart and put after them at the end."""

    _FLOATS = ("end", "response", "service", "first", "think", "instructions", "harness")
    #: Columns most runs never measure (valgrind's counts, the worker's own CPU): all NaN, they
    #: are not copied but made one read-only NaN view (150 MB fewer pages touched at 10M rows).
    _UNMEASURED = ("instructions", "harness")
    _CODES = ("class", "transaction")

    def __init__(self, window: Window, columns: list[str], rows: int, pending: _PendingThinks | None) -> None:
        self.window, self.columns, self.pending = window, columns, pending
        self.n_ok = 0
        self.offered = 0
        # With thinks.parquet the thinks come from their own arrays (below), and no pass reads
        # the per-row think: it is not kept.
        wanted = [name for name in self._FLOATS if not (name == "think" and pending is not None)]
        wanted += ["user"] if "user" in columns else []
        self.out = {name: np.empty(rows, dtype=np.float64) for name in wanted}
        self.codes = {name: np.empty(rows, dtype=np.int32) for name in self._CODES}
        self.names = {name: Names() for name in self._CODES}
        # each batch's failed rows: their float columns and their codes
        self.failed: list[tuple[dict[str, np.ndarray], dict[str, np.ndarray]]] = []
        # slices of the ok rows an unmeasured column's batch had no value for, and whether any
        # batch (ok rows or failed) had one
        self.nan_rows: dict[str, list[slice]] = {name: [] for name in self._UNMEASURED}
        self.measured: dict[str, bool] = {name: False for name in self._UNMEASURED}
        extra = len(pending.think) if pending is not None else 0
        self.thinks = np.empty(rows + extra, dtype=np.float64) if pending is not None else None
        self.think_codes = np.empty(rows + extra, dtype=np.int32) if pending is not None else None
        self.n_thinks = 0

    def _floats(self, batch: pa.Table, name: str) -> np.ndarray | None:
        return arrow_numpy.floats(batch.column(name)) if name in self.columns else None

    def add(self, batch: pa.Table) -> None:
        end = arrow_numpy.floats(batch.column("end"))
        inside = self.window.contains(end)   # NaN (unfinished) compares False: never in the window
        ok_inside = inside & arrow_numpy.flags(batch.column("ok"))
        failed_inside = inside ^ ok_inside
        intended = arrow_numpy.floats(batch.column("intended_start"))
        self.offered += int(np.count_nonzero(self.window.contains(intended)))
        values: dict[str, np.ndarray | None] = {
                  "end": end, "intended": intended, "actual": self._floats(batch, "actual_start"),
                  "first_response": self._floats(batch, "first_response"), "think": self._floats(batch, "think"),
                  "instructions": self._floats(batch, "instructions"), "harness": self._floats(batch, "harness_cpu"),
                  "user": self._floats(batch, "user")}
        codes = {name: names.codes(batch.column(name)) for name, names in self.names.items() if name in self.columns}
        for name in self._UNMEASURED:
            column = values[name]
            if column is not None and bool(np.isnan(column).all()):
                values[name] = None  # NaN, written in result() unless the whole column is
        k = int(np.count_nonzero(ok_inside))
        rows = slice(self.n_ok, self.n_ok + k)
        self._copy(ok_inside, values, codes, {name: out[rows] for name, out in self.out.items()},
                   {name: out[rows] for name, out in self.codes.items()})
        for name in self._UNMEASURED:
            if name in self.out and values[name] is None:
                self.nan_rows[name].append(rows)
        self.n_ok += k
        failed = int(np.count_nonzero(failed_inside))
        if failed:
            floats = {name: np.empty(failed, dtype=np.float64) for name in self.out}
            ints = {name: np.empty(failed, dtype=np.int32) for name in self.codes}
            self._copy(failed_inside, values, codes, floats, ints)
            for name in self._UNMEASURED:
                if name in floats and values[name] is None:
                    floats[name].fill(np.nan)
            self.failed.append((floats, ints))
        if self.thinks is not None and self.think_codes is not None and values["think"] is not None:
            think = values["think"]
            started = np.flatnonzero(self.window.contains(intended - think) & ~np.isnan(think))
            n = len(started)
            into = slice(self.n_thinks, self.n_thinks + n)
            _take(self.thinks[into], think, started)
            if "class" in codes:
                _take(self.think_codes[into], codes["class"], started)
            else:
                self.think_codes[into] = 0
            self.n_thinks += n

    def _copy(self, select: np.ndarray, values: dict[str, np.ndarray | None], codes: dict[str, np.ndarray],
              floats: dict[str, np.ndarray], ints: dict[str, np.ndarray]) -> None:
        """The `select`ed rows of one batch into `floats` and `ints` (arrays of their length),
        each column straight into its place: no temporary of a column's length (see _take)."""
        rows = np.flatnonzero(select)
        end, intended = values["end"], values["intended"]
        assert end is not None and intended is not None  # required columns
        _take(floats["end"], end, rows)
        _take(floats["response"], intended, rows)  # the intended start, for now
        first = values["first_response"]
        if first is None:
            floats["first"].fill(np.nan)
        else:
            _take(floats["first"], first, rows)
            floats["first"] -= floats["response"]
        np.subtract(floats["end"], floats["response"], out=floats["response"])
        actual = values["actual"]
        if actual is None:
            floats["service"].fill(np.nan)
        else:
            _take(floats["service"], actual, rows)
            np.subtract(floats["end"], floats["service"], out=floats["service"])
        for name in ("think", "instructions", "harness", "user"):
            if name not in floats:
                continue
            column = values[name]
            if column is None:
                if name not in self._UNMEASURED:  # an unmeasured column's NaN is written later
                    floats[name].fill(np.nan)
            else:
                if name in self._UNMEASURED:
                    self.measured[name] = True
                _take(floats[name], column, rows)
        for name, out in ints.items():
            if name in codes:
                _take(out, codes[name], rows)

    def _names(self, name: str, n: int) -> tuple[np.ndarray, list[str]]:
        """A dictionary column's window codes and names; one name, "all", without the column."""
        if name not in self.columns:
            return np.zeros(n, dtype=np.int32), ["all"]
        return self.names[name].window_names(self.codes[name][:n])

    def result(self) -> WindowTransactions:
        n_ok = self.n_ok
        n = n_ok + sum(len(part["end"]) for part, _ in self.failed)
        at = n_ok
        for part, part_codes in self.failed:  # the failed rows after the ok ones, in file order
            rows = slice(at, at + len(part["end"]))
            for name, column in self.out.items():
                column[rows] = part[name]
            for name, code_column in self.codes.items():
                code_column[rows] = part_codes[name]
            at = rows.stop
        self.failed.clear()
        codes, names = self._names("class", n)
        tx_codes, tx_names = self._names("transaction", n)
        out = {name: values[:n] for name, values in self.out.items()}
        for name, slots in self.nan_rows.items():
            if name not in self.out:
                continue
            if not self.measured[name]:
                out[name] = np.broadcast_to(np.float64(np.nan), (n,))
            else:
                for slot in slots:
                    self.out[name][slot] = np.nan
        ok = np.zeros(n, dtype=bool)
        ok[:n_ok] = True
        result = WindowTransactions(
            ok=ok, end=out["end"], response=out["response"], service=out["service"], first=out["first"],
            think=out.get("think"), instructions=out["instructions"], harness=out["harness"], class_code=codes,
            class_names=names, offered=self.offered, tx_code=tx_codes, tx_names=tx_names, ok_prefix=n_ok)
        if "user" in self.columns:
            result.user = out["user"]
        if self.pending is not None and self.thinks is not None and self.think_codes is not None:
            started = self.n_thinks
            think_class = self.think_codes[:started]
            if "class" in self.columns:
                self.names["class"].to_window(think_class, names)
            # else every think is of the one class, "all": code 0
            tail = slice(started, started + len(self.pending.think))
            self.thinks[tail] = self.pending.think
            self.think_codes[tail] = self.pending.codes(names)
            result.thinks, result.think_class = self.thinks[:tail.stop], self.think_codes[:tail.stop]
        return result


@dataclass
class _PendingThinks:
    """Thinks still running at the end (thinks.parquet) that started in the window."""

    think: np.ndarray
    classes: list[str]

    def codes(self, names: list[str]) -> np.ndarray:
        """Each think's class as an index into `names` (-1 for a class no transaction of the
        run has)."""
        index = {name: i for i, name in enumerate(names)}
        return np.array([index.get(name, -1) for name in self.classes], dtype=np.int32)


def _pending_thinks(path: Path, window: Window) -> _PendingThinks:
    try:
        table = read_parquet(path, ["start", "think", "class"])
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise InputError(f"not a readable parquet file: {exc}", file=path) from None
    start = arrow_numpy.floats(table.column("start"))
    think = arrow_numpy.floats(table.column("think"))
    keep = window.contains(start) & ~np.isnan(think)
    classes = [str(c) for c, kept in zip(table.column("class").to_pylist(), keep) if kept]
    return _PendingThinks(think[keep], classes)


def read_run_transactions(path: Path) -> WindowTransactions:
    """Every finished transaction of the run, whatever its phase (stagger, stabilization, the
    window, stopping): what a whole-run timeline is made of."""
    return read_window_transactions(path, Window(-math.inf, math.inf))



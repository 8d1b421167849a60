"""Columnar record of every transaction, written to transactions.parquet.

One Python list per column keeps the cost of recording a transaction to its appends (about
0.5 µs); times are stored as the clock gave them and made relative to t0 when converted. Error
texts are kept only for the rows that have one, their passwords masked (perflab.redact). Names
(script, transaction, class) are stored once, as dictionary-encoded columns.

A run does not keep its transactions in memory: given a spill file, the recorder appends every
SPILL_ROWS rows to it as one chunk -- the lists as `marshal` writes them, a C loop over the
floats (about 0.2 µs a row, half of converting them to Arrow, which waits for the end of the
run) -- and starts its lists afresh. The driver's resident set stays flat however long the run
is (bench/soak.py: an hour at 10k users is 1.8 million rows, about 300 bytes each as Python
objects, which would otherwise double it). Each chunk is a length and its bytes; a chunk cut
short (a full disk) is cut off, and the chunks before it are read back. The spill writes about
125 bytes a row to the run directory's device, which the run's report says (its device rows
include them). Spilling that fails stops; the rest stays in memory.
"""

from __future__ import annotations

import functools
import marshal
import math
import os
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from perflab import arrow_arrays
from perflab.redact import redact_text

NAN = math.nan

#: Rows kept in memory before they are spilled (about 1.2 MB of Python objects): writing them
#: holds the event loop for about a millisecond.
SPILL_ROWS = 4096
#: The spill file's name in the run directory; removed once transactions.parquet is written,
#: left beside the record of a run that could not write it (or was killed).
SPILL_FILE = "transactions.spill"
@functools.lru_cache(maxsize=256)
def _redacted(error: str) -> str:
    """An error text with its passwords masked; a failing run repeats a few texts many times."""
    return redact_text(error)


#: A chunk's header: the length of its marshal bytes.
_CHUNK_HEADER = struct.Struct("<Q")
#: The in-memory lists in the order a chunk holds them (SPILL_SCHEMA's, error apart).
_LIST_COLUMNS = ("user", "script", "transaction", "class", "intended_start", "actual_start", "first_response", "end",
                 "ok", "think", "cpu", "cpu_user", "cpu_sys", "instructions", "worker", "harness_cpu")

SCHEMA = pa.schema([
    ("user", pa.int32()),
    ("script", pa.dictionary(pa.int16(), pa.string())),
    ("transaction", pa.dictionary(pa.int16(), pa.string())),
    ("class", pa.dictionary(pa.int16(), pa.string())),
    ("intended_start", pa.float64()),
    ("actual_start", pa.float64()),
    ("first_response", pa.float64()),
    ("end", pa.float64()),
    ("ok", pa.bool_()),
    ("error", pa.string()),
    ("think", pa.float64()),
    ("cpu", pa.float64()),
    ("cpu_user", pa.float64()),
    ("cpu_sys", pa.float64()),
    ("instructions", pa.float64()),
    ("worker", pa.int16()),
    ("harness_cpu", pa.float64()),
])

#: thinks.parquet: the thinks still running when the run stopped (docs/architecture.md).
THINKS_SCHEMA = pa.schema([
    ("user", pa.int32()),
    ("transaction", pa.dictionary(pa.int16(), pa.string())),
    ("class", pa.dictionary(pa.int16(), pa.string())),
    ("start", pa.float64()),
    ("think", pa.float64()),
])


#: The spill file's columns: SCHEMA with the names as their plain indices (the dictionaries
#: are the recorder's and are applied once, when the table is built).
SPILL_SCHEMA = pa.schema([pa.field(f.name, f.type.index_type if pa.types.is_dictionary(f.type) else f.type)
                          for f in SCHEMA])
#: Columns stored as the clock gave them, made relative to t0 when converted.
_CLOCK_COLUMNS = frozenset({"intended_start", "actual_start", "first_response", "end"})


@dataclass
class RecentRows:
    """Rows [first, first + len(ok)) still in memory, for the live display (drive/live.py)."""
    first: int
    ok: np.ndarray
    intended: np.ndarray
    end: np.ndarray
    tx: np.ndarray | None = None        # each row's transaction, an index into Recorder.tx_names


class Recorder:
    def __init__(self, scripts: list[str], transactions: list[str], classes: list[str], t0: float,
                 spill_path: str | os.PathLike | None = None):
        self.script_names, self.tx_names, self.class_names = scripts, transactions, classes
        self.t0 = t0
        self.spill_path = None if spill_path is None else Path(spill_path)
        self.spilled = 0  # rows written to the spill file; the lists hold the rows after them
        self.spill_error: str | None = None
        self._fd: int | None = None  # the spill file, open for appending
        self.spilled_bytes = 0  # the spill file's length in whole chunks
        self._last: tuple | None = None  # the last spilled chunk's (first row, ok, intended, end, errors)
        self.error_texts: dict[int, str] = {}  # row index in the run -> its error text
        self._new_columns()
        self.pending: dict[str, list] = {name: [] for name in THINKS_SCHEMA.names}
        self.completed = 0
        self.errors = 0

    def _new_columns(self) -> None:
        self.user: list[int] = []
        self.script: list[int] = []
        self.tx: list[int] = []
        self.klass: list[int] = []
        self.intended: list[float] = []
        self.actual: list[float] = []
        self.first: list[float] = []
        self.end: list[float] = []
        self.ok: list[bool] = []
        self.think: list[float] = []
        self.cpu: list[float] = []
        self.cpu_user: list[float] = []
        self.cpu_sys: list[float] = []
        self.instructions: list[float] = []
        self.worker: list[int] = []
        self.harness_cpu: list[float] = []

    def _columns(self) -> dict[str, list]:
        """The in-memory lists by SCHEMA column (error apart)."""
        return {"user": self.user, "script": self.script, "transaction": self.tx, "class": self.klass,
                "intended_start": self.intended, "actual_start": self.actual, "first_response": self.first,
                "end": self.end, "ok": self.ok, "think": self.think, "cpu": self.cpu, "cpu_user": self.cpu_user,
                "cpu_sys": self.cpu_sys, "instructions": self.instructions, "worker": self.worker,
                "harness_cpu": self.harness_cpu}

    def add(self, user: int, script: int, tx: int, klass: int, intended: float, actual: float,
            first: float | None, end: float, ok: bool, error: str | None, think: float,
            cpu: float = NAN, cpu_user: float = NAN, cpu_sys: float = NAN, worker: int = -1, instructions: float = NAN,
            harness_cpu: float = NAN) -> None:
        self.user.append(user)
        self.script.append(script)
        self.tx.append(tx)
        self.klass.append(klass)
        self.intended.append(intended)
        self.actual.append(actual)
        self.first.append(NAN if first is None else first)
        self.end.append(end)
        self.ok.append(ok)
        self.think.append(think)
        self.cpu.append(cpu)
        self.cpu_user.append(cpu_user)
        self.cpu_sys.append(cpu_sys)
        self.instructions.append(instructions)
        self.worker.append(worker)
        self.harness_cpu.append(harness_cpu)
        if ok:
            self.completed += 1
        else:
            self.errors += 1
        if error is not None:
            # a SUT's message may quote its DSN back: transactions.parquet is a file perflab writes
            self.error_texts[self.spilled + len(self.ok) - 1] = _redacted(error)
        if len(self.ok) >= SPILL_ROWS and self.spill_path is not None and self.spill_error is None:
            self._spill()

    def add_block(self, user: np.ndarray, script: np.ndarray, tx: np.ndarray, klass: np.ndarray,
                  intended: np.ndarray, actual: np.ndarray, first: np.ndarray, end: np.ndarray, ok: np.ndarray,
                  think: np.ndarray, errors: dict[int, str]) -> None:
        """Rows recorded elsewhere as arrays (the compiled HTTP loop, native_http.py), `errors` by
        their index in the block; the columns it has no value for are NaN (worker: -1). With a
        spill file the block is written as one chunk of the arrays' bytes, not made Python objects;
        without one (or once spilling failed) the rows join the in-memory lists."""
        count = len(ok)
        if not count:
            return
        completed = int(np.count_nonzero(ok))
        if not self._spill_block(user, script, tx, klass, intended, actual, first, end, ok, think, errors):
            base = self.spilled + len(self.ok)
            for column, values in ((self.user, user), (self.script, script), (self.tx, tx), (self.klass, klass),
                                   (self.intended, intended), (self.actual, actual), (self.first, first),
                                   (self.end, end), (self.ok, ok), (self.think, think)):
                column.extend(values.tolist())
            nan = [NAN] * count
            for column in (self.cpu, self.cpu_user, self.cpu_sys, self.instructions, self.harness_cpu):
                column.extend(nan)
            self.worker.extend([-1] * count)
            for index, text in errors.items():
                self.error_texts[base + index] = _redacted(text)
        self.completed += completed
        self.errors += count - completed

    def _spill_block(self, user: np.ndarray, script: np.ndarray, tx: np.ndarray, klass: np.ndarray,
                     intended: np.ndarray, actual: np.ndarray, first: np.ndarray, end: np.ndarray, ok: np.ndarray,
                     think: np.ndarray, errors: dict[int, str]) -> bool:
        """add_block's rows as one spill chunk after the rows before them; False when there is no
        spill file or writing failed (spill_error says why)."""
        if self.spill_path is None or self.spill_error is not None:
            return False
        if self.ok:
            self._spill()  # the rows before the block, in order
            if self.spill_error is not None:
                return False
        first_row = self.spilled
        texts = {first_row + index: _redacted(text) for index, text in errors.items()}
        arrays: dict[str, np.ndarray] = {
            "user": np.ascontiguousarray(user, np.int32), "script": np.ascontiguousarray(script, np.int16),
            "transaction": np.ascontiguousarray(tx, np.int16), "class": np.ascontiguousarray(klass, np.int16),
            "intended_start": np.ascontiguousarray(intended, np.float64),
            "actual_start": np.ascontiguousarray(actual, np.float64),
            "first_response": np.ascontiguousarray(first, np.float64),
            "end": np.ascontiguousarray(end, np.float64), "ok": np.ascontiguousarray(ok, np.bool_),
            "think": np.ascontiguousarray(think, np.float64)}
        if not self._write_chunk((first_row, {name: (str(a.dtype), a.tobytes()) for name, a in arrays.items()},
                                  texts)):
            return False
        self.spilled += len(ok)
        self._last = (first_row, arrays["ok"], arrays["intended_start"], arrays["end"], texts, arrays["transaction"])
        return True

    def _write_chunk(self, payload: tuple) -> bool:
        """Append one chunk to the spill file; False (and spill_error said) when it could not be."""
        try:
            data = marshal.dumps(payload)
            chunk = _CHUNK_HEADER.pack(len(data)) + data
            if self._fd is None:
                assert self.spill_path is not None
                self._fd = os.open(self.spill_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND | os.O_CLOEXEC,
                                   0o644)
            written = os.write(self._fd, chunk)
            if written != len(chunk):
                raise OSError(f"short write to the spill file ({written} of {len(chunk)} bytes)")
        except Exception as exc:  # noqa: BLE001 - whatever it is, the run goes on with its rows in memory
            self.spill_error = f"{type(exc).__name__}: {exc}"
            if self._fd is not None:
                try:
                    os.ftruncate(self._fd, self.spilled_bytes)  # a chunk cut short is not one
                except OSError:
                    pass  # the reader stops at the last whole chunk anyway
            return False
        self.spilled_bytes += len(chunk)
        return True

    def _batch(self, start: int = 0) -> pa.RecordBatch:
        """The in-memory rows from the `start`-th of them on, as a batch in SPILL_SCHEMA."""
        lists = self._columns()
        return self._to_batch([lists[name][start:] for name in _LIST_COLUMNS], self.spilled + start,
                              self.error_texts)

    def _to_batch(self, lists: list[list], first: int, error_texts: dict[int, str]) -> pa.RecordBatch:
        """Rows `first`.. as the lists hold them (in _LIST_COLUMNS order) -> a SPILL_SCHEMA batch."""
        count = len(lists[0])
        by_name = dict(zip(_LIST_COLUMNS, lists))
        arrays = []
        for field in SPILL_SCHEMA:
            if field.name == "error":
                texts: list[str | None] = [None] * count
                for index, text in error_texts.items():
                    if first <= index < first + count:
                        texts[index - first] = text
                arrays.append(arrow_arrays.strings(texts))
            elif field.name in _CLOCK_COLUMNS:
                arrays.append(arrow_arrays.numbers(np.asarray(by_name[field.name], dtype=np.float64) - self.t0, field.type))
            else:
                arrays.append(arrow_arrays.of_type(by_name[field.name], field.type))
        return pa.RecordBatch.from_arrays(arrays, schema=SPILL_SCHEMA)

    def _spill(self) -> None:
        """Append the in-memory rows to the spill file as one chunk and start the lists afresh.
        A write that fails (a full disk) stops spilling: the file is cut back to its whole
        chunks, the rest stays in memory, and the run reports why (DriverRecord.spill_error)."""
        lists = self._columns()
        first = self.spilled
        errors = {i: t for i, t in self.error_texts.items() if i >= first}
        if not self._write_chunk((first, [lists[name] for name in _LIST_COLUMNS], errors)):
            return
        count = len(self.ok)
        self.spilled += count
        # The last spilled chunk stays at hand for the live display (drive/live.py), whose
        # interval of a second or so can span a spill.
        self._last = (first, self.ok, self.intended, self.end, errors, self.tx)
        self.error_texts = {}
        self._new_columns()

    @staticmethod
    def _block_lists(columns: dict[str, tuple[str, bytes]]) -> list:
        """A spilled block's columns (add_block) in _LIST_COLUMNS order, as arrays; the columns it
        did not record, NaN (worker: -1)."""
        arrays = {name: np.frombuffer(data, dtype=np.dtype(dtype)) for name, (dtype, data) in columns.items()}
        count = len(arrays["ok"])
        out = []
        for name in _LIST_COLUMNS:
            if name in arrays:
                out.append(arrays[name])
            elif name == "worker":
                out.append(np.full(count, -1, np.int16))
            else:
                out.append(np.full(count, NAN))
        return out

    def _spilled_batches(self) -> list[pa.RecordBatch]:
        """The spilled chunks, as batches: the whole chunks within spilled_bytes."""
        if self.spill_path is None or not self.spilled_bytes:
            return []
        with open(self.spill_path, "rb") as f:
            data = f.read(self.spilled_bytes)
        batches, offset = [], 0
        while offset + _CHUNK_HEADER.size <= len(data):
            (length,) = _CHUNK_HEADER.unpack_from(data, offset)
            start = offset + _CHUNK_HEADER.size
            if start + length > len(data):
                break  # cut short
            first, lists, errors = marshal.loads(data[start:start + length])
            if isinstance(lists, dict):  # a block of arrays (add_block)
                lists = self._block_lists(lists)
            batches.append(self._to_batch(lists, first, errors))
            offset = start + length
        return batches

    def hand_over(self) -> pa.Table:
        """The rows recorded since the last hand-over, which are then dropped from memory: a
        driver on another host sends its new rows to the coordinator every second
        (drive/remote/ray_driver.py) and keeps none of them. Not with a spill file (a local run reads
        its table once, at the end)."""
        if self.spill_path is not None:
            raise ValueError("a recorder that spills to a file does not hand its rows over")
        table = self.table(self.spilled)
        self.spilled += len(self.ok)
        self.error_texts = {}
        self._new_columns()
        return table

    def close(self, remove: bool = True) -> None:
        """Close the spill file, and remove it unless `remove` is False (the table could not be
        written where it belongs: it is the only copy of the spilled rows)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if remove and self.spill_path is not None:
            self.spill_path.unlink(missing_ok=True)

    def add_pending_think(self, user: int, tx: int, klass: int, start: float, think: float) -> None:
        """A think that was still running when the user stopped (the window ended, or the run was
        cut short): no transaction followed it, but its length was drawn when it began."""
        pending = self.pending
        pending["user"].append(user)
        pending["transaction"].append(tx)
        pending["class"].append(klass)
        pending["start"].append(start - self.t0)
        pending["think"].append(think)

    def thinks_table(self) -> pa.Table:
        """thinks.parquet: the thinks running at the end, one row per user still thinking."""
        p = self.pending

        def names(indices: list[int], dictionary: list[str]) -> pa.DictionaryArray:
            return arrow_arrays.dictionary(indices, dictionary)

        return pa.Table.from_arrays([
            arrow_arrays.numbers(p["user"], pa.int32()), names(p["transaction"], self.tx_names),
            names(p["class"], self.class_names), arrow_arrays.numbers(p["start"], pa.float64()),
            arrow_arrays.numbers(p["think"], pa.float64())], schema=THINKS_SCHEMA)

    def __len__(self) -> int:
        return self.spilled + len(self.ok)

    def recent(self, a: int, b: int) -> RecentRows:
        """Rows [a, b) by their index in the run, or the part of them still at hand -- in memory,
        or in the last spilled batch (times relative to t0)."""
        oks, intendeds, ends, txs = [], [], [], []
        first = max(a, self.spilled)
        if self._last is not None and a < self.spilled:
            last_first, ok, intended, end, _errors, tx = self._last
            lo, hi = max(a, last_first) - last_first, min(b, self.spilled) - last_first
            if hi > lo:
                first = last_first + lo
                oks.append(np.asarray(ok[lo:hi], dtype=bool))
                intendeds.append(np.asarray(intended[lo:hi], dtype=np.float64) - self.t0)
                ends.append(np.asarray(end[lo:hi], dtype=np.float64) - self.t0)
                txs.append(np.asarray(tx[lo:hi], dtype=np.int64))
        lo, hi = max(a, self.spilled) - self.spilled, max(b, self.spilled) - self.spilled
        oks.append(np.asarray(self.ok[lo:hi], dtype=bool))
        intendeds.append(np.asarray(self.intended[lo:hi], dtype=np.float64) - self.t0)
        ends.append(np.asarray(self.end[lo:hi], dtype=np.float64) - self.t0)
        txs.append(np.asarray(self.tx[lo:hi], dtype=np.int64))
        return RecentRows(first=first, ok=np.concatenate(oks), intended=np.concatenate(intendeds),
                          end=np.concatenate(ends), tx=np.concatenate(txs))

    def error_at(self, index: int) -> str | None:
        """The error text of row `index` (None when it had none, or is no longer at hand)."""
        text = self.error_texts.get(index)
        if text is None and self._last is not None:
            text = self._last[4].get(index)
        return text

    def table(self, start: int = 0) -> pa.Table:
        """The transactions recorded so far, from the `start`-th on, in SCHEMA."""
        batches: list[pa.RecordBatch] = []
        if start < self.spilled and self.spill_path is None:
            raise ValueError(f"rows before {self.spilled} were handed over and are no longer here")
        if start < self.spilled:
            batches.extend(self._spilled_batches())
        batches.append(self._batch(max(0, start - self.spilled)))
        spilled = pa.Table.from_batches(batches, schema=SPILL_SCHEMA)
        if start < self.spilled:
            spilled = spilled.slice(start)
        dictionaries = {"script": self.script_names, "transaction": self.tx_names, "class": self.class_names}
        columns: list[pa.Array | pa.ChunkedArray] = []
        for field in SCHEMA:
            column = spilled.column(field.name)
            if field.name in dictionaries:
                indices = column.combine_chunks() if column.num_chunks else arrow_arrays.numbers([], pa.int16())
                columns.append(pa.DictionaryArray.from_arrays(indices, arrow_arrays.strings(dictionaries[field.name])))
            else:
                columns.append(column)
        return pa.Table.from_arrays(columns, schema=SCHEMA)

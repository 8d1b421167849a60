"""Columnar record of every transaction, written to transactions.parquet.

One Python list per column keeps the cost of recording a transaction to its appends (about
0.5 µs); times are stored as the clock gave them and made relative to t0 when converted. Error
texts are kept only for the rows that have one. Names (script, transaction, class) are stored
once, as dictionary-encoded columns.

A run does not keep its transactions in memory: given a spill file, the recorder converts every
SPILL_ROWS rows to one Arrow record batch, appends it to the file (an IPC stream in the run
directory) and starts its lists afresh. The driver's resident set stays flat however long the
run is (bench/soak.py: an hour at 10k users is 1.8 million rows, about 300 bytes each as Python
objects, which would otherwise double it). The conversion, about 0.4 µs a row, is paid during
the run instead of after it, in pieces of about 2 ms. The final table reads the spilled batches
back through a memory map.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

NAN = math.nan

#: Rows kept in memory before they are spilled (about 1.2 MB of Python objects): converting
#: them holds the event loop for about 2 ms.
SPILL_ROWS = 4096
#: The spill files' name in the run directory (a numeric suffix is added); removed once
#: transactions.parquet is written, left beside an abandoned run's record.
SPILL_FILE = "transactions.spill.arrows"

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


class Recorder:
    def __init__(self, scripts: list[str], transactions: list[str], classes: list[str], t0: float,
                 spill_path: str | os.PathLike | None = None):
        self.script_names, self.tx_names, self.class_names = scripts, transactions, classes
        self.t0 = t0
        self.spill_path = None if spill_path is None else Path(spill_path)
        self.spilled = 0  # rows written to the spill files; the lists hold the rows after them
        self.spill_error: str | None = None
        self._writer: pa.ipc.RecordBatchStreamWriter | None = None
        self._files: list[Path] = []  # a new file each time a table was read while spilling
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
            self.error_texts[self.spilled + len(self.ok) - 1] = error
        if len(self.ok) >= SPILL_ROWS and self.spill_path is not None and self.spill_error is None:
            self._spill()

    def _batch(self, start: int = 0) -> pa.RecordBatch:
        """The in-memory rows from the `start`-th of them on, as a batch in SPILL_SCHEMA."""
        lists = self._columns()
        first = self.spilled + start
        count = len(self.ok) - start
        arrays = []
        for field in SPILL_SCHEMA:
            if field.name == "error":
                texts: list[str | None] = [None] * count
                for index, text in self.error_texts.items():
                    if first <= index < first + count:
                        texts[index - first] = text
                arrays.append(pa.array(texts, pa.string()))
                continue
            values = lists[field.name][start:]
            if field.name in _CLOCK_COLUMNS:
                arrays.append(pa.array(np.asarray(values, dtype=np.float64) - self.t0, field.type))
            else:
                arrays.append(pa.array(values, field.type))
        return pa.RecordBatch.from_arrays(arrays, schema=SPILL_SCHEMA)

    def _spill(self) -> None:
        """Append the in-memory rows to the spill file and start the lists afresh. A write that
        fails (a full disk) stops spilling: the rows stay in memory, nothing is lost, and the
        run's end, which writes the same rows to the same disk, reports the failure."""
        try:
            batch = self._batch()
            if self._writer is None:
                assert self.spill_path is not None
                path = self.spill_path.with_name(f"{self.spill_path.name}.{len(self._files)}")
                self._files.append(path)
                self._writer = pa.ipc.new_stream(str(path), SPILL_SCHEMA)
            self._writer.write_batch(batch)
        except OSError as exc:
            self.spill_error = f"{type(exc).__name__}: {exc}"
            return
        self.spilled += batch.num_rows
        self.error_texts = {i: t for i, t in self.error_texts.items() if i >= self.spilled}
        self._new_columns()
    def _close_writer(self) -> None:
        if self._writer is not None:
            writer, self._writer = self._writer, None
            writer.close()  # ends the stream; the next spill starts a new file

    def close(self) -> None:
        """Remove the spill files (the table has been written where it belongs)."""
        try:
            self._close_writer()
        except OSError:
            pass
        for path in self._files:
            path.unlink(missing_ok=True)
        self._files = []

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
            return pa.DictionaryArray.from_arrays(pa.array(indices, pa.int16()), pa.array(dictionary, pa.string()))

        return pa.Table.from_arrays([
            pa.array(p["user"], pa.int32()), names(p["transaction"], self.tx_names),
            names(p["class"], self.class_names), pa.array(p["start"], pa.float64()),
            pa.array(p["think"], pa.float64())], schema=THINKS_SCHEMA)

    def __len__(self) -> int:
        return self.spilled + len(self.ok)

    def recent(self, a: int, b: int) -> RecentRows:
        """Rows [a, b) by their index in the run, or the part of them still in memory (times
        relative to t0)."""
        lo, hi = max(a, self.spilled) - self.spilled, max(b, self.spilled) - self.spilled
        return RecentRows(first=self.spilled + lo, ok=np.asarray(self.ok[lo:hi], dtype=bool),
                          intended=np.asarray(self.intended[lo:hi], dtype=np.float64) - self.t0,
                          end=np.asarray(self.end[lo:hi], dtype=np.float64) - self.t0)

    def error_at(self, index: int) -> str | None:
        """The error text of row `index` (None when it had none or is spilled)."""
        return self.error_texts.get(index)

    def table(self, start: int = 0) -> pa.Table:
        """The transactions recorded so far, from the `start`-th on (a driver on another host
        reports its new rows every second: drive/distributed.py), in SCHEMA."""
        batches: list[pa.RecordBatch] = []
        if start < self.spilled:
            self._close_writer()
            for path in self._files:
                with pa.ipc.open_stream(pa.memory_map(str(path))) as reader:
                    batches.extend(reader)
        batches.append(self._batch(max(0, start - self.spilled)))
        spilled = pa.Table.from_batches(batches, schema=SPILL_SCHEMA)
        if start < self.spilled:
            spilled = spilled.slice(start)
        dictionaries = {"script": self.script_names, "transaction": self.tx_names, "class": self.class_names}
        columns = []
        for field in SCHEMA:
            column = spilled.column(field.name)
            if field.name in dictionaries:
                indices = column.combine_chunks() if column.num_chunks else pa.array([], pa.int16())
                column = pa.DictionaryArray.from_arrays(indices, pa.array(dictionaries[field.name], pa.string()))
            columns.append(column)
        return pa.Table.from_arrays(columns, schema=SCHEMA)

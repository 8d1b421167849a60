"""Columnar in-memory record of every transaction, written to transactions.parquet.

Appending to one Python list per column keeps the per-transaction cost of recording low;
names (script, transaction, class) are stored once as dictionary-encoded columns.
"""

from __future__ import annotations

import math

import pyarrow as pa

NAN = math.nan

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


class Recorder:
    def __init__(self, scripts: list[str], transactions: list[str], classes: list[str], t0: float):
        self.script_names, self.tx_names, self.class_names = scripts, transactions, classes
        self.t0 = t0
        self.user: list[int] = []
        self.script: list[int] = []
        self.tx: list[int] = []
        self.klass: list[int] = []
        self.intended: list[float] = []
        self.actual: list[float] = []
        self.first: list[float] = []
        self.end: list[float] = []
        self.ok: list[bool] = []
        self.error: list[str | None] = []
        self.think: list[float] = []
        self.cpu: list[float] = []
        self.cpu_user: list[float] = []
        self.cpu_sys: list[float] = []
        self.instructions: list[float] = []
        self.worker: list[int] = []
        self.harness_cpu: list[float] = []
        self.pending: dict[str, list] = {name: [] for name in THINKS_SCHEMA.names}
        self.completed = 0
        self.errors = 0

    def add(self, user: int, script: int, tx: int, klass: int, intended: float, actual: float,
            first: float | None, end: float, ok: bool, error: str | None, think: float,
            cpu: float = NAN, cpu_user: float = NAN, cpu_sys: float = NAN, worker: int = -1, instructions: float = NAN,
            harness_cpu: float = NAN) -> None:
        t0 = self.t0
        self.user.append(user)
        self.script.append(script)
        self.tx.append(tx)
        self.klass.append(klass)
        self.intended.append(intended - t0)
        self.actual.append(actual - t0)
        self.first.append(NAN if first is None else first - t0)
        self.end.append(end - t0)
        self.ok.append(ok)
        self.error.append(error)
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
        return len(self.end)

    def table(self, start: int = 0) -> pa.Table:
        """The transactions recorded so far, from the `start`-th on (a driver on another host
        reports its new rows every second: drive/distributed.py)."""
        def names(indices: list[int], dictionary: list[str]) -> pa.DictionaryArray:
            return pa.DictionaryArray.from_arrays(pa.array(indices[start:], pa.int16()),
                                                  pa.array(dictionary, pa.string()))

        def column(values: list, kind: pa.DataType) -> pa.Array:
            return pa.array(values[start:], kind)

        return pa.Table.from_arrays([
            column(self.user, pa.int32()),
            names(self.script, self.script_names),
            names(self.tx, self.tx_names),
            names(self.klass, self.class_names),
            column(self.intended, pa.float64()),
            column(self.actual, pa.float64()),
            column(self.first, pa.float64()),
            column(self.end, pa.float64()),
            column(self.ok, pa.bool_()),
            column(self.error, pa.string()),
            column(self.think, pa.float64()),
            column(self.cpu, pa.float64()),
            column(self.cpu_user, pa.float64()),
            column(self.cpu_sys, pa.float64()),
            column(self.instructions, pa.float64()),
            column(self.worker, pa.int16()),
            column(self.harness_cpu, pa.float64()),
        ], schema=SCHEMA)

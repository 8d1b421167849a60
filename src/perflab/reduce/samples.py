"""Window totals from samples.parquet: the raw (H), (S), (V), (I), driver and SUT-counter
quantities of the registry's Measurement group.

Column names follow docs/architecture.md: `h.cpu<N>.<field>`, `h.vm.*`, `h.disk.<dev>.*`,
`h.net.<iface>.*`, `s.*`, `v.<component>.*`, `driver.*`, `i.*`, `sut.<counter>`. A quantity
whose columns are absent is na, never zero: a machine that cannot provide a column omits it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from perflab.errors import InputError
from perflab.reduce import arrow_numpy
from perflab.reduce.transactions import read_parquet
from perflab.reduce.window import Counter, Window

_CPU_COLUMN = re.compile(r"^h\.cpu(\d+)\.(\w+)$")
# /proc/stat fields that are busy time, split as the seeds split CP and emulation time.
CP_FIELDS = ("system", "irq", "softirq")
EMUL_FIELDS = ("user", "nice")
# Names a SUT may give its own committed-transaction counter (the seeds' RTM count).
TX_COUNTER_NAMES = ("xact_commit", "transactions", "commits")


#: A counter's value at a window edge is measured when a sample lies within half an interval of
#: the edge outside the sampled span, or its two neighbours are at most this many intervals
#: apart (a monitor starved for a moment skips grid points; one lost for longer leaves a gap).
MAX_GAP_INTERVALS = 5.0


@dataclass
class Samples:
    t: np.ndarray
    columns: dict[str, np.ndarray]
    notes: list[str] = field(default_factory=list)
    interval: float | None = None  # the monitor's sampling interval (else the median spacing)
    uncovered: list[str] = field(default_factory=list)  # quantities na: their columns left the window

    @classmethod
    def read(cls, path: Path) -> Samples:
        try:
            table = read_parquet(path)
        except Exception as exc:  # pyarrow raises several types for a damaged file
            raise InputError(f"not a readable parquet file: {exc}", file=path) from None
        if "t" not in table.column_names:
            raise InputError("no `t` column (sample time, seconds since t0)", file=path, field="t")
        t = arrow_numpy.floats(table.column("t"))
        order = np.argsort(t, kind="stable")
        columns = {}
        for name in table.column_names:
            if name == "t":
                continue
            try:
                columns[name] = arrow_numpy.floats(table.column(name))[order]
            except (TypeError, ValueError):
                continue  # a non-numeric column is not a counter or gauge
        return cls(t[order], columns)

    # columns ------------------------------------------------------------------------------
    def has(self, name: str) -> bool:
        return name in self.columns

    def counter(self, names: Iterable[str]) -> Counter | None:
        """The sum of several cumulative columns; None when any is absent."""
        total: Counter | None = None
        for name in names:
            if name not in self.columns:
                return None
            one = Counter.of(self.t, self.columns[name])
            total = one if total is None else total + one
        return total

    def step(self) -> float:
        if self.interval and self.interval > 0:
            return float(self.interval)
        return float(np.median(np.diff(self.t))) if len(self.t) > 1 else 1.0

    def covers(self, counter: Counter, times) -> np.ndarray:
        step = self.step()
        return counter.covered(times, 0.5 * step, MAX_GAP_INTERVALS * step)

    def delta(self, names: Iterable[str], window: Window, what: str) -> float | None:
        counter = self.counter(list(names))
        if counter is None:
            return None
        if not self.covers(counter, [window.start, window.end]).all():
            last = float(counter.t[-1]) if len(counter.t) else float("nan")
            self.notes.append(f"{what}: its samples end at {last:.1f} s or leave a gap at a window edge "
                              f"({window.start:.1f}–{window.end:.1f} s): na")
            self.uncovered.append(what)
            return None
        value = counter.delta(window.start, window.end)
        if value is not None and value < 0:
            self.notes.append(f"{what}: counter went backwards over the window ({value:g}): na")
            return None
        return value

    def gauge_mean(self, name: str, window: Window) -> float | None:
        if name not in self.columns:
            return None
        inside = (self.t >= window.start) & (self.t <= window.end)
        values = self.columns[name][inside]
        values = values[~np.isnan(values)]
        return float(values.mean()) if len(values) else None

    def cpus(self) -> list[int]:
        return sorted({int(m.group(1)) for name in self.columns if (m := _CPU_COLUMN.match(name))})

    def prefixed(self, prefix: str) -> list[str]:
        return [name for name in self.columns if name.startswith(prefix)]

    def components(self) -> list[str]:
        """SUT component names from `v.<component>.<field>` columns (the component may contain dots)."""
        return sorted({name[2:].rsplit(".", 1)[0] for name in self.prefixed("v.") if name.count(".") >= 2})

    # quantities ----------------------------------------------------------------------------
    def cpu_fields(self, cpus: list[int], fields: tuple[str, ...], required: str) -> list[str] | None:
        """Column names of `fields` for `cpus`; a field other than `required` may be absent
        on a platform (it is then not part of the sum); `required` must be there for every CPU."""
        names = []
        for cpu in cpus:
            if f"h.cpu{cpu}.{required}" not in self.columns:
                return None
            names += [f"h.cpu{cpu}.{f}" for f in fields if f"h.cpu{cpu}.{f}" in self.columns]
        return names

    def device_sum(self, prefix: str, fields: tuple[str, ...], window: Window, what: str) -> float | None:
        """Sum over devices/interfaces of `<prefix><dev>.<field>`."""
        names = [n for n in self.prefixed(prefix) if n.rsplit(".", 1)[-1] in fields]
        if not names:
            return None
        return self.delta(names, window, what)

    def device_max(self, prefix: str, field: str, window: Window, what: str) -> float | None:
        """The largest window difference of `<prefix><dev>.<field>` over devices (the busiest one)."""
        # the quantity named as a reader names it: "DISK BUSY (vda)", not its column h.disk.vda.busy_ms
        deltas = [self.delta([n], window, f"{what} ({n[len(prefix):].rsplit('.', 1)[0]})")
                  for n in self.prefixed(prefix) if n.rsplit(".", 1)[-1] == field]
        values = [v for v in deltas if v is not None]
        return max(values) if values else None

    def tx_counter(self, preferred: str | None) -> str | None:
        for name in ([preferred] if preferred else []) + list(TX_COUNTER_NAMES):
            if f"sut.{name}" in self.columns:
                return f"sut.{name}"
        return None

"""The system under test's own counters: `sut.<name>` columns (the seeds' RTM rows).

A counter source is anything the monitor process can open from a picklable spec:

    class CounterSpec(Protocol):          # picklable; lives in MonitorSpec.counters
        def open(self) -> CounterSource   # called inside the monitor process

    class CounterSource(Protocol):
        name: str
        def read(self) -> dict[str, float]  # {"sut.<counter>": cumulative value}
        def close(self) -> None

A PostgreSQL source, for example, is a spec holding a DSN whose open() connects and whose
read() returns {"sut.xact_commit": sum(xact_commit) from pg_stat_database}.

SharedCounters is the source for SUTs perflab runs in its own worker processes (Python, SQLite
adapters): a small int64 array in shared memory, one row (slot) per worker. Each worker owns its
slot and stores its cumulative count after every transaction; the monitor sums the slots. One
writer per cell and aligned 8-byte stores mean no locks and no torn values.

    counters = SharedCounters(["total_changes", "commits"], slots=n_workers)   # driver
    spec.counters = counters.handle                                             # for the monitor
    w = counters.writer(slot)        # in worker `slot` (counters pickles as its handle)
    w.set("total_changes", conn.total_changes)   # or w.add("commits")
    ...
    counters.close(); counters.unlink()          # driver, at the end

The same mechanism carries the driver's own counts (connections opened, TLS handshakes), which
the monitor cannot see from outside the driver: `SharedCounters(names, slots=1,
prefix="driver")` makes `driver.<name>` columns.
"""

from __future__ import annotations

import mmap
import os
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from multiprocessing import shared_memory
from typing import Protocol, runtime_checkable

_NAME_RX = re.compile(r"^[A-Za-z0-9_]+$")
_ITEM = 8  # int64


@runtime_checkable
class CounterSource(Protocol):
    name: str

    def read(self) -> dict[str, float]: ...

    def close(self) -> None: ...


@runtime_checkable
class CounterSpec(Protocol):
    def open(self) -> CounterSource: ...


@dataclass(frozen=True)
class SharedCountersHandle:
    """What crosses process boundaries: the shared-memory name and the layout."""

    shm_name: str
    names: tuple[str, ...]
    slots: int
    prefix: str = "sut"  # column prefix: sut.<name> (the SUT's counts) or driver.<name>

    def attach(self) -> SharedCounters:
        return SharedCounters._attach(self)

    def open(self) -> SharedCountersReader:
        """CounterSpec: the monitor's reader."""
        return SharedCountersReader(self.attach())


class SharedCounters:
    """Named int64 counters in shared memory, one slot per writer process."""

    def __init__(self, names: Iterable[str], slots: int, prefix: str = "sut") -> None:
        names = tuple(names)
        bad = [n for n in names if not _NAME_RX.match(n)]
        if bad or not names:
            raise ValueError(f"counter names must be non-empty [A-Za-z0-9_]+ (got {list(names)})")
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate counter names: {list(names)}")
        if slots < 1:
            raise ValueError("slots must be >= 1")
        if not _NAME_RX.match(prefix):
            raise ValueError(f"the column prefix must be [A-Za-z0-9_]+ (got {prefix!r})")
        size = _ITEM * len(names) * slots
        shm = shared_memory.SharedMemory(create=True, size=size)
        assert shm.buf is not None  # None only once closed
        self._setup(SharedCountersHandle(shm.name, names, slots, prefix), shm, shm.buf, owner=True)
        self._cells[:] = bytes(size)  # ftruncate zero-fills, but say so

    @classmethod
    def _attach(cls, handle: SharedCountersHandle) -> SharedCounters:
        self = cls.__new__(cls)
        if sys.version_info >= (3, 13):
            shm = shared_memory.SharedMemory(handle.shm_name, track=False)
            self._setup(handle, shm, shm.buf, owner=False)
        else:
            # Before 3.13, SharedMemory(name=...) registers the segment with the attaching
            # process's resource tracker, which unlinks it when that process exits (bpo-39959):
            # a worker exiting would destroy counters the driver and monitor still read.
            # POSIX shared memory is a file in /dev/shm on Linux, so map it directly.
            fd = os.open(f"/dev/shm/{handle.shm_name.lstrip('/')}", os.O_RDWR)
            try:
                mm = mmap.mmap(fd, _ITEM * len(handle.names) * handle.slots)
            finally:
                os.close(fd)
            self._setup(handle, mm, memoryview(mm), owner=False)
        return self

    def _setup(self, handle, holder, buf: memoryview, owner: bool) -> None:
        self.handle = handle
        self._holder = holder  # SharedMemory (creator, 3.13+) or mmap (attached before 3.13)
        self._buf = buf
        self._cells = buf.cast("B")
        self._values = buf.cast("q")
        self._index = {n: i for i, n in enumerate(handle.names)}
        self._owner = owner
        self._closed = False

    # Pickling sends the handle; unpickling attaches (never creates, never owns).
    def __reduce__(self):
        return (SharedCountersHandle.attach, (self.handle,))

    @property
    def names(self) -> tuple[str, ...]:
        return self.handle.names

    def writer(self, slot: int) -> SlotWriter:
        if not 0 <= slot < self.handle.slots:
            raise IndexError(f"slot {slot} not in 0..{self.handle.slots - 1}")
        return SlotWriter(self, slot)

    def totals(self) -> dict[str, int]:
        n = len(self.handle.names)
        v = self._values
        return {
            name: sum(v[slot * n + i] for slot in range(self.handle.slots))
            for name, i in self._index.items()
        }

    def open(self) -> SharedCountersReader:
        """CounterSpec (so MonitorSpec.counters can be the SharedCounters itself)."""
        return self.handle.open()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        # Views must be released before the mapping can be closed.
        self._values.release()
        self._cells.release()
        if isinstance(self._holder, shared_memory.SharedMemory):
            self._holder.close()
        else:
            self._buf.release()
            self._holder.close()

    def unlink(self) -> None:
        """Remove the segment. Only the creator (the driver) calls this, once all are done."""
        try:
            if isinstance(self._holder, shared_memory.SharedMemory):
                self._holder.unlink()
            else:
                os.unlink(f"/dev/shm/{self.handle.shm_name.lstrip('/')}")
        except FileNotFoundError:
            pass

    def __enter__(self) -> SharedCounters:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
        if self._owner:
            self.unlink()


class SlotWriter:
    """One worker's slot: stores cumulative values."""

    def __init__(self, counters: SharedCounters, slot: int) -> None:
        self._values = counters._values
        self._base = slot * len(counters.handle.names)
        self._index = counters._index

    def set(self, name: str, value: int) -> None:
        """Store this worker's cumulative value (e.g. SQLite's connection.total_changes)."""
        self._values[self._base + self._index[name]] = int(value)

    def add(self, name: str, n: int = 1) -> None:
        i = self._base + self._index[name]
        self._values[i] = self._values[i] + n  # only this worker writes this cell

    def get(self, name: str) -> int:
        return self._values[self._base + self._index[name]]


class SharedCountersReader:
    """CounterSource over SharedCounters: `<prefix>.<name>` (sut.<name>) = sum over slots."""

    name = "sut_counters"

    def __init__(self, counters: SharedCounters) -> None:
        self._counters = counters
        self._prefix = counters.handle.prefix

    def read(self) -> dict[str, float]:
        return {f"{self._prefix}.{k}": float(v) for k, v in self._counters.totals().items()}

    def close(self) -> None:
        self._counters.close()


@dataclass(frozen=True)
class CombinedCounterSpec:
    """Several CounterSpecs as one (MonitorSpec.counters takes one): a server's own counters and
    the driver's counts, read in the same sample."""

    specs: tuple

    def open(self) -> CombinedCounterSource:
        # One that cannot open (a server refusing the monitor's connection) must not take the
        # others' columns with it; only when none opens is the source unavailable.
        from . import SourceUnavailable

        sources, reasons = [], []
        for spec in self.specs:
            try:
                sources.append(spec.open())
            except SourceUnavailable as exc:
                reasons.append(str(exc))
        if not sources:
            raise SourceUnavailable("; ".join(reasons))
        return CombinedCounterSource(sources)


class CombinedCounterSource:
    name = "sut_counters"

    def __init__(self, sources: list) -> None:
        self._sources = sources

    def read(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for source in self._sources:
            out.update(source.read())
        return out

    def close(self) -> None:
        for source in self._sources:
            source.close()


def combine_counter_specs(*specs) -> object | None:
    """One CounterSpec for the monitor from any number of them (None entries skipped)."""
    present = tuple(s for s in specs if s is not None)
    if not present:
        return None
    return present[0] if len(present) == 1 else CombinedCounterSpec(present)

"""SharedCounters: the SUT's own counters through shared memory (sut.* columns)."""

from __future__ import annotations

import multiprocessing
import os
import pickle

import pytest

from perflab.monitor.sources.counters import (
    CounterSource,
    CounterSpec,
    SharedCounters,
    SharedCountersHandle,
)


def _worker(counters: SharedCounters, slot: int, transactions: int) -> None:
    w = counters.writer(slot)
    changes = 0
    for _ in range(transactions):
        changes += 3
        w.add("commits")
        w.set("changes", changes)  # the worker's cumulative value after each transaction
    counters.close()


@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_workers_write_slots_and_the_reader_sums_them(method):
    counters = SharedCounters(["commits", "changes"], slots=3)
    try:
        ctx = multiprocessing.get_context(method)
        procs = [ctx.Process(target=_worker, args=(counters, s, 1000 * (s + 1))) for s in range(3)]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
        assert [p.exitcode for p in procs] == [0, 0, 0]
        # Workers attaching and exiting must not have removed the segment (spawned workers
        # have their own resource tracker, which would unlink what they registered).
        assert os.path.exists(f"/dev/shm/{counters.handle.shm_name.lstrip('/')}")
        reader = pickle.loads(pickle.dumps(counters.handle)).open()
        assert isinstance(reader, CounterSource)
        assert reader.read() == {"sut.commits": 6000.0, "sut.changes": 18000.0}
        reader.close()
    finally:
        counters.close()
        counters.unlink()
    assert not os.path.exists(f"/dev/shm/{counters.handle.shm_name.lstrip('/')}")


def test_counters_and_handles_are_counter_specs():
    with SharedCounters(["tx"], slots=1) as counters:
        assert isinstance(counters, CounterSpec)
        assert isinstance(counters.handle, CounterSpec)
        assert isinstance(pickle.loads(pickle.dumps(counters)), SharedCounters)
        counters.writer(0).set("tx", 41)
        counters.writer(0).add("tx")
        r = counters.open()
        assert r.read() == {"sut.tx": 42.0}
        r.close()


def test_bad_layouts_are_refused():
    with pytest.raises(ValueError):
        SharedCounters(["a.b"], slots=1)  # would break the sut.<name> column naming
    with pytest.raises(ValueError):
        SharedCounters(["a", "a"], slots=1)
    with pytest.raises(ValueError):
        SharedCounters(["a"], slots=0)
    with SharedCounters(["a"], slots=2) as c:
        with pytest.raises(IndexError):
            c.writer(2)
    assert SharedCountersHandle("x", ("a",), 1).slots == 1

"""live.json's tables: per transaction name since the start (counts, failures, the recent rate,
the mean, bucketed percentiles within 1% of the exact nearest rank, the maximum) and the error
messages with their counts -- what the live panel shows beside Locust's and k6's tables."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest

from perflab.drive import live
from perflab.drive.live import LiveWriter
from perflab.drive.live_stats import (
    BUCKETS,
    MAX_MESSAGES,
    OTHER,
    RESOLUTION,
    ErrorCounts,
    History,
    bucket_of,
    bucket_percentiles,
)
from perflab.drive.load.engine import Phases
from perflab.drive.load.recorder import Recorder
from perflab.records.live import LivePoint, read_live


@dataclass
class FakeEngine:
    phases: Phases
    recorder: Recorder
    users: int | None = 2
    rate: float | None = None


def exact(values: np.ndarray, q: int) -> float:
    ordered = np.sort(values)
    return float(ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_bucketed_percentiles_are_within_the_resolution_of_the_nearest_rank(seed):
    # a deterministic bound (every value's bucket edge is within RESOLUTION of it): the seed only
    # picks which values; no draw can make it fail
    values = np.random.default_rng(seed).lognormal(mean=-4.0, sigma=1.5, size=5001)
    counts = np.bincount(bucket_of(values), minlength=BUCKETS)
    for q, got in zip((50, 90, 95, 99, 100), bucket_percentiles(counts, (50, 90, 95, 99, 100), float(values.max()))):
        want = exact(values, q)
        assert want * (1 - 1e-12) <= got <= want * (1 + RESOLUTION), (q, got, want)
    assert bucket_percentiles(np.zeros(BUCKETS, dtype=np.int64), (50,), 1.0) == [None]


def test_the_live_table_counts_each_transaction_name_since_the_start(tmp_path, monkeypatch):
    monkeypatch.setattr(live, "_driver_cpu_seconds", lambda: 1.0)
    recorder = Recorder(["s"], ["read", "write"], ["c"], 0.0)
    engine = FakeEngine(Phases(stagger=0.0, stabilization=1.0, measurement=10.0), recorder)
    writer = LiveWriter(tmp_path, "run-1")
    writer.tick(engine, 0.0)
    reads = [0.001 * (k + 1) for k in range(100)]                      # 1 .. 100 ms
    for k, response in enumerate(reads):
        recorder.add(0, 0, 0, 0, 0.005 * k, 0.005 * k, None, 0.005 * k + response, True, None, 0.0)
    for k in range(10):
        ok = k < 7
        recorder.add(1, 0, 1, 0, 0.1 * k, 0.1 * k, None, 0.1 * k + 0.25, ok, None if ok else f"<b>e{k % 2}</b>", 0.0)
    writer.tick(engine, 1.0)
    for k in range(5):                                                  # one second later: 5 more reads
        recorder.add(0, 0, 0, 0, 1.0 + 0.1 * k, 1.0 + 0.1 * k, None, 1.5 + 0.1 * k, True, None, 0.0)
    writer.tick(engine, 2.0)
    status = read_live(tmp_path)
    rows = {r.name: r for r in status.transactions}
    assert list(rows) == ["read", "write"]
    read, write = rows["read"], rows["write"]
    assert (read.tx_ok, read.errors_t, read.error_pct_t) == (105, 0, 0.0)
    assert read.etr_t == pytest.approx(5.0)                             # 5 in the last second
    everything = np.array(reads + [0.5] * 5)
    assert read.avg_last_t == pytest.approx(everything.mean())
    assert read.resp_max_t == pytest.approx(0.5)
    for q in (50, 90, 95, 99):
        want = exact(everything, q)
        assert want * (1 - 1e-9) <= getattr(read, f"resp_p{q}_t") <= want * (1 + RESOLUTION)
    assert (write.tx_ok, write.errors_t) == (7, 3)
    assert write.error_pct_t == pytest.approx(30.0) and write.etr_t == 0.0
    assert write.resp_p99_t == pytest.approx(0.25)                    # capped at the maximum
    messages = {(e.transaction, e.message): e.count for e in status.error_messages}
    assert messages == {("write", "<b>e1</b>"): 2, ("write", "<b>e0</b>"): 1}
    assert status.error_messages[0].count == 2                           # the most frequent first
    point = status.history[-1]
    assert point.span_s == pytest.approx(1.0) and point.resp_p50_t is not None


def test_error_counts_keep_a_bounded_number_of_messages():
    counts = ErrorCounts()
    for k in range(MAX_MESSAGES + 5):
        counts.add("t", f"message {k}")
    counts.add("t", "message 0")
    rows = counts.rows()
    assert [(r.message, r.count) for r in rows[:2]] == [(OTHER, 5), ("message 0", 2)]
    assert len(counts.counts) == MAX_MESSAGES + 1


def test_merged_points_weigh_rates_by_time_and_the_mean_by_transactions():
    history = History(2)
    history.add(LivePoint(elapsed_s=1.0, span_s=1.0, etr_t=10.0, avg_last_t=0.1, resp_p90_t=0.2, util_proc_s=40.0,
                          errors=1))
    history.add(LivePoint(elapsed_s=3.0, span_s=2.0, etr_t=40.0, avg_last_t=0.4, resp_p90_t=0.5, util_proc_s=70.0,
                          errors=2))
    (point,) = history.shown()
    assert point.elapsed_s == 3.0 and point.span_s == 3.0
    assert point.etr_t == pytest.approx(30.0)                           # 90 tx in 3 s
    assert point.avg_last_t == pytest.approx((10 * 0.1 + 80 * 0.4) / 90)
    assert point.resp_p90_t == 0.5 and point.errors == 3                 # the larger; the sum
    assert point.util_proc_s == pytest.approx(60.0)

"""What the dashboard's views read from the reduction: rows per transaction name (count,
failures, rate, mean, percentiles, max) and the whole run's per-interval rows, whose window part
is the per-interval series the gates judge."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perflab.reduce.reduce import INTERVAL_KEYS, TRANSACTION_KEYS, reduce_run
from perflab.reduce.window import MAX_OUTSIDE_BUCKETS, Window, timeline_edges

T = np.arange(0.0, 31.0, 1.0)       # one sample a second over a 30 s run


def steady_samples():
    """The SUT's CPU counters at 0.5 CPU-s per second, CPUs 0 and 1 each 50% busy."""
    samples = {"t": T, "s.cpu_user": 0.3 * T, "s.cpu_sys": 0.2 * T}
    for cpu in (0, 1):
        samples[f"h.cpu{cpu}.user"], samples[f"h.cpu{cpu}.system"] = 0.4 * T, 0.1 * T
        samples[f"h.cpu{cpu}.idle"] = 0.5 * T
    return samples


def nearest_rank(values, q):
    ordered = np.sort(np.asarray(values, dtype=float))
    return float(ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)])


def test_rows_per_transaction_name_are_the_registrys_over_its_transactions(make_run):
    # Window 10-20 s. "read": 200 ok with responses 1..200 ms; "write": 50 ok at 40 ms and 10
    # failures; 30 more "read" transactions before the window, which no row may count.
    read_end = np.linspace(10.0, 19.9, 200)
    read_resp = np.arange(1, 201) / 1000.0
    write_end = np.linspace(10.05, 19.95, 60)
    before = np.linspace(1.0, 9.0, 30)
    end = np.concatenate([read_end, write_end, before])
    response = np.concatenate([read_resp, np.full(60, 0.04), np.full(30, 5.0)])
    ok = np.concatenate([np.ones(200, bool), np.arange(60) >= 10, np.ones(30, bool)])
    tx = ["read"] * 200 + ["write"] * 60 + ["read"] * 30
    m = reduce_run(make_run(transactions={"end": end, "response": response, "ok": ok, "tx": tx}))
    assert sorted(m.per_transaction) == ["read", "write"]
    read, write = m.per_transaction["read"], m.per_transaction["write"]
    assert set(read) == set(TRANSACTION_KEYS)
    assert (read["tx_ok"], read["errors_t"], read["error_pct_t"]) == (200, 0, 0)
    assert read["etr_t"] == pytest.approx(20.0)                     # 200 in 10 s
    assert read["avg_last_t"] == pytest.approx(read_resp.mean())
    stored = read_end - (read_end - read_resp)      # end - intended_start, as the file holds them
    for q in (50, 90, 95, 99):
        assert read[f"resp_p{q}_t"] == nearest_rank(stored, q)
    assert read["resp_max_t"] == pytest.approx(0.2)                  # not the 5 s before the window
    assert (write["tx_ok"], write["errors_t"]) == (50, 10)
    assert write["error_pct_t"] == pytest.approx(100 * 10 / 60)
    assert write["resp_p95_t"] == write["resp_max_t"] == pytest.approx(0.04)
    assert m.values["resp_max_t"] == read["resp_max_t"]
    assert m.to_json()["per_transaction"]["read"]["resp_p95_t"] == read["resp_p95_t"]


def test_the_timeline_covers_the_run_and_its_window_rows_are_per_interval(make_run):
    # one transaction every 0.1 s from 0.05 s to 24.95 s: stagger and stabilization before the
    # 10-20 s window, stopping after it
    end = np.arange(0.05, 25.0, 0.1)
    run = make_run(transactions={"end": end, "response": 0.01}, samples=steady_samples())
    plain = reduce_run(run)
    assert plain.timeline == []                                      # only when asked
    m = reduce_run(run, timeline=True)
    assert m.per_interval == plain.per_interval
    rows = m.timeline
    assert rows[0]["t_start"] == 0.0 and rows[-1]["t_end"] > end.max()
    assert all(a["t_end"] == b["t_start"] for a, b in zip(rows, rows[1:]))
    inside = [r for r in rows if r["t_start"] >= m.window.start and r["t_end"] <= m.window.end]
    assert inside == m.per_interval
    assert sum(r["tx_ok"] for r in rows) == len(end)                  # every transaction, in one bucket
    before = [r for r in rows if r["t_end"] <= m.window.start]
    assert len(before) == 10 and all(r["tx_ok"] == 10 for r in before)
    assert all(set(INTERVAL_KEYS) <= set(r) for r in rows)
    assert all(r["util_proc_s"] == pytest.approx(50.0) for r in before)   # the samples cover 0-30 s


def test_timeline_edges_hold_the_windows_edges_and_stay_bounded():
    window = Window(5.5, 15.5)
    edges = timeline_edges(window, 1.0, 17.2)
    assert edges[0] == 0.0 and edges[-1] > 17.2 and np.all(np.diff(edges) > 0)
    assert set(window.bucket_edges(1.0)) <= set(edges)
    long = timeline_edges(Window(2700.0, 3600.0), 5.0, 3700.0)       # 45 min before a 15 min window
    inner = Window(2700.0, 3600.0).bucket_edges(5.0)
    assert set(inner) <= set(long)
    assert len(long) - len(inner) <= MAX_OUTSIDE_BUCKETS + 2
    outside = np.diff(long[long <= 2700.0])[1:]
    assert np.all(outside == outside[0]) and outside[0] % 5.0 == 0  # a whole multiple of the window's width


def test_grouped_rows_made_on_threads_are_those_made_in_line(make_run, monkeypatch):
    """A large window's per-class and per-transaction rows are made on threads of their own
    (reduce.PARALLEL_ROWS): the same rows, and a failure there is the reduction's failure."""
    from perflab.reduce import reduce as reduction

    rng = np.random.default_rng(11)
    n = 3000
    end = np.sort(rng.uniform(10.0, 20.0, n))
    transactions = {"end": end, "response": rng.lognormal(-4.0, 0.5, n), "ok": rng.random(n) > 0.05,
                    "tx": list(rng.choice(["read", "write", "scan"], n)),
                    "klass": list(rng.choice(["light", "heavy"], n)), "think": rng.exponential(1.0, n)}
    run = make_run(transactions=transactions)
    in_line = reduce_run(run)
    monkeypatch.setattr(reduction, "PARALLEL_ROWS", 0)
    threaded = reduce_run(run)
    assert sorted(threaded.per_transaction) == ["read", "scan", "write"]
    assert threaded.per_transaction == in_line.per_transaction and threaded.per_class == in_line.per_class

    def broken(*_: object) -> None:
        raise RuntimeError("grouping failed")

    monkeypatch.setattr(reduction, "_per_transaction", broken)
    with pytest.raises(RuntimeError, match="grouping failed"):
        reduce_run(run)

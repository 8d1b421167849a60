"""The one-pass per-group rows are the per-selection rows, to the last bit."""

from __future__ import annotations

import numpy as np

from perflab.reduce.response import grouped_response_rows, per_bucket, response_rows
from perflab.reduce.transactions import WindowTransactions
from perflab.stats.quantiles import nearest_rank


def _transactions(n: int, seed: int, thinks: bool) -> WindowTransactions:
    rng = np.random.default_rng(seed)
    end = np.sort(rng.uniform(0.0, 100.0, n))
    service = rng.lognormal(-5.0, 0.7, n)
    service[rng.random(n) < 0.05] = np.nan          # some adapters cannot see it
    first = rng.lognormal(-6.0, 0.5, n)
    tx = WindowTransactions(ok=rng.random(n) >= 0.03, end=end, response=rng.lognormal(-4.0, 0.8, n),
                            service=service, first=first, think=rng.exponential(0.5, n),
                            instructions=np.full(n, np.nan), harness=np.full(n, np.nan),
                            class_code=rng.integers(0, 4, n).astype(np.int32), class_names=list("abcd"),
                            tx_code=rng.integers(0, 3, n).astype(np.int32), tx_names=list("xyz"))
    tx.class_code[tx.class_code == 2] = 1           # a class without a transaction
    if thinks:
        tx.thinks = rng.exponential(0.5, n // 2)
        tx.think_class = rng.integers(-1, 4, n // 2).astype(np.int32)
    return tx


def test_grouped_rows_equal_the_rows_of_each_selection():
    for seed, thinks in ((1, False), (2, True)):
        tx = _transactions(20_000, seed, thinks)
        for codes, names in ((tx.class_code, tx.class_names), (tx.tx_code, tx.tx_names)):
            assert codes is not None and names is not None
            grouped = grouped_response_rows(tx, codes, len(names))
            for g in range(len(names)):
                select = codes == g
                assert grouped[g] == (response_rows(tx, select) if select.any() else None)
        assert grouped_response_rows(_transactions(0, 3, thinks), np.zeros(0, np.int32), 2) == [None, None]


def test_response_rows_are_numpy_over_the_selection():
    tx = _transactions(5_000, 4, False)
    rows = response_rows(tx)
    response = tx.response[tx.ok]
    service = tx.service[tx.ok]
    assert rows["avg_last_t"] == float(response.mean())
    assert rows["avg_service_t"] == float(service[~np.isnan(service)].mean())
    assert rows["avg_first_t"] == float(tx.first[tx.ok].mean())
    assert [rows[f"resp_p{q}_t"] for q in (50, 90, 95, 99)] == nearest_rank(response)
    assert rows["errors_t"] == float((~tx.ok).sum())


def test_bucket_percentiles_are_nearest_rank_per_bucket():
    tx = _transactions(10_000, 5, False)
    edges = np.linspace(0.0, 100.0, 11)
    rows = per_bucket(tx, edges, (50, 90, 99))
    for b, row in enumerate(rows):
        inside = tx.ok & (tx.end >= edges[b]) & ((tx.end < edges[b + 1]) | (b == len(rows) - 1))
        assert [row[f"resp_p{q}_t"] for q in (50, 90, 99)] == nearest_rank(tx.response[inside], (50, 90, 99))
        assert row["tx_ok"] == float(inside.sum())


def test_bucket_rows_are_the_response_rows_of_each_bucket_in_either_order():
    """Rows in completion order (as the driver writes them) take the slice path, others the
    sort: both give each bucket the rows response_rows gives its selection, to the last bit."""
    for ordered in (True, False):
        tx = _transactions(10_000, 6, False)
        if not ordered:
            swap = np.random.default_rng(7).permutation(len(tx.end))
            for name in ("ok", "end", "response", "service", "first", "think", "class_code"):
                setattr(tx, name, getattr(tx, name)[swap])
        edges = np.array([1.0, 12.5, 12.5, 40.0, 99.0])  # one bucket empty; ends beyond both outer edges
        rows = per_bucket(tx, edges, (50, 90, 99))
        index = np.clip(np.searchsorted(edges, tx.end, side="right") - 1, 0, len(edges) - 2)
        for b, row in enumerate(rows):
            expected = response_rows(tx, index == b)
            assert row == {key: expected[key] for key in row}, (ordered, b)

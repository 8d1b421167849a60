"""Response-time and count rows of the window's transactions (reduce/transactions.py reads
them): the whole window's, each group's (class, transaction name) and each time bucket's.

Every statistic is a numpy operation over arrays, never a Python loop over transactions:
* a mean is numpy's (pairwise summation) over the ok rows in file order, so a group's mean is
  the same to the last bit whether it is taken over a selection (response_rows) or over the
  group's slice of the ok rows ordered by group (grouped_response_rows);
* percentiles are nearest-rank: the smallest observed value with at least q % of the values
  at or below it, so every reported percentile is a response some user actually saw.

What ten million transactions cost most here is new memory: the lab's VM faults each new page
in at several microseconds, more than the arithmetic on it. So the ok rows are taken as views
when they come first (WindowTransactions.ok_prefix), and the grouped pass gathers one column at
a time, each freed before the next.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from perflab.reduce.transactions import WindowTransactions
from perflab.stats.quantiles import PERCENTILES

Rows = dict[str, float | None]


def _mean(values: np.ndarray) -> float | None:
    nan = np.isnan(values)
    if nan.any():
        values = values[~nan]
    return float(values.mean()) if len(values) else None


def _ranks(values: np.ndarray, percentiles: Sequence[int]) -> list[float | None]:
    """nearest_rank(values, percentiles), partitioning `values` in place (the caller's own copy)."""
    n = len(values)
    if n == 0:
        return [None] * len(percentiles)
    ranks = [max(0, math.ceil(q / 100 * n) - 1) for q in percentiles]
    values.partition(sorted(set(ranks)))
    return [float(values[k]) for k in ranks]


def _response(response: np.ndarray, own: bool) -> Rows:
    """AVG LAST (T), the percentiles and the longest of the ok transactions' response times;
    `own`: the array is the caller's to reorder (the mean is taken first, in file order)."""
    rows: Rows = {"avg_last_t": float(response.mean()) if len(response) else None,
                  "resp_max_t": float(response.max()) if len(response) else None}
    ranks = _ranks(response if own else response.copy(), PERCENTILES)
    rows.update({f"resp_p{q}_t": value for q, value in zip(PERCENTILES, ranks)})
    return rows


def _service(service: np.ndarray, own: bool) -> Rows:
    """AVG SERVICE (T) and its 90th percentile over the transactions that have one."""
    nan = np.isnan(service)
    if nan.any():
        service, own = service[~nan], True
    mean = float(service.mean()) if len(service) else None
    return {"avg_service_t": mean, "service_p90_t": _ranks(service if own else service.copy(), (90,))[0]}


def _rows(tx_ok: int, errors: int, response: Rows, avg_first: float | None, service: Rows,
          avg_think: float | None) -> Rows:
    return {"tx_ok": float(tx_ok), "errors_t": float(errors), "avg_last_t": response["avg_last_t"],
            "avg_first_t": avg_first, "avg_service_t": service["avg_service_t"], "avg_think_t": avg_think,
            **{f"resp_p{q}_t": response[f"resp_p{q}_t"] for q in PERCENTILES},
            "resp_max_t": response["resp_max_t"], "service_p90_t": service["service_p90_t"]}


def response_rows(tx: WindowTransactions, select: np.ndarray | None = None) -> Rows:
    """The raw response-time and count rows (registry keys) of the selected transactions."""
    if select is None:
        response, own = tx.ok_values(tx.response)
        first, _ = tx.ok_values(tx.first)
        service, own_service = tx.ok_values(tx.service)
        tx_ok = len(response)
        errors = tx.count - tx_ok
    else:
        ok = tx.ok & select
        response, first, service = tx.response[ok], tx.first[ok], tx.service[ok]
        own = own_service = True
        tx_ok = int(np.count_nonzero(ok))
        errors = int(np.count_nonzero(select)) - tx_ok
    if tx.thinks is not None:
        assert tx.think_class is not None  # set with thinks (read_window_transactions)
        thinks = tx.thinks if select is None else tx.thinks[np.isin(tx.think_class, np.unique(tx.class_code[select]))]
    else:  # a run from before thinks.parquet: the thinks of the window's completed transactions
        assert tx.think is not None  # kept when there are no thinks
        thinks = tx.ok_values(tx.think)[0] if select is None else tx.think[tx.ok & select]
    return _rows(tx_ok, errors, _response(response, own), _mean(first), _service(service, own_service),
                 _mean(thinks))


def grouped_response_rows(tx: WindowTransactions, codes: np.ndarray, groups: int) -> list[Rows | None]:
    """response_rows(tx, codes == g) for each g in range(groups) (None for a group without a
    transaction), in one pass: the ok transactions are ordered by group once (a stable sort, so
    each group's times stay in file order and its means are the same to the last bit), and each
    column is gathered in that order and each group's rows are a slice of it."""
    out: list[Rows | None] = [None] * groups
    if not len(codes):
        return out
    ok_codes, _ = tx.ok_values(codes)
    counts = np.bincount(ok_codes, minlength=groups)
    present = counts + np.bincount(tx.failed_values(codes), minlength=groups)
    # a small key sorts by radix (linear); the codes index names, far fewer than 32,768
    key = ok_codes.astype(np.int16) if groups < (1 << 15) else ok_codes
    order = np.argsort(key, kind="stable")
    del key
    if tx.ok_prefix is None:
        order = np.flatnonzero(tx.ok)[order]
    starts = np.concatenate(([0], np.cumsum(counts)))
    parts = {g: slice(int(starts[g]), int(starts[g + 1])) for g in range(groups) if present[g]}

    response = tx.response.take(order)
    by_response = {g: _response(response[part], own=True) for g, part in parts.items()}
    del response
    first = tx.first.take(order)
    avg_first = {g: _mean(first[part]) for g, part in parts.items()}
    del first
    service = tx.service.take(order)
    by_service = {g: _service(service[part], own=True) for g, part in parts.items()}
    del service
    if tx.thinks is not None:
        avg_think = _think_means(tx, codes, groups, list(parts))
    else:
        assert tx.think is not None  # kept when there are no thinks
        think = tx.think.take(order)
        avg_think = {g: _mean(think[part]) for g, part in parts.items()}
        del think
    for g, part in parts.items():
        out[g] = _rows(part.stop - part.start, int(present[g] - counts[g]), by_response[g], avg_first[g],
                       by_service[g], avg_think[g])
    return out


def _think_means(tx: WindowTransactions, codes: np.ndarray, groups: int, present: list[int]) -> dict[int, float | None]:
    """For each present group g, AVG THINK (T) of the thinks of the classes its transactions
    are of: _mean(thinks[isin(think_class, unique(class_code[codes == g]))]), as response_rows
    takes it, each distinct set of classes once."""
    assert tx.thinks is not None and tx.think_class is not None  # set together
    classes = len(tx.class_names)
    sets: dict[int, tuple[int, ...]]
    if codes is tx.class_code:  # a class's transactions are of that class alone
        sets = {g: (g,) for g in present}
    else:
        pair_type = np.int32 if groups * classes < (1 << 31) else np.int64
        pairs = codes.astype(pair_type) * classes + tx.class_code
        seen = np.bincount(pairs, minlength=groups * classes).reshape(groups, classes) > 0
        del pairs
        sets = {g: tuple(int(c) for c in np.flatnonzero(seen[g])) for g in present}
    means: dict[tuple[int, ...], float | None] = {}
    for members in set(sets.values()):
        if len(members) == 1:  # one class: a slice of the thinks ordered by class, in file order
            by_class, starts = tx.thinks_by_class
            c = members[0] + 1
            means[members] = _mean(by_class[int(starts[c]):int(starts[c + 1])])
        else:
            wanted = np.zeros(classes + 1, dtype=bool)  # the last entry: -1, "wrap"ped to it
            wanted[list(members)] = True
            means[members] = _mean(tx.thinks[np.take(wanted, tx.think_class, mode="wrap")])
    return {g: means[members] for g, members in sets.items()}


def instructions_total(tx: WindowTransactions) -> tuple[float | None, str | None]:
    """Sum of per-transaction instruction counts (valgrind mode) when every completed
    transaction has one; a partial count would understate INSTR/CMD (I), so it is na."""
    completed = int(np.count_nonzero(tx.ok))
    measured = int(np.count_nonzero(tx.ok & ~np.isnan(tx.instructions)))  # no gather: usually none is
    if not measured:
        return None, None
    if measured < completed:
        return None, (f"instructions measured for {measured} of {completed} transactions: "
                      f"INSTR/CMD (I) is na")
    return float(tx.ok_values(tx.instructions)[0].sum()), None


def harness_total(tx: WindowTransactions) -> float | None:
    """The worker's CPU outside the SUT's calls, summed over every transaction that finished in
    the window (a failed one cost the worker as much); na unless each of them has it."""
    if len(tx.harness) == 0 or np.isnan(tx.harness).any():
        return None
    return float(tx.harness.sum())


def _bucket_index(edges: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Each time's bucket between `edges`, the outermost taking what lies beyond them."""
    index = np.searchsorted(edges, times, side="right")
    index -= 1  # in place: each step of 10M rows as a new array is 75 MB of fresh pages
    np.clip(index, 0, len(edges) - 2, out=index)
    return index


def per_bucket(tx: WindowTransactions, edges: np.ndarray, percentiles: Sequence[int] = (90,)) -> list[Rows]:
    """Counts and response rows per time bucket (by completion time): the mean (numpy's, over
    the bucket's ok transactions in file order: response_rows' of the bucket), and each of
    `percentiles` by nearest rank."""
    buckets = len(edges) - 1
    response, _ = tx.ok_values(tx.response)
    ends, _ = tx.ok_values(tx.end)
    errors = np.bincount(_bucket_index(edges, tx.failed_values(tx.end)), minlength=buckets)
    if len(ends) < 2 or bool(np.all(ends[1:] >= ends[:-1])):
        # In completion order, as the driver writes them: each bucket is a slice already.
        inner = np.searchsorted(ends, edges[1:-1], side="left")
        starts = np.concatenate(([0], inner, [len(ends)]))
        grouped = response.copy()  # this pass's own, partitioned bucket by bucket
    else:
        index = _bucket_index(edges, ends)
        counts = np.bincount(index, minlength=buckets)
        # A stable sort of a small integer key is a radix sort (linear): each bucket's
        # transactions stay in file order.
        key = index.astype(np.int16) if buckets < (1 << 15) else index
        del index
        grouped = response.take(np.argsort(key, kind="stable"))
        del key
        starts = np.concatenate(([0], np.cumsum(counts)))
    rows = []
    for b in range(buckets):
        part = grouped[int(starts[b]):int(starts[b + 1])]
        n = len(part)
        row: Rows = {"tx_ok": float(n), "errors_t": float(errors[b]), "avg_last_t": float(part.mean()) if n else None}
        row.update({f"resp_p{q}_t": value for q, value in zip(percentiles, _ranks(part, percentiles))})
        rows.append(row)
    return rows

"""The running tallies behind live.json's tables and charts (perflab.drive.live): what a load
tester's web UI shows while a run goes on -- per transaction name, counts, failures, the recent
rate, the mean, percentiles and the maximum since the start; the error messages with their
counts; and a chart history that covers the whole run in a bounded number of points.

Each is updated once per write from the rows recorded since the previous one (numpy over those
rows, nothing per transaction in Python except a failure's message), so the cost stays that of
the live display. Percentiles cannot be exact without keeping every response time: they come
from log-spaced buckets RESOLUTION apart, each reported as its bucket's upper edge (capped at
the maximum), so a live percentile is at most 1% above the nearest-rank value the stored report
will give.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from perflab.records.live import LiveError, LivePoint, LiveTransaction

#: Relative width of a percentile bucket: a live percentile is within this of the exact one.
RESOLUTION = 0.01
#: The bucketed range of response times, in seconds (shorter ones fall in the first bucket,
#: longer ones in the last; the maximum is kept exactly).
MIN_S, MAX_S = 1e-6, 1e5
_LOG_STEP = math.log1p(RESOLUTION)
BUCKETS = math.ceil(math.log(MAX_S / MIN_S) / _LOG_STEP)
#: The upper edge of every bucket (what a percentile in it is reported as).
UPPER = MIN_S * np.exp(_LOG_STEP * np.arange(1, BUCKETS + 1))
#: Percentiles of the live table (the stored table's, perflab.reduce.reduce.TRANSACTION_KEYS).
PERCENTILES = (50, 90, 95, 99)
#: Rows of the live per-transaction table (the busiest names when a workload has more).
MAX_TRANSACTIONS = 100
#: Distinct (transaction, message) pairs counted; later new ones are counted as OTHER.
MAX_MESSAGES = 50
#: Distinct messages written to live.json, the most frequent first.
SHOWN_MESSAGES = 20
OTHER = "(other messages)"


def bucket_of(response: np.ndarray) -> np.ndarray:
    """Each response time's bucket index."""
    scaled = np.log(np.maximum(response, MIN_S) / MIN_S) / _LOG_STEP
    return np.clip(np.floor(scaled), 0, BUCKETS - 1).astype(np.int64)


def bucket_percentiles(counts: np.ndarray, percentiles: Sequence[int], maximum: float) -> list[float | None]:
    """Nearest-rank percentiles of bucketed values: the upper edge of the bucket that holds the
    value of rank ceil(q/100 n), capped at the largest value seen."""
    n = int(counts.sum())
    if n == 0:
        return [None] * len(percentiles)
    cumulative = np.cumsum(counts)
    out: list[float | None] = []
    for q in percentiles:
        rank = max(1, math.ceil(q / 100 * n))
        out.append(min(float(UPPER[int(np.searchsorted(cumulative, rank))]), maximum))
    return out


@dataclass
class _Tally:
    ok: int = 0
    errors: int = 0
    total_s: float = 0.0
    max_s: float | None = None
    recent_ok: int = 0
    counts: np.ndarray = field(default_factory=lambda: np.zeros(BUCKETS, dtype=np.int64))


class TransactionStats:
    """Per transaction name, since the start: counts, failures, the mean, percentiles (bucketed)
    and the maximum; the rate over the latest span."""

    def __init__(self) -> None:
        self._tallies: dict[int, _Tally] = {}

    def add(self, tx: np.ndarray, ok: np.ndarray, response: np.ndarray) -> None:
        """The rows of one span: each row's transaction index, whether it succeeded, and its
        response time (only ok rows' count, as in the stored rows)."""
        for tally in self._tallies.values():
            tally.recent_ok = 0
        if len(tx) == 0:
            return
        for code in np.unique(tx):
            select = tx == code
            tally = self._tallies.setdefault(int(code), _Tally())
            good = response[select & ok]
            tally.errors += int((select & ~ok).sum())
            tally.recent_ok = len(good)
            if len(good):
                tally.ok += len(good)
                tally.total_s += float(good.sum())
                top = float(good.max())
                tally.max_s = top if tally.max_s is None else max(tally.max_s, top)
                tally.counts += np.bincount(bucket_of(good), minlength=BUCKETS)

    def rows(self, names: Sequence[str], span_s: float | None) -> list[LiveTransaction]:
        busiest = sorted(self._tallies.items(), key=lambda item: -(item[1].ok + item[1].errors))[:MAX_TRANSACTIONS]
        out = []
        for code, t in sorted(busiest, key=lambda item: _name(names, item[0])):
            finished = t.ok + t.errors
            ranks = bucket_percentiles(t.counts, PERCENTILES, t.max_s) if t.max_s is not None else [None] * len(PERCENTILES)
            out.append(LiveTransaction(
                name=_name(names, code), tx_ok=t.ok, errors_t=t.errors,
                error_pct_t=100.0 * t.errors / finished if finished else None,
                etr_t=t.recent_ok / span_s if span_s else None, avg_last_t=t.total_s / t.ok if t.ok else None,
                **{f"resp_p{q}_t": value for q, value in zip(PERCENTILES, ranks)}, resp_max_t=t.max_s))
        return out


def _name(names: Sequence[str], code: int) -> str:
    return str(names[code]) if 0 <= code < len(names) else f"#{code}"


class ErrorCounts:
    """Distinct error messages per transaction name, counted since the start."""

    def __init__(self) -> None:
        self.counts: Counter[tuple[str, str]] = Counter()

    def add(self, transaction: str, message: str | None) -> None:
        key = (transaction, message if message is not None else "(no message)")
        if key not in self.counts and len(self.counts) >= MAX_MESSAGES:
            key = ("", OTHER)
        self.counts[key] += 1

    def rows(self) -> list[LiveError]:
        return [LiveError(message=message, transaction=tx, count=n)
                for (tx, message), n in self.counts.most_common(SHOWN_MESSAGES)]


class History:
    """The live charts' points over the whole run, at most `limit` of them: when full, each two
    neighbours are merged into one (an odd last one stays) and later points are gathered by twos
    (then fours...), so the points stay about evenly spaced and the run's start is never
    dropped."""

    def __init__(self, limit: int):
        self.limit = max(2, limit)
        self.points: list[LivePoint] = []
        self.stride = 1
        self._pending: LivePoint | None = None
        self._pending_n = 0

    def add(self, point: LivePoint) -> None:
        self._pending = point if self._pending is None else merge(self._pending, point)
        self._pending_n += 1
        if self._pending_n < self.stride:
            return
        self.points.append(self._pending)
        self._pending, self._pending_n = None, 0
        if len(self.points) >= self.limit:
            pairs = [merge(a, b) for a, b in zip(self.points[0::2], self.points[1::2])]
            self.points = pairs + (self.points[-1:] if len(self.points) % 2 else [])
            self.stride *= 2

    def shown(self) -> list[LivePoint]:
        return self.points + ([self._pending] if self._pending is not None else [])


def merge(a: LivePoint, b: LivePoint) -> LivePoint:
    """Two consecutive points as one over both spans: rates and utilizations weighted by time,
    the mean response by transactions, errors summed, percentiles the larger of the two."""
    sa, sb = a.span_s or 0.0, b.span_s or 0.0

    def by_time(x: float | None, y: float | None) -> float | None:
        if x is None or y is None or sa + sb <= 0:
            return y if x is None else x
        return (x * sa + y * sb) / (sa + sb)

    def larger(x: float | None, y: float | None) -> float | None:
        return y if x is None else x if y is None else max(x, y)

    na, nb = (a.etr_t or 0.0) * sa, (b.etr_t or 0.0) * sb
    if a.avg_last_t is None or b.avg_last_t is None or na + nb <= 0:
        mean = b.avg_last_t if a.avg_last_t is None else a.avg_last_t
    else:
        mean = (a.avg_last_t * na + b.avg_last_t * nb) / (na + nb)
    return LivePoint(elapsed_s=b.elapsed_s, span_s=sa + sb, etr_t=by_time(a.etr_t, b.etr_t), avg_last_t=mean,
                     resp_p50_t=larger(a.resp_p50_t, b.resp_p50_t), resp_p90_t=larger(a.resp_p90_t, b.resp_p90_t),
                     resp_p99_t=larger(a.resp_p99_t, b.resp_p99_t),
                     util_proc_s=by_time(a.util_proc_s, b.util_proc_s),
                     driver_cpu_pct=by_time(a.driver_cpu_pct, b.driver_cpu_pct), errors=a.errors + b.errors)

"""The measurement window, and reading cumulative counters at its edges.

Every rate perflab reports is over the window only: the staggered start and the stabilization
period are excluded, as in the seeds' protocol (5-min stagger, 45-min stabilization, 30-min
interval). A transaction belongs to the window when it *completes* inside it (the seeds'
TPNS counted commands executed during the interval). Monitor counters are cumulative and
sampled at their own cadence, so their value at a window edge is interpolated linearly
between the two samples around it, and a window total is the difference of the two edges.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from perflab.errors import InputError

# Nice bucket widths for per-interval series (charts): the smallest that keeps a window to at
# most MAX_BUCKETS points and is no finer than the monitor's sampling.
_NICE_WIDTHS = (1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0)
MAX_BUCKETS = 300
#: The most buckets a whole-run timeline has outside the window (timeline_edges): a long
#: stabilization is drawn in buckets a whole multiple of the window's.
MAX_OUTSIDE_BUCKETS = 600


@dataclass(frozen=True)
class Window:
    start: float
    end: float

    @classmethod
    def from_record(cls, window: Any, path: Path) -> Window:
        """The window of a run record (perflab.records.run.WindowRecord); InputError if it has none."""
        if window is None:
            raise InputError("no measurement window recorded (the run is still running, or was killed)",
                             file=path, field="window")
        start, end = float(window.start), float(window.end)
        if not (math.isfinite(start) and math.isfinite(end)) or end < start:
            raise InputError(f"window end {end} is before its start {start}", file=path, field="window")
        return cls(start, end)

    @property
    def duration(self) -> float:
        return self.end - self.start

    def contains(self, times: np.ndarray) -> np.ndarray:
        """Half-open [start, end): a completion exactly at the end belongs to the next interval."""
        return (times >= self.start) & (times < self.end)

    def bucket_edges(self, width: float) -> np.ndarray:
        """Edges from the window start every `width` seconds; the last bucket may be shorter."""
        count = max(1, math.ceil(self.duration / width - 1e-9))
        edges = self.start + width * np.arange(count + 1, dtype=np.float64)
        edges[-1] = self.end
        return edges


def timeline_edges(window: Window, width: float, last_end: float, first: float = 0.0) -> np.ndarray:
    """Bucket edges of the whole run: from t0 (or `first`, when earlier) to past `last_end`
    (the run's last completion), through every edge of the window's own buckets
    (Window.bucket_edges), so the timeline's rows inside the window are its per-interval rows
    and the window's edges are bucket edges. Outside the window the buckets are `width` wide
    (the first one shorter), or a whole multiple of it when they would be more than
    MAX_OUTSIDE_BUCKETS."""
    inner = window.bucket_edges(width)
    start = min(0.0, float(first), window.start)
    before_s = window.start - start
    after_s = max(0.0, float(last_end) - window.end)
    outside = math.ceil(before_s / width - 1e-9) + math.floor(after_s / width) + 1
    step = width * max(1, math.ceil(outside / MAX_OUTSIDE_BUCKETS))
    count = math.ceil(before_s / step - 1e-9)
    before = [window.start - step * k for k in range(count - 1, 0, -1)]
    if before_s > 0:
        before.insert(0, start)
    after = window.end + step * np.arange(1, math.floor(after_s / step) + 2, dtype=np.float64)
    return np.concatenate([np.asarray(before, dtype=np.float64), inner, after])


def bucket_width(window: Window, monitor_interval: float | None, requested: float | None = None) -> float:
    if requested is not None and requested > 0:
        return float(requested)
    floor = monitor_interval if monitor_interval and monitor_interval > 0 else 1.0
    for width in _NICE_WIDTHS:
        if width >= floor and window.duration / width <= MAX_BUCKETS:
            return width
    return max(floor, window.duration / MAX_BUCKETS)


@dataclass(frozen=True)
class Counter:
    """One cumulative counter as sampled: times and values, NaN samples dropped."""

    t: np.ndarray
    v: np.ndarray

    @classmethod
    def of(cls, t: np.ndarray, v: np.ndarray) -> Counter:
        keep = ~np.isnan(v)
        return cls(t[keep], v[keep])

    def __add__(self, other: Counter) -> Counter:
        if self.t.shape == other.t.shape and np.array_equal(self.t, other.t):
            return Counter(self.t, self.v + other.v)
        # Different sample sets (a NaN in one column): add on the union of times.
        t = np.union1d(self.t, other.t)
        return Counter(t, self.at(t) + other.at(t))

    def at(self, times: np.ndarray | float) -> np.ndarray:
        """Linear interpolation; outside the sampled span the nearest sample (the caller checks
        coverage first and says so when an edge had to be clamped)."""
        return np.interp(times, self.t, self.v)

    def delta(self, start: float, end: float) -> float | None:
        if len(self.t) == 0:
            return None
        a, b = self.at(np.array([start, end]))
        return float(b - a)

    def covered(self, times: np.ndarray, slack: float, max_gap: float) -> np.ndarray:
        """Whether the counter's value at each time is measured rather than made up: within
        `slack` of its first or last sample, or between two samples at most `max_gap` apart.
        A column whose source was lost (a remote monitor that stopped answering) has no
        samples after the loss; clamping it to its last value would report zero activity."""
        times = np.atleast_1d(np.asarray(times, dtype=np.float64))
        t = self.t
        if len(t) == 0:
            return np.zeros(times.shape, dtype=bool)
        index = np.searchsorted(t, times)
        inside = (index > 0) & (index < len(t))
        gap = np.full(times.shape, np.inf)
        gap[inside] = t[index[inside]] - t[index[inside] - 1]
        ok = inside & (gap <= max_gap)
        ok |= (index < len(t)) & (t[np.minimum(index, len(t) - 1)] == times)
        ok |= (times <= t[0]) & (t[0] - times <= slack)
        ok |= (times >= t[-1]) & (times - t[-1] <= slack)
        return ok


def coverage(times: np.ndarray, window: Window, interval: float | None) -> tuple[bool, list[str]]:
    """Whether the samples span the window (within half a sampling interval at each edge)."""
    if len(times) < 2:
        return False, [f"samples: {len(times)} sample(s), need two around the window: (S)/(H) rows are na"]
    step = interval if interval and interval > 0 else float(np.median(np.diff(times)))
    slack = 0.5 * step
    first, last = float(times[0]), float(times[-1])
    notes: list[str] = []
    if first > window.start + slack or last < window.end - slack:
        notes.append(f"samples cover {first:.1f}–{last:.1f} s but the window is {window.start:.1f}–"
                     f"{window.end:.1f} s: (S)/(H) rows are na")
        return False, notes
    if first > window.start:
        notes.append(f"samples start {first - window.start:.2f} s after the window start: counters at that edge "
                     f"are taken from the first sample")
    if last < window.end:
        notes.append(f"samples end {window.end - last:.2f} s before the window end: counters at that edge are "
                     f"taken from the last sample")
    return True, notes

"""Nearest-rank percentiles: every reported percentile is a value some user actually saw."""

from __future__ import annotations

import math

import numpy as np

PERCENTILES = (50, 90, 95, 99)


def nearest_rank(values: np.ndarray, percentiles: tuple[int, ...] = PERCENTILES) -> list[float | None]:
    """Nearest-rank percentiles of unsorted values, by partial sorting (O(n)): the smallest
    observed value with at least q % of the values at or below it."""
    n = len(values)
    if n == 0:
        return [None] * len(percentiles)
    ranks = [max(0, math.ceil(q / 100 * n) - 1) for q in percentiles]
    parted = np.partition(values, sorted(set(ranks)))
    return [float(parted[k]) for k in ranks]

"""Closed intervals of real numbers: a printed value is known only to half a unit in its last
digit, so `derive` evaluates the registry's formulas on intervals instead of points.

The registry's formulas use only + − × ÷, so the operators below are all they need. Ordinary
interval arithmetic is conservative (an input that appears twice widens the result); that can
hide a small disagreement but never invents one, which is the right way round for a check.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

INF = math.inf


@dataclass(frozen=True)
class Interval:
    lo: float
    hi: float

    @classmethod
    def point(cls, value: float) -> Interval:
        return cls(value, value)

    @classmethod
    def around(cls, value: float, half: float) -> Interval:
        return cls(value - half, value + half)

    @property
    def mid(self) -> float:
        return (self.lo + self.hi) / 2

    @property
    def bounded(self) -> bool:
        return math.isfinite(self.lo) and math.isfinite(self.hi)

    def overlaps(self, other: Interval) -> bool:
        # A relative epsilon absorbs binary floating-point noise (0.1 + 0.2 != 0.3).
        eps = 1e-9 * max(1.0, abs(self.lo), abs(self.hi), abs(other.lo), abs(other.hi))
        return self.lo <= other.hi + eps and other.lo <= self.hi + eps

    def intersect(self, other: Interval) -> Interval:
        lo, hi = max(self.lo, other.lo), min(self.hi, other.hi)
        if lo > hi:           # touching within the epsilon of `overlaps`
            lo = hi = (lo + hi) / 2
        return Interval(lo, hi)

    def gap(self, other: Interval) -> float:
        """Distance between two intervals (0 when they overlap)."""
        if self.overlaps(other):
            return 0.0
        return other.lo - self.hi if self.hi < other.lo else self.lo - other.hi

    # arithmetic -------------------------------------------------------------------------
    @staticmethod
    def _of(value: Interval | float | int) -> Interval:
        return value if isinstance(value, Interval) else Interval(float(value), float(value))

    def __add__(self, other: Interval | float) -> Interval:
        o = self._of(other)
        return Interval(self.lo + o.lo, self.hi + o.hi)

    __radd__ = __add__

    def __sub__(self, other: Interval | float) -> Interval:
        o = self._of(other)
        return Interval(self.lo - o.hi, self.hi - o.lo)

    def __rsub__(self, other: Interval | float) -> Interval:
        return self._of(other) - self

    def __neg__(self) -> Interval:
        return Interval(-self.hi, -self.lo)

    def __mul__(self, other: Interval | float) -> Interval:
        o = self._of(other)
        products = [_mul(a, b) for a in (self.lo, self.hi) for b in (o.lo, o.hi)]
        return Interval(min(products), max(products))

    __rmul__ = __mul__

    def __truediv__(self, other: Interval | float) -> Interval:
        o = self._of(other)
        if o.lo <= 0.0 <= o.hi:
            # The divisor may be zero (a printed 0.0000): the quotient is unbounded, so the
            # check is uninformative rather than failed.
            return Interval(-INF, INF)
        return self * Interval(1.0 / o.hi, 1.0 / o.lo)

    def __rtruediv__(self, other: Interval | float) -> Interval:
        return self._of(other) / self

    def __repr__(self) -> str:
        return f"[{self.lo:.6g}, {self.hi:.6g}]"


def _mul(a: float, b: float) -> float:
    # inf × 0 is undefined; for bounds it is 0 (the finite factor is exactly zero).
    if a == 0.0 or b == 0.0:
        return 0.0
    return a * b

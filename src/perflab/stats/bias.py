"""A design's measured bias, and the interval widened by it.

Precision is not accuracy (DESIGN.md): a duet's interval can be a few tenths of a point wide
and still miss the ratio a one-at-a-time measurement gives, because the design changes what is
measured -- two servers time-sharing a CPU magnify a CPU-bound difference (docs/accuracy.md).
perflab measures each design against known truths (`perflab accuracy --studies`) and states
the result as a bound of this form:

    ln r_design = (1 + k) · ln r_true + a,    k_low ≤ k ≤ k_high,  |a| ≤ a_max

*k* is a magnification (the design stretches or shrinks every change by the same factor: a
known +5.0 % measured as +5.9 % is k ≈ 0.18) and *a* an offset (an A/A interval of the design
that sits away from 1). A magnification cannot turn a change's sign, so it never turns a
WORSE into a BETTER; an offset can, and the widening takes both into account.

`widen` turns a design's interval for r_design into the set of true ratios compatible with it
under the bound: {(x − a')/(1 + k') : x in [low, high], |a'| ≤ a_max, k' in [k_low, k_high]},
an interval whose ends are at the corners (the map is monotone in x and a', and for a fixed
numerator monotone in k').
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import product


@dataclass(frozen=True)
class BiasBound:
    k_low: float = 0.0
    k_high: float = 0.0
    a_max: float = 0.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.k_low) and math.isfinite(self.k_high) and math.isfinite(self.a_max)):
            raise ValueError("a bias bound needs finite numbers")
        if self.k_low > self.k_high or 1.0 + self.k_low <= 0.0 or self.a_max < 0.0:
            raise ValueError(f"not a bias bound: k in [{self.k_low}, {self.k_high}], |a| <= {self.a_max}")

    @property
    def none(self) -> bool:
        return self.k_low == 0.0 == self.k_high and self.a_max == 0.0

    def widen(self, low: float, high: float) -> tuple[float, float]:
        """The interval of true log-ratios compatible with a design interval [low, high] (logs)."""
        if not (math.isfinite(low) and math.isfinite(high)):
            return low, high
        corners = [(x - a) / (1.0 + k) for x, a, k in product((low, high), (-self.a_max, self.a_max),
                                                             (self.k_low, self.k_high))]
        return min(corners), max(corners)

    def truth(self, center: float) -> float:
        """The point estimate of the true log-ratio: the design's, un-magnified by the middle of
        the k range (the offset, of unknown sign, is left as it is)."""
        return center / (1.0 + (self.k_low + self.k_high) / 2.0)

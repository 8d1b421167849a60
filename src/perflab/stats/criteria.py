"""The criteria a comparison is judged by, as one object with one validity check.

* `margin` -- the equivalence margin m (0.03 = the seeds' ±3 %), log-symmetric: bounds
  [1 − m, 1/(1 − m)];
* `confidence` -- the level of the interval shown and used for EQUIVALENT (0.90: TOST at 5 %
  per side);
* `family_alpha` -- the error rate of the report's claims of a change (WORSE/BETTER) taken
  together: the chance that a report about identical configurations claims any change at all.
  Claims are Holm-adjusted within the primary metrics, and the secondary metrics are tested
  only when every primary claim stands (serial gatekeeping), so the whole report keeps this
  rate (perflab.stats.multiplicity.gatekept_holm).

This module imports nothing heavy: the report and the study file model use it.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_MARGIN = 0.03
DEFAULT_CONFIDENCE = 0.90
DEFAULT_FAMILY_ALPHA = 0.05


@dataclass(frozen=True)
class Criteria:
    margin: float = DEFAULT_MARGIN
    confidence: float = DEFAULT_CONFIDENCE
    family_alpha: float = DEFAULT_FAMILY_ALPHA

    def __post_init__(self) -> None:
        problem = self.problem()
        if problem is not None:
            raise ValueError(problem[1])

    def problem(self) -> tuple[str, str] | None:
        """(field, message) of the first invalid value, or None."""
        return check(self.margin, self.confidence, self.family_alpha)

    @property
    def bounds(self) -> tuple[float, float]:
        low = 1.0 - self.margin
        return low, 1.0 / low


def check(margin: float, confidence: float, family_alpha: float = DEFAULT_FAMILY_ALPHA) -> tuple[str, str] | None:
    """The single validity rule of the criteria: (field, message) of the first bad value."""
    import math

    for name, value, low, high, example in (("margin", margin, 0.0, 0.5, "0.03 for ±3%"),
                                            ("confidence", confidence, 0.5, 1.0, "0.90"),
                                            ("family_alpha", family_alpha, 0.0, 0.5, "0.05")):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                or not low < value < high:
            return name, f"expected a number between {low:g} and {high:g} (exclusive), e.g. {example}; got {value!r}"
    return None

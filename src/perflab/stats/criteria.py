"""The criteria a comparison is judged by, as one object with one validity check, and the one
home of their defaults (every other module imports them from here).

* `margin` -- the equivalence margin m (0.03 = the seeds' ±3 %), log-symmetric: bounds
  [1 − m, 1/(1 − m)];
* `alpha` -- the one error rate: the chance that a report about identical configurations
  claims a change (WORSE or BETTER) anywhere, all its claims taken together. Every interval a
  report prints is a two-sided interval at 1 − alpha, Bonferroni-widened to 1 − alpha/k when it
  is one of k hypotheses of a tested family, and that interval is the one that decides its
  verdict: EQUIVALENT when it lies inside the margin (two one-sided tests at alpha/2k each),
  WORSE or BETTER when it excludes 1. perflab.study.compare applies it (primary metrics,
  then the secondary family by serial gatekeeping).

Why one number and not "a 90 % interval with claims at 5 %": the two conventions disagreed --
a 90 % interval wholly beyond the margin could be labelled INCONCLUSIVE because the claim was
decided at another level -- and a reader cannot tell from a printed interval which level
decided. Older files gave `confidence` and `family_alpha` separately: `from_fields` reads them
(confidence c means alpha 1 − c) and refuses two that disagree.

This module imports nothing heavy: the report and the study file model use it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

DEFAULT_MARGIN = 0.03
DEFAULT_ALPHA = 0.05
#: The level of an interval before any multiplicity widening: 1 − DEFAULT_ALPHA.
DEFAULT_CONFIDENCE = 1.0 - DEFAULT_ALPHA
#: Default power used when planning blocks (β = 0.2).
DEFAULT_POWER = 0.80


@dataclass(frozen=True)
class Criteria:
    margin: float = DEFAULT_MARGIN
    alpha: float = DEFAULT_ALPHA

    def __post_init__(self) -> None:
        problem = self.problem()
        if problem is not None:
            raise ValueError(problem[1])

    @classmethod
    def from_fields(cls, margin: float | None = None, confidence: float | None = None,
                    family_alpha: float | None = None, alpha: float | None = None) -> Criteria:
        """Criteria from a file's or a command line's fields, any of them missing (the default).
        `confidence` and `family_alpha` are the older spellings of `alpha` (confidence c is alpha
        1 − c); ValueError when two given ones disagree."""
        given = {name: value for name, value in (("alpha", alpha), ("family_alpha", family_alpha),
                                                  ("confidence", None if confidence is None else round(1.0 - confidence, 12)))
                 if value is not None}
        if len({round(v, 12) for v in given.values()}) > 1:
            shown = ", ".join(f"{name} {value:g}" if name != "confidence" else f"confidence {1 - value:g}"
                              for name, value in given.items())
            raise ValueError(f"{shown} disagree: give alpha alone (the error rate of all claims of a change together; "
                             f"every interval is at 1 - alpha, e.g. alpha 0.05 gives 95% intervals)")
        chosen = next(iter(given.values()), DEFAULT_ALPHA)
        return cls(DEFAULT_MARGIN if margin is None else margin, chosen)

    @property
    def confidence(self) -> float:
        """The level of an interval that is not widened for multiplicity: 1 − alpha."""
        return 1.0 - self.alpha

    def level(self, hypotheses: int) -> float:
        """The level of each interval of a family of `hypotheses` tested together (Bonferroni)."""
        return 1.0 - self.alpha / max(1, hypotheses)

    def problem(self) -> tuple[str, str] | None:
        """(field, message) of the first invalid value, or None."""
        return check(self.margin, self.alpha)

    @property
    def bounds(self) -> tuple[float, float]:
        low = 1.0 - self.margin
        return low, 1.0 / low


def check(margin: float, alpha: float = DEFAULT_ALPHA) -> tuple[str, str] | None:
    """The single validity rule of the criteria: (field, message) of the first bad value."""
    for name, value, low, high, example in (("margin", margin, 0.0, 0.5, "0.03 for ±3%"),
                                            ("alpha", alpha, 0.0, 0.5, "0.05 for 95% intervals")):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                or not low < value < high:
            return name, f"expected a number between {low:g} and {high:g} (exclusive), e.g. {example}; got {value!r}"
    return None

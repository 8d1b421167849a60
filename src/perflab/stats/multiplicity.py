"""Several claims at once: which ones a report may make, and is a release equivalent overall?

With k metrics (or workloads) each compared at 5 %, about 5 % of them will show a "difference"
when nothing changed -- benchstat's warning. The two questions need different treatment
(statistics-and-capacity.md §1.1, §5.4):

* "Which rows got WORSE (or BETTER)?" is a union of claims; any single false claim is an error,
  so the family is tested at a family-wise rate alpha. perflab uses Bonferroni *intervals*:
  each of the k hypotheses of a family gets a two-sided interval at 1 − alpha/k, and a claim is
  made exactly when that printed interval excludes 1. Holm's step-down procedure rejects a
  little more often when k > 1, but it has no interval that agrees with its decisions (a Holm
  rejection can stand beside an interval that includes 1), and a report whose printed
  interval does not decide its verdict cannot be checked by its reader. With one primary
  metric -- the default -- the two are the same test.
* A secondary family is tested only when every primary hypothesis is rejected (serial
  gatekeeping, Westfall & Krishen 2001): under identical configurations a false primary claim
  happens with probability at most alpha, and only then can a secondary one, so the whole
  report claims a change falsely at most alpha of the time, whatever the dependence between
  the rows.
* "Is the release equivalent overall?" holds only if *every* comparison is EQUIVALENT. That is
  an intersection–union test: each component test already controls its own error, and
  requiring all of them cannot raise the chance of a false "equivalent", so no correction is
  needed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from perflab.errors import InputError
from perflab.stats.estimate import Comparison
from perflab.stats.verdict import Verdict

CLAIMS = (Verdict.WORSE.value, Verdict.BETTER.value)


def gate_opens(primary_verdicts: Iterable[str | None]) -> bool:
    """Serial gatekeeping: the secondary family is tested only when every primary hypothesis
    was rejected (each primary verdict is a claim of a change) -- and there was one."""
    verdicts = list(primary_verdicts)
    return bool(verdicts) and all(v in CLAIMS for v in verdicts)


@dataclass(frozen=True)
class Overall:
    """The release-level call: EQUIVALENT only when every comparison is."""

    equivalent: bool
    verdict: Verdict
    not_equivalent: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "equivalent": self.equivalent,
            "verdict": self.verdict.value,
            "not_equivalent": list(self.not_equivalent),
        }


def equivalent_overall(comparisons: Sequence[Comparison]) -> Overall:
    """Intersection–union: equivalent overall ⇔ every comparison is EQUIVALENT (no correction).

    Otherwise the overall verdict is WORSE if any comparison is WORSE (each judged at its
    family's level); BETTER if every comparison is BETTER or EQUIVALENT; else INCONCLUSIVE (an
    inconclusive workload may hide a regression, so it blocks an overall BETTER).
    *not_equivalent* names the comparisons that prevent the overall call.
    """
    if not comparisons:
        raise InputError("no comparisons to combine")
    failing = [c.metric for c in comparisons if c.verdict is not Verdict.EQUIVALENT]
    verdicts = {c.verdict for c in comparisons}
    if not failing:
        overall = Verdict.EQUIVALENT
    elif Verdict.WORSE in verdicts:
        overall = Verdict.WORSE
    elif Verdict.BETTER in verdicts and Verdict.INCONCLUSIVE not in verdicts:
        overall = Verdict.BETTER
    else:
        overall = Verdict.INCONCLUSIVE
    return Overall(equivalent=not failing, verdict=overall, not_equivalent=failing)

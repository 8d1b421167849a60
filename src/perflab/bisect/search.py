"""Where in an ordered list of versions the primary metric changed: the bisect's decisions, apart
from how a study is run (`measure` runs one; perflab.bisect.runner gives the real one, the tests a
model's).

1. The first version against the last: EQUIVALENT -- nothing to find; BETTER or WORSE -- the
   change to locate, with its ratio R and interval.
2. Halving (lo, hi], which holds the change: the study lo -> mid.
   * EQUIVALENT: none of it is in (lo, mid]; on to (mid, hi], whose change is R over this step's
     ratio (derived: the two intervals combined).
   * the same verdict as the whole: some of it is in (lo, mid]. The rest, R over this ratio, is
     derived (the two intervals combined); if a study would call the rest a change on the same
     side (its interval excludes no change and is not inside the margin), part of the change is
     in each half: the change is **gradual** over (lo, hi] and the bisect says so with both parts
     (it does not pick one). Else on to (lo, mid] with this step's ratio as R.
   * the opposite verdict: changes that oppose each other in the range; said so, not bisected.
   * INCONCLUSIVE: the study runs again with the blocks its report says the margin needs (at least
     twice as many), up to `max_blocks` -- more blocks, not a guess; still INCONCLUSIVE then: the
     range is reported undecided.
3. At one step (hi = lo + 1): if its ratio was only derived, the step is measured directly; then
   the whole change R over the step's ratio says whether the step holds all of it (the remainder
   is no change a study would call: the change is at version hi) or only part (gradual: version hi
   brings this much of it).

A "gradual" call rests on a derived interval at the studies' level: a range that holds one
version's change is called gradual at most alpha / 2 of the time (2.5% at the default 95%).

Without INCONCLUSIVE steps that is 1 + ceil(log2(n - 1)) studies, and one more when the located
step was only derived. Every step is recorded with its verdict and interval.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from perflab.bisect.model import BisectDocument, Finding, Part, Step
from perflab.stats.estimate import t_quantile
from perflab.stats.verdict import classify

#: measure(base index, new index, blocks, purpose) -> the step, recorded in the document by it.
Measure = Callable[[int, int, int, str], Step]


class Stop(Exception):
    """The bisect ends early (interrupted, a study without a comparison)."""

    def __init__(self, finding: Finding):
        super().__init__(finding.text)
        self.finding = finding


@dataclass(frozen=True)
class Estimate:
    """ln(ratio) with its standard error and degrees of freedom (a step's, or two combined)."""

    base: int
    new: int
    center: float
    se: float
    df: float
    level: float
    derived: bool = False

    @classmethod
    def of(cls, step: Step) -> Estimate:
        assert step.ratio is not None and step.ci_low is not None and step.ci_high is not None  # decided steps only
        level = step.level or 0.95
        df = max(1.0, float(step.n_blocks - 1))
        t = t_quantile(0.5 + level / 2.0, df)
        se = (math.log(step.ci_high) - math.log(step.ci_low)) / (2.0 * t) if t > 0 else 0.0
        return cls(step.base, step.new, math.log(step.ratio), se, df, level)

    def minus(self, other: Estimate) -> Estimate:
        """This range's change less a part of it: the rest (independent studies: variances add).
        The rest's range: after the part when the part starts the range, else the whole range
        (the rest is then on both sides of the part)."""
        base, new = (other.new, self.new) if other.base == self.base else (self.base, self.new)
        return Estimate(base, new, self.center - other.center, math.hypot(self.se, other.se),
                        min(self.df, other.df), min(self.level, other.level), derived=True)

    def bounds(self) -> tuple[float, float]:
        t = t_quantile(0.5 + self.level / 2.0, self.df)
        return self.center - t * self.se, self.center + t * self.se

    def carries(self, sign: float, margin: float) -> bool:
        """A change on the side `sign` (+1: up, -1: down) as a study would call it: its interval
        excludes no change there and does not lie inside the margin (perflab.stats.verdict: a
        detectable change within the margin is EQUIVALENT). Held at the studies' level: a range
        without a change is called a carrier this often at most (alpha / 2)."""
        low, high = self.bounds()
        verdict, _ = classify(math.exp(low), math.exp(high), margin=margin, higher_is_better=True)
        return str(verdict) == ("BETTER" if sign > 0 else "WORSE")

    def part(self) -> Part:
        low, high = self.bounds()
        return Part(base=self.base, new=self.new, ratio=math.exp(self.center), ci_low=math.exp(low),
                    ci_high=math.exp(high), level=self.level, derived=self.derived)


def planned_studies(n: int) -> int:
    return 1 + math.ceil(math.log2(max(1, n - 1)))


def _pct(ratio: float) -> str:
    return f"{(ratio - 1.0) * 100:+.1f}%"


def _range(doc: BisectDocument, base: int, new: int) -> str:
    v = doc.versions
    return f"{v[new]}" if new == base + 1 else f"({v[base]}, {v[new]}] ({new - base} versions)"


class Bisect:
    def __init__(self, doc: BisectDocument, measure: Measure, blocks: int, max_blocks: int):
        self.doc = doc
        self.measure = measure
        self.blocks = blocks
        self.max_blocks = max_blocks

    def decided(self, base: int, new: int, purpose: str) -> Step:
        """A study of base -> new, run again with more blocks while it is INCONCLUSIVE."""
        blocks = self.blocks
        step = self.measure(base, new, blocks, purpose)
        while step.verdict == "INCONCLUSIVE" and blocks < self.max_blocks and step.status == "complete":
            needed = step.blocks_needed or 0
            blocks = min(self.max_blocks, max(needed, 2 * blocks))
            step = self.measure(base, new, blocks, f"{purpose}: INCONCLUSIVE at {step.blocks} blocks, again with "
                                f"{blocks}")
        if step.status == "interrupted":
            raise Stop(Finding(kind="interrupted", text="interrupted: the steps so far are kept",
                               base=base, new=new))
        if step.verdict is None:
            raise Stop(Finding(kind="no-comparison", text=f"the study {self.doc.versions[base]} -> "
                               f"{self.doc.versions[new]} gave no comparison: {step.reason or 'see its report'}",
                               base=base, new=new))
        return step

    def run(self) -> Finding:
        try:
            return self._run()
        except Stop as stop:
            return stop.finding

    def _run(self) -> Finding:
        doc = self.doc
        last = len(doc.versions) - 1
        whole_step = self.decided(0, last, "the whole range")
        if whole_step.verdict == "EQUIVALENT":
            return Finding(kind="none", base=0, new=last, text=f"no change of {doc.label} between {doc.versions[0]} "
                           f"and {doc.versions[last]} beyond the margin: {_pct(whole_step.ratio or 1.0)} "
                           f"EQUIVALENT; nothing to bisect")
        if whole_step.verdict == "INCONCLUSIVE":
            return Finding(kind="undecided", base=0, new=last, text=f"the whole range stays INCONCLUSIVE at "
                           f"{whole_step.blocks} blocks: no change to locate can be established")
        whole = Estimate.of(whole_step)
        doc.whole = whole.part()
        direction = whole_step.verdict
        sign = 1.0 if whole.center > 0 else -1.0
        lo, hi, current = 0, last, whole
        while hi - lo > 1:
            mid = (lo + hi) // 2
            step = self.decided(lo, mid, f"halving {_range(doc, lo, hi)}")
            if step.verdict == "INCONCLUSIVE":
                return Finding(kind="undecided", base=lo, new=hi, text=f"the change lies in {_range(doc, lo, hi)}; "
                               f"the step {doc.versions[lo]} -> {doc.versions[mid]} stays INCONCLUSIVE at "
                               f"{step.blocks} blocks (a part smaller than the margin can resolve: perhaps gradual)")
            if step.verdict == "EQUIVALENT":
                current = current.minus(Estimate.of(step))
                lo = mid
                continue
            if step.verdict != direction:
                return Finding(kind="opposed", base=lo, new=hi, text=f"{doc.versions[lo]} -> {doc.versions[mid]} is "
                               f"{step.verdict} while the whole range is {direction}: changes that oppose each other in "
                               f"{_range(doc, lo, hi)}; not bisected further")
            part = Estimate.of(step)
            rest = current.minus(part)
            if rest.carries(sign, doc.margin):
                return Finding(kind="gradual", base=lo, new=hi, parts=[part.part(), rest.part()],
                               text=f"gradual: the change is spread over {_range(doc, lo, hi)} -- "
                               f"{_pct(math.exp(part.center))} up to {doc.versions[mid]} and "
                               f"{_pct(math.exp(rest.center))} after it; no one version made it")
            hi, current = mid, part
        if current.derived:
            step = self.decided(lo, hi, "the located step, measured directly")
            if step.verdict != direction:
                return Finding(kind="gradual", base=0, new=last, parts=[Estimate.of(step).part()],
                               text=f"no single version: the step {doc.versions[lo]} -> {doc.versions[hi]} the halving "
                               f"pointed to is {step.verdict} measured alone; the change of the whole range "
                               f"({_pct(math.exp(whole.center))}) is spread over several versions")
            current = Estimate.of(step)
        rest = whole.minus(current)
        if rest.carries(sign, doc.margin):
            return Finding(kind="gradual", base=lo, new=hi, version=doc.versions[hi], parts=[current.part(), rest.part()],
                           text=f"gradual: {doc.versions[hi]} brings {_pct(math.exp(current.center))} of the whole "
                           f"range's {_pct(math.exp(whole.center))}; the rest ({_pct(math.exp(rest.center))}) is "
                           "elsewhere in the range")
        return Finding(kind="version", base=lo, new=hi, version=doc.versions[hi], parts=[current.part()],
                       text=f"{doc.versions[hi]} made the change: {doc.versions[lo]} -> {doc.versions[hi]} "
                       f"{_pct(math.exp(current.center))}, {direction} (the whole range {_pct(math.exp(whole.center))})")

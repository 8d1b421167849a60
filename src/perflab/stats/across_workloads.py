"""One release change averaged over several workloads: the LSPR's "Average" row.

The z/OS LSPR table prints a release's ITR change per workload and under them their average
("Average system ITR delta with LSPR workloads"). perflab measures each workload in a study of
its own, each with its interval; the average is their geometric mean ratio, and its interval is
made from theirs without any assumption about how the studies' errors relate:

    if every member's interval covers its true log ratio theta_i, then
        mean(ln low_i) <= mean(theta_i) <= mean(ln high_i)

so [geomean(low_i), geomean(high_i)] covers the true average whenever all members' intervals
cover, which by the union bound happens at least 1 - sum(1 - level_i) of the time, whatever the
dependence between the studies (the same host, the same hour). That is the level printed beside
it. It is conservative -- for independent studies the average's error shrinks like 1/sqrt(n)
and this interval does not -- but it uses the very intervals that decided each member's verdict
(a bias widening included), so nothing about the average is claimed that the members do not
support. Its verdict is the members' rule (perflab.stats.verdict.classify) against the margin.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from perflab.stats.verdict import judge


@dataclass(frozen=True)
class MemberRatio:
    """One workload's paired ratio new/base, the interval that decided its verdict, and its level."""

    name: str
    ratio: float | None
    low: float | None
    high: float | None
    level: float | None
    #: The interval was widened by a bias bound: it has no probability level of its own.
    bias_bounded: bool = False


@dataclass(frozen=True)
class AverageRatio:
    ratio: float | None
    low: float | None
    high: float | None
    level: float | None     # the union bound: 1 - sum of the members' error rates
    verdict: str | None
    material: bool
    note: str
    reason: str | None      # why there is no average (a member without an interval)


def _usable(value: float | None) -> bool:
    return value is not None and math.isfinite(value) and value > 0


def average_ratio(members: Sequence[MemberRatio], *, margin: float, higher_is_better: bool | None) -> AverageRatio:
    """The geometric mean ratio of `members`, its interval and verdict (module doc). A member with
    no ratio or no interval leaves the average without one: a mean over the workloads that
    happened to give an answer would be a different average. `higher_is_better` None: a metric
    with no direction is averaged but given no verdict."""
    if not members:
        return AverageRatio(None, None, None, None, None, False, "", "no workloads")
    missing = [m.name for m in members if not (_usable(m.ratio) and _usable(m.low) and _usable(m.high))]
    if missing:
        return AverageRatio(None, None, None, None, None, False, "",
                            f"no interval for {', '.join(missing)}: the average needs every workload's")
    n = len(members)
    logs = [(math.log(m.ratio), math.log(m.low), math.log(m.high))    # all checked above
            for m in members if m.ratio is not None and m.low is not None and m.high is not None]
    if any(m.bias_bounded for m in members):
        # A bias-bounded interval is a design interval widened by a bound, with no probability
        # of its own: the union bound has nothing to add up, so the average states no level.
        ratio, low, high = (math.exp(sum(column) / n) for column in zip(*logs))
        bounded = ", ".join(m.name for m in members if m.bias_bounded)
        note = f"bias-bounded ({bounded}): no probability level"
        if higher_is_better is None:
            return AverageRatio(ratio, low, high, None, None, False, note, None)
        judgement = judge(ratio, low, high, margin=margin, higher_is_better=higher_is_better)
        return AverageRatio(ratio, low, high, None, judgement.verdict.value, judgement.material,
                            "; ".join(p for p in (judgement.note, note) if p), None)
    unlevelled = [m.name for m in members if m.level is None or not 0 < m.level < 1]
    if unlevelled:
        return AverageRatio(None, None, None, None, None, False, "",
                            f"no stated level for {', '.join(unlevelled)}'s interval")
    ratio, low, high = (math.exp(sum(column) / n) for column in zip(*logs))
    level = 1.0 - sum(1.0 - (m.level or 0.0) for m in members)
    if level <= 0:
        return AverageRatio(ratio, None, None, None, None, False, "",
                            f"{n} intervals at their levels bound no common level (1 - sum of their error rates <= 0)")
    if higher_is_better is None:
        return AverageRatio(ratio, low, high, level, None, False, "", None)
    judgement = judge(ratio, low, high, margin=margin, higher_is_better=higher_is_better)
    return AverageRatio(ratio, low, high, level, judgement.verdict.value, judgement.material, judgement.note, None)

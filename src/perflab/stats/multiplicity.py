"""Several comparisons at once: which claims survive, and is the release equivalent overall?

With k workloads (or metrics) compared at 5 % per side each, about 5 % of them will show a
"difference" when nothing changed -- benchstat's warning. The two questions need different
treatment (statistics-and-capacity.md §1.1, §5.4):

* "Is the release equivalent overall?" holds only if *every* comparison is EQUIVALENT. That is an
  intersection–union test: each component test already controls its own error, and requiring all
  of them cannot raise the chance of a false "equivalent", so no correction is needed.
* "Which workloads got WORSE (or BETTER)?" is a union of claims; any single false claim is an
  error, so the claims are Holm-adjusted (uniformly more powerful than Bonferroni, and valid
  under any dependence between the workloads, which share a host and a release).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from perflab.errors import InputError
from perflab.stats.estimate import Comparison
from perflab.stats.verdict import Verdict


def holm(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm step-down adjusted p-values, in the input order (vectorized over leading axes).

    Within a family (the last axis), sorted ascending, p_(i) becomes
    max_{j ≤ i} min(1, (k − j + 1)·p_(j)); a hypothesis is rejected at family level α when its
    adjusted p is below α. NaN (no test) stays NaN and does not count towards k.
    """
    p = np.asarray(p_values, dtype=float)
    if p.ndim == 0:
        raise ValueError("holm needs a sequence of p-values")
    missing = np.isnan(p)
    k = (~missing).sum(axis=-1, keepdims=True)
    order = np.argsort(np.where(missing, np.inf, p), axis=-1, kind="stable")
    sorted_p = np.take_along_axis(p, order, axis=-1)
    rank = np.arange(p.shape[-1])
    scaled = np.minimum(1.0, (k - rank) * sorted_p)  # NaNs sort last and stay NaN
    running = np.fmax.accumulate(scaled, axis=-1)
    running[np.isnan(scaled)] = np.nan
    out = np.empty_like(p)
    np.put_along_axis(out, order, running, axis=-1)
    return out


def adjust_claims(comparisons: Sequence[Comparison]) -> list[Comparison]:
    """Holm-adjust the WORSE/BETTER claims of a family of comparisons.

    A claim of comparison i stands when its Holm-adjusted two-sided p is below 1 − confidence
    (0.10 for the usual 90 % intervals, i.e. 0.05 in the claimed direction). A claim that does not
    survive becomes INCONCLUSIVE with a warning; EQUIVALENT and INCONCLUSIVE results are left
    as they are (see the module doc). Returns new Comparison objects with *p_adjusted* set.
    """
    if not comparisons:
        return []
    levels = {c.confidence for c in comparisons}
    if len(levels) > 1:
        raise InputError(f"comparisons use different confidence levels {sorted(levels)}")
    alpha = 1.0 - levels.pop()
    k = sum(1 for c in comparisons if not math.isnan(c.p_value))
    adjusted = holm([c.p_value for c in comparisons]).tolist()
    out = []
    for c, p_adj in zip(comparisons, adjusted, strict=True):
        p_adj = None if math.isnan(p_adj) else p_adj
        c = replace(c, p_adjusted=p_adj, warnings=list(c.warnings))
        if c.verdict in (Verdict.WORSE, Verdict.BETTER) and (p_adj is None or p_adj >= alpha):
            c.warnings.append(
                f"{c.verdict.value} withdrawn: Holm-adjusted p={_fmt(p_adj)} ≥ {alpha:g} over "
                f"{k} comparisons"
            )
            c.verdict, c.material = Verdict.INCONCLUSIVE, False
        out.append(c)
    return out


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

    Otherwise the overall verdict is WORSE if any comparison is WORSE (after `adjust_claims`, if
    the caller applied it); BETTER if every comparison is BETTER or EQUIVALENT; else INCONCLUSIVE
    (an inconclusive workload may hide a regression, so it blocks an overall BETTER).
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


def _fmt(p: float | None) -> str:
    return "n/a" if p is None else f"{p:.3f}"


@dataclass(frozen=True)
class FamilyDecision:
    """Which hypotheses of a primary and a secondary family are rejected (claims that stand)."""

    primary_adjusted: list[float]
    primary_reject: list[bool]
    secondary_tested: bool
    secondary_adjusted: list[float]
    secondary_reject: list[bool]


def gatekept_holm(primary_p: Sequence[float], secondary_p: Sequence[float], alpha: float) -> FamilyDecision:
    """Holm within the primary family; the secondary family is tested (Holm, same alpha) only when
    every primary hypothesis is rejected -- serial gatekeeping (Westfall & Krishen 2001).

    Family-wise error rate over both families together: at most alpha, whatever the dependence
    between the tests. Under identical configurations a false primary rejection happens with
    probability at most alpha, and only then can a secondary one happen, so the whole report
    claims a change falsely at most alpha of the time. NaN p-values (no test) reject nothing and
    do not count towards the family size; an empty primary family opens no gate.
    """
    p1 = np.asarray(list(primary_p), dtype=float)
    p2 = np.asarray(list(secondary_p), dtype=float)
    adj1 = holm(p1) if p1.size else p1
    reject1 = [bool(x < alpha) for x in adj1]
    tested = bool(p1.size) and all(reject1)
    adj2 = holm(p2) if (p2.size and tested) else np.full(p2.shape, np.nan)
    reject2 = [bool(x < alpha) for x in adj2] if tested else [False] * int(p2.size)
    return FamilyDecision(adj1.tolist(), reject1, tested, adj2.tolist(), reject2)

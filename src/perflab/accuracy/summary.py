"""From the accuracy studies to what each arrangement is known to cost: the truth, then per case,
arrangement and added cost the bias, coverage, false claims, power and machine time; and per
arrangement the bias bound a study in it states (perflab.stats.bias).

**The truth** of a case and an added cost is what one-at-a-time studies measure -- each
configuration alone on the machine at the study's load, the seeds' way: the mean of ln(ITR (S)
new / base) over every complete block of every one-at-a-time study of that cell, pooled. With no
added cost it is 1 exactly (the same configuration twice). A one-at-a-time study's own coverage is
judged against the truth of the *other* one-at-a-time studies (leave one out), so it is not
measured against itself.

**Bias** is the mean of a design's ln(ratio) less the truth, in points of the ratio; **coverage**
the share of its printed intervals (the ones that decided) that hold the truth, and beside it the
share of the arrangement's own intervals before any widening; **claims** the share of studies
that called ITR (S) WORSE or BETTER -- false claims with no added cost, the power to call the
loss WORSE with one; **answered** the share with a verdict (not exit 4).

**The bound**: ln r_design = (1 + k) ln r_true + a. Each cell with an added cost gives a k (its
mean log-ratio over the truth, less 1) with a standard error from both; the A/A cells an offset
a. The bound spans every k within two standard errors and every |a| likewise; it is applied
(the arrangement's intervals widened by it) when the arrangement misses the target on any cell
-- coverage below 85%, or a bias beyond 0.3 points. The bound is given pooled over every case
(what a study of a kind no case measured states) and per case that stands for a target kind
(`Case.target_kind`): a SQLite study states SQLite's bound, not one set by PostgreSQL's
dilution.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field

from perflab.accuracy.experiment import StudyResult

COVERAGE_TARGET = 0.85
BIAS_TARGET_POINTS = 0.3
CLAIMS = ("WORSE", "BETTER")


@dataclass(frozen=True)
class Truth:
    log_ratio: float
    se: float
    blocks: int

    @property
    def ratio(self) -> float:
        return math.exp(self.log_ratio)


def truth_of(measurement, knob: int) -> Truth:
    """The truth of a knob value from the case's truth measurement (perflab.accuracy.truth)."""
    return Truth(measurement.log_ratio(knob), measurement.log_se(knob), len(measurement.values))


def truth(results: Iterable[StudyResult], case: str, effect: float, leave_out: str | None = None) -> Truth | None:
    """The pooled one-at-a-time estimate of a cell (module doc); None without such blocks. A cell
    with no one-at-a-time studies of its own takes the truth of the case's largest measured added
    cost, scaled by the knob: the knob's added CPU per transaction is linear in its value
    (measured: cases.py), so PBT/CMD (S) rises by knob_e / knob_m of what it rose at m, and ITR
    (S) = 1000 x processors / PBT/CMD (S) falls by the inverse."""
    results = list(results)
    if effect == 0.0:
        return Truth(0.0, 0.0, 0)
    mine = [r for r in results if r.case == case and r.arrangement == "one-at-a-time" and r.study_id != leave_out]
    logs = [d for r in mine if r.effect == effect for d in r.block_logs]
    if len(logs) >= 2:
        return Truth(statistics.fmean(logs), statistics.stdev(logs) / math.sqrt(len(logs)), len(logs))
    measured = sorted({r.effect for r in mine if r.effect > 0 and len(r.block_logs) >= 2})
    knobs = {r.effect: r.knob for r in results if r.case == case and r.effect > 0}
    if not measured or effect not in knobs or not knobs.get(measured[-1]):
        return None
    reference = truth(results, case, measured[-1], leave_out)
    if reference is None:
        return None
    scale = knobs[effect] / knobs[measured[-1]]
    added = math.expm1(-reference.log_ratio)          # PBT/CMD (S) ratio - 1 at the reference
    log_ratio = -math.log1p(scale * added)
    # delta method: d(log_ratio)/d(reference) = scale e^-t / (1 + scale (e^-t - 1))
    slope = scale * math.exp(-reference.log_ratio) / (1.0 + scale * added)
    return Truth(log_ratio, abs(slope) * reference.se, reference.blocks)


@dataclass
class Cell:
    case: str
    arrangement: str
    effect: float
    studies: int = 0
    truth: Truth | None = None
    mean_log: float | None = None
    se_log: float | None = None
    covered: int = 0
    covered_design: int = 0
    judged: int = 0                 # studies with an interval and a truth to judge it by
    claims: int = 0                 # WORSE or BETTER
    worse: int = 0
    answered: int = 0
    seconds: float = 0.0
    excluded: int = 0
    runs: int = 0
    widths: list[float] = field(default_factory=list)

    @property
    def bias_points(self) -> float | None:
        if self.mean_log is None or self.truth is None:
            return None
        return 100.0 * (math.exp(self.mean_log) - math.exp(self.truth.log_ratio))

    @property
    def coverage(self) -> float | None:
        return self.covered / self.judged if self.judged else None

    @property
    def coverage_design(self) -> float | None:
        return self.covered_design / self.judged if self.judged else None

    @property
    def magnification(self) -> tuple[float, float] | None:
        """(k, its standard error): mean log-ratio / truth - 1, for an added cost."""
        if self.effect == 0.0 or self.truth is None or self.mean_log is None or self.truth.log_ratio == 0:
            return None
        k = self.mean_log / self.truth.log_ratio - 1.0
        se_mean = self.se_log or 0.0
        se = abs(k + 1.0) * math.hypot(se_mean / abs(self.mean_log) if self.mean_log else 0.0,
                                       self.truth.se / abs(self.truth.log_ratio))
        return k, se

    @property
    def meets_target(self) -> bool:
        bias = self.bias_points
        coverage = self.coverage
        return (bias is None or abs(bias) <= BIAS_TARGET_POINTS) and (coverage is None or coverage >= COVERAGE_TARGET)


def cells(results: list[StudyResult], truths: dict | None = None) -> list[Cell]:
    """The table. `truths`: per case, its truth measurement (perflab.accuracy.truth), which is
    preferred to the one-at-a-time studies' pooled ratio when there is one."""
    truths = truths or {}

    def truth_for(r: StudyResult, leave_out: str | None) -> Truth | None:
        if r.effect == 0.0:
            return Truth(0.0, 0.0, 0)
        if r.case in truths:
            return truth_of(truths[r.case], r.knob)
        return truth(results, r.case, r.effect, leave_out)

    out: dict[tuple[str, str, float], Cell] = {}
    for r in results:
        cell = out.setdefault((r.case, r.arrangement, r.effect), Cell(r.case, r.arrangement, r.effect))
        cell.studies += 1
        cell.seconds += r.seconds
        cell.excluded += r.excluded
        cell.runs += r.runs
        cell.answered += r.exit_code != 4 and r.verdict is not None
        cell.claims += r.verdict in CLAIMS
        cell.worse += r.verdict == "WORSE"
        leave_out = r.study_id if r.arrangement == "one-at-a-time" else None
        t = truth_for(r, leave_out)
        if t is not None and r.ci_low is not None and r.ci_high is not None:
            cell.judged += 1
            cell.covered += r.ci_low <= t.ratio <= r.ci_high
            low = r.design_ci_low if r.design_ci_low is not None else r.ci_low
            high = r.design_ci_high if r.design_ci_high is not None else r.ci_high
            cell.covered_design += low <= t.ratio <= high
            cell.widths.append(100.0 * (r.ci_high - r.ci_low) / 2.0)
    for (case, arrangement, effect), cell in out.items():
        logs = [math.log(r.ratio) for r in results if (r.case, r.arrangement, r.effect) == (case, arrangement, effect)
                and r.ratio is not None and r.ratio > 0]
        sample = next(r for r in results if (r.case, r.arrangement, r.effect) == (case, arrangement, effect))
        cell.truth = truth_for(sample, None)
        if logs:
            cell.mean_log = statistics.fmean(logs)
            cell.se_log = statistics.stdev(logs) / math.sqrt(len(logs)) if len(logs) > 1 else None
    order = {"one-at-a-time": 0, "duet": 1, "split-duet": 2}
    return sorted(out.values(), key=lambda c: (c.case, order.get(c.arrangement, 9), c.effect))


@dataclass(frozen=True)
class Bound:
    arrangement: str
    k_low: float
    k_high: float
    a_max: float
    widened: bool
    cells: int


def bounds_by_kind(table: list[Cell]) -> dict[str, dict[str, Bound]]:
    """Per target kind a case stands for (accuracy.cases.Case.target_kind): its own cells' bounds."""
    from perflab.accuracy.cases import CASES

    out = {}
    for case in sorted({c.case for c in table}):
        kind = CASES[case].target_kind if case in CASES else None
        if kind is not None:
            out[kind] = bounds([c for c in table if c.case == case])
    return out


def bounds(table: list[Cell]) -> dict[str, Bound]:
    """Per arrangement (one-at-a-time is the reference and gets none): the bias bound of the
    module doc, and whether it must widen the arrangement's intervals."""
    out = {}
    for arrangement in sorted({c.arrangement for c in table} - {"one-at-a-time"}):
        mine = [c for c in table if c.arrangement == arrangement]
        ks = [m for m in (c.magnification for c in mine) if m is not None]
        offsets = [(c.mean_log, c.se_log or 0.0) for c in mine if c.effect == 0.0 and c.mean_log is not None]
        k_low = min([k - 2 * se for k, se in ks] + [0.0]) if ks else 0.0
        k_high = max([k + 2 * se for k, se in ks] + [0.0]) if ks else 0.0
        a_max = max([abs(a) + 2 * se for a, se in offsets] + [0.0])
        widened = not all(c.meets_target for c in mine)
        out[arrangement] = Bound(arrangement, max(k_low, -0.9), k_high, a_max, widened, len(mine))
    return out

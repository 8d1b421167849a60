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

**The bound** (`fit_bounds`): ln r_design = (1 + k) ln r_true + a, fitted per host, arrangement
and target kind from that host's `fit` studies, each with its own standard error and its
truth's, with a between-study spread of k and of a (perflab.stats.bias.fit_bias): a prediction
box for the next study on that host, at a stated level, kept in the host's run store
(store/bias.py). Studies of other hosts, the fresh `check` studies that test the bound, and
cases of other kinds never enter it: a SQLite study states SQLite's bound, and a kind no case
stands for has none.

**Coverage on fresh studies** (`check_rows`): the `check` studies ran with the host's bound on;
the share of their printed intervals holding their truth is the bound's test, shown with its
Clopper-Pearson lower bound.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field

from perflab.accuracy.experiment import StudyResult
from perflab.records.bias import HostBound, HostIdentity
from perflab.stats.bias import DEFAULT_BOUND_LEVEL, BiasObservation, fit_bias

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


def study_truth(result: StudyResult, truths: dict) -> Truth | None:
    """A study's truth from the truth measurement of its own case, host and session (or its case's
    only one, in the files of perflab 0.2); None when there is none to read."""
    from perflab.accuracy.experiment import key_of

    if result.effect == 0.0:
        return Truth(0.0, 0.0, 0)
    measurement = truths.get(key_of(result)) or truths.get((result.case, None, None))
    return None if measurement is None else truth_of(measurement, result.knob)


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
        return study_truth(r, truths) or truth(results, r.case, r.effect, leave_out)

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
            # One study: its own standard error (dropping it made a one-study cell's k look exact).
            cell.se_log = statistics.stdev(logs) / math.sqrt(len(logs)) if len(logs) > 1 else sample.design_se
    order = {"one-at-a-time": 0, "duet": 1, "split-duet": 2}
    return sorted(out.values(), key=lambda c: (c.case, order.get(c.arrangement, 9), c.effect))


def observations(results: list[StudyResult], truths: dict) -> list[tuple[StudyResult, BiasObservation]]:
    """Each study that can inform a bias fit, with its observation (perflab.stats.bias): a
    design estimate with its own standard error, and its truth with the truth's."""
    out = []
    for r in results:
        t = study_truth(r, truths)
        ratio = r.design_ratio if r.design_ratio is not None else r.ratio
        se = r.design_se if r.design_se is not None else _se_from_blocks(r.block_logs)
        if t is None or ratio is None or ratio <= 0 or se is None or not math.isfinite(se):
            continue
        out.append((r, BiasObservation(t.log_ratio, t.se, math.log(ratio), se)))
    return out


def _se_from_blocks(logs: list[float]) -> float | None:
    return statistics.stdev(logs) / math.sqrt(len(logs)) if len(logs) >= 2 else None


def fit_bounds(results: list[StudyResult], truths: dict, host: dict, level: float = DEFAULT_BOUND_LEVEL,
               measured: str = "") -> list[HostBound]:
    """The bounds of one host: per concurrent arrangement and per target kind a case stands for,
    fitted (perflab.stats.bias.fit_bias) from that host's `fit` studies only -- never from the
    fresh `check` studies that test it, never from another host's, never pooled across kinds."""
    from perflab.accuracy.cases import CASES
    from perflab.records.bias import BiasFitRecord, HostBound, HostIdentity
    from perflab.study.arrangement import ALONE

    key = HostIdentity.model_validate(host).key
    # one at a time and interleaved give each run the machine alone: they state no bound (their
    # cells in the table are their test), so none is fitted for them
    mine = [r for r in results if r.role == "fit" and r.host and HostIdentity.model_validate(r.host).key == key
            and r.arrangement not in ALONE]
    out = []
    groups: dict[tuple[str, str], list[StudyResult]] = {}
    for r in mine:
        kind = CASES[r.case].target_kind if r.case in CASES else None
        if kind is not None:
            groups.setdefault((r.arrangement, kind), []).append(r)
    for (arrangement, kind), studies in sorted(groups.items()):
        pairs = observations(studies, truths)
        fit = fit_bias([o for _, o in pairs], level)
        if fit is None:
            continue
        bound = fit.bound()
        used = [r for r, _ in pairs]
        out.append(HostBound(
            arrangement=arrangement, target=kind, k_low=bound.k_low, k_high=bound.k_high, a_low=bound.offsets[0],
            a_high=bound.offsets[1], k_mid=fit.k, a_mid=fit.a, level=level,
            fit=BiasFitRecord(k=fit.k, k_se=fit.k_se, tau_k=fit.tau_k, a=fit.a, a_se=fit.a_se, tau_a=fit.tau_a,
                              studies=fit.studies),
            study_ids=[r.study_id for r in used], days=sorted({r.day for r in used if r.day}),
            host_states=[round(r.base_pbt_ms, 4) for r in used if r.base_pbt_ms is not None],
            cases=sorted({r.case for r in used}), measured=measured))
    return out


@dataclass
class CheckRow:
    """Fresh studies of one arrangement and kind on one host, run with the host's bound on: the
    bound's test (`check` studies; the fit never saw them)."""

    arrangement: str
    kind: str
    studies: int = 0
    judged: int = 0
    covered: int = 0
    aa: int = 0
    aa_equivalent: int = 0
    small: int = 0                  # a true change inside the margin (the -1% cells)
    small_failed: int = 0           # ... that `--gate` would fail (WORSE or INCONCLUSIVE)
    large: int = 0                  # a true loss of 5% or more
    large_worse: int = 0
    widths: list[float] = field(default_factory=list)
    seconds: float = 0.0
    routes: set[str] = field(default_factory=set)
    bound: str = ""                 # the bound the studies were widened by (experiment.bound_label)
    days: set[str] = field(default_factory=set)
    hosts: set[str] = field(default_factory=set)     # records.bias.HostIdentity keys
    pooled: int = 0                 # > 1: the sum of that many rows (pooled_check_rows)

    @property
    def coverage_lower(self) -> float:
        from perflab.stats.distributions import clopper_pearson_lower

        return clopper_pearson_lower(self.covered, self.judged)


def check_rows(results: list[StudyResult], truths: dict, margin: float = 0.03) -> list[CheckRow]:
    """Per (host's) arrangement and kind: coverage of the printed intervals, the A/A EQUIVALENT
    rate, the gate's false failures on a true change inside the margin, the power to call a 5%
    loss WORSE, the width and the machine minutes -- over the `check` studies."""
    from perflab.accuracy.cases import CASES

    rows: dict[tuple[str, str, str, str], CheckRow] = {}
    for r in results:
        if r.role != "check":
            continue
        kind = CASES[r.case].target_kind if r.case in CASES else r.case
        # one row per route and per bound: a host's bound and a study's own are two claims to test
        # apart, and so are a host's bound before and after it was refitted
        key = (r.arrangement, kind or r.case, r.route or "none", r.bound or "")
        row = rows.setdefault(key, CheckRow(r.arrangement, kind or r.case, bound=r.bound or ""))
        row.studies += 1
        row.seconds += r.seconds
        if r.route:
            row.routes.add(r.route)
        if r.day:
            row.days.add(r.day)
        if r.host:
            row.hosts.add(HostIdentity.model_validate(r.host).key)
        t = study_truth(r, truths)
        if t is not None and r.ci_low is not None and r.ci_high is not None:
            row.judged += 1
            row.covered += r.ci_low <= t.ratio <= r.ci_high
            row.widths.append(100.0 * (r.ci_high - r.ci_low) / 2.0)
        if r.effect == 0.0:
            row.aa += 1
            row.aa_equivalent += r.verdict == "EQUIVALENT"
        elif t is not None and 1.0 - t.ratio < margin:
            row.small += 1
            row.small_failed += r.verdict not in ("EQUIVALENT", "BETTER")
        elif r.effect >= 0.05 - 1e-9:
            # The +5% cell by what it was set to add: its knob comes from the solo calibration, and
            # on PostgreSQL its truth read a 4.5% loss of ITR (+4.71% of CPU) -- a threshold on the
            # truth dropped the cell from the row.
            row.large += 1
            row.large_worse += r.verdict == "WORSE"
    return sorted(rows.values(), key=lambda c: (c.kind, c.arrangement, sorted(c.routes), c.bound))


def pooled_check_rows(rows: list[CheckRow]) -> list[CheckRow]:
    """Per arrangement, kind and route, the sum of the rows of every bound and host: the test of the
    procedure a user follows (fit this host's bound, then study with it on) rather than of one bound,
    and what the goal of 20 fresh studies over two days is counted on. Only where there is more than
    one row to pool."""
    groups: dict[tuple[str, str, tuple[str, ...]], list[CheckRow]] = {}
    for row in rows:
        groups.setdefault((row.arrangement, row.kind, tuple(sorted(row.routes))), []).append(row)
    out = []
    for (arrangement, kind, routes), members in groups.items():
        if len(members) < 2:
            continue
        total = CheckRow(arrangement, kind, routes=set(routes), pooled=len(members))
        for m in members:
            for name in ("studies", "judged", "covered", "aa", "aa_equivalent", "small", "small_failed", "large",
                         "large_worse", "seconds"):
                setattr(total, name, getattr(total, name) + getattr(m, name))
            total.widths += m.widths
            total.days |= m.days
            total.hosts |= m.hosts
        out.append(total)
    return sorted(out, key=lambda c: (c.kind, c.arrangement, sorted(c.routes)))

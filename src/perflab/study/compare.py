"""Comparisons of configurations: per metric, the ratio of geometric means with its interval
(paired by block) and a verdict; then the report's error control, and the study's answer with
its exit code.

Roles (statistics-and-capacity.md §5.4; DESIGN.md "A verdict is a claim with an error rate"):

* *primary* -- a study's `gate_metrics` (default the registry's capacity key, ITR (S)): their
  verdicts answer the study and decide its exit code. With k primary hypotheses (metrics x
  comparisons) each gets a Bonferroni interval at 1 - alpha/k, and that printed interval
  decides its verdict (perflab.stats.multiplicity says why not Holm);
* *secondary* -- every other directional row: tested as a family (intervals at 1 - alpha/k2)
  only when every primary hypothesis is rejected (serial gatekeeping); otherwise shown with its
  interval at 1 - alpha and no claim of a change ("untested");
* *descriptive* -- a row a concurrent design (a duet) cannot isolate: response times, which
  depend on how the CPU was shared. Ratio and interval, never a verdict;
* *pair* -- a machine-wide row (every (H) row, VIO, disk, network, paging) in a concurrent
  design: both runs of a block count in it, so its ratio is 1/ETR ratio by construction. Shown
  once for the pair, with no ratio.

A concurrent design's measured bias (perflab.stats.bias), when the study carries one, widens
every verdict interval of a row measured in the window, and the widened interval is the one
printed and the one that decides. A counted row (instructions, source (I): from the valgrind pass
after the window) is exempt: the pass runs its fixed draw of transactions alone in its process,
and an instruction count does not depend on who shares the CPU, so the bias measured on timed
rows has nothing to correct in it.
So a report about identical configurations claims any change at all with probability at most
alpha, and every printed verdict can be checked against the interval beside it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from perflab import caveats as cav
from perflab.catalog.registry import COMPONENT_COMPARED, REGISTRY, base_key, class_key
from perflab.caveats import Code
from perflab.errors import EXIT_FAILED, EXIT_INCONCLUSIVE, EXIT_NO_COMPARISON, EXIT_OK
from perflab.records.study import ComparisonRecord, MetricComparison, PrimaryVerdict, Role, StudyRun, StudyVerdict
from perflab.stats import compare as stats_compare
from perflab.stats.bias import UNSIZED_LOG_WIDTH, BiasBound
from perflab.stats.criteria import Criteria
from perflab.stats.multiplicity import CLAIMS, gate_opens
from perflab.stats.verdict import Verdict, blocks_needed, judge
from perflab.values import finite


@dataclass(frozen=True)
class DesignTraits:
    """What the study's design lets a comparison say: whether a block's runs ran at the same time
    (machine-wide rows then belong to the pair, response rows are descriptive) and the design's
    measured bias, which widens its verdict intervals (None: none measured or none applied)."""

    concurrent: bool = False
    bias: BiasBound | None = None
    swapped: bool = False   # a split duet: the configurations swap sides of the machine by block


SOLO = DesignTraits()


def row_role(key: str, primary: Sequence[str], design: DesignTraits) -> Role:
    """primary, secondary, descriptive or pair (module doc)."""
    base = base_key(key)
    if design.concurrent and REGISTRY.machine_wide(base):
        return "pair"
    if key in primary:
        return "primary"
    if design.concurrent and base in REGISTRY.role("response_rows"):
        return "descriptive"
    return "secondary"




def default_primary() -> list[str]:
    """The default gated metric: the registry's first capacity key (ITR (S))."""
    return [REGISTRY.role("capacity")[0]]


def flatten_components(values: dict[str, Any], per_component: dict[str, dict] | None) -> dict[str, Any]:
    """Add `<metric>:<component>` keys (e.g. srv_tot_cpu_cmd_v:checkpointer) to a run's values."""
    out = dict(values)
    for component, row in (per_component or {}).items():
        for key in COMPONENT_COMPARED:
            if row.get(key) is not None:
                out[f"{key}:{component}"] = row[key]
    return out


def flatten_classes(values: dict[str, Any], per_class: dict[str, dict] | None, keys: Iterable[str]) -> dict[str, Any]:
    """Add the per-class keys among `keys` (avg_last_t.online: the class table's row) to a run's
    values; a class the run did not measure adds nothing (na)."""
    out = dict(values)
    for key in keys:
        split = class_key(key)
        if split is not None:
            metric, klass = split
            value = (per_class or {}).get(klass, {}).get(metric)
            if value is not None:
                out[key] = value
    return out


def with_component_keys(metrics: Sequence[str], runs: Iterable[StudyRun]) -> list[str]:
    """The metric list plus every per-component key some run measured, in a stable order."""
    extra = sorted({k for r in runs for k in r.metrics if ":" in k and k.split(":", 1)[0] in COMPONENT_COMPARED})
    return list(metrics) + [k for k in extra if k not in metrics]


def metric_info(key: str) -> dict[str, Any]:
    split = class_key(key)
    base, component = split if split is not None else (key.partition(":")[0], key.partition(":")[2])
    metric = REGISTRY.get(base)
    if metric is None:
        return {"label": key, "unit": "", "group": "", "direction": "none", "decimals": 3}
    label = f"{component} {metric.label}" if component else metric.label
    return {"label": label, "unit": metric.unit, "group": metric.group, "direction": metric.direction.value,
            "decimals": metric.decimals}


def _value(value: Any) -> float | None:
    """A per-run value a comparison can use: finite and not negative. Zero is a value."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


def geomean(values: Iterable[Any]) -> float | None:
    """Geometric mean of the usable values; 0 when one is 0 (zero is a value, not a gap)."""
    usable = [v for v in (_value(x) for x in values) if v is not None]
    if not usable:
        return None
    if any(v == 0 for v in usable):
        return 0.0
    return math.exp(sum(math.log(v) for v in usable) / len(usable))


def _exclusion_summary(runs: Sequence[StudyRun], config: str, span: str = "window") -> str:
    """How many of a configuration's runs count in rows measured in `span`, and why the others
    do not (excluded, or set aside for the rows a failed gate protects)."""
    mine = [r for r in runs if r.config == config]
    excluded = [r for r in mine if not r.counts_in(span)]
    if not excluded:
        return f"{len(mine)} valid run(s) of {config}"
    counts: dict[str, int] = {}
    for run in excluded:
        for caveat in (run.exclusions or [s.caveat for s in run.set_aside if span in s.protects])[:1]:
            head = caveat.text.split(":")[0] if caveat.code != "legacy" else caveat.text
            counts[head] = counts.get(head, 0) + 1
    reasons = "; ".join(f"{why} ({n}x)" for why, n in counts.items())
    return f"{len(mine) - len(excluded)} valid of {len(mine)} run(s) of {config} ({reasons})"


def sides_of(runs: Sequence[StudyRun], new: str) -> dict[int, int]:
    """Block -> +1 or -1: which side of the machine (its SUT's CPUs) the new configuration ran on,
    the first side seen being +1."""
    first: tuple[int, ...] | None = None
    out = {}
    for run in runs:
        if run.config == new and run.block is not None and run.sut_cpus:
            cpus = tuple(run.sut_cpus)
            first = first or cpus
            out[run.block] = 1 if cpus == first else -1
    return out


def compare_metric(runs: Sequence[StudyRun], base: str, new: str, key: str, criteria: Criteria, role: Role,
                   level: float | None = None, bias: BiasBound | None = None,
                   paired: bool = True, swapped: bool = False) -> MetricComparison | None:
    """One metric of one comparison with its interval at `level` (default 1 - alpha) and the
    call that interval makes, widened first by the design's `bias` when one is given. None when
    neither side measured it. `role` pair: the row's value for the pair, no ratio."""
    info = metric_info(key)
    level = criteria.confidence if level is None else level
    span = REGISTRY.span(key).value    # a run set aside for this row's span does not count in it
    valid = [r for r in runs if r.counts_in(span)]
    by_block = {name: {(r.block if r.block is not None else i): _value(r.metrics.get(key))
                       for i, r in enumerate(valid) if r.config == name} for name in (base, new)}
    measured_any = any(_value(r.metrics.get(key)) is not None for r in runs if r.config in (base, new))
    if not measured_any:
        return None
    base_values = [v for v in by_block[base].values() if v is not None]
    new_values = [v for v in by_block[new].values() if v is not None]
    if role == "pair":
        return MetricComparison(key=key, role=role, **info, adjustment="pair", pair_value=geomean(base_values + new_values),
                                n_base=len(base_values), n_new=len(new_values),
                                note="the pair's: both runs of each block ran at once and count in this machine-wide "
                                     "row, so it has no ratio")
    entry = MetricComparison(key=key, role=role, **info, base_value=geomean(base_values),
                             new_value=geomean(new_values), n_base=len(base_values), n_new=len(new_values))
    if entry.base_value is not None and entry.new_value is not None:
        entry.abs_change = entry.new_value - entry.base_value
        entry.rel_change = entry.new_value / entry.base_value - 1 if entry.base_value else None
    if not entry.directional:
        return entry
    if len(base_values) < 2 or len(new_values) < 2:
        entry.no_comparison = ("no valid comparison: " + _exclusion_summary(runs, base, span) + ", "
                               + _exclusion_summary(runs, new, span))
        entry.warnings = [cav.remark(Code.NO_INTERVAL, entry.no_comparison)]
        return entry
    if any(v == 0 for v in base_values + new_values):
        return _compare_with_zeros(entry, by_block[base], by_block[new])
    higher = info["direction"] == "higher"
    result = stats_compare(by_block[base], by_block[new], metric=key, higher_is_better=higher,
                           margin=criteria.margin, confidence=level, paired=paired,
                           side=sides_of(valid, new) if swapped else None)
    entry.level = level
    entry.ratio, entry.p_value = result.ratio, _finite(result.p_value)
    entry.ci_low, entry.ci_high = _finite(result.ci_low), _finite(result.ci_high)
    entry.method = result.method
    entry.n_blocks, entry.cv, entry.blocks_needed = result.n_blocks, _finite(result.cv), result.blocks_needed
    entry.legacy, entry.warnings = result.legacy, list(result.warnings)
    verdict, entry.material, entry.note = result.verdict.value, result.material, result.note
    if bias is not None and not bias.none and entry.ci_low is not None and entry.ci_high is not None:
        verdict = _bias_bounded(entry, bias, criteria, higher, level)
    entry.verdict_unadjusted = verdict
    if entry.ci_low is None:
        # Pairs, but too few for an interval: INCONCLUSIVE (more blocks), with the runs' story.
        entry.warnings.append(cav.remark(Code.RUNS_EXCLUDED, f"{_exclusion_summary(runs, base, span)}, "
                                         f"{_exclusion_summary(runs, new, span)}"))
    if entry.ratio is not None and math.isfinite(entry.ratio) and entry.base_value is not None:
        # The change a report states is the paired estimate its interval belongs to, not the
        # ratio of the columns' means (those include runs of incomplete blocks).
        entry.rel_change = entry.ratio - 1
        entry.abs_change = entry.base_value * entry.rel_change
    return entry


_finite = finite


def _bias_bounded(entry: MetricComparison, bias: BiasBound, criteria: Criteria, higher: bool, level: float) -> str:
    """Widen a row's interval by the design's bias bound (the widened one decides), de-bias its
    point estimate by the bound's fitted k and a, and say when the widened interval is too wide
    to size the change; the blocks the margin needs are those of the widened rule. -> the verdict."""
    assert entry.ci_low is not None and entry.ci_high is not None and entry.ratio is not None
    entry.design_ci_low, entry.design_ci_high, entry.design_ratio = entry.ci_low, entry.ci_high, entry.ratio
    low, high = bias.widen(math.log(entry.ci_low), math.log(entry.ci_high))
    entry.ci_low, entry.ci_high = math.exp(low), math.exp(high)
    entry.ratio = math.exp(bias.truth(math.log(entry.design_ratio)))
    j = judge(entry.ratio, entry.ci_low, entry.ci_high, margin=criteria.margin, higher_is_better=higher)
    entry.material, entry.note = j.material, j.note
    if high - low > UNSIZED_LOG_WIDTH:
        entry.unsized = True
        entry.note = (f"the arrangement cannot size this change: its bias-bounded interval spans "
                      f"{100 * (entry.ci_high - entry.ci_low):.0f} points")
    entry.blocks_needed = None
    if entry.cv is not None and j.verdict is Verdict.INCONCLUSIVE:
        room = bias.effective_margin(math.log(1.0 / (1.0 - criteria.margin)))
        if room > 0:
            entry.blocks_needed = blocks_needed(entry.cv, -math.expm1(-room), confidence=level)
        else:
            entry.note = (entry.note + "; " if entry.note else "") + \
                "no number of blocks shows EQUIVALENT under this bias bound"
    return j.verdict.value


def counted(key: str) -> bool:
    """A row counted rather than timed (the catalog's `counted`: instructions, not cycles)."""
    metric = REGISTRY.get(base_key(key))
    return metric is not None and metric.counted


def _compare_with_zeros(entry: MetricComparison, base: dict, new: dict) -> MetricComparison:
    """A metric with zero values has no log scale: it is compared as it is. Both sides all zero
    is no change (EQUIVALENT, exactly); otherwise the change is stated without an interval."""
    values = [v for v in list(base.values()) + list(new.values()) if v is not None]
    if all(v == 0 for v in values):
        entry.ratio, entry.ci_low, entry.ci_high = 1.0, 1.0, 1.0
        entry.verdict_unadjusted, entry.p_value = Verdict.EQUIVALENT.value, 1.0
        entry.n_blocks = len([b for b in base if b in new and base[b] is not None and new[b] is not None])
        entry.note = "(zero in every run of both configurations)"
        return entry
    entry.warnings = [cav.remark(Code.NO_INTERVAL, "zero in some runs: no log-scale interval; the change is shown "
                                 "without a verdict")]
    if entry.base_value:
        entry.ratio = (entry.new_value or 0.0) / entry.base_value
    return entry


def compare_configs(runs: Sequence[StudyRun], base: str, new: str, keys: Sequence[str], criteria: Criteria,
                    primary: Sequence[str], design: DesignTraits = SOLO, levels: dict[str, float] | None = None,
                    paired: bool = True, roles: Sequence[str] | None = None) -> ComparisonRecord:
    """One comparison block of study.json: each row at its role's level (`levels`, by role;
    default 1 - alpha); `roles`: only the rows of these roles. `control_errors` settles the
    verdicts."""
    out = ComparisonRecord(base=base, new=new)
    for key in keys:
        role = row_role(key, primary, design)
        if roles is not None and role not in roles:
            continue
        level = (levels or {}).get(role, criteria.confidence)
        bias = design.bias if role in ("primary", "secondary") and not counted(key) else None
        entry = compare_metric(runs, base, new, key, criteria, role, level, bias, paired, design.swapped)
        if entry is not None:
            out.metrics.append(entry)
    for key in primary if roles is None or "primary" in roles else ():
        # a primary metric nobody measured is still an answer the study owes
        if out.entry(key) is None:
            out.metrics.insert(0, MetricComparison(key=key, role="primary", **metric_info(key),
                                                   no_comparison=f"no valid comparison: {metric_info(key)['label']} "
                                                                 f"was not measured in any run"))
    return out


def family_sizes(pairs: Sequence[tuple[str, str]], keys: Sequence[str], primary: Sequence[str],
                 design: DesignTraits) -> tuple[int, int]:
    """(primary, secondary) hypotheses: every directional row of its role in every comparison,
    counted before any data is seen (a row a run did not measure still counts: conservative,
    and the level cannot depend on the results)."""
    roles = [row_role(k, primary, design) for k in keys if metric_info(k)["direction"] in ("higher", "lower")]
    return len(pairs) * sum(r == "primary" for r in roles), len(pairs) * sum(r == "secondary" for r in roles)


def control_errors(comparisons: Sequence[ComparisonRecord], criteria: Criteria, primary_family: int,
                   secondary_family: int, secondary_tested: bool) -> None:
    """Set each entry's `verdict` under the report's error control (module doc), in place: the
    intervals were computed at their family's level, so the verdict is the interval's call."""
    for comparison in comparisons:
        for entry in comparison.metrics:
            raw = entry.verdict_unadjusted
            if entry.role == "pair" or not entry.directional:
                entry.adjustment = "pair" if entry.role == "pair" else "none"
                continue
            if entry.role == "descriptive":
                entry.adjustment, entry.verdict = "descriptive", None
                continue
            tested = entry.role == "primary" or secondary_tested
            family = primary_family if entry.role == "primary" else secondary_family
            entry.adjustment = "bonferroni" if tested else "untested"
            if entry.p_value is not None and tested and entry.design_ci_low is None:
                entry.p_adjusted = min(1.0, family * entry.p_value)
            if entry.no_comparison is not None or raw is None:
                entry.verdict = None
            elif tested or raw not in CLAIMS:
                entry.verdict = raw
            else:
                entry.verdict = None  # shown as the untested call, never as a claim


def study_verdict(comparisons: Sequence[ComparisonRecord], primary: Sequence[str]) -> StudyVerdict:
    """The study's answer: each primary verdict, and the exit code that carries them.

    0 every primary verdict EQUIVALENT or BETTER; 1 one is WORSE; 3 none WORSE, one
    INCONCLUSIVE; 4 a primary metric has no valid comparison (every pair excluded, not measured).
    """
    verdicts = []
    for comparison in comparisons:
        for key in primary:
            entry = comparison.entry(key)
            verdicts.append(PrimaryVerdict(base=comparison.base, new=comparison.new, key=key,
                                           verdict=entry.verdict if entry is not None else None,
                                           reason=entry.no_comparison if entry is not None else "not compared"))
    if not verdicts:
        return StudyVerdict(exit_code=EXIT_OK, meaning="no comparison asked (a sweep)")
    if any(v.verdict is None for v in verdicts):
        missing = next(v for v in verdicts if v.verdict is None)
        return StudyVerdict(exit_code=EXIT_NO_COMPARISON, primary=verdicts,
                            meaning=f"{missing.new} vs {missing.base}, {REGISTRY.label_of(missing.key)}: "
                                    f"{missing.reason or 'no verdict'}")
    if any(v.verdict == "WORSE" for v in verdicts):
        return StudyVerdict(exit_code=EXIT_FAILED, primary=verdicts, meaning="a primary verdict is WORSE")
    if any(v.verdict == "INCONCLUSIVE" for v in verdicts):
        return StudyVerdict(exit_code=EXIT_INCONCLUSIVE, primary=verdicts,
                            meaning="a primary verdict is INCONCLUSIVE (more blocks needed)")
    return StudyVerdict(exit_code=EXIT_OK, primary=verdicts, meaning="every primary verdict is EQUIVALENT or BETTER")


def judge_all(runs: Sequence[StudyRun], pairs: Sequence[tuple[str, str]], keys: Sequence[str],
              primary: Sequence[str], criteria: Criteria, design: DesignTraits = SOLO,
              paired: bool = True) -> tuple[list[ComparisonRecord], StudyVerdict]:
    """Every comparison, error-controlled, and the study's answer (what study and compare share).
    The primary rows are decided first; the secondary family's level depends on whether they
    opened the gate."""
    keys = with_component_keys(list(dict.fromkeys([*primary, *keys])), runs)
    k1, k2 = family_sizes(pairs, keys, primary, design)
    levels = {"primary": criteria.level(k1)}
    comparisons = [compare_configs(runs, base, new, keys, criteria, primary, design, levels, paired, ("primary",))
                   for base, new in pairs]
    tested = gate_opens(m.verdict_unadjusted if m.no_comparison is None else None
                        for c in comparisons for m in c.metrics if m.role == "primary")
    if tested:
        levels["secondary"] = criteria.level(k2)
    for comparison, (base, new) in zip(comparisons, pairs):
        rest = compare_configs(runs, base, new, keys, criteria, primary, design, levels, paired,
                               ("secondary", "descriptive", "pair"))
        order = {key: i for i, key in enumerate(keys)}
        comparison.metrics = sorted(comparison.metrics + rest.metrics,
                                    key=lambda m: (m.role != "primary", order.get(m.key, len(order))))
    control_errors(comparisons, criteria, k1, k2, tested)
    return comparisons, study_verdict(comparisons, primary)


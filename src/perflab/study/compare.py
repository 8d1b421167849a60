"""Comparisons of configurations: per metric, the ratio of geometric means with its interval
(paired by block) and a verdict; then error control over the whole report, and the study's
answer with its exit code.

Two roles (statistics-and-capacity.md §5.4; DESIGN.md "A verdict is a claim with an error
rate"): the *primary* metrics (a study's `gate_metrics`, default the registry's capacity
key, ITR (S)) carry the verdicts that answer the study's question and decide its exit code;
every other metric is *secondary*, shown with its interval. Claims of a change (WORSE, BETTER)
are Holm-adjusted across the primary metrics of every configuration, and secondary metrics are
tested only when every primary hypothesis is rejected (serial gatekeeping), so a report about
identical configurations claims any change at all with probability at most `family_alpha`.
An untested secondary keeps its unadjusted call, labelled as such.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from perflab.caveats import Caveat
from perflab.errors import EXIT_FAILED, EXIT_INCONCLUSIVE, EXIT_NO_COMPARISON, EXIT_OK
from perflab.records.study import ComparisonRecord, MetricComparison, PrimaryVerdict, StudyRun, StudyVerdict
from perflab.catalog.registry import COMPONENT_COMPARED, REGISTRY
from perflab.stats import compare as stats_compare
from perflab.stats.criteria import Criteria
from perflab.stats.multiplicity import gatekept_holm
from perflab.stats.verdict import Verdict

CLAIMS = ("WORSE", "BETTER")


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


def with_component_keys(metrics: Sequence[str], runs: Iterable[StudyRun]) -> list[str]:
    """The metric list plus every per-component key some run measured, in a stable order."""
    extra = sorted({k for r in runs for k in r.metrics if ":" in k and k.split(":", 1)[0] in COMPONENT_COMPARED})
    return list(metrics) + [k for k in extra if k not in metrics]


def metric_info(key: str) -> dict[str, Any]:
    base, _, component = key.partition(":")
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


def _exclusion_summary(runs: Sequence[StudyRun], config: str) -> str:
    mine = [r for r in runs if r.config == config]
    excluded = [r for r in mine if r.excluded]
    if not excluded:
        return f"{len(mine)} valid run(s) of {config}"
    counts: dict[str, int] = {}
    for run in excluded:
        for caveat in run.exclusions[:1]:
            head = caveat.text.split(":")[0] if caveat.code != "legacy" else caveat.text
            counts[head] = counts.get(head, 0) + 1
    reasons = "; ".join(f"{why} ({n}x)" for why, n in counts.items())
    return f"{len(mine) - len(excluded)} valid of {len(mine)} run(s) of {config} ({reasons})"


def compare_metric(runs: Sequence[StudyRun], base: str, new: str, key: str, criteria: Criteria,
                   role: str) -> MetricComparison | None:
    """One metric of one comparison, unadjusted. None when neither side measured it."""
    info = metric_info(key)
    valid = [r for r in runs if not r.excluded]
    by_block = {name: {(r.block if r.block is not None else i): _value(r.metrics.get(key))
                       for i, r in enumerate(valid) if r.config == name} for name in (base, new)}
    measured_any = any(_value(r.metrics.get(key)) is not None for r in runs if r.config in (base, new))
    if not measured_any:
        return None
    base_values = [v for v in by_block[base].values() if v is not None]
    new_values = [v for v in by_block[new].values() if v is not None]
    entry = MetricComparison(key=key, role=role, **info, base_value=geomean(base_values),
                             new_value=geomean(new_values), n_base=len(base_values), n_new=len(new_values))
    if entry.base_value is not None and entry.new_value is not None:
        entry.abs_change = entry.new_value - entry.base_value
        entry.rel_change = entry.new_value / entry.base_value - 1 if entry.base_value else None
    if not entry.directional:
        return entry
    if len(base_values) < 2 or len(new_values) < 2:
        entry.no_comparison = ("no valid comparison: " + _exclusion_summary(runs, base) + ", "
                               + _exclusion_summary(runs, new))
        entry.warnings = [entry.no_comparison]
        return entry
    if any(v == 0 for v in base_values + new_values):
        return _compare_with_zeros(entry, by_block[base], by_block[new], criteria)
    result = stats_compare(by_block[base], by_block[new], metric=key, higher_is_better=info["direction"] == "higher",
                           margin=criteria.margin, confidence=criteria.confidence)
    d = result.to_dict()
    entry.ratio, entry.ci_low, entry.ci_high, entry.p_value = d.get("ratio"), d.get("ci_low"), d.get("ci_high"), d.get(
        "p_value")
    entry.material, entry.note, entry.legacy = bool(d.get("material")), d.get("note") or "", d.get("legacy")
    entry.n_blocks, entry.cv, entry.blocks_needed = int(d.get("n_blocks") or 0), d.get("cv"), d.get("blocks_needed")
    entry.warnings = list(d.get("warnings") or [])
    entry.verdict_unadjusted = str(d["verdict"]) if d.get("verdict") is not None else None
    if entry.ci_low is None:
        # Pairs, but too few for an interval: INCONCLUSIVE (more blocks), with the runs' story.
        entry.warnings.append(f"{_exclusion_summary(runs, base)}, {_exclusion_summary(runs, new)}")
    if entry.ratio is not None and math.isfinite(entry.ratio) and entry.base_value is not None:
        # The change a report states is the paired estimate its interval belongs to, not the
        # ratio of the columns' means (those include runs of incomplete blocks).
        entry.rel_change = entry.ratio - 1
        entry.abs_change = entry.base_value * entry.rel_change
    return entry


def _compare_with_zeros(entry: MetricComparison, base: dict, new: dict, criteria: Criteria) -> MetricComparison:
    """A metric with zero values has no log scale: it is compared as it is. Both sides all zero
    is no change (EQUIVALENT, exactly); otherwise the change is stated without an interval."""
    values = [v for v in list(base.values()) + list(new.values()) if v is not None]
    if all(v == 0 for v in values):
        entry.ratio, entry.ci_low, entry.ci_high = 1.0, 1.0, 1.0
        entry.verdict_unadjusted, entry.p_value = Verdict.EQUIVALENT.value, 1.0
        entry.n_blocks = len([b for b in base if b in new and base[b] is not None and new[b] is not None])
        entry.note = "(zero in every run of both configurations)"
        return entry
    entry.warnings = ["zero in some runs: no log-scale interval; the change is shown without a verdict"]
    if entry.base_value:
        entry.ratio = (entry.new_value or 0.0) / entry.base_value
    return entry


def compare_configs(runs: Sequence[StudyRun], base: str, new: str, keys: Sequence[str], criteria: Criteria,
                    primary: Sequence[str]) -> ComparisonRecord:
    """One comparison block of study.json, unadjusted (see `control_errors`)."""
    out = ComparisonRecord(base=base, new=new)
    for key in keys:
        entry = compare_metric(runs, base, new, key, criteria, "primary" if key in primary else "secondary")
        if entry is not None:
            out.metrics.append(entry)
    for key in primary:  # a primary metric nobody measured is still an answer the study owes
        if out.entry(key) is None:
            out.metrics.insert(0, MetricComparison(key=key, role="primary", **metric_info(key),
                                                   no_comparison=f"no valid comparison: {metric_info(key)['label']} "
                                                                 f"was not measured in any run"))
    return out


def control_errors(comparisons: Sequence[ComparisonRecord], criteria: Criteria) -> None:
    """Set each entry's `verdict` under the report's error control (module doc), in place."""
    primary = [m for c in comparisons for m in c.metrics if m.role == "primary" and m.directional]
    secondary = [m for c in comparisons for m in c.metrics if m.role == "secondary" and m.directional]
    decision = gatekept_holm([_p(m) for m in primary], [_p(m) for m in secondary], criteria.family_alpha)
    for entry, p_adj, reject in zip(primary, decision.primary_adjusted, decision.primary_reject):
        _settle(entry, p_adj, reject, "holm", criteria)
    for entry, p_adj, reject in zip(secondary, decision.secondary_adjusted, decision.secondary_reject):
        _settle(entry, p_adj if decision.secondary_tested else None, reject,
                "gatekept-holm" if decision.secondary_tested else "unadjusted", criteria)


def _p(entry: MetricComparison) -> float:
    return entry.p_value if entry.p_value is not None and entry.no_comparison is None else math.nan


def _settle(entry: MetricComparison, p_adj: float | None, reject: bool, adjustment: str, criteria: Criteria) -> None:
    entry.p_adjusted = None if p_adj is None or math.isnan(p_adj) else p_adj
    entry.adjustment = adjustment
    raw = entry.verdict_unadjusted
    if entry.no_comparison is not None or raw is None:
        entry.verdict = None
        return
    if raw not in CLAIMS:
        entry.verdict = raw
        return
    if adjustment == "unadjusted":
        entry.verdict = None  # shown as an unadjusted call, never as a verdict
        return
    if reject:
        entry.verdict = raw
        return
    entry.verdict, entry.material = Verdict.INCONCLUSIVE.value, False
    entry.warnings = list(entry.warnings) + [
        f"{raw} withdrawn: Holm-adjusted p={entry.p_adjusted:.3f} ≥ {criteria.family_alpha:g} "
        f"(the report's claims of a change are held to {100 * criteria.family_alpha:g}% together)"
        if entry.p_adjusted is not None else f"{raw} withdrawn: no p-value"]


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
              primary: Sequence[str], criteria: Criteria) -> tuple[list[ComparisonRecord], StudyVerdict]:
    """Every comparison, error-controlled, and the study's answer (what study and compare share)."""
    keys = with_component_keys(list(dict.fromkeys([*primary, *keys])), runs)
    comparisons = [compare_configs(runs, base, new, keys, criteria, primary) for base, new in pairs]
    control_errors(comparisons, criteria)
    return comparisons, study_verdict(comparisons, primary)


def exclusion_notes(runs: Sequence[StudyRun]) -> list[Caveat]:
    """Every excluded run's reasons, for a report's caveats (never silently dropped)."""
    return [c for r in runs for c in r.exclusions]

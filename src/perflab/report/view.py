"""The report's content as plain strings and tables, built once from a study document.

The Markdown and the HTML exporters render this same view, so the two formats cannot drift
apart: a number is formatted here (through `numbers`) or nowhere. Everything is read from the
study document's attributes (perflab.records.study); missing values read as `na` or are left
out, never guessed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from perflab.catalog.registry import GROUPS, REGISTRY
from perflab.records import fingerprint as fingerprint_keys
from perflab.records.study import ComparisonRecord, MetricComparison, StudyDocument, StudyRun
from perflab.report import discussion, pathlength_diff
from perflab.report import numbers as fmt
from perflab.report.capacity_view import CapacityView, capacity_view
from perflab.report.pathlength_diff import PathlengthView, ProfileView

#: The legacy continuity column of statistics-and-capacity.md §5.5 (same text as
#: perflab.stats.verdict.LEGACY_LABEL; repeated so rendering does not import scipy).
LEGACY_LABEL = "IBM ±3 % on point estimate"
#: Section ids of one comparison, in the seeds' order (vmesa-methodology.md §4.2), plus the
#: run list that closes section 5. The HTML uses them as element ids.
SECTIONS = (("workload", "1. Workload"), ("hardware", "2. Hardware configuration"),
            ("software", "3. Software configuration"), ("discussion", "4. Measurement discussion"),
            ("data", "5. Measurement data"))


@dataclass
class Table:
    columns: list[str]
    rows: list[list[str]]
    verdict_column: int | None = None


@dataclass
class DataTable:
    """The measurement data table: rows in the seeds' row groups."""

    columns: list[str]
    groups: list[tuple[str, list[list[str]]]]
    verdict_column: int
    legend: list[str] = field(default_factory=list)


@dataclass
class ComparisonView:
    index: int
    suffix: str          # "" for the first comparison, "-2", "-3"... so HTML ids stay unique
    base: str
    new: str
    title: str
    workload: list[tuple[str, str]]
    calibration: Table | None
    hardware: Table
    hardware_notes: list[str]
    software: Table
    discussion: list[str]
    data: DataTable
    design: list[tuple[str, str]]
    runs: Table
    warnings: list[str]
    pathlength: PathlengthView | None = None   # where the pathlength went (report/pathlength_diff.py)
    profile: ProfileView | None = None         # where the CPU went, sampled (report/pathlength_diff.py)


@dataclass
class Observation:
    """One comparison's General Observations paragraph, its caveats listed apart so they stand out."""

    title: str
    text: str
    caveats: list[str]


@dataclass
class StudyView:
    title: str
    header: list[tuple[str, str]]
    observations: list[Observation]
    notes: list[str]
    comparisons: list[ComparisonView]
    sweep: Table | None
    # A sweep has no comparisons to hang the workload and the run list under: the study shows them.
    workload: list[tuple[str, str]] = field(default_factory=list)
    runs: Table | None = None
    noise: Table | None = None
    capacity: CapacityView | None = None
    trend: Table | None = None


# -- small formatting helpers ------------------------------------------------------------------

def text(value: Any) -> str:
    """A descriptive value: lists joined, dicts as k=v, None as na."""
    if value is None or value == "":
        return fmt.NA
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ", ".join(text(v) for v in value) if value else fmt.NA
    if isinstance(value, Mapping):
        return ", ".join(f"{k}: {text(v)}" for k, v in value.items() if v is not None) or fmt.NA
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def changes_text(changes: Mapping[str, Any]) -> str:
    """A configuration's `set`, every change shown: a field set to null is removed (load.batch:
    null takes the job stream away), which `text` would leave out as it leaves out any None."""
    return ", ".join(f"{k}: {'removed (null)' if v is None else text(v)}" for k, v in changes.items())


def seconds(value: Any) -> str:
    x = fmt.number(value)
    return fmt.NA if x is None else f"{x:g} s"


_UNITLESS_THINK_KEYS = frozenset({"idle_fraction", "sigma", "shape", "cv", "p", "weight", "seed"})


def think_text(think: Any) -> str:
    """{"dist": "exponential", "mean": 0.02} -> "exponential (mean 0.02 s)"."""
    if not think:
        return "none"
    if not isinstance(think, Mapping):
        return text(think)
    dist = think.get("dist") or think.get("kind") or "think time"
    params = []
    for key, value in think.items():
        if key in ("dist", "kind") or value is None:
            continue
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        # Fractions, shapes and counts are not durations: only the time parameters carry "s".
        unit = "" if key in _UNITLESS_THINK_KEYS else " s"
        shown = f"{value:g}{unit}" if number else text(value)
        params.append(f"{key} {shown}")
    return f"{dist} ({', '.join(params)})" if params else str(dist)


def verdict_cell(entry: MetricComparison) -> str:
    """The verdict column: the error-controlled verdict; an untested secondary's call labelled
    "untested" (older files: "unadjusted"); a row a pair cannot attribute "descriptive" or "the
    pair's"; "no valid comparison" when every pair was excluded."""
    if entry.no_comparison:
        return "no valid comparison"
    if entry.adjustment == "pair":
        return "the pair's (no ratio)"
    if entry.adjustment == "descriptive":
        return "descriptive (no verdict)"
    verdict = entry.verdict
    if verdict:
        return f"{verdict} (material)" if entry.material and verdict in ("BETTER", "WORSE") else verdict
    if entry.verdict_unadjusted and entry.adjustment in ("untested", "unadjusted"):
        word = {"WORSE": "worse", "BETTER": "better"}.get(entry.verdict_unadjusted, entry.verdict_unadjusted.lower())
        return f"{word}, {entry.adjustment}"
    return fmt.NA if entry.directional else "-"


def interval_cell(study: StudyDocument, entry: MetricComparison) -> str:
    """The interval that decided the row's verdict, with its level when it is not the report's
    (a family of k rows tested together: 1 - alpha/k) -- or "bias-bounded" when the
    arrangement's bias bound widened it (a bias-bounded interval has no probability level of its
    own: the design's interval at its level, widened by a bound at another) and "cannot size"
    when that left it too wide to size the change."""
    if entry.adjustment == "pair":
        return "-"
    if entry.unsized:
        return "cannot size (bias-bounded)"
    shown = fmt.ci_ratio(entry.ci_low, entry.ci_high)
    notes = []
    level = entry.level if entry.level is not None else study.design.confidence
    if entry.design_ci_low is not None:
        notes.append("bias-bounded")
    elif level is not None and study.design.confidence is not None and abs(level - study.design.confidence) > 1e-9:
        notes.append(fmt.percent_level(level))
    return f"{shown} ({', '.join(notes)})" if notes and shown != fmt.NA else shown


# -- sections ----------------------------------------------------------------------------------

def arrangement_text(study: StudyDocument) -> str:
    """How the blocks ran and what that arrangement is known to cost (its measured bias)."""
    design = study.design
    name = design.arrangement or ("duet" if design.duet else "one-at-a-time")
    if name == "interleaved":
        return (f"interleaved (one configuration at a time in {design.blocks} short pairs, randomized within each: "
                f"each run alone, unbiased by construction)")
    if name == "one-at-a-time":
        return "one-at-a-time (each run alone: the reference the other arrangements are measured against)"
    bias = design.bias
    if bias is None or bias.route == "none":
        host = f" ({bias.host})" if bias is not None and bias.host else ""
        return (f"{name}: its bias against one-at-a-time ratios has not been measured on this host{host} for this kind "
                f"of target: the intervals are the {name}'s own, not widened (`perflab accuracy --studies --quick` "
                f"measures a bound; docs/accuracy.md)")
    magnification = (f"changes magnified by {100 * bias.k_low:+.0f}% to {100 * bias.k_high:+.0f}%"
                     if bias.k_low or bias.k_high else "no magnification measured")
    a_low = -bias.a_max if bias.a_low is None else bias.a_low
    a_high = bias.a_max if bias.a_high is None else bias.a_high
    offset = (f", an offset of {100 * math.expm1(a_low):+.2f}% to {100 * math.expm1(a_high):+.2f}% at no change"
              if a_low or a_high else "")
    level = f", a {fmt.percent_level(bias.level)} prediction for the next study" if bias.level is not None else ""
    widened = ("; every verdict interval widened by it (bias-bounded) and each estimate de-biased by its fitted k and a"
               if bias.widened else "")
    if bias.route == "in-study":
        kind = "measured in this study's own knob blocks"
    else:
        kind = f"measured on {bias.target} targets" if bias.target else "pooled over every kind of SUT measured"
    return (f"{name}: bias against one-at-a-time ratios: {magnification}{offset} ({kind}{level}; "
            f"{bias.measured}){widened}")


def header(study: StudyDocument) -> list[tuple[str, str]]:
    status = text(study.status)
    if study.reason:
        status += f" ({study.reason})"
    rows = [("study", text(study.study_id or study.name)), ("status", status),
            ("created", text(study.created)), ("finished", text(study.finished))]
    if study.study_path:
        rows.append(("study file", text(study.study_path)))
    if study.verdict is not None and study.comparisons:
        rows.append(("answer", f"{study.verdict.meaning} (exit code {study.verdict.exit_code})"))
    return rows


def load_text(study: StudyDocument) -> str:
    """The load of the design; when the design does not state it (a comparison of stored runs),
    the load the runs themselves recorded, if they all ran at the same one."""
    load = study.design.load
    users, rate = load.users, load.rate
    if users is None and rate is None:
        seen_users = {r.users for r in study.runs} - {None}
        seen_rates = {r.rate for r in study.runs} - {None}
        users = seen_users.pop() if len(seen_users) == 1 else None
        rate = seen_rates.pop() if len(seen_rates) == 1 and users is None else None
    if users is not None:
        shown = f"{users:,} users (closed loop)"
    elif rate is not None:
        shown = f"{text(rate)} arrivals/s (open loop)"
    else:
        shown = fmt.NA
    if load.mode:
        shown += f"; {load.mode}" + (", equal utilization" if load.equal_utilization else "")
    if load.target_util is not None:
        shown += f" to {text(load.target_util)}% UTIL/PROC of the base"
    if load.bottleneck:
        shown += f" (stopped short: {load.bottleneck})"
    if load.share:
        shown += f"; {load.share}"
    return shown


def workload_fields(study: StudyDocument) -> list[tuple[str, str]]:
    workload = study.workload
    rows = [("name", text(workload.name))]
    if workload.description:
        rows.append(("description", " ".join(workload.description.split())))
    if workload.path:
        rows.append(("workload file", text(workload.path)))
    if workload.target:
        rows.append(("target", text({k: workload.target.get(k) for k in ("kind", "driver", "database")
                                     if workload.target.get(k)})))
    if workload.transactions:
        rows.append(("transactions", ", ".join(f"{t.name} ({t.tx_class or 'default'})"
                                               for t in workload.transactions)))
    if workload.scripts:
        rows.append(("scripts (mix)", "; ".join(_script_text(s) for s in workload.scripts)))
    if workload.init_script:
        rows.append(("logon script", text(workload.init_script)))
    rows.append(("think time", think_text(workload.think)))
    rows.append(("load", load_text(study)))
    timing = workload.timing or study.design.timing
    if timing:
        rows.append(("timing", ", ".join(f"{k} {seconds(v)}" for k, v in timing.items())))
    return rows


def _script_text(script) -> str:
    shown = script.name
    if script.weight is not None:
        shown += f" weight {text(script.weight)}"
    return shown + (f": {' → '.join(script.steps)}" if script.steps else "")


def calibration_table(study: StudyDocument) -> Table | None:
    steps = study.design.load.calibration
    if not steps:
        return None
    closed = any(s.users is not None for s in steps)
    # The evidence of what held the SUT below its target, where it was measured.
    evidence = [k for k in ("other_util_h", "lock_wait_pct", "checkpoint_pct")
                if any(fmt.number(getattr(s, k)) is not None for s in steps)]
    rows = []
    for i, step in enumerate(steps, 1):
        load = fmt.fixed(step.users, 0) if closed else fmt.value(step.rate, "rate")
        rows.append([str(i), load, fmt.value(step.util_proc_s, "util_proc_s"), fmt.value(step.etr_t, "etr_t")]
                    + [fmt.value(getattr(step, k), k) for k in evidence]
                    + ["valid" if step.valid else "invalid", text(step.run_id)])
    return Table(["step", "users" if closed else "rate", "UTIL/PROC (S) %", "ETR (T) tx/s"]
                 + [f"{REGISTRY.label_of(k)} %" for k in evidence] + ["run", "run id"], rows)


def ordered(keys: Iterable[str], order: tuple[str, ...]) -> list[str]:
    keys = list(dict.fromkeys(keys))
    return [k for k in order if k in keys] + sorted(k for k in keys if k not in order)


def fingerprint_value(key: str, value: Any) -> str:
    """A fingerprint value as its key's entry says to print it (perflab.records.fingerprint)."""
    form = fingerprint_keys.value_format(key)
    if form == "bytes":
        return fmt.gib(value)
    if form == "availability" and isinstance(value, Mapping):   # a probe's {available, reason}
        return "available" if value.get("available") else f"unavailable ({text(value.get('reason'))})"
    return text(value)


def fingerprint_rows(values: Mapping[str, Any], part: fingerprint_keys.Part) -> list[tuple[str, str]]:
    """A run's part of its fingerprint as (name, value) rows: the table's keys in its order, then
    any others the run recorded, by name."""
    return [(fingerprint_keys.display_name(k), fingerprint_value(k, values[k]))
            for k in ordered(values, fingerprint_keys.order(part))]


def _part(study: StudyDocument, config: str, part: str) -> dict[str, Any]:
    conf = study.configuration(config)
    return dict(getattr(conf, part)) if conf is not None else {}


def side_by_side(study: StudyDocument, configs: list[str], part: fingerprint_keys.Part) -> Table:
    """One row per field; one column when every configuration agrees, else one per configuration."""
    data = [_part(study, c, part) for c in configs]
    keys = ordered((k for d in data for k in d), fingerprint_keys.order(part))
    same = all(d == data[0] for d in data)
    columns = ["field"] + (["all configurations"] if same else list(configs))
    rows = []
    for key in keys:
        values = [fingerprint_value(key, d.get(key)) for d in data]
        rows.append([fingerprint_keys.display_name(key)] + (values[:1] if same else values))
    return Table(columns, rows)


def hardware_table(study: StudyDocument, configs: list[str]) -> tuple[Table, list[str]]:
    table = side_by_side(study, configs, "hardware")
    notes = []
    if study.design.placement:
        notes.append(f"Placement: {study.design.placement}.")
    shared = discussion.shared_cpus(study)
    notes.append("Shared: the driver's and the SUT's processors overlap, so the SUT's processors also ran the driver."
                 if shared else "Shared: nothing recorded as shared between the driver and the SUT.")
    data = [_part(study, c, "hardware") for c in configs]
    differ = [fingerprint_keys.display_name(k) for k in fingerprint_keys.identity("machine")
              if len({text(d.get(k)) for d in data}) > 1]
    if differ:
        notes.append(f"The hardware differs between the configurations ({', '.join(differ)}): the comparison "
                     f"measures the hardware too, not only the software.")
    return table, notes


def software_table(study: StudyDocument, configs: list[str]) -> Table:
    confs = [study.configuration(c) for c in configs]
    keys = ordered((k for conf in confs if conf is not None for k in conf.software), fingerprint_keys.order("software"))
    rows = [[fingerprint_keys.display_name(k)] + [text(conf.software.get(k) if conf else None) for conf in confs]
            for k in keys]
    rows.append(["what changed"] + [changes_text(conf.changes) if conf is not None and conf.changes
                                    else ("nothing (base)" if conf is not None and conf.base else "not recorded")
                                    for conf in confs])
    return Table(["field"] + list(configs), rows)


def data_table(study: StudyDocument, comparison: ComparisonRecord) -> DataTable:
    base, new = comparison.base, comparison.new
    level = fmt.number(study.design.confidence)
    interval = "CI" if level is None else f"{fmt.percent_level(level)} CI"
    pair_rows = any(e.adjustment == "pair" for e in comparison.metrics)
    columns = ["metric", "unit", base, new, "delta", "delta %", "ratio", interval, "p (adj.)", "verdict",
               LEGACY_LABEL]
    grouped: dict[str, list[list[str]]] = {}
    primary: list[list[str]] = []
    for entry in comparison.metrics:
        key = entry.key
        absolute, relative = fmt.changes(entry)
        if entry.adjustment == "pair":
            # a machine-wide row of a pair: one value for both runs, no ratio
            row = [fmt.label_of(key, entry), fmt.unit_of(key, entry) or "-",
                   fmt.value(entry.pair_value, key, entry) + " (pair)", "-", "-", "-", "-", "-", "-",
                   verdict_cell(entry), "-"]
            grouped.setdefault(discussion._group_of(entry) or "Other", []).append(row)
            continue
        row = [fmt.label_of(key, entry), fmt.unit_of(key, entry) or "-",
               fmt.value(entry.base_value, key, entry), fmt.value(entry.new_value, key, entry),
               fmt.value(absolute, key, entry, signed=True, scale=entry.base_value), fmt.pct(relative, entry=entry),
               fmt.ratio(entry.ratio, entry),
               interval_cell(study, entry),
               fmt.fixed(entry.p_adjusted, 3) if entry.p_adjusted is not None else fmt.NA, verdict_cell(entry),
               text(entry.legacy) if entry.legacy else fmt.NA]
        if entry.role == "primary":
            primary.append(row)
        else:
            grouped.setdefault(discussion._group_of(entry) or "Other", []).append(row)
    order = list(GROUPS)
    groups = sorted(grouped.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order))
    if primary:
        groups.insert(0, ("Primary (the study's verdict)", primary))
    legend = ["Suffixes: (T) driver, (H) whole machine, (S) system under test, (V) SUT component, "
              "(I) CPU counters; no suffix: the SUT's own counters.",
              "Values are geometric means over the valid runs; ratio, interval and verdict are paired by block. "
              "Each interval is the one that decided its verdict: at the report's level, or at the level shown "
              "beside it when several rows are tested together (1 - alpha/k). p (adj.): k x p. na: not measured.",
              "Secondary rows are verdicts only when every primary claim stands; otherwise their call is marked "
              "'untested' and is no claim."]
    if pair_rows:
        legend.append("(pair): a machine-wide row of a pair of runs that ran at the same time counts both, so it is "
                      "shown once for the pair, without a ratio; 'descriptive' rows (response times) depend on how the "
                      "two shared the machine and carry no verdict.")
    return DataTable(columns, groups, verdict_column=9, legend=legend)


def design_fields(study: StudyDocument, comparison: ComparisonRecord) -> list[tuple[str, str]]:
    design = study.design
    configs = (comparison.base, comparison.new)
    blocks: dict[Any, list[str]] = {}
    for block, name in design.schedule:
        if name in configs:
            blocks.setdefault(block, []).append(str(name))
    order = "; ".join(f"block {b}: {', '.join(names)}" for b, names in blocks.items())
    rows = [("blocks", text(design.blocks)), ("seed", text(design.seed)),
            ("run order", order or fmt.NA), ("arrangement", arrangement_text(study)),
            ("confidence", fmt.percent_level(design.confidence)),
            ("margin", fmt.margin(design.margin)),
            ("claims of a change, together", fmt.percent_level(design.alpha or design.family_alpha) + " error rate"
             + (" (each interval at 1 - alpha/k in a family of k rows tested together)" if design.alpha else "")
             if (design.alpha or design.family_alpha) is not None else fmt.NA),
            ("primary metrics", ", ".join(REGISTRY.label_of(k) for k in design.primary_metrics) or fmt.NA)]
    head = discussion.headline(study, comparison)
    if head is not None and head.cv is not None:
        rows.append((f"observed CV ({fmt.label_of(head.key, head)})", fmt.pct(head.cv, signed=False)))
    gates = design.gates.model_dump(exclude_none=True)
    if gates:
        rows.append(("validity gates", text(gates)))
    return rows


def runs_table(study: StudyDocument, configs: Iterable[str]) -> Table:
    runs = study.runs_of(list(configs))
    keys = [k for k in REGISTRY.role("run_columns")
            if k != "itr_h" or any(fmt.number(r.metrics.get(k)) is not None for r in runs)]
    columns = ["run id", "config", "block", "order", "status", "valid / excluded"]
    columns += [f"{fmt.label_of(k)} ({fmt.unit_of(k)})" if fmt.unit_of(k) else fmt.label_of(k) for k in keys]
    rows = []
    for run in sorted(runs, key=lambda r: (r.order is None, r.order, r.run_id)):
        rows.append([text(run.run_id), text(run.config), text(run.block), text(run.order),
                     text(run.status) + (f" ({run.reason})" if run.reason else ""),
                     _validity(run)] + [fmt.value(run.metrics.get(k), k) for k in keys])
    return Table(columns, rows)


def _validity(run: StudyRun) -> str:
    if run.excluded:
        return "excluded: " + ("; ".join(c.text for c in run.exclusions) or "no reason recorded")
    notes = "; ".join(c.text for c in run.notes)
    return "valid" + (f" ({notes})" if notes else "")


def warnings_of(study: StudyDocument, comparison: ComparisonRecord) -> list[str]:
    """Every caveat attached to this comparison: the study's, each metric's, each run's."""
    out: list[str] = [w.text for w in study.warnings]
    for entry in comparison.metrics:
        out += [f"{fmt.label_of(entry.key, entry)}: {w.text}" for w in entry.warnings]
    for run in study.runs_of([comparison.base, comparison.new]):
        out += [f"run {run.run_id}: {c.text}" for c in run.caveats]
    return list(dict.fromkeys(out))


def sweep_table(study: StudyDocument) -> Table | None:
    sweep = study.sweep
    if sweep is None or not sweep.points:
        return None
    present = {k for p in sweep.points for k, v in p.metrics.items() if fmt.number(v) is not None}
    keys = [k for k in REGISTRY.role("sweep") if k in present]
    # then the rows the study file asked for (a storage sweep's refaults, a path sweep's driver CPU)
    asked = (study.study or {}).get("metrics") or []
    keys += [k for k in asked if k in present and k not in keys]
    columns = ["config", str(sweep.factor), "valid runs"]
    columns += [f"{fmt.label_of(k)} ({fmt.unit_of(k)})" if fmt.unit_of(k) else fmt.label_of(k) for k in keys]
    rows = [[text(p.config), text(p.value), text(p.runs)] + [fmt.value(p.metrics.get(k), k) for k in keys]
            for p in sorted(sweep.points, key=lambda p: p.series or "")]
    return Table(columns, rows)


def trend_keys(study: StudyDocument) -> tuple[str, str]:
    """The rows a release trend follows: the capacity the study answers with, and response time."""
    capacity = (list(study.design.primary_metrics) or list(REGISTRY.role("capacity")))[0]
    return capacity, REGISTRY.role("response")[0]


def trend_table(study: StudyDocument) -> Table | None:
    """The seeds' regression table across releases: several configurations, each against the
    same base, one row each -- capacity and response time, each with its ratio, interval and
    verdict. None unless the study compares two or more configurations with one base."""
    comparisons = study.comparisons
    if len(comparisons) < 2 or len({c.base for c in comparisons}) != 1:
        return None
    keys = trend_keys(study)
    level = fmt.number(study.design.confidence)
    interval = "CI" if level is None else f"{fmt.percent_level(level)} CI"
    columns = ["configuration", "SUT version"]
    for key in keys:
        unit = fmt.unit_of(key)
        columns += [f"{fmt.label_of(key)} ({unit})" if unit else fmt.label_of(key), "ratio", interval, "verdict"]

    def version(name: str) -> str:
        conf = study.configuration(name)
        return text(conf.software.get("sut_version")) if conf is not None else fmt.NA

    base = comparisons[0].base
    row = [base, version(base)]
    for key in keys:
        entry = comparisons[0].entry(key)
        row += [fmt.value(entry.base_value if entry else None, key, entry), "1 (base)", "", ""]
    rows = [row]
    for comparison in comparisons:
        row = [comparison.new, version(comparison.new)]
        for key in keys:
            entry = comparison.entry(key)
            if entry is None:
                row += [fmt.NA] * 4
                continue
            row += [fmt.value(entry.new_value, key, entry), fmt.ratio(entry.ratio, entry) if entry.ratio is not None
                    else fmt.NA, fmt.ci_ratio(entry.ci_low, entry.ci_high), verdict_cell(entry)]
        rows.append(row)
    return Table(columns, rows)


def noise_table(study: StudyDocument) -> Table | None:
    """Where the primary metrics' noise comes from (perflab.study.noise_report)."""
    if not study.noise:
        return None
    rows = [[REGISTRY.label_of(n.key), n.config, text(n.runs), fmt.pct(n.cv_between, signed=False, decimals=2),
             fmt.pct(n.cv_within, signed=False, decimals=2), fmt.pct(n.cv_paired, signed=False, decimals=2),
             text(n.blocks_needed)] for n in study.noise]
    return Table(["metric", "config", "valid runs", "CV between runs", "CV within runs (of the mean)",
                  "CV paired (the comparison's)", f"blocks for {fmt.margin(study.design.margin)} (paired)"], rows)


# -- the whole study ------------------------------------------------------------------------

def comparison_view(study: StudyDocument, comparison: ComparisonRecord, index: int) -> ComparisonView:
    base, new = comparison.base, comparison.new
    configs = [base, new]
    hardware, notes = hardware_table(study, configs)
    return ComparisonView(
        index=index, suffix="" if index == 0 else f"-{index + 1}", base=base, new=new, title=f"{base} → {new}",
        workload=workload_fields(study), calibration=calibration_table(study),
        hardware=hardware, hardware_notes=notes, software=software_table(study, configs),
        discussion=discussion.paragraphs(discussion.discuss(study, comparison)),
        data=data_table(study, comparison), design=design_fields(study, comparison),
        runs=runs_table(study, configs), warnings=warnings_of(study, comparison),
        pathlength=pathlength_diff.view(study, comparison, "" if index == 0 else f"-{index + 1}"),
        profile=pathlength_diff.profile_view(study, comparison),
    )


def study_view(study: StudyDocument) -> StudyView:
    observations = []
    for comparison in study.comparisons:
        obs = discussion.observation(study, comparison)
        observations.append(Observation(obs["title"], " ".join(x["text"] for x in obs["sentences"]),
                                        list(obs["caveats"])))
    comparisons = study.comparisons
    return StudyView(
        title=study.title or study.name or "perflab study",
        header=header(study), observations=observations, notes=discussion.study_notes(study),
        comparisons=[comparison_view(study, c, i) for i, c in enumerate(comparisons)],
        sweep=sweep_table(study),
        workload=workload_fields(study) if not comparisons else [],
        runs=all_runs_table(study) if not comparisons and study.runs else None,
        noise=noise_table(study),
        capacity=capacity_view(study),
        trend=trend_table(study),
    )


def all_runs_table(study: StudyDocument) -> Table:
    """Every run of the study (a sweep has no comparisons to list them under)."""
    return runs_table(study, {r.config for r in study.runs})

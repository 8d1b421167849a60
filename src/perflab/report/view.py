"""The report's content as plain strings and tables, built once from a study dict.

The Markdown and the HTML exporters render this same view, so the two formats cannot drift
apart: a number is formatted here (through `numbers`) or nowhere. Everything is read from the
study dict documented in docs/architecture.md ("Studies: the study directory and study.json");
missing fields read as `na` or are left out, never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from perflab.reduce.registry import GROUPS
from perflab.report import discussion
from perflab.report import numbers as fmt

#: The legacy continuity column of statistics-and-capacity.md §5.5 (same text as
#: perflab.stats.verdict.LEGACY_LABEL; repeated so rendering does not import scipy).
LEGACY_LABEL = "IBM ±3 % on point estimate"
#: Section ids of one comparison, in the seeds' order (vmesa-methodology.md §4.2), plus the
#: run list that closes section 5. The HTML uses them as element ids.
SECTIONS = (("workload", "1. Workload"), ("hardware", "2. Hardware configuration"),
            ("software", "3. Software configuration"), ("discussion", "4. Measurement discussion"),
            ("data", "5. Measurement data"))
#: Per-run columns (the brief's set); ITR (H) joins when any run measured it.
RUN_METRICS = ("etr_t", "itr_s", "itr_h", "util_proc_s", "avg_last_t")
#: Fingerprint fields first in this order, then any others the machine recorded.
HARDWARE_ORDER = ("cpu_model", "cores", "online_cpus", "processors", "memory_bytes", "memory_limit_bytes",
                  "real_storage_bytes", "kernel", "kernel_version", "arch", "os", "virtualized", "cgroup_version",
                  "perf_counters", "placement", "hostname", "boot_id")
HARDWARE_NAMES = {"cpu_model": "CPU model", "cores": "cores online", "online_cpus": "online CPUs",
                  "processors": "processors given to the SUT", "memory_bytes": "memory",
                  "memory_limit_bytes": "memory limit", "real_storage_bytes": "real storage (SUT)",
                  "os": "OS", "perf_counters": "CPU counters (I)", "cgroup_version": "cgroup version"}
#: The fields that identify a machine (as `perflab compare` checks them); other fingerprint
#: fields (a database path, a boot id) may differ between runs of the same machine.
MACHINE_IDENTITY = ("cpu_model", "cores", "memory_bytes", "kernel", "arch", "processors")
SOFTWARE_ORDER = ("sut_version", "adapter", "sqlite_driver", "driver", "python", "perflab")
SOFTWARE_NAMES = {"sut_version": "SUT version", "adapter": "adapter", "sqlite_driver": "SQLite driver"}
SWEEP_METRICS = ("etr_t", "itr_s", "itr_h", "util_proc_s", "util_proc_h", "avg_last_t", "resp_p90_t", "pbt_cmd_s")


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


def seconds(value: Any) -> str:
    x = fmt.number(value)
    return fmt.NA if x is None else f"{x:g} s"


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
        shown = f"{value:g} s" if isinstance(value, (int, float)) and not isinstance(value, bool) else text(value)
        params.append(f"{key} {shown}")
    return f"{dist} ({', '.join(params)})" if params else str(dist)


def verdict_cell(entry: Mapping[str, Any]) -> str:
    verdict = entry.get("verdict")
    if verdict:
        return f"{verdict} (material)" if entry.get("material") and verdict in ("BETTER", "WORSE") else str(verdict)
    direction = discussion._direction(entry)
    return fmt.NA if direction in ("higher", "lower") else "-"


# -- sections ----------------------------------------------------------------------------------

def header(study: Mapping[str, Any]) -> list[tuple[str, str]]:
    status = text(study.get("status"))
    if study.get("reason"):
        status += f" ({study['reason']})"
    rows = [("study", text(study.get("study_id") or study.get("name"))), ("status", status),
            ("created", text(study.get("created"))), ("finished", text(study.get("finished")))]
    if study.get("study_path"):
        rows.append(("study file", text(study["study_path"])))
    return rows


def load_text(load: Mapping[str, Any], runs: Iterable[Mapping[str, Any]] = ()) -> str:
    """The load of the design; when the design does not state it (a comparison of stored runs),
    the load the runs themselves recorded, if they all ran at the same one."""
    load = dict(load)
    for key in ("users", "rate"):
        seen = {r.get(key) for r in runs} - {None}
        if load.get(key) is None and len(seen) == 1:
            load[key] = seen.pop()
    if load.get("users") is not None:
        shown = f"{load['users']} users (closed loop)"
    elif load.get("rate") is not None:
        shown = f"{text(load['rate'])} arrivals/s (open loop)"
    else:
        shown = fmt.NA
    if load.get("mode"):
        shown += f"; {load['mode']}"
    if load.get("target_util") is not None:
        shown += f" to {text(load['target_util'])}% UTIL/PROC of the base"
    return shown


def workload_fields(study: Mapping[str, Any]) -> list[tuple[str, str]]:
    workload = study.get("workload") or {}
    design = study.get("design") or {}
    rows = [("name", text(workload.get("name")))]
    if workload.get("description"):
        rows.append(("description", " ".join(str(workload["description"]).split())))
    if workload.get("path"):
        rows.append(("workload file", text(workload["path"])))
    target = workload.get("target")
    if isinstance(target, Mapping):
        rows.append(("target", text({k: target.get(k) for k in ("kind", "driver", "database") if target.get(k)})))
    transactions = workload.get("transactions") or []
    if transactions:
        rows.append(("transactions", ", ".join(
            f"{t.get('name')} ({t.get('class') or 'default'})" for t in transactions)))
    scripts = workload.get("scripts") or []
    if scripts:
        rows.append(("scripts (mix)", "; ".join(_script_text(s) for s in scripts)))
    if workload.get("init_script"):
        rows.append(("logon script", text(workload["init_script"])))
    rows.append(("think time", think_text(workload.get("think"))))
    rows.append(("load", load_text(design.get("load") or {}, study.get("runs") or [])))
    timing = workload.get("timing") or design.get("timing") or {}
    if timing:
        rows.append(("timing", ", ".join(f"{k} {seconds(v)}" for k, v in timing.items())))
    return rows


def _script_text(script: Mapping[str, Any]) -> str:
    steps = []
    for step in script.get("steps") or []:
        steps.append(step.get("transaction") if isinstance(step, Mapping) else str(step))
    weight = script.get("weight")
    shown = f"{script.get('name')}"
    if weight is not None:
        shown += f" weight {text(weight)}"
    return shown + (f": {' → '.join(steps)}" if steps else "")


def calibration_table(study: Mapping[str, Any]) -> Table | None:
    steps = ((study.get("design") or {}).get("load") or {}).get("calibration") or []
    if not steps:
        return None
    closed = any(s.get("users") is not None for s in steps)
    rows = []
    for i, step in enumerate(steps, 1):
        rows.append([str(i), text(step.get("users") if closed else step.get("rate")),
                     fmt.value(step.get("util_proc_s", step.get("util")), "util_proc_s"),
                     fmt.value(step.get("etr_t"), "etr_t"),
                     "valid" if step.get("valid", True) else "invalid", text(step.get("run_id"))])
    return Table(["step", "users" if closed else "rate", "UTIL/PROC (S) %", "ETR (T) tx/s", "run", "run id"], rows)


def _config(study: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    return next((c for c in study.get("configurations") or [] if c.get("name") == name), {})


def _ordered(keys: Iterable[str], order: tuple[str, ...]) -> list[str]:
    keys = list(dict.fromkeys(keys))
    return [k for k in order if k in keys] + sorted(k for k in keys if k not in order)


def _hardware_value(key: str, value: Any) -> str:
    if key.endswith("_bytes"):
        return fmt.gib(value)
    if isinstance(value, Mapping) and "available" in value:  # perf_counters: {available, reason}
        return "available" if value.get("available") else f"unavailable ({text(value.get('reason'))})"
    return text(value)


def side_by_side(study: Mapping[str, Any], configs: list[str], part: str, order: tuple[str, ...],
                 names: Mapping[str, str], render) -> Table:
    """One row per field; one column when every configuration agrees, else one per configuration."""
    data = [dict(_config(study, c).get(part) or {}) for c in configs]
    keys = _ordered((k for d in data for k in d), order)
    same = all(d == data[0] for d in data)
    columns = ["field"] + (["all configurations"] if same else list(configs))
    rows = []
    for key in keys:
        values = [render(key, d.get(key)) for d in data]
        rows.append([names.get(key, key.replace("_", " "))] + (values[:1] if same else values))
    return Table(columns, rows)


def hardware_table(study: Mapping[str, Any], configs: list[str]) -> tuple[Table, list[str]]:
    table = side_by_side(study, configs, "hardware", HARDWARE_ORDER, HARDWARE_NAMES, _hardware_value)
    notes = []
    placement = (study.get("design") or {}).get("placement")
    if placement:
        notes.append(f"Placement: {placement}.")
    shared = discussion.shared_cpus(study, configs)
    notes.append("Shared: the driver's and the SUT's processors overlap, so the SUT's processors also ran the driver."
                 if shared else "Shared: nothing recorded as shared between the driver and the SUT.")
    data = [_config(study, c).get("hardware") or {} for c in configs]
    differ = [HARDWARE_NAMES.get(k, k) for k in MACHINE_IDENTITY if len({text(d.get(k)) for d in data}) > 1]
    if differ:
        notes.append(f"The hardware differs between the configurations ({', '.join(differ)}): the comparison "
                     f"measures the hardware too, not only the software.")
    return table, notes


def software_table(study: Mapping[str, Any], configs: list[str]) -> Table:
    data = [_config(study, c) for c in configs]
    keys = _ordered((k for d in data for k in (d.get("software") or {})), SOFTWARE_ORDER)
    rows = [[SOFTWARE_NAMES.get(k, k.replace("_", " "))] + [text((d.get("software") or {}).get(k)) for d in data]
            for k in keys]
    rows.append(["what changed"] + [text(d["changes"]) if d.get("changes")
                                    else ("nothing (base)" if d.get("base") else "not recorded") for d in data])
    return Table(["field"] + list(configs), rows)


def data_table(study: Mapping[str, Any], comparison: Mapping[str, Any]) -> DataTable:
    base, new = str(comparison.get("base")), str(comparison.get("new"))
    level = fmt.number((study.get("design") or {}).get("confidence"))
    interval = "CI" if level is None else f"{fmt.percent_level(level)} CI"
    columns = ["metric", "unit", base, new, "delta", "delta %", "ratio", interval, "verdict", LEGACY_LABEL]
    grouped: dict[str, list[list[str]]] = {}
    for entry in comparison.get("metrics") or []:
        key = entry.get("key")
        absolute, relative = fmt.changes(entry)
        row = [fmt.label_of(key, entry), fmt.unit_of(key, entry) or "-",
               fmt.value(entry.get("base_value"), key, entry), fmt.value(entry.get("new_value"), key, entry),
               fmt.value(absolute, key, entry, signed=True), fmt.pct(relative), fmt.ratio(entry.get("ratio")),
               fmt.ci_ratio(entry.get("ci_low"), entry.get("ci_high")), verdict_cell(entry),
               text(entry.get("legacy")) if entry.get("legacy") else fmt.NA]
        grouped.setdefault(discussion._group_of(entry) or "Other", []).append(row)
    order = list(GROUPS)
    groups = sorted(grouped.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order))
    legend = ["Suffixes: (T) driver, (H) whole machine, (S) system under test, (V) SUT component, "
              "(I) CPU counters; no suffix: the SUT's own counters.",
              "Values are geometric means over the valid runs; ratio, interval and verdict are paired by block. "
              "na: not measured."]
    return DataTable(columns, groups, verdict_column=8, legend=legend)


def design_fields(study: Mapping[str, Any], comparison: Mapping[str, Any]) -> list[tuple[str, str]]:
    design = study.get("design") or {}
    configs = (comparison.get("base"), comparison.get("new"))
    schedule = [s for s in design.get("schedule") or [] if len(s) >= 2 and s[1] in configs]
    blocks: dict[Any, list[str]] = {}
    for block, name in (tuple(s[:2]) for s in schedule):
        blocks.setdefault(block, []).append(str(name))
    order = "; ".join(f"block {b}: {', '.join(names)}" for b, names in blocks.items())
    rows = [("blocks", text(design.get("blocks"))), ("seed", text(design.get("seed"))),
            ("run order", order or fmt.NA), ("confidence", fmt.percent_level(design.get("confidence"))),
            ("margin", fmt.margin(design.get("margin")))]
    headline = discussion._entry(comparison, discussion.HEADLINE)
    if headline is not None:
        rows.append((f"observed CV ({fmt.label_of(headline.get('key'), headline)})",
                     fmt.pct(headline.get("cv"), signed=False)))
    gates = design.get("gates") or {}
    if gates:
        rows.append(("validity gates", text(gates)))
    return rows


def runs_table(study: Mapping[str, Any], configs: Iterable[str]) -> Table:
    runs = discussion.runs_of(study, configs)
    keys = [k for k in RUN_METRICS
            if k != "itr_h" or any(fmt.number((r.get("metrics") or {}).get(k)) is not None for r in runs)]
    columns = ["run id", "config", "block", "order", "status", "valid / excluded"]
    columns += [f"{fmt.label_of(k)} ({fmt.unit_of(k)})" if fmt.unit_of(k) else fmt.label_of(k) for k in keys]
    rows = []
    for run in sorted(runs, key=lambda r: (r.get("order") is None, r.get("order"), str(r.get("run_id")))):
        metrics = run.get("metrics") or {}
        rows.append([text(run.get("run_id")), text(run.get("config")), text(run.get("block")), text(run.get("order")),
                     text(run.get("status")) + (f" ({run['reason']})" if run.get("reason") else ""),
                     _validity(run)] + [fmt.value(metrics.get(k), k) for k in keys])
    return Table(columns, rows)


def _validity(run: Mapping[str, Any]) -> str:
    reasons = run.get("exclusion_reasons") or run.get("invalid_reasons") or []
    if discussion.is_excluded(run):
        return "excluded: " + ("; ".join(str(r) for r in reasons) or "no reason recorded")
    return "valid"


def warnings_of(study: Mapping[str, Any], comparison: Mapping[str, Any]) -> list[str]:
    """Every caveat attached to this comparison: the study's, each metric's, each run's."""
    out: list[str] = [str(w) for w in study.get("warnings") or []]
    for entry in comparison.get("metrics") or []:
        out += [f"{fmt.label_of(entry.get('key'), entry)}: {w}" for w in entry.get("warnings") or []]
    for run in discussion.runs_of(study, (comparison.get("base"), comparison.get("new"))):
        out += [f"run {run.get('run_id')}: {w}" for w in run.get("warnings") or []]
    return list(dict.fromkeys(out))


def sweep_table(study: Mapping[str, Any]) -> Table | None:
    sweep = study.get("sweep")
    if not sweep or not sweep.get("points"):
        return None
    points = sweep["points"]
    present = {k for p in points for k, v in (p.get("metrics") or {}).items() if fmt.number(v) is not None}
    keys = [k for k in SWEEP_METRICS if k in present]
    columns = ["config", str(sweep.get("factor"))]
    if any("runs" in p for p in points):
        columns.append("valid runs")
    columns += [f"{fmt.label_of(k)} ({fmt.unit_of(k)})" if fmt.unit_of(k) else fmt.label_of(k) for k in keys]
    rows = []
    for p in points:
        row = [text(p.get("config")), text(p.get("value"))]
        if "valid runs" in columns:
            row.append(text(p.get("runs")))
        rows.append(row + [fmt.value((p.get("metrics") or {}).get(k), k) for k in keys])
    return Table(columns, rows)


# -- the whole study ------------------------------------------------------------------------

def comparison_view(study: Mapping[str, Any], comparison: Mapping[str, Any], index: int) -> ComparisonView:
    base, new = str(comparison.get("base")), str(comparison.get("new"))
    configs = [base, new]
    hardware, notes = hardware_table(study, configs)
    return ComparisonView(
        index=index, suffix="" if index == 0 else f"-{index + 1}", base=base, new=new, title=f"{base} → {new}",
        workload=workload_fields(study), calibration=calibration_table(study),
        hardware=hardware, hardware_notes=notes, software=software_table(study, configs),
        discussion=discussion.paragraphs(discussion.discuss(study, comparison)),
        data=data_table(study, comparison), design=design_fields(study, comparison),
        runs=runs_table(study, configs), warnings=warnings_of(study, comparison),
    )


def study_view(study: Mapping[str, Any]) -> StudyView:
    comparisons = study.get("comparisons") or []
    observations = []
    for comparison in comparisons:
        obs = discussion.observation(study, comparison)
        observations.append(Observation(obs["title"], " ".join(x["text"] for x in obs["sentences"]),
                                        list(obs["caveats"])))
    return StudyView(
        title=str(study.get("title") or study.get("name") or "perflab study"),
        header=header(study), observations=observations, notes=discussion.study_notes(study),
        comparisons=[comparison_view(study, c, i) for i, c in enumerate(comparisons)],
        sweep=sweep_table(study),
        workload=workload_fields(study) if not comparisons else [],
        runs=all_runs_table(study) if not comparisons and study.get("runs") else None,
    )


def all_runs_table(study: Mapping[str, Any]) -> Table:
    """Every run of the study (a sweep has no comparisons to list them under)."""
    return runs_table(study, {r.get("config") for r in study.get("runs") or []})

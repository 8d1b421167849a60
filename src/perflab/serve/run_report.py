"""The report of one run: `perflab show RUN --html` and the run page of `perflab serve`.

Built once from the run directory (run.json + the reduction, perflab.reduce.reduce_run) into a
`RunReport` of plain strings and tables, which the HTML, Markdown and JSON renderings all read,
so they cannot disagree. Numbers are printed by perflab.report.numbers (the registry's
decimals, `na` when not measured); the charts are drawn with perflab.report.charts' style and
inlined as SVG, so the HTML opens from disk with nothing fetched.

Contents, in the seeds' order: the run (header, and why it is invalid when it is), its gates
(the study's validity gates applied to this run: perflab.study.validity), its thresholds (the
workload's absolute limits: perflab.catalog.thresholds), the measurement data in the seeds' row
groups, the transaction classes, the errors, per-interval charts (ETR (T), response time
percentiles, utilization), then the workload, the configuration and the fingerprint.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
import matplotlib
import numpy as np
from markupsafe import Markup
from matplotlib.figure import Figure

from perflab.catalog.metric import Origin
from perflab.catalog.registry import GROUPS, REGISTRY
from perflab.catalog.thresholds import ThresholdResult, evaluate
from perflab.caveats import Caveat
from perflab.errors import InputError
from perflab.records.run import RunRecord, read_run_record
from perflab.records.study import Design, LoadRecord, StudyDocument, StudyRun, read_study_document
from perflab.reduce.reduce import RunMetrics, reduce_run
from perflab.reduce.transactions import read_window_transactions
from perflab.reduce.window import Window
from perflab.report import charts as ch
from perflab.report import numbers as fmt
from perflab.report import view as v
from perflab.report.html import is_number
from perflab.stats.quantiles import nearest_rank
from perflab.sut.fingerprint import split_fingerprint

#: The seeds' groups, then perflab's raw window totals (as `perflab show` orders them).
SHOWN_GROUPS = tuple(g for g in GROUPS if g not in ("Measurement", "Servers")) + ("Measurement",)
CLASS_KEYS = ("tx_ok", "errors_t", "etr_t", "avg_first_t", "avg_last_t", "resp_p50_t", "resp_p90_t", "resp_p95_t",
              "resp_p99_t", "avg_think_t")
SUMMARY_KEYS = ("etr_t", "avg_last_t", "resp_p90_t", "util_proc_s", "itr_s", "pbt_cmd_s", "itr_h", "driver_cpu",
                "errors_t")
#: Response time percentiles drawn per interval (reduction stores the mean and P90 per interval).
INTERVAL_PERCENTILES = (50, 90, 99)
#: Distinct error messages listed (the most frequent first), and the characters kept of each.
ERROR_ROWS = 20
ERROR_CHARS = 300


@dataclass
class Gate:
    name: str
    measured: str
    limit: str
    result: str          # "pass", "FAIL", "na" (not measured), "-" (does not apply)


@dataclass
class ThresholdRow:
    """One threshold as the report shows it: the expression, the value measured, the result."""

    expression: str
    measured: str
    result: str          # "pass" or "FAIL"
    why: str             # "" when met; "not measured", or the comparison that does not hold


@dataclass
class RunReport:
    run_id: str
    title: str
    status: str
    header: list[tuple[str, str]]
    summary: list[tuple[str, str]]
    gates: list[Gate]
    gate_verdict: str
    gate_source: str
    counted: bool
    exclusions: list[Caveat]            # why a study excludes (or would exclude) the run
    invalid: list[Caveat]               # the run record's own reasons (run.json `invalid`)
    thresholds: list[ThresholdRow]
    data: v.DataTable | None
    classes: v.Table | None
    components: v.Table | None
    drivers: v.Table | None
    little: str
    errors: v.Table | None
    charts: list[ch.Chart]
    workload: list[tuple[str, str]]
    config: list[tuple[str, str]]
    hardware: list[tuple[str, str]]
    software: list[tuple[str, str]]
    warnings: list[str]
    problem: str | None = None
    study: str | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    interval_percentiles: list[dict[str, float | None]] = field(default_factory=list)
    record: RunRecord | None = None

    @property
    def thresholds_violated(self) -> int:
        return sum(1 for t in self.thresholds if t.result != "pass")


# -- building --------------------------------------------------------------------------------

def read_record(run_dir: Path) -> RunRecord:
    """The run's run.json as a RunRecord (InputError naming the file when it is not one)."""
    return read_run_record(Path(run_dir) / "run.json")


def build_report(run_dir: Path, study: StudyDocument | None = None, charts: bool = True) -> RunReport:
    """The report of a stored run. `study`: the study the run belongs to, if any (its gates and
    its decision about this run). A run without a usable reduction (still running, abandoned,
    damaged) gets a report of what run.json says, with the reason."""
    run_dir = Path(run_dir)
    record = read_record(run_dir)
    metrics: RunMetrics | None = None
    problem = None
    try:
        metrics = reduce_run(run_dir)
    except InputError as exc:
        problem = f"no measurements to report: {exc}"
    values = metrics.values if metrics else {}
    percentiles = interval_percentiles(run_dir, metrics) if metrics else []
    judged = judge(record, metrics, study)
    return RunReport(
        run_id=record.run_id, title=f"Run {record.run_id}: {record.workload_name}", status=record.status,
        header=header(record, metrics),
        summary=[(fmt.label_of(k), fmt.quantity(values.get(k), k)) for k in SUMMARY_KEYS],
        gates=judged.gates, gate_verdict=judged.verdict, gate_source=judged.source, counted=judged.counted,
        exclusions=judged.exclusions, invalid=list(record.invalid), thresholds=threshold_rows(record, values),
        data=data_table(metrics) if metrics else None, classes=class_table(metrics) if metrics else None,
        components=component_table(metrics) if metrics else None, drivers=_drivers(record),
        little=little_text(values) if metrics else "",
        errors=error_table(run_dir, metrics.window if metrics else None),
        charts=build_charts(metrics, percentiles) if metrics and charts else [],
        workload=workload_rows(record), config=config_rows(record), hardware=hardware_rows(record),
        software=software_rows(record), warnings=list(metrics.warnings) if metrics else [], problem=problem,
        study=record.study, metrics=metrics.to_json() if metrics else {}, interval_percentiles=percentiles,
        record=record,
    )


def _drivers(record: RunRecord) -> v.Table | None:
    """The per-driver table of a Ray run (perflab.report.run_view, as `perflab show` prints it)."""
    from perflab.report.run_view import drivers_table

    table = drivers_table(record)
    return None if table is None else v.Table(table.columns, table.rows)


def header(record: RunRecord, metrics: RunMetrics | None) -> list[tuple[str, str]]:
    status = v.text(record.status)
    if record.reason:
        status += f" ({record.reason})"
    valid = "unknown" if record.valid is None else ("yes" if record.valid else "no")
    if record.invalid:
        valid += ": " + "; ".join(c.text for c in record.invalid)
    rows = [("run", v.text(record.run_id)), ("workload", v.text(record.workload_name)), ("status", status),
            ("valid", valid)]
    if record.label:
        rows.append(("label", v.text(record.label)))
    if record.study:
        rows.append(("study", v.text(record.study)))
    rows.append(("load", _load(record)))
    rows += [("created", v.text(record.created)), ("finished", v.text(record.finished))]
    if metrics is not None:
        w = metrics.window
        rows.append(("measurement window", f"{w.start:g} s to {w.end:g} s after t0 ({w.duration:g} s)"))
    return rows


def _load(record: RunRecord) -> str:
    if record.config.users is not None:
        return f"{record.config.users:,} users (closed loop)"
    if record.config.rate is not None:
        return f"{v.text(record.config.rate)} arrivals/s (open loop)"
    return fmt.NA


def data_table(metrics: RunMetrics) -> v.DataTable:
    """Every metric perflab measures, in the seeds' row groups, with the registry's decimals."""
    groups = []
    for group in SHOWN_GROUPS:
        rows = []
        for metric in REGISTRY.in_group(group, Origin.PERFLAB):
            if metric.per_component:
                continue
            if metric.text:
                shown = v.text(metrics.attributes.get(metric.key))
            else:
                shown = fmt.value(metrics.values.get(metric.key), metric.key)
            rows.append([metric.label, shown, metric.unit or "-", metric.key])
        if rows:
            groups.append((group, rows))
    legend = ["Suffixes: (T) driver, (H) whole machine, (S) system under test, (V) SUT component, "
              "(I) CPU counters; no suffix: the SUT's own counters. na: not measured on this machine or run.",
              "Measurement: the raw window totals every other row is derived from (the registry's formulas)."]
    return v.DataTable(["metric", "value", "unit", "key"], groups, verdict_column=-1, legend=legend)


def class_table(metrics: RunMetrics) -> v.Table | None:
    if not metrics.per_class:
        return None
    columns = ["class"] + [_heading(k) for k in CLASS_KEYS]
    rows = [[str(name)] + [fmt.value((row or {}).get(k), k) for k in CLASS_KEYS]
            for name, row in sorted(metrics.per_class.items())]
    return v.Table(columns, rows)


def component_table(metrics: RunMetrics) -> v.Table | None:
    if not metrics.per_component:
        return None
    keys = [k for k in REGISTRY.perflab_keys(per_component=True) if REGISTRY[k].group == "Servers"]
    rows = [[str(name)] + [fmt.value((row or {}).get(k), k) for k in keys]
            for name, row in sorted(metrics.per_component.items())]
    return v.Table(["component"] + [_heading(k) for k in keys], rows)


def _heading(key: str) -> str:
    unit = fmt.unit_of(key)
    return f"{fmt.label_of(key)} ({unit})" if unit else fmt.label_of(key)


def little_text(values: Mapping[str, Any]) -> str:
    """Little's law as a check of the closed loop: USERS / (think + response) against ETR (T)."""
    if values.get("users") is None:
        return "Little's law: open loop (no USERS), not applicable."
    predicted, deviation = values.get("little_etr_t"), values.get("little_dev")
    if predicted is None or values.get("etr_t") is None:
        return "Little's law: na (think or response time not measured)."
    return (f"Little's law: USERS / (AVG THINK (T) + AVG LAST (T)) = {fmt.quantity(predicted, 'little_etr_t')} "
            f"against ETR (T) {fmt.quantity(values.get('etr_t'), 'etr_t')}: "
            f"{fmt.fixed(deviation, 1, signed=True)}% (a steady closed loop agrees within a few percent).")


@dataclass
class Judgement:
    """The gates as rows, and the decision: the study's stored one for a run of a study, else
    what the one exclusion rule (perflab.study.validity.judge_run) says of the run alone."""

    gates: list[Gate]
    verdict: str
    source: str
    counted: bool
    exclusions: list[Caveat]


def judge(record: RunRecord, metrics: RunMetrics | None, study: StudyDocument | None) -> Judgement:
    """The gates as perflab.study.validity returns them (typed results, rendered here, never
    restated), and the decision: a study's run is judged as its study judged it -- its stored
    decision, the study's gates, its primary metrics, its partner in a pair, the study's pooled
    noise -- so the page and the study cannot disagree; any other run by the default gates."""
    from perflab import caveats as cav
    from perflab.study.document import StudyJudge, gate_settings
    from perflab.study.validity import STEADY_CODES, GateSettings, judge_run

    entry = _study_entry(study, record.run_id)
    values = metrics.values if metrics else {}
    if entry is not None and study is not None:
        settings = gate_settings(study.design)
        primary = study.design.primary_metrics or None
        is_base = any(c.base and c.name == entry.config for c in study.configurations) and not study.design.duet
        if metrics is not None:
            judge_ = StudyJudge(study, settings, primary or ["itr_s"], study.design.duet)
            partner = judge_.partners.get(entry.run_id)
            results = judge_run(record, values, metrics.per_interval, settings, is_base,
                                partner.per_interval if partner is not None else None, primary, judge_.scales(entry))
        else:
            results = None
        # a pair's exclusions (the two drivers together, the pair's utilization) are the study's own
        stored = [c for c in entry.exclusions if c.code not in STEADY_CODES]
        rows = gate_rows(results) + [Gate("the pair's gates", c.text, "", "FAIL") for c in stored
                                     if results is None or c not in results.exclusions]
        exclusions = list(entry.exclusions)
        verdict = ("excluded by the study: " + "; ".join(c.text for c in exclusions)) if exclusions else \
            "counted in the study's verdicts"
        return Judgement(rows, verdict, f"the gates of study {study.study_id}, as it applied them", not exclusions,
                         exclusions)
    if metrics is None:
        exclusions = [cav.run_not_complete(record.status, "no measurements")]
        return Judgement([Gate("completed", record.status, "complete", "FAIL")], "a study would exclude it: "
                         + exclusions[0].text, "the default study gates (docs/studies.md)", False, exclusions)
    results = judge_run(record, values, metrics.per_interval, GateSettings(), False)
    exclusions = results.exclusions
    verdict = ("a study would exclude it: " + "; ".join(c.text for c in exclusions)) if exclusions else \
        "valid: a study would count it"
    return Judgement(gate_rows(results), verdict, "the default study gates (docs/studies.md)", not exclusions,
                     exclusions)


_OUTCOME = {"pass": "pass", "fail": "FAIL", "note": "note", "not judged": "na"}


def gate_rows(results: Any) -> list[Gate]:
    """Each gate's typed result (perflab.study.validity.GateResult) as a row: what it measured,
    its limit, its outcome, and for a failure or a note the caveat's sentence."""
    if results is None:
        return []
    rows = []
    for g in results.gates:
        measured = _gate_value(g.measured, g.unit)
        if g.caveat is not None and g.outcome != "pass":
            measured = g.caveat.text if measured == "na" else f"{measured}: {g.caveat.text}"
        rows.append(Gate(g.gate, measured, g.bound or _gate_value(g.limit, g.unit), _OUTCOME.get(g.outcome, g.outcome)))
    return rows


def _gate_value(value: float | None, unit: str) -> str:
    if value is None:
        return "na"
    if unit in ("share", "relative change", "share behind"):
        return f"{100 * value:+.1f}%" if unit == "relative change" else f"{100 * value:.2f}%"
    if unit.startswith("%"):
        return f"{value:.1f}{unit}"
    return f"{value:g} {unit}".strip()


def _study_entry(study: StudyDocument | None, run_id: str) -> StudyRun | None:
    return next((r for r in study.runs if r.run_id == run_id), None) if study is not None else None


def threshold_rows(record: RunRecord, values: dict[str, Any]) -> list[ThresholdRow]:
    """The workload's thresholds (those of `perflab run --threshold` included: they are stored
    with the run's workload) against the run's values; none measured when there are none."""
    declared = record.workload.get("thresholds") or []
    try:
        results: list[ThresholdResult] = evaluate(declared, values)
    except ValueError as exc:      # a run.json written by hand, or by a perflab with other keys
        return [ThresholdRow(v.text(declared), "na", "FAIL", f"cannot be evaluated: {exc}")]
    return [ThresholdRow(r.threshold.expression, fmt.quantity(r.value, r.threshold.key), "pass" if r.passed else "FAIL",
                         r.why) for r in results]


def error_table(run_dir: Path, window: Window | None) -> v.Table | None:
    """The error messages of failed transactions, most frequent first (the whole run, not only
    the window: an error during stabilization is worth seeing too)."""
    path = Path(run_dir) / "transactions.parquet"
    if not path.exists():
        return None
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path, columns=["ok", "error", "end", "transaction"])
    except Exception:  # pyarrow raises several types for a damaged file; the reduction reports it
        return None
    failed = table.filter(pc.invert(pc.fill_null(table.column("ok"), False)))
    if failed.num_rows == 0:
        return v.Table(["message", "transaction", "count", "in window"], [])
    ends = failed.column("end").to_numpy(zero_copy_only=False)
    inside = window.contains(ends) if window is not None else np.zeros(len(ends), bool)
    counts: Counter = Counter()
    in_window: Counter = Counter()
    for message, tx, flag in zip(failed.column("error").to_pylist(), failed.column("transaction").to_pylist(), inside):
        key = (str(message or "(no message)")[:ERROR_CHARS], str(tx))
        counts[key] += 1
        in_window[key] += int(flag)
    rows = [[message, tx, str(n), str(in_window[(message, tx)])] for (message, tx), n in counts.most_common(ERROR_ROWS)]
    return v.Table(["message", "transaction", "count", "in window"], rows)


def workload_rows(record: RunRecord) -> list[tuple[str, str]]:
    """The workload as the study report describes it (perflab.report.view.workload_fields)."""
    from perflab.study.document import workload_summary

    config = record.config
    summary = workload_summary(record.workload, record.workload_path,
                               {"stagger": config.stagger_s, "stabilization": config.stabilization_s,
                                "measurement": config.measurement_s})
    doc = StudyDocument(workload=summary, design=Design(load=LoadRecord(users=config.users, rate=config.rate)))
    return v.workload_fields(doc)


def config_rows(record: RunRecord) -> list[tuple[str, str]]:
    return [(str(k).replace("_", " "), v.text(value)) for k, value in record.config.model_dump(mode="json").items()]


def hardware_rows(record: RunRecord) -> list[tuple[str, str]]:
    fingerprint = record.fingerprint
    hardware, _ = split_fingerprint(fingerprint)
    keys = [k for k in v.HARDWARE_ORDER if k in hardware] + sorted(k for k in hardware if k not in v.HARDWARE_ORDER)
    rows = [(v.HARDWARE_NAMES.get(k, k.replace("_", " ")), _hardware_value(k, hardware[k])) for k in keys]
    if fingerprint.get("placement"):
        rows.append(("placement", v.text(fingerprint["placement"])))
    return rows


def _hardware_value(key: str, value: Any) -> str:
    if key.endswith("_bytes"):
        return fmt.gib(value) if value is not None else "none"
    if isinstance(value, Mapping) and "available" in value:
        return "available" if value.get("available") else f"unavailable ({v.text(value.get('reason'))})"
    return v.text(value)


def software_rows(record: RunRecord) -> list[tuple[str, str]]:
    _, software = split_fingerprint(record.fingerprint)
    keys = [k for k in v.SOFTWARE_ORDER if k in software] + sorted(k for k in software if k not in v.SOFTWARE_ORDER)
    return [(v.SOFTWARE_NAMES.get(k, k.replace("_", " ")), v.text(software[k])) for k in keys]


# -- per-interval data and charts -------------------------------------------------------------

def interval_percentiles(run_dir: Path, metrics: RunMetrics) -> list[dict[str, float | None]]:
    """Nearest-rank response time percentiles per interval of the reduction (same buckets, same
    rule: completed in the bucket, ok transactions only, response = end - intended_start)."""
    rows = metrics.per_interval
    path = Path(run_dir) / "transactions.parquet"
    if not rows or not path.exists():
        return []
    edges = np.array([r["t_start"] for r in rows] + [rows[-1]["t_end"]], dtype=np.float64)
    tx = read_window_transactions(path, metrics.window)
    response, end = tx.response[tx.ok], tx.end[tx.ok]
    index = np.clip(np.searchsorted(edges, end, side="right") - 1, 0, len(rows) - 1)
    out = []
    for b in range(len(rows)):
        values = nearest_rank(response[index == b], INTERVAL_PERCENTILES)
        out.append({f"resp_p{q}_t": value for q, value in zip(INTERVAL_PERCENTILES, values)})
    return out


def _figure(rows: int) -> tuple[Figure, np.ndarray]:
    with matplotlib.rc_context(ch.STYLE):
        fig = Figure(figsize=(ch.WIDTH, ch.ROW_HEIGHT * rows), layout="constrained")
        axes = fig.subplots(rows, 1, squeeze=False)
    return fig, axes


def _column(rows: list[Mapping[str, Any]], key: str) -> np.ndarray:
    return np.array([np.nan if fmt.number(r.get(key)) is None else float(r[key]) for r in rows], dtype=float)


def build_charts(metrics: RunMetrics, percentiles: list[dict[str, float | None]]) -> list[ch.Chart]:
    rows = metrics.per_interval
    if not rows:
        note = "Not drawn: the run has no per-interval data (no transactions in the window)."
        return [ch.Chart(i, t, None, note) for i, t in (("chart-etr", "ETR (T) per interval"),
                                                          ("chart-response", "Response time per interval"),
                                                          ("chart-util", "Utilization per interval"))]
    mid = (_column(rows, "t_start") + _column(rows, "t_end")) / 2
    return [_etr_chart(metrics, mid), _response_chart(rows, percentiles, mid), _util_chart(rows, mid)]


def _etr_chart(metrics: RunMetrics, t: np.ndarray) -> ch.Chart:
    title = "External throughput (ETR (T)) per interval"
    etr = _column(metrics.per_interval, "etr_t")
    if not np.isfinite(etr).any():
        return ch.Chart("chart-etr", title, None, "Not drawn: no completed transactions in the window.")
    fig, axes = _figure(1)
    ax = axes[0][0]
    ax.plot(t, etr, "o-", color=ch.PALETTE[0], markersize=3, label="per interval")
    overall = fmt.number(metrics.values.get("etr_t"))
    if overall is not None:
        ax.axhline(overall, color="#555555", linewidth=0.8, linestyle="--", label="window")
    errors = _column(metrics.per_interval, "errors_t")
    if np.nansum(errors) > 0:
        ax.bar(t, errors / np.maximum(_column(metrics.per_interval, "t_end") - _column(metrics.per_interval, "t_start"),
                                      1e-9), width=0.6 * (metrics.interval_s or 1.0), color=ch.PALETTE[1],
               label="errors/s")
    ax.set_ylim(bottom=0)
    ax.set_ylabel("tx/s")
    ax.set_xlabel("seconds after t0")
    ax.legend(loc="best")
    return ch.Chart("chart-etr", title, ch.to_svg(fig, "chart-etr", title),
                    "Transactions completed per second in each interval of the measurement window; the dashed "
                    "line is the window's ETR (T).")


def _response_chart(rows: list[dict], percentiles: list[dict], t: np.ndarray) -> ch.Chart:
    title = "Response time per interval: mean and percentiles"
    series = {"AVG LAST (T)": _column(rows, "avg_last_t")}
    for q in INTERVAL_PERCENTILES:
        series[f"P{q}"] = _column(percentiles, f"resp_p{q}_t") if percentiles else _column(rows, f"resp_p{q}_t")
    present = {k: s for k, s in series.items() if len(s) == len(t) and np.isfinite(s).any()}
    if not present:
        return ch.Chart("chart-response", title, None, "Not drawn: no response times in the window.")
    top = max(float(np.nanmax(s)) for s in present.values())
    scale, unit = (1000.0, "ms") if top < 1.0 else (1.0, "s")
    fig, axes = _figure(1)
    ax = axes[0][0]
    for i, (name, s) in enumerate(present.items()):
        ax.plot(t, s * scale, "o-" if name == "AVG LAST (T)" else ".-", color=ch.PALETTE[i % len(ch.PALETTE)],
                markersize=3, label=name)
    ax.set_ylim(bottom=0)
    ax.set_ylabel(f"response ({unit})")
    ax.set_xlabel("seconds after t0")
    ax.legend(loc="upper right", ncols=len(present))
    return ch.Chart("chart-response", title, ch.to_svg(fig, "chart-response", title),
                    "Response = end - intended start (time spent waiting to start counts). Percentiles are "
                    "nearest-rank over the transactions completed in each interval.")


def _util_chart(rows: list[dict], t: np.ndarray) -> ch.Chart:
    title = "Utilization per interval: the SUT's processors (S) and the whole machine (H)"
    series = {"UTIL/PROC (S)": _column(rows, "util_proc_s"), "UTIL/PROC (H)": _column(rows, "util_proc_h")}
    present = {k: s for k, s in series.items() if np.isfinite(s).any()}
    if not present:
        return ch.Chart("chart-util", title, None, "Not drawn: the monitor did not cover the window (samples missing).")
    fig, axes = _figure(1)
    ax = axes[0][0]
    for i, (name, s) in enumerate(present.items()):
        ax.plot(t, s, "o-", color=ch.PALETTE[(i + 2) % len(ch.PALETTE)], markersize=3, label=name)
    ax.set_ylim(0, max(100.0, max(float(np.nanmax(s)) for s in present.values()) * 1.05))
    ax.set_ylabel("% busy per processor")
    ax.set_xlabel("seconds after t0")
    ax.legend(loc="lower right")
    return ch.Chart("chart-util", title, ch.to_svg(fig, "chart-util", title),
                    "Busy time per processor in each interval: (S) the SUT's processors, (H) every processor "
                    "of the machine (the driver included).")


# -- rendering ----------------------------------------------------------------------------------

def _environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("perflab.serve", "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    env.filters["is_number"] = is_number
    return env


def stylesheet() -> str:
    return resources.files("perflab.serve").joinpath("static/report.css").read_text(encoding="utf-8")


def render_html(report: RunReport) -> str:
    """The self-contained HTML report: inline CSS and SVG, no script, nothing fetched."""
    charts = [ch.Chart(c.id, c.title, None if c.svg is None else Markup(c.svg), c.note) for c in report.charts]
    return _environment().get_template("run_report.html.j2").render(r=report, charts=charts,
                                                                    css=Markup(stylesheet()))


def _md_cell(value: Any) -> str:
    return str(value).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _md_table(columns: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(_md_cell(c) for c in columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
    return lines + [""]


def render_markdown(report: RunReport) -> str:
    out = [f"# {_md_cell(report.title)}", ""]
    out += _md_table(["field", "value"], [list(p) for p in report.header])
    if report.problem:
        out += [f"**{_md_cell(report.problem)}**", ""]
    out += ["## Summary", ""] + _md_table(["metric", "value"], [list(p) for p in report.summary])
    out += ["## Gates", "", f"{_md_cell(report.gate_verdict)} ({_md_cell(report.gate_source)}).", ""]
    out += _md_table(["gate", "measured", "limit", "result"], [[g.name, g.measured, g.limit, g.result] for g in report.gates])
    if report.exclusions:
        out += _md_table(["exclusion", "why"], [[c.code.value, c.text] for c in report.exclusions])
    if report.invalid:
        out += ["Invalid (run.json):", ""]
        out += _md_table(["code", "why"], [[c.code.value, c.text] for c in report.invalid])
    out += ["## Thresholds", ""]
    if report.thresholds:
        out += [f"{report.thresholds_violated} of {len(report.thresholds)} violated.", ""]
        out += _md_table(["threshold", "measured", "result"],
                         [[t.expression, t.measured, t.result + (f" ({t.why})" if t.why else "")]
                          for t in report.thresholds])
    else:
        out += ["None declared.", ""]
    if report.data is not None:
        out += ["## Measurement data", ""]
        rows = []
        for group, group_rows in report.data.groups:
            rows.append([f"**{group}**", "", "", ""])
            rows += group_rows
        out += _md_table(report.data.columns, rows) + [*report.data.legend, ""]
    if report.classes is not None:
        out += ["## Transaction classes", ""] + _md_table(report.classes.columns, report.classes.rows)
    if report.components is not None:
        out += ["## Servers (V)", ""] + _md_table(report.components.columns, report.components.rows)
    if report.drivers is not None:
        out += ["## Drivers (Ray)", ""] + _md_table(report.drivers.columns, report.drivers.rows)
    if report.little:
        out += [_md_cell(report.little), ""]
    if report.errors is not None:
        out += ["## Errors", ""]
        out += _md_table(report.errors.columns, report.errors.rows) if report.errors.rows else ["None.", ""]
    out += ["## Warnings", ""] + ([f"- {_md_cell(w)}" for w in report.warnings] or ["None."]) + [""]
    for title, pairs in (("Workload", report.workload), ("Configuration", report.config),
                         ("Hardware", report.hardware), ("Software", report.software)):
        out += [f"## {title}", ""] + _md_table(["field", "value"], [list(p) for p in pairs])
    out += ["Charts: see report.html.", ""]
    return "\n".join(out)


RUN_FIELDS = {"status", "reason", "valid", "invalid", "label", "study", "workload_path", "config", "fingerprint",
              "window", "driver", "drivers", "sut", "created", "finished"}


def render_json(report: RunReport) -> str:
    record = report.record
    doc = {
        "run_id": report.run_id, "title": report.title, "status": report.status, "problem": report.problem,
        "run": record.model_dump(mode="json", include=RUN_FIELDS) if record is not None else None,
        "workload": record.workload_name if record is not None else None,
        "gates": {"verdict": report.gate_verdict, "source": report.gate_source, "counted": report.counted,
                  "rows": [g.__dict__ for g in report.gates],
                  "exclusions": [c.model_dump(mode="json") for c in report.exclusions]},
        "thresholds": [t.__dict__ for t in report.thresholds],
        "metrics": report.metrics,
        "interval_percentiles": report.interval_percentiles,
        "errors": [dict(zip(report.errors.columns, row)) for row in report.errors.rows] if report.errors else [],
        "charts": [c.to_dict() for c in report.charts],
        "warnings": report.warnings,
    }
    return json.dumps(doc, indent=2, default=_jsonable) + "\n"


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "item"):
        return value.item()
    return str(value)


RENDERERS = {"html": ("report.html", render_html), "md": ("report.md", render_markdown),
             "json": ("report.json", render_json)}


def study_of(run_dir: Path, store_home: Path | None = None) -> StudyDocument | None:
    """The study a run belongs to, when it is in the same store (and its study.json reads)."""
    try:
        study_id = read_record(run_dir).study
    except InputError:
        return None
    home = store_home if store_home is not None else Path(run_dir).resolve().parent.parent
    if not study_id or "/" in study_id or study_id in (".", ".."):
        return None
    try:
        return read_study_document(Path(home) / "studies" / study_id / "study.json")
    except InputError:
        return None


def write_run_html(run_dir: Path) -> Path:
    """`perflab show RUN --html`: write <run_dir>/report.html (atomically) and return its path."""
    from perflab.store.atomic import write_atomic

    run_dir = Path(run_dir)
    text = render_html(build_report(run_dir, study_of(run_dir)))
    path = run_dir / "report.html"
    write_atomic(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    return path

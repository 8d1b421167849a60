"""One run's report as plain strings and tables, built once from the run directory.

Contents, in the seeds' order: the run (header, outcome, and why it is invalid when it is), a
summary, its gates (perflab.report.run.gates), its thresholds (the workload's absolute limits:
perflab.catalog.thresholds), the measurement data in the seeds' row groups, the transactions
by name, the transaction classes, the servers (V), the drivers of a Ray run, the Little's-law check, the errors, the
per-interval charts, then the workload, the configuration, the hardware and the software.
Numbers are printed by perflab.report.numbers (the registry's decimals, `na` when not measured)
here and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perflab.catalog.metric import Origin
from perflab.catalog.registry import GROUPS, REGISTRY
from perflab.catalog.thresholds import ThresholdResult, evaluate
from perflab.caveats import Caveat
from perflab.errors import InputError
from perflab.records.fingerprint import split_fingerprint
from perflab.records.run import RunRecord, read_run_record
from perflab.records.study import Design, LoadRecord, StudyDocument, read_study_document
from perflab.reduce.reduce import CLASS_KEYS, TRANSACTION_KEYS, RunMetrics, reduce_run
from perflab.report import charts as ch
from perflab.report import numbers as fmt
from perflab.report import view as v
from perflab.report.run.counted_pass import TITLE as COUNTED_TITLE
from perflab.report.run.counted_pass import counted_pass_table
from perflab.report.run.drivers import TITLE as DRIVERS_TITLE
from perflab.report.run.drivers import drivers_table
from perflab.report.run.errors import error_table
from perflab.report.run.gates import Gate, judge
from perflab.store.outcome import RunOutcome

#: The seeds' groups, then perflab's raw window totals (what every other row is derived from).
DATA_GROUPS = tuple(g for g in GROUPS if g not in ("Measurement", "Servers")) + ("Measurement",)
#: The groups of the measurement data shown open in HTML (the others are folded: a run has
#: some 120 rows): what a load test is read for first.
OPEN_GROUPS = ("Response Time", "Throughput")
#: The group whose rows are raw totals (shown dim on the terminal).
RAW_GROUP = "Measurement"
DATA_LEGEND = ["Suffixes: (T) driver, (H) whole machine, (S) system under test, (V) SUT component, "
               "(I) CPU counters; no suffix: the SUT's own counters. na: not measured on this machine or run.",
               "Measurement: the raw window totals every other row is derived from (the registry's formulas)."]


@dataclass(frozen=True)
class ThresholdRow:
    """One threshold as the report shows it: the expression, the value measured, the result."""

    expression: str
    measured: str
    result: str          # "pass" or "FAIL"
    why: str             # "" when met; "not measured", or the comparison that does not hold


@dataclass(frozen=True)
class TitledTable:
    """A table with the heading every rendering gives it."""

    title: str
    table: v.Table


@dataclass
class RunReport:
    run_id: str
    title: str
    status: str
    outcome: RunOutcome
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
    tables: list[TitledTable]           # transactions, classes, servers (V), drivers: those the run has
    little: str
    errors: v.Table | None
    charts: list[ch.Chart]
    workload: list[tuple[str, str]]
    config: list[tuple[str, str]]
    hardware: list[tuple[str, str]]
    software: list[tuple[str, str]]
    warnings: list[Caveat]              # the reduction's caveats (perflab.caveats)
    problem: str | None = None
    study: str | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    record: RunRecord | None = None

    @property
    def thresholds_violated(self) -> int:
        return sum(1 for t in self.thresholds if t.result != "pass")

    def table(self, title: str) -> v.Table | None:
        return next((t.table for t in self.tables if t.title == title), None)


# -- building --------------------------------------------------------------------------------

def read_record(run_dir: Path) -> RunRecord:
    """The run's run.json as a RunRecord (InputError naming the file when it is not one)."""
    return read_run_record(Path(run_dir) / "run.json")


def build_report(run_dir: Path, study: StudyDocument | None = None, charts: bool = True,
                 strict: bool = False) -> RunReport:
    """The report of a stored run. `study`: the study the run belongs to, if any (its gates and
    its decision about this run). A run without a usable reduction (still running, abandoned,
    damaged) gets a report of what run.json says, with the reason -- or, with `strict`, the
    reduction's InputError (`perflab show`: exit 2 naming the file)."""
    from perflab.outcome import judge_outcome

    run_dir = Path(run_dir)
    record = read_record(run_dir)
    metrics: RunMetrics | None = None
    problem = None
    try:
        metrics = reduce_run(run_dir, timeline=charts)
    except InputError as exc:
        if strict:
            raise
        problem = f"no measurements to report: {exc}"
    values = metrics.values if metrics else {}
    judged = judge(record, metrics, study)
    outcome = judge_outcome(record, metrics)
    drawn: list[ch.Chart] = []
    if metrics is not None and charts:
        from perflab.report.run.charts import build_charts

        drawn = build_charts(metrics)
    return RunReport(
        run_id=record.run_id, title=f"Run {record.run_id}: {record.workload_name}", status=record.status,
        outcome=outcome, header=header(record, metrics, outcome),
        summary=[(fmt.label_of(k), fmt.quantity(values.get(k), k)) for k in REGISTRY.role("summary")],
        gates=judged.gates, gate_verdict=judged.verdict, gate_source=judged.source, counted=judged.counted,
        exclusions=judged.exclusions, invalid=list(record.invalid), thresholds=threshold_rows(record, values),
        data=data_table(metrics) if metrics else None, tables=run_tables(record, metrics) + counted_tables(run_dir),
        little=little_text(values) if metrics else "",
        errors=error_table(run_dir, metrics.window if metrics else None), charts=drawn,
        workload=workload_rows(record), config=config_rows(record), hardware=hardware_rows(record),
        software=software_rows(record), warnings=list(metrics.caveats) if metrics else [], problem=problem,
        study=record.study, metrics=metrics.to_json() if metrics else {}, record=record,
    )


def header(record: RunRecord, metrics: RunMetrics | None, outcome: RunOutcome) -> list[tuple[str, str]]:
    status = v.text(record.status)
    if record.reason:
        status += f" ({record.reason})"
    rows = [("run", v.text(record.run_id)), ("workload", v.text(record.workload_name)), ("status", status),
            ("outcome", outcome.short)]
    if record.invalid:
        rows.append(("invalid", "; ".join(c.text for c in record.invalid)))
    release = metrics.attributes.get("release") if metrics is not None else None
    if release:
        rows.append(("release", v.text(release)))
    if record.label:
        rows.append(("label", v.text(record.label)))
    if record.study:
        rows.append(("study", v.text(record.study)))
    rows.append(("load", load_text(record)))
    rows += [("created", v.text(record.created)), ("finished", v.text(record.finished))]
    if metrics is not None:
        w = metrics.window
        rows.append(("measurement window", f"{w.start:g} s to {w.end:g} s after t0 ({w.duration:g} s)"))
    return rows


def load_text(record: RunRecord) -> str:
    if record.config.users is not None:
        return f"{record.config.users:,} users (closed loop)"
    if record.config.rate is not None:
        return f"{v.text(record.config.rate)} arrivals/s (open loop)"
    return fmt.NA


def data_table(metrics: RunMetrics) -> v.DataTable:
    """Every metric perflab measures, in the seeds' row groups, with the registry's decimals."""
    groups = []
    for group in DATA_GROUPS:
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
    return v.DataTable(["metric", "value", "unit", "key"], groups, verdict_column=-1, legend=list(DATA_LEGEND))


TRANSACTIONS_TITLE = "Transactions"
CLASSES_TITLE = "Transaction classes"
SERVERS_TITLE = "Servers (V): per SUT component"


def run_tables(record: RunRecord, metrics: RunMetrics | None) -> list[TitledTable]:
    """The per-transaction, per-class, per-component and per-driver tables the run has, in
    that order. Per transaction: the workload's transaction names, a load tester's per-request
    table (count, failures, rate, mean, percentiles, max) over the window."""
    tables = []
    if metrics is not None and metrics.per_transaction:
        tables.append(TitledTable(TRANSACTIONS_TITLE, keyed_table("transaction", metrics.per_transaction,
                                                                  TRANSACTION_KEYS)))
    if metrics is not None and metrics.per_class:
        tables.append(TitledTable(CLASSES_TITLE, keyed_table("class", metrics.per_class, CLASS_KEYS)))
    if metrics is not None and metrics.per_component:
        keys = [k for k in REGISTRY.perflab_keys(per_component=True) if REGISTRY[k].group == "Servers"]
        tables.append(TitledTable(SERVERS_TITLE, keyed_table("component", metrics.per_component, keys)))
    drivers = drivers_table(record)
    if drivers is not None:
        tables.append(TitledTable(DRIVERS_TITLE, drivers))
    return tables


def counted_tables(run_dir: Path) -> list[TitledTable]:
    """The counted pass's per-transaction table, when the run had one."""
    table = counted_pass_table(run_dir)
    return [TitledTable(COUNTED_TITLE, table)] if table is not None else []


def keyed_table(first: str, rows: dict[str, dict[str, Any]], keys: tuple[str, ...] | list[str]) -> v.Table:
    """One row per name (sorted), one column per metric key, headed by label and unit."""
    return v.Table([first] + [heading(k) for k in keys],
                   [[str(name)] + [fmt.value((row or {}).get(k), k) for k in keys] for name, row in sorted(rows.items())])


def heading(key: str) -> str:
    unit = fmt.unit_of(key)
    return f"{fmt.label_of(key)} ({unit})" if unit else fmt.label_of(key)


def little_text(values: dict[str, Any]) -> str:
    """Little's law as a check of the closed loop: USERS / (think + response) against ETR (T)."""
    if values.get("users") is None:
        return "Little's law: open loop (no USERS), not applicable."
    predicted, deviation = values.get("little_etr_t"), values.get("little_dev")
    if predicted is None or values.get("etr_t") is None:
        return "Little's law: na (think or response time not measured)."
    return (f"Little's law: USERS / (AVG THINK (T) + AVG LAST (T)) = {fmt.fixed(values['users'], 0)} / "
            f"({fmt.quantity(values.get('avg_think_t'), 'avg_think_t')} + "
            f"{fmt.quantity(values.get('avg_last_t'), 'avg_last_t')}) = {fmt.quantity(predicted, 'little_etr_t')} "
            f"against ETR (T) {fmt.quantity(values.get('etr_t'), 'etr_t')}: "
            f"{fmt.fixed(deviation, 1, signed=True)}% (a steady closed loop agrees within a few percent).")


def threshold_rows(record: RunRecord, values: dict[str, Any]) -> list[ThresholdRow]:
    """The workload's thresholds (those of `perflab run --threshold` included: they are stored
    with the run's workload) against the run's values; none when there are none."""
    declared = record.workload.get("thresholds") or []
    try:
        results: list[ThresholdResult] = evaluate(declared, values)
    except ValueError as exc:      # a run.json written by hand, or by a perflab with other keys
        return [ThresholdRow(v.text(declared), "na", "FAIL", f"cannot be evaluated: {exc}")]
    return [ThresholdRow(r.threshold.expression, fmt.quantity(r.value, r.threshold.key), "pass" if r.passed else "FAIL",
                         r.why) for r in results]


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
    rows = v.fingerprint_rows(hardware, "hardware")
    if fingerprint.get("placement"):
        rows.append(("placement", v.text(fingerprint["placement"])))
    return rows


def software_rows(record: RunRecord) -> list[tuple[str, str]]:
    _, software = split_fingerprint(record.fingerprint)
    return v.fingerprint_rows(software, "software")


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

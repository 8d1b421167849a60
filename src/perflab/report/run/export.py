"""One run's report as files: self-contained HTML, Markdown and JSON, all from one RunReport.

The same exporter shape (perflab.report.write.Exporter) and the same writers as a study's
report: Markdown through report/markdown.py's escaping and tables, HTML through report/html.py's
autoescaping environment, JSON through report/json_export.py's `dumps`; a SUT's error text is
escaped the same way in a run's report as in a study's.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from markupsafe import Markup

from perflab.caveats import Caveat
from perflab.report import charts as ch
from perflab.report.json_export import dumps
from perflab.report.markdown import data_table, escape, table
from perflab.report.run.model import CLASSES_TITLE, OPEN_GROUPS, TRANSACTIONS_TITLE, RunReport, build_report, study_of
from perflab.report.write import Exporter, write_exports


def stylesheet() -> str:
    return resources.files("perflab.report").joinpath("static/run_report.css").read_text(encoding="utf-8")


def render_html(report: RunReport) -> str:
    """The self-contained HTML report: inline CSS and SVG, no script, nothing fetched."""
    from perflab.report.html import environment

    # matplotlib's own output (its text already escaped) and perflab's stylesheet are the only
    # markup not escaped
    charts = [ch.Chart(c.id, c.title, None if c.svg is None else Markup(c.svg), c.note) for c in report.charts]
    return environment().get_template("run_report.html.j2").render(
        r=report, charts=charts, css=Markup(stylesheet()), classes_title=CLASSES_TITLE,
        transactions_title=TRANSACTIONS_TITLE, open_groups=OPEN_GROUPS)


def _pairs(columns: list[str], pairs: list[tuple[str, str]]) -> list[str]:
    return [*table(columns, [list(p) for p in pairs]), ""]


def _caveats(columns: list[str], caveats: list[Caveat]) -> list[str]:
    return [*table(columns, [[c.code.value, c.text] for c in caveats]), ""]


def render_markdown(report: RunReport) -> str:
    out = [f"# {escape(report.title)}", "", *_pairs(["field", "value"], report.header)]
    if report.problem:
        out += [f"**{escape(report.problem)}**", ""]
    out += ["## Summary", "", *_pairs(["metric", "value"], report.summary)]
    out += ["## Gates", "", f"{escape(report.gate_verdict)} ({escape(report.gate_source)}).", ""]
    out += [*table(["gate", "measured", "limit", "result"],
                   [[g.name, g.measured, g.limit, g.result] for g in report.gates]), ""]
    if report.exclusions:
        out += _caveats(["exclusion", "why"], report.exclusions)
    if report.invalid:
        out += ["Invalid (run.json):", "", *_caveats(["code", "why"], report.invalid)]
    out += ["## Thresholds", ""]
    if report.thresholds:
        out += [f"{report.thresholds_violated} of {len(report.thresholds)} violated.", ""]
        out += [*table(["threshold", "measured", "result"],
                       [[t.expression, t.measured, t.result + (f" ({t.why})" if t.why else "")]
                        for t in report.thresholds]), ""]
    else:
        out += ["None declared.", ""]
    if report.data is not None:
        out += ["## Measurement data", "", *data_table(report.data), ""]
        out += [escape(note) for note in report.data.legend] + [""]
    for titled in report.tables:
        out += [f"## {escape(titled.title)}", "", *table(titled.table.columns, titled.table.rows), ""]
    if report.little:
        out += [escape(report.little), ""]
    if report.errors is not None:
        out += ["## Errors", ""]
        out += [*table(report.errors.columns, report.errors.rows), ""] if report.errors.rows else ["None.", ""]
    out += ["## Warnings", ""]
    out += [f"- {escape(w.text)} (`{w.code.value}`)" for w in report.warnings] or ["None."]
    out.append("")
    for title, pairs in (("Workload", report.workload), ("Configuration", report.config),
                         ("Hardware", report.hardware), ("Software", report.software)):
        out += [f"## {title}", "", *_pairs(["field", "value"], pairs)]
    out += ["Charts: see report.html.", ""]
    return "\n".join(out)


#: The run record's fields the JSON report carries (the workload itself is in "workload").
RUN_FIELDS = {"status", "reason", "valid", "invalid", "label", "study", "workload_path", "config", "fingerprint",
              "window", "driver", "drivers", "sut", "created", "finished"}


def render_json(report: RunReport) -> str:
    """The report for a program: the run record's fields, the gates, the thresholds, the
    reduction (every metric, per class, per interval), the per-run tables as rows of cells."""
    record = report.record
    doc = {
        "run_id": report.run_id, "title": report.title, "status": report.status,
        "outcome": {"kind": report.outcome.kind.value, "short": report.outcome.short}, "problem": report.problem,
        "run": record.model_dump(mode="json", include=RUN_FIELDS) if record is not None else None,
        "workload": record.workload_name if record is not None else None,
        "gates": {"verdict": report.gate_verdict, "source": report.gate_source, "counted": report.counted,
                  "rows": [g.__dict__ for g in report.gates],
                  "exclusions": [c.model_dump(mode="json") for c in report.exclusions]},
        "thresholds": [t.__dict__ for t in report.thresholds],
        "metrics": report.metrics,
        "tables": {t.title: [dict(zip(t.table.columns, row)) for row in t.table.rows] for t in report.tables},
        "errors": [dict(zip(report.errors.columns, row)) for row in report.errors.rows] if report.errors else [],
        "charts": [c.to_dict() for c in report.charts],
        "warnings": [w.model_dump(mode="json") for w in report.warnings],
    }
    return dumps(doc)


#: A run's reports, by format: the files `perflab show --html` writes into its directory and
#: the dashboard serves.
EXPORTERS: tuple[Exporter[RunReport], ...] = (
    Exporter("html", "report.html", render_html),
    Exporter("markdown", "report.md", render_markdown),
    Exporter("json", "report.json", render_json),
)
HTML = EXPORTERS[0]


def write_run_html(run_dir: Path) -> Path:
    """`perflab show RUN --html`: write <run_dir>/report.html (atomically) and return its path."""
    run_dir = Path(run_dir)
    return write_exports(build_report(run_dir, study_of(run_dir)), run_dir, (HTML,))[HTML.format]


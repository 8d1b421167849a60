"""One run's report as files: self-contained HTML, Markdown and JSON, all from one RunReport."""

from __future__ import annotations

import json
import math
from importlib import resources
from pathlib import Path
from typing import Any

from markupsafe import Markup

from perflab.report import charts as ch
from perflab.report.run.model import CLASSES_TITLE, OPEN_GROUPS, TRANSACTIONS_TITLE, RunReport, build_report, study_of


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


def md_cell(value: Any) -> str:
    return str(value).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def md_table(columns: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(md_cell(c) for c in columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(md_cell(c) for c in row) + " |" for row in rows]
    return lines + [""]


def render_markdown(report: RunReport) -> str:
    out = [f"# {md_cell(report.title)}", ""]
    out += md_table(["field", "value"], [list(p) for p in report.header])
    if report.problem:
        out += [f"**{md_cell(report.problem)}**", ""]
    out += ["## Summary", ""] + md_table(["metric", "value"], [list(p) for p in report.summary])
    out += ["## Gates", "", f"{md_cell(report.gate_verdict)} ({md_cell(report.gate_source)}).", ""]
    out += md_table(["gate", "measured", "limit", "result"], [[g.name, g.measured, g.limit, g.result] for g in report.gates])
    if report.exclusions:
        out += md_table(["exclusion", "why"], [[c.code.value, c.text] for c in report.exclusions])
    if report.invalid:
        out += ["Invalid (run.json):", ""]
        out += md_table(["code", "why"], [[c.code.value, c.text] for c in report.invalid])
    out += ["## Thresholds", ""]
    if report.thresholds:
        out += [f"{report.thresholds_violated} of {len(report.thresholds)} violated.", ""]
        out += md_table(["threshold", "measured", "result"],
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
        out += md_table(report.data.columns, rows) + [*report.data.legend, ""]
    for titled in report.tables:
        out += [f"## {titled.title}", ""] + md_table(titled.table.columns, titled.table.rows)
    if report.little:
        out += [md_cell(report.little), ""]
    if report.errors is not None:
        out += ["## Errors", ""]
        out += md_table(report.errors.columns, report.errors.rows) if report.errors.rows else ["None.", ""]
    out += ["## Warnings", ""] + ([f"- {md_cell(w.text)} (`{w.code.value}`)" for w in report.warnings] or ["None."]) + [""]
    for title, pairs in (("Workload", report.workload), ("Configuration", report.config),
                         ("Hardware", report.hardware), ("Software", report.software)):
        out += [f"## {title}", ""] + md_table(["field", "value"], [list(p) for p in pairs])
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
    return json.dumps(doc, indent=2, default=_jsonable) + "\n"


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "item"):
        return value.item()
    return str(value)


#: Each format's file name in a run directory and its renderer.
RENDERERS = {"html": ("report.html", render_html), "md": ("report.md", render_markdown),
             "json": ("report.json", render_json)}


def write_run_html(run_dir: Path) -> Path:
    """`perflab show RUN --html`: write <run_dir>/report.html (atomically) and return its path."""
    from perflab.store.atomic import write_atomic

    run_dir = Path(run_dir)
    text = render_html(build_report(run_dir, study_of(run_dir)))
    path = run_dir / "report.html"
    write_atomic(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    return path

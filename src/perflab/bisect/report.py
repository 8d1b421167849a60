"""A bisect as people read it: the finding first, then every step with its verdict and interval
(Markdown for report.md, rich for the terminal; the same rows)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from perflab.bisect.model import BisectDocument, Part, Step
from perflab.report import markdown as md
from perflab.report import numbers as fmt
from perflab.safe_text import terminal as escape

HEADINGS = ("step", "base -> new", "why", "blocks", "verdict", "ratio", "interval", "study")


def _row(step: Step) -> list[str]:
    interval = fmt.ci_ratio(step.ci_low, step.ci_high)
    if step.level:
        interval += f" ({fmt.percent_level(step.level)})"
    return [str(step.number), f"{step.base_version} -> {step.new_version}", step.purpose, str(step.blocks),
            step.verdict or f"none: {step.reason or '?'}", fmt.ratio(step.ratio), interval, step.study_id or ""]


def _part(doc: BisectDocument, part: Part) -> str:
    how = " (derived from two studies)" if part.derived else ""
    return (f"{doc.versions[part.base]} -> {doc.versions[part.new]}: {fmt.ratio(part.ratio)} "
            f"{fmt.ci_ratio(part.ci_low, part.ci_high)} ({fmt.percent_level(part.level)}){how}")


def summary_lines(doc: BisectDocument) -> list[str]:
    n = len(doc.versions)
    lines = [f"{doc.label} over {n} versions, {doc.versions[0]} .. {doc.versions[-1]}: {len(doc.steps)} studies "
             f"(a bisect of {n} versions needs {doc.studies_planned} when no step is INCONCLUSIVE)."]
    if doc.whole is not None:
        lines.append(f"The whole range: {_part(doc, doc.whole)}.")
    if doc.finding is not None:
        lines.append(f"Finding ({doc.finding.kind}): {doc.finding.text}.")
        lines += [f"  {_part(doc, p)}" for p in doc.finding.parts]
    else:
        lines.append("Finding: none yet (the bisect did not finish).")
    return lines


def render_markdown(doc: BisectDocument) -> str:
    out = [f"# Bisect {md.escape(doc.bisect_id)}", "",
           f"Versions file: `{doc.versions_file}`; study: `{doc.study_file}`; primary metric {md.escape(doc.label)} "
           f"(`{doc.metric}`), margin ±{doc.margin * 100:g}%.", ""]
    out += [md.escape(line) + "  " for line in summary_lines(doc)]
    out += ["", *md.table(list(HEADINGS), [_row(step) for step in doc.steps])]
    out += ["", "Each step's study file is `step-N.yaml` beside this report; its study's own report is under "
            "`studies/<study>/` of the store.", ""]
    return "\n".join(out)


def render_terminal(doc: BisectDocument, console: Console) -> None:
    table = Table(title=f"bisect {escape(doc.bisect_id)}", title_justify="left")
    for heading in HEADINGS:
        table.add_column(heading)
    for step in doc.steps:
        table.add_row(*[escape(c) for c in _row(step)])
    console.print(table)
    for line in summary_lines(doc):
        console.print(escape(line), highlight=False, soft_wrap=True)

"""report.md: the study in the seeds' layout, as Markdown (GitHub-flavoured tables).

Title, General Observations, then per comparison the seeds' five sections (Workload, Hardware
configuration, Software configuration, Measurement discussion, Measurement data with the
design, the runs and the warnings). The content comes from `view`, shared with the HTML.
"""

from __future__ import annotations

import re
from typing import Any

from perflab.records.study import StudyDocument
from perflab.report import view as v
from perflab.report.pathlength_diff import PROFILE_TITLE, TITLE, PathlengthView
from perflab.safe_text import visible

_INLINE = re.compile(
    r"[\\`*<~]"                          # code, emphasis, HTML and autolinks, strikethrough
    r"|\](?=[(\[:])"                      # "](", "][" and "]:" would make a link, an image or a definition
    r"|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])"   # emphasis; "resp_p95_t" keeps its underscores
    r"|&(?=#?[0-9A-Za-z]+;)")              # an entity ("&amp;" would print as "&")
# At a line's start: a heading, a quote, a list item, a setext underline or a thematic break.
_LINE_START = re.compile(r"^([ \t]*\d*)((?<=\d)[.)](?=[ \t]|$)|(?<![0-9])[#>=+-](?=[ \t]|$|[#>=+-]))", re.MULTILINE)


def escape(text: Any) -> str:
    """Report text as literal Markdown: a configuration named "B <apsw>" must not become an
    HTML tag, "*fast*" emphasis, "[x](http://...)" a link, nor a line "# x" a heading; control
    characters are written as \\xNN. Brackets without a link target are left alone: they print
    as themselves, and the intervals "[90% CI ...]" stay readable in the raw file."""
    return _LINE_START.sub(lambda m: m.group(1) + "\\" + m.group(2), _inline(text))


def _inline(text: Any) -> str:
    """Escaped for the middle of a line (a table cell): no line-start markers to defuse."""
    return _INLINE.sub(lambda m: "\\" + m.group(0), visible(text, one_line=False))


class Bold(str):
    """A cell the renderer emboldens (a row-group heading); its text is still escaped."""


def cell(text: str) -> str:
    """A table cell: escaped, line breaks flattened and pipes escaped, or the table breaks."""
    shown = _inline(" ".join(str(text).split())).replace("|", "\\|")
    return f"**{shown}**" if isinstance(text, Bold) and shown else shown


def table(columns: list[str], rows: list[list[str]]) -> list[str]:
    if not rows:
        return ["None recorded."]
    lines = ["| " + " | ".join(cell(c) for c in columns) + " |",
             "|" + "|".join("---" if i == 0 else "---:" if _numeric(rows, i) else "---" for i in range(len(columns)))
             + "|"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return lines


def _numeric(rows: list[list[str]], column: int) -> bool:
    """Right-align a column whose cells are numbers (or na), as the seeds' tables do."""
    cells = [r[column] for r in rows if column < len(r) and r[column] not in ("na", "-", "")
             and not isinstance(r[column], Bold)]
    return bool(cells) and all(c.lstrip("+-").replace(",", "").replace(".", "", 1).replace("%", "").isdigit()
                               for c in cells)


def fields(pairs: list[tuple[str, str]]) -> list[str]:
    return [f"- **{escape(name)}**: {escape(value)}" for name, value in pairs]


def data_table(data: v.DataTable) -> list[str]:
    rows: list[list[str]] = []
    for group, group_rows in data.groups:
        rows.append([Bold(group)] + [""] * (len(data.columns) - 1))
        rows.extend(group_rows)
    return table(data.columns, rows)


def pathlength(p: PathlengthView) -> list[str]:
    """Where the pathlength went: its tables; the flame graph is the HTML report's."""
    out = [f"#### {escape(TITLE)}", ""]
    for line in p.summary:
        out += [escape(line), ""]
    for t in p.tables:
        out += [f"{escape(t.title)}:", "", *table(t.columns, t.rows), ""]
    out += [f"_{escape(note)}_" for note in p.notes] + [""]
    return out


def comparison(c: v.ComparisonView) -> list[str]:
    """One comparison under its own heading ("base → new"), as the seeds give each
    measurement group its own section."""
    titles = dict(v.SECTIONS)
    out: list[str] = [f"## {escape(c.title)}", ""]
    out += [f"### {titles['workload']}", "", *fields(c.workload), ""]
    if c.calibration is not None:
        out += ["Calibration steps (the base configuration):", "", *table(c.calibration.columns, c.calibration.rows), ""]
    out += [f"### {titles['hardware']}", "", *table(c.hardware.columns, c.hardware.rows), ""]
    out += [f"- {escape(note)}" for note in c.hardware_notes] + [""]
    out += [f"### {titles['software']}", "", *table(c.software.columns, c.software.rows), ""]
    out += [f"### {titles['discussion']}", ""]
    for paragraph in c.discussion:
        out += [escape(paragraph), ""]
    out += [f"### {titles['data']}", "", f"Base: {escape(c.base)}. New: {escape(c.new)}.", "", *data_table(c.data), ""]
    out += [f"_{escape(note)}_" for note in c.data.legend] + [""]
    if c.pathlength is not None:
        out += pathlength(c.pathlength)
    if c.profile is not None:
        out += [f"#### {escape(PROFILE_TITLE)}", ""]
        for line in c.profile.summary:
            out += [escape(line), ""]
        for t in c.profile.tables:
            out += [f"{escape(t.title)}:", "", *table(t.columns, t.rows), ""]
        out += [f"_{escape(note)}_" for note in c.profile.notes] + [""]
    out += ["#### Design", "", *fields(c.design), ""]
    out += ["#### Runs", "", *table(c.runs.columns, c.runs.rows), ""]
    out += ["#### Warnings", ""]
    out += [f"- {escape(w)}" for w in c.warnings] if c.warnings else ["None."]
    out.append("")
    return out


def render(sv: v.StudyView) -> str:
    out = [f"# {escape(sv.title)}", "", *fields(sv.header), "", "## General Observations", ""]
    for obs in sv.observations:
        out += [f"**{escape(obs.title)}.** {escape(obs.text)}", ""]
        if obs.caveats:
            out += ["Caveats:", "", *[f"- {escape(c)}" for c in obs.caveats], ""]
    for note in sv.notes:
        out += [escape(note), ""]
    if not sv.observations and not sv.notes:
        out += ["No comparison was made.", ""]
    if sv.trend is not None:
        out += ["## Release trend", "", "Each configuration against the same base, as the seeds' regression tables "
                "across releases (the HTML report charts the ratios with their intervals).", "",
                *table(sv.trend.columns, sv.trend.rows), ""]
    for c in sv.comparisons:
        out += comparison(c)
    if sv.workload:
        out += ["## Workload", "", *fields(sv.workload), ""]
    if sv.sweep is not None:
        out += ["## Sweep", "", *table(sv.sweep.columns, sv.sweep.rows), ""]
    if sv.runs is not None:
        out += ["## Runs", "", *table(sv.runs.columns, sv.runs.rows), ""]
    if sv.capacity is not None:
        out += ["## Capacity", ""]
        for t in sv.capacity.tables:
            out += [f"{escape(t.title)}:", "", *table(t.columns, t.rows), ""]
        out += [f"- {escape(note)}" for note in sv.capacity.notes] + [""]
    if sv.noise is not None:
        out += ["## Noise", "", "Where the primary metrics' run-to-run noise comes from (docs/noise.md).", "",
                *table(sv.noise.columns, sv.noise.rows), ""]
    return "\n".join(out).rstrip() + "\n"


def render_markdown(study: StudyDocument) -> str:
    """The Markdown report of a study document."""
    return render(v.study_view(study))

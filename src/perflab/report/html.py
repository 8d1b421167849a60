"""report.html: the same content as report.md, plus the charts, in one self-contained file.

Rendered with jinja2 with autoescape on for everything (configuration names, warnings and
workload descriptions are user text). The exceptions are the charts' SVG, which matplotlib
wrote and escapes itself, the flame graph's script (perflab's own file) and its data (JSON with
every '<' escaped, report/pathlength_diff.py); they are marked safe here and in the template.
"""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Any

import jinja2
from markupsafe import Markup

from perflab.records.study import StudyDocument
from perflab.report import charts as charts_module
from perflab.report import pathlength_diff
from perflab.report import view as v
from perflab.safe_text import visible

_NUMBER = re.compile(r"^[+-]?\d{1,3}(,\d{3})*(\.\d+)?%?$|^[+-]?\d+(\.\d+)?%?$")


def verdict_class(text: str) -> str:
    """CSS class of a verdict cell: "WORSE (material)" -> "verdict-worse"."""
    word = str(text).split(" ", 1)[0].lower()
    return f"verdict-{word}" if word in ("better", "worse", "equivalent", "inconclusive") else "verdict-none"


def is_number(text: Any) -> bool:
    return bool(_NUMBER.match(str(text)))


def plain_text(value: Any) -> Any:
    """Every value the template prints: control characters as \\xNN (autoescape then does
    the HTML); markup perflab made itself (the charts' SVG) is left as it is."""
    return visible(value, one_line=False) if isinstance(value, str) and not isinstance(value, Markup) else value


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("perflab.report", "templates"),
        # The template is "report.html.j2", which select_autoescape's extension test would
        # miss: escape unconditionally.
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        finalize=plain_text,
    )
    env.filters["verdict_class"] = verdict_class
    env.filters["is_number"] = is_number
    return env


def render_html(study: StudyDocument) -> str:
    """The self-contained HTML report of a study document (perflab.records.study)."""
    charts = charts_module.build(study)
    for chart in charts:
        if chart.svg is not None:
            chart.svg = Markup(chart.svg)  # matplotlib's own output, text already escaped
    template = environment().get_template("report.html.j2")
    sv = v.study_view(study)
    script = ""
    if any(c.pathlength is not None and c.pathlength.flame for c in sv.comparisons):
        script = pathlength_diff.flame_script()
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    return template.render(sv=sv, charts=charts, sections={key: title for key, title in v.SECTIONS},
                           flame_script=Markup(script), flame_hash=f"sha256-{digest}")

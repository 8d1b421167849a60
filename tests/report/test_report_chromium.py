"""The HTML report opens from disk in a real browser (headless Chromium, no network) and the
rendered DOM has the sections and the SVG charts."""

from __future__ import annotations

import subprocess
from pathlib import Path

import programs

from perflab.records.study import as_study_document
from perflab.report.write import write_reports

from . import dom

CHROMIUM = Path(programs.path("chromium"))

SECTIONS = ("general-observations", "workload", "hardware", "software", "discussion", "data", "runs", "charts")
CHARTS = ("chart-itr", "chart-response", "chart-timeline")


@programs.needs("chromium")
def test_report_renders_in_headless_chromium(study, tmp_path):
    html = write_reports(as_study_document(study), tmp_path / "report")["html"]
    profile = tmp_path / "profile"
    result = subprocess.run(
        [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", f"--user-data-dir={profile}", "--dump-dom",
         html.resolve().as_uri()],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    elements = dom.parse(result.stdout)
    for id_ in SECTIONS:
        element = dom.by_id(elements, id_)
        assert element is not None and element.tag == "section", id_
    for id_ in CHARTS:
        assert dom.inside(elements, id_, "svg"), f"{id_}: no <svg> in the rendered DOM"
        assert dom.inside(elements, id_, "text"), f"{id_}: the chart has no text (labels)"
    verdicts = {dom.text_of(e) for e in elements if e.tag == "td" and "verdict-better" in e.classes}
    assert verdicts == {"BETTER", "BETTER (material)"}

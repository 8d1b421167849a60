"""The report's Capacity section: a users sweep shows its fitted models and users supported (and
a chart, rendered in headless Chromium); a calibrated release study shows users supported by each
release as base users x ITR ratio."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import programs
import pytest

from perflab.capacity.summary import capacity_summary
from perflab.records.study import as_study_document, parse_study_document
from perflab.report.capacity_view import capacity_view
from perflab.report.write import write_reports

from . import dom
from .study_data import make_study
from .test_report_chromium import CHROMIUM

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "capacity"))
from capacity_studies import closed_sweep, source  # noqa: E402


def test_a_users_sweep_report_has_the_models_and_users_supported(tmp_path):
    study = closed_sweep([1, 2, 4, 8, 12, 16, 24], demand_ms=2.0, think=0.02)
    summary = capacity_summary(source(study))
    view = capacity_view(parse_study_document(study))
    titles = [t.title for t in view.tables]
    assert any(t.startswith("Universal Scalability Law") for t in titles)
    supported = next(t for t in view.tables if t.title.startswith("Users supported"))
    # the table shows the capacity model's own answer, to the user
    at_util = next(s for s in summary.supported if s.rule.startswith("util"))
    assert supported.rows[0][1].startswith(f"{at_util.users:,}")
    paths = write_reports(as_study_document(study), tmp_path / "r")
    md = paths["markdown"].read_text()
    assert "## Capacity" in md and "Users supported" in md
    if programs.location("chromium") is None:
        pytest.fail(programs.failure(["chromium"]), pytrace=False)
    result = subprocess.run(
        [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
         paths["html"].resolve().as_uri()], capture_output=True, text=True, timeout=120)
    elements = dom.parse(result.stdout)
    assert dom.by_id(elements, "capacity").tag == "section"
    assert dom.inside(elements, "chart-capacity", "svg")


def test_a_calibrated_release_study_shows_users_supported_by_each_release():
    study = make_study()   # calibrated to 37 users; ITR (S) ratio 1.0527 [1.041, 1.065]
    view = capacity_view(parse_study_document(study))
    table = view.tables[0]
    assert table.title.startswith("Users supported at 90% UTIL/PROC (S)")
    base, new = table.rows
    assert base[2] == "37"
    # 37 x 1.0527 = 38.9 users, interval 37 x [1.041, 1.065] = [38.5, 39.4]
    assert new[2] == "38.9 [38.5, 39.4]" and new[1].startswith("1.053")

"""The dashboard's views in Debian's Chromium (test_browser's server and browser), each with an
assertion on what it shows: a stored run's per-transaction table, charts (axes, the window,
values on hover), errors and CSV download; a live run's tables and charts, on the run page and
on its study's page; a study's answer with its ratio and interval; compare's overlay of both
groups' runs. Values on screen are checked against the reduction and live.json, printed as
perflab.report.numbers prints them (the page's script prints them the same way)."""

from __future__ import annotations

import csv
import io
import json

import pytest

from perflab.drive.live import LiveWriter
from perflab.drive.load.engine import Phases
from perflab.drive.load.recorder import Recorder
from perflab.reduce.reduce import TRANSACTION_KEYS, reduce_run
from perflab.report import numbers as fmt
from perflab.report.run.model import OPEN_GROUPS

from .serve_data import XSS_ERROR, XSS_TX, fake_running_run, write_synthetic_study
from .test_browser import (  # noqa: F401 -- the fixtures of the browser tests
    AT_LEAST_1,
    browser,
    expect,
    home,
    page,
    report_frame,
    server,
    shot,
)
from .test_live_writer import FakeEngine

LIVE_STUDY = "20260103-000000-livestudy-0001"
LIVE_RUN = "20260103-000001-live-0001"


def texts(page, selector: str) -> list[str]:
    return [e.text_content() for e in page.query_selector_all(selector)]


def hover_middle(page, svg: str) -> list[str]:
    """Move the pointer to the middle of a chart; the tooltip's lines."""
    # Locator.hover scrolls a chart below the fold into view (compare's overlay under its
    # tables), points at the area's middle, and starts again if the area is replaced meanwhile:
    # a live chart is redrawn each second (CI, 2026-11-28: "Element is not attached to the DOM"
    # between a scroll and a bounding box taken by hand).
    page.locator(f"{svg} rect.hover-area").hover()
    expect(page.locator(f"{svg} g.tip")).to_have_attribute("visibility", "visible")
    return texts(page, f"{svg} g.tip text")


def check_axes(page, svg: str, window: bool = True) -> None:
    assert page.get_attribute(svg, "data-drawn") == "1", svg
    assert len(page.query_selector_all(f"{svg} text.tick.x")) >= 3 and len(page.query_selector_all(f"{svg} text.tick.y")) >= 3
    assert page.text_content(f"{svg} text.axis-label.x") and page.text_content(f"{svg} text.axis-label.y")
    if window:
        assert page.query_selector(f"{svg} rect.window") is not None
        assert page.text_content(f"{svg} text.window-label") == "measurement window"


def test_a_stored_run_shows_its_transactions_charts_errors_and_csv(server, home, page, tmp_path, stored):
    run_dir = home / "runs" / stored.xss_run
    metrics = reduce_run(run_dir, timeline=True)
    page.goto(f"{server}runs/{stored.xss_run}")
    # the per-transaction table: the reduction's numbers, names as text
    for name, row in metrics.per_transaction.items():
        cells = texts(page, f'#transactions-table tr[data-name="{name}"] td')
        assert cells == [fmt.value(row[k], k) for k in TRANSACTION_KEYS], name
    assert page.text_content(f'#transactions-table tr[data-name="{XSS_TX}"] th') == XSS_TX
    # the charts: the whole run, with axes and the window, values on hover
    expect(page.locator("#charts-view")).to_have_attribute("data-loaded", "1")
    for chart in ("throughput", "response", "util"):
        check_axes(page, f"#charts-view svg[data-chart={chart}]")
    svg = "#charts-view svg[data-chart=response]"
    assert len(page.query_selector_all(f"{svg} polyline.line")) >= 4      # mean, P50, P90, P99
    lines = hover_middle(page, svg)
    x = float(page.get_attribute(f"{svg} g.tip", "data-x"))
    row = next(r for r in metrics.timeline if (r["t_start"] + r["t_end"]) / 2 == x)
    assert lines[0].startswith(f"{fmt.fixed(row['t_start'], 1)}") and "s after t0" in lines[0]
    assert f"RESP P90 (T): {fmt.quantity(row['resp_p90_t'], 'resp_p90_t')}" in lines
    assert f"AVG LAST (T): {fmt.quantity(row['avg_last_t'], 'avg_last_t')}" in lines
    shot(page, tmp_path, "run-views")
    # the errors: messages grouped, with their counts
    message = page.text_content("#errors-table td.message")
    assert message == f"RuntimeError: {XSS_ERROR}"
    failed = reduce_run(run_dir).per_transaction[XSS_TX]["errors_t"]
    in_window = texts(page, "#errors-table td.num")[1]
    assert int(in_window) == failed                         # the window's failures, as the table's
    assert page.query_selector("#errors-table img") is None
    # the CSV downloads are the reduction's rows
    with page.expect_download() as download:
        page.click("#intervals-csv")
    rows = list(csv.DictReader(io.StringIO(open(download.value.path(), encoding="utf-8").read())))
    assert len(rows) == len(metrics.timeline) and sum(r["in_window"] == "1" for r in rows) == len(metrics.per_interval)
    with page.expect_download() as download:
        page.click("#transactions-csv")
    names = [r["transaction"] for r in csv.DictReader(io.StringIO(open(download.value.path(), encoding="utf-8").read()))]
    assert sorted(names) == sorted(metrics.per_transaction)
    # the report below: its measurement data folded by group
    frame = report_frame(page)
    groups = frame.query_selector_all("#data details.group")
    assert len(groups) > 5
    opened = [g.query_selector("summary").text_content().split(" (")[0] for g in groups if g.get_attribute("open") is not None]
    assert opened == [g for g in ("Response Time", "Throughput") if g in OPEN_GROUPS]
    assert page.dialogs == [] and page.problems == []


@pytest.fixture(scope="module")
def live_run(home):
    """A run in progress of a running study (this test process stands in for its driver), whose
    live.json a LiveWriter wrote from two transaction names, one of them failing."""
    study_dir = home / "studies" / LIVE_STUDY
    study_dir.mkdir(parents=True)
    doc = {"study_id": LIVE_STUDY, "name": "s", "title": "live study", "status": "running", "created": "x",
           "workload": {"name": "w"}, "design": {"schedule": [[0, "A"], [0, "B"]]},
           "configurations": [{"name": "A", "base": True}, {"name": "B"}], "runs": [], "comparisons": []}
    (study_dir / "study.json").write_text(json.dumps(doc))
    run_dir = fake_running_run(home, LIVE_RUN, study=LIVE_STUDY)
    recorder = Recorder(["s"], ["read", XSS_TX], ["c"], 0.0)
    engine = FakeEngine(Phases(stagger=0.0, stabilization=2.0, measurement=20.0), recorder)
    writer = LiveWriter(run_dir, LIVE_RUN)
    writer.tick(engine, 0.0)
    for second in range(1, 6):
        for k in range(20):
            t = second - 1 + 0.05 * k
            recorder.add(0, 0, 0, 0, t, t, None, t + 0.001 * (k + 1), True, None, 0.0)
        recorder.add(1, 0, 1, 0, second - 0.5, second - 0.5, None, second - 0.4, False, XSS_ERROR, 0.0)
        writer.tick(engine, float(second))
    return json.loads((run_dir / "live.json").read_text())


def check_live_panel(page, live: dict) -> None:
    expect(page.locator("#live")).to_have_attribute("data-updates", AT_LEAST_1)
    rows = {r["name"]: r for r in live["transactions"]}
    assert set(rows) == {"read", XSS_TX}
    for name, row in rows.items():
        assert texts(page, f'#live-transactions-table tr[data-name="{name}"] td') == \
            [fmt.value(row[k], k) for k in TRANSACTION_KEYS], name
    assert texts(page, "#live-errors-table td") == [XSS_ERROR, XSS_TX, "5"]
    for chart in ("throughput", "response", "util"):
        check_axes(page, f"#live svg[data-chart={chart}]")
    svg = "#live svg[data-chart=throughput]"
    lines = hover_middle(page, svg)
    x = float(page.get_attribute(f"{svg} g.tip", "data-x"))
    point = next(p for p in live["history"] if p["elapsed_s"] == x)
    assert lines[0] == f"{fmt.fixed(x, 0)} s after t0"
    assert f"ETR (T): {fmt.quantity(point['etr_t'], 'etr_t')}" in lines
    assert f"errors/s: {fmt.quantity(point['errors'] / point['span_s'], 'etr_t')}" in lines


def test_a_live_run_shows_its_tables_and_charts(server, live_run, page, tmp_path):
    page.goto(f"{server}runs/{LIVE_RUN}")
    check_live_panel(page, live_run)
    assert page.text_content("#live [data-field=avg_last_t]").endswith(" s")      # seconds, as everywhere
    shot(page, tmp_path, "live-run")
    assert page.dialogs == [] and page.problems == []


def test_a_running_study_shows_its_live_run(server, live_run, page, tmp_path):
    page.goto(f"{server}studies/{LIVE_STUDY}")
    assert page.get_attribute("#current-run", "href") == f"/runs/{LIVE_RUN}"
    check_live_panel(page, live_run)
    shot(page, tmp_path, "live-study")
    assert page.dialogs == [] and page.problems == []


def test_a_study_answer_shows_the_ratio_and_its_interval(server, home, page, tmp_path):
    from perflab.records.study import read_study_document

    study_dir = write_synthetic_study(home, "20260104-000000-worse-0001", 0.8, 1.0)
    doc = read_study_document(study_dir / "study.json")
    entry = next(m for m in doc.comparisons[0].metrics if m.key == "itr_s")
    page.goto(f"{server}studies/{doc.study_id}")
    row = '#primary-verdicts tr[data-key="itr_s"]'
    assert page.text_content(f"{row} td.ratio") == fmt.ratio(entry.ratio, entry)
    level = fmt.percent_level(entry.level or doc.design.confidence)
    assert page.text_content(f"{row} td.interval") == f"{fmt.ci_ratio(entry.ci_low, entry.ci_high)} ({level})"
    assert page.text_content(f"{row} td.verdict-worse") == "WORSE"
    shot(page, tmp_path, "study-answer")
    assert page.dialogs == [] and page.problems == []


def test_compare_overlays_the_runs_of_both_groups(server, stored, page, tmp_path):
    page.goto(f"{server}compare?a=label:A&b=label:B")
    expect(page.locator("#overlay")).to_have_attribute("data-loaded", "1")
    runs = stored.a_runs + stored.b_runs
    for chart in ("throughput", "response", "util"):
        svg = f"#overlay svg[data-chart={chart}]"
        check_axes(page, svg)
        names = {e.get_attribute("data-series") for e in page.query_selector_all(f"{svg} polyline.line")}
        assert {n.split(": ", 1)[1].removesuffix(" (excluded)") for n in names} == set(runs), chart
        assert {n.split(": ", 1)[0] for n in names} == {"A", "B"}
    lines = hover_middle(page, "#overlay svg[data-chart=throughput]")
    assert len(lines) == 1 + len(runs) and all(run in "\n".join(lines) for run in runs)
    shot(page, tmp_path, "compare-overlay")
    assert page.dialogs == [] and page.problems == []

"""The dashboard's history page in Debian's Chromium (Playwright pointed at the system browser, as
tests/serve/test_browser.py): a store with a planted change, `perflab serve` as a user starts it,
and what the page shows -- the series list, one point per run linked to its run's page, the
change point drawn between the right two runs, the table of change points."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import programs
import pytest

from perflab.history.analysis import HistoryOptions, build_history

from .history_data import KNOB, history, workload_file

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is installed by `make test` (test extra)")

CHROMIUM = Path(programs.path("chromium"))
pytestmark = programs.needs("chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
WAIT_MS = 90_000      # a bound on waiting for the page (never a measured time)


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """16 runs of v1, 8 of v2 costing 5% more, their ITR (S) exact (history_data.exact: the planted
    change is the one change point), and a second series (another load) so that the page has a
    list to choose from."""
    root = tmp_path_factory.mktemp("history-browser")
    ids = history(root / "store", workload_file(root), [2.0] * 16 + [2.1] * 8, versions=["v1"] * 16 + ["v2"] * 8,
                  exact_itr=True)
    (root / "b").mkdir()
    history(root / "store", workload_file(root / "b", rate=120), [2.0] * 6, seed=500)
    return root / "store", ids


@pytest.fixture(scope="module")
def server(planted):
    store, _ = planted
    process = subprocess.Popen([sys.executable, "-m", "perflab.cli", "serve", "--store", str(store), "--port", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    if not line.startswith("perflab serve: "):
        process.kill()
        pytest.fail(f"perflab serve did not start: {line}{process.stderr.read()}")
    yield line.split(": ", 1)[1].strip()
    process.terminate()
    process.wait(timeout=30)


@pytest.fixture(scope="module")
def page(server):
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        page.problems = []
        page.on("pageerror", lambda error: page.problems.append(str(error)))
        page.on("console", lambda m: page.problems.append(m.text) if m.type == "error" else None)
        page.set_default_timeout(WAIT_MS)
        yield page
        browser.close()


def test_the_history_page_draws_the_series_its_change_point_and_links_each_run(planted, server, page):
    store, ids = planted
    expected = build_history(store, HistoryOptions(ignore=[KNOB]))
    series = next(s for s in expected.series if len(s.points) == 24)
    (cp,) = series.change_points
    assert cp.after == ids[16]

    # the list: both series, from the navigation
    page.goto(server + "runs")
    page.click("nav >> text=History")
    page.fill("input[name=ignore]", KNOB)
    page.click("form.filters button[type=submit]")
    rows = page.query_selector_all("#series-table tbody tr[data-series]")
    assert len(rows) == 2
    page.click(f'#series-table tr[data-series="{series.id}"] a')

    # the chart: a point per run, each a link to its run; the change point between runs 16 and 17
    page.wait_for_selector("#history-chart")
    points = page.query_selector_all("#history-chart a.point")
    assert [p.get_attribute("data-run") for p in points] == ids
    assert all(p.get_attribute("href") == f"/runs/{p.get_attribute('data-run')}" for p in points)
    (mark,) = page.query_selector_all("#history-chart g.change-point")
    xs = [float(p.query_selector("circle").get_attribute("cx")) for p in points]
    assert xs[15] < float(mark.query_selector("line").get_attribute("x1")) < xs[16]
    assert "worse" in mark.get_attribute("class")
    assert f"run {ids[16]}" in mark.query_selector("title").text_content()
    # the table of change points links both runs either side
    row = page.query_selector('#change-points tr[data-index="16"]')
    assert row is not None
    links = [a.get_attribute("href") for a in row.query_selector_all("a")]
    assert links == [f"/runs/{ids[15]}", f"/runs/{ids[16]}"]
    assert "v1 → v2" in row.inner_text()

    # a point opens its run's page
    points[20].click()
    page.wait_for_url(f"**/runs/{ids[20]}")
    assert ids[20] in page.title()
    assert page.problems == []

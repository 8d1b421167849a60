"""End to end in a real browser: Debian's Chromium, driven by Playwright (pointed at the
system browser; Playwright's own browser download is not used). The server is `perflab serve`
as a user starts it; a run is started from the command line while the browser watches.

Screenshots are kept in the test's temporary directory and checked not to be blank.
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import sys
from pathlib import Path

import programs
import pytest
from cli_helpers import perflab

from perflab.store.catalog import Store

from .serve_data import XSS_ERROR, XSS_STUDY_TITLE, XSS_TX, XSS_WORKLOAD

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is installed by `make test` (test extra)")

CHROMIUM = Path(programs.path("chromium"))
pytestmark = programs.needs("chromium")
# Headless Chromium stalls on a closed network without these.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
WAIT_MS = 90_000      # a bound on waiting for the page to show something (never a measured time)
# Counters the page's script keeps in data attributes. Waiting on them uses Playwright's
# locators: a wait_for_function predicate would be eval'd, which the pages' policy forbids.
AT_LEAST_1 = re.compile(r"^[1-9]\d*$")
AT_LEAST_3 = re.compile(r"^([3-9]|[1-9]\d+)$")
expect = sync_api.expect
expect.set_options(timeout=WAIT_MS)


@pytest.fixture(scope="module")
def home(stored, tmp_path_factory) -> Path:
    """A copy of the shared store: the live run of these tests is added to it, not to the original."""
    path = tmp_path_factory.mktemp("browser") / "store"
    shutil.copytree(stored.home, path)
    Store(path).rescan(rebuild=True)      # the catalog holds absolute paths: point it at the copy
    return path


@pytest.fixture(scope="module")
def server(home):
    process = subprocess.Popen([sys.executable, "-m", "perflab.cli", "serve", "--store", str(home), "--port", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    if not line.startswith("perflab serve: "):
        process.kill()
        pytest.fail(f"perflab serve did not start: {line}{process.stderr.read()}")
    yield line.split(": ", 1)[1].strip()
    process.terminate()
    process.wait(timeout=30)


@pytest.fixture(scope="module")
def browser(server):
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.dialogs = []             # an alert() would mean a string was run as script
    page.problems = []            # script errors and policy violations
    page.on("dialog", lambda dialog: (page.dialogs.append(dialog.message), dialog.dismiss()))
    page.on("pageerror", lambda error: page.problems.append(str(error)))
    page.on("console", lambda m: page.problems.append(m.text) if m.type == "error" and "Security Policy" in m.text
            else None)
    page.set_default_timeout(WAIT_MS)
    yield page
    context.close()


def shot(page, directory: Path, name: str) -> Path:
    """A screenshot, checked not to be blank: many colours, and no one colour on nearly every pixel."""
    from PIL import Image

    path = directory / f"{name}.png"
    image = Image.open(io.BytesIO(page.screenshot(path=str(path), full_page=True))).convert("RGB")
    colours = image.getcolors(maxcolors=1 << 24)
    commonest = max(colours)[0] / (image.width * image.height)
    assert len(colours) > 50 and commonest < 0.95, f"{name}: blank screenshot ({len(colours)} colours)"
    return path


def report_frame(page):
    page.wait_for_selector("iframe#report[data-loaded='1']")
    return page.query_selector("iframe#report").content_frame()


def test_a_live_run_appears_updates_and_becomes_its_report(server, home, stored, page, tmp_path):
    page.goto(server + "runs")
    expect(page.locator("#runs-list")).to_have_attribute("data-updates", AT_LEAST_1)   # the stream is on
    # A plain `perflab run`: the run lifecycle writes live.json for every run.
    run = subprocess.Popen([sys.executable, "-m", "perflab.cli", "run", str(stored.workloads / "live.yaml"), "-q",
                            "--store", str(home)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # The list's stream sees the new run and the page reloads with it, running.
        row = page.wait_for_selector("tr.status-running")
        assert row.query_selector("td.workload").inner_text() == XSS_WORKLOAD
        expect(page.locator("tr.status-running [data-live-field=etr_t]")).to_contain_text("tx/s")
        shot(page, tmp_path, "runs-live")
        row.query_selector("a").click()

        # The run page follows live.json every second ...
        page.wait_for_selector("#live")
        expect(page.locator("#live")).to_have_attribute("data-updates", AT_LEAST_3)
        # the registry's units and decimals, as every report prints them
        assert re.fullmatch(r"[\d,]+\.\d\d tx/s", page.inner_text("#live [data-field=etr_t]"))
        assert re.fullmatch(r"\d+\.\d+ s", page.inner_text("#live [data-field=avg_last_t]"))
        assert re.fullmatch(r"\d+\.\d\d%", page.inner_text("#live [data-field=util_proc_s]"))
        assert page.inner_text("#live [data-field=last_error]") == f"RuntimeError: {XSS_ERROR}"
        assert len(page.query_selector_all("#live svg[data-chart=throughput] polyline.line")) >= 1
        assert page.text_content(f'#live-transactions-table tr[data-name="{XSS_TX}"] th') == XSS_TX
        shot(page, tmp_path, "run-live")

        # ... and when the run ends the page is its stored report.
        frame = report_frame(page)
        assert page.inner_text("#status") == "complete"
        assert frame.inner_text("#title").endswith(XSS_WORKLOAD)
        assert frame.query_selector_all("script") == []
        assert frame.query_selector("#chart-etr svg") is not None
        shot(page, tmp_path, "run-report")
    finally:
        out, err = run.communicate(timeout=120)
    # one script in ten fails on purpose (serve_data's XSS workload): complete, and its error
    # rate excludes it from a verdict -- `perflab run` exits 5
    assert run.returncode == 5, err[-2000:]
    assert page.dialogs == [] and page.problems == []


def test_compare_page_shows_the_verdicts_and_exit_code_of_perflab_compare(server, stored, page, tmp_path):
    expected = perflab("compare", "label:A", "label:B", store=stored.home).returncode
    assert expected in (0, 1, 3, 4)
    page.goto(server + "compare")
    page.fill("#compare-form input[name=a]", "label:A")
    page.fill("#compare-form input[name=b]", "label:B")
    page.click("#compare-form button[type=submit]")
    page.wait_for_selector("#exit-code")
    assert page.inner_text("#exit-code") == str(expected)
    assert page.inner_text("#verdicts tbody tr.primary th") == "ITR (S)"     # the primary row comes first
    assert page.inner_text("#verdicts tbody th") == "ITR (S)"
    frame = report_frame(page)
    assert frame.query_selector("#general-observations") is not None
    shot(page, tmp_path, "compare")
    assert page.dialogs == [] and page.problems == []


def test_user_strings_are_shown_as_text(server, stored, page, tmp_path):
    page.goto(server + "runs?workload=script")
    page.wait_for_selector("td.workload")
    assert {cell.inner_text() for cell in page.query_selector_all("td.workload")} == {XSS_WORKLOAD}
    assert page.evaluate("document.scripts.length") == 1          # only /static/app.js
    page.goto(f"{server}runs/{stored.xss_run}")
    assert page.inner_text("h1 .workload") == XSS_WORKLOAD
    frame = report_frame(page)
    assert frame.inner_text("#errors td.message") == f"RuntimeError: {XSS_ERROR}"
    assert frame.query_selector("#errors img") is None
    shot(page, tmp_path, "xss-run")
    page.goto(f"{server}studies/{stored.study_id}")
    assert page.inner_text("h1") == XSS_STUDY_TITLE
    assert report_frame(page).inner_text("h1") == XSS_STUDY_TITLE
    shot(page, tmp_path, "study")
    assert page.dialogs == [] and page.problems == []

"""The web application, through HTTP (aiohttp's test server on the loopback): pages, filters,
downloads, compare, live streams, the token, the Host check, the policy, and read-only."""

from __future__ import annotations

import asyncio
import html
import json
import re
import subprocess
import sys
from functools import partial
from pathlib import Path
from urllib.parse import urlencode

import pytest
from aiohttp.test_utils import TestClient, TestServer
from cli_helpers import perflab

from perflab.drive.live import LiveWriter
from perflab.drive.load.engine import Phases
from perflab.drive.load.recorder import Recorder
from perflab.serve.app import create_app
from perflab.serve.security import PAGE_CSP, REPORT_CSP, TOKEN_COOKIE
from perflab.store.catalog import Store

from .serve_data import (
    XSS_DESCRIPTION,
    XSS_ERROR,
    XSS_LABEL,
    XSS_STUDY_TITLE,
    XSS_WORKLOAD,
    fake_running_run,
    finish_fake_run,
    write_synthetic_study,
)
from .test_live_writer import FakeEngine, add

EVENT_WAIT_S = 20.0   # a bound on waiting for one event (never a measured time)


def call(app, fn):
    """Run `fn(client)` against a fresh application (`app` makes one: an application is bound
    to the event loop it first ran on)."""
    async def main():
        async with TestClient(TestServer(app())) as client:
            return await fn(client)

    return asyncio.run(main())


def get_all(app, *paths: str, **kwargs) -> list[tuple[int, dict, str]]:
    async def fn(client):
        out = []
        for path in paths:
            response = await client.get(path, **kwargs)
            out.append((response.status, dict(response.headers), await response.text()))
        return out

    return call(app, fn)


async def events(client, path: str, count: int) -> list[tuple[str, dict]]:
    """The first `count` server-sent events of a stream."""
    response = await client.get(path)
    assert response.status == 200 and response.headers["Content-Type"].startswith("text/event-stream")
    out, event = [], None
    while len(out) < count:
        line = (await asyncio.wait_for(response.content.readline(), EVENT_WAIT_S)).decode()
        if line.startswith("event: "):
            event = line[len("event: "):].strip()
        elif line.startswith("data: "):
            out.append((event, json.loads(line[len("data: "):])))
    response.close()
    return out


# -- lists, pages, downloads ------------------------------------------------------------------------

def test_runs_list_filters_by_the_catalog_columns(stored):
    app = partial(create_app, stored.home)
    (s1, _, by_label), (s2, _, by_workload), (s3, _, none), (s4, _, dated), (s5, _, bad) = get_all(
        app, "/runs?label=A", "/runs?workload=script", "/runs?status=failed", "/runs?since=2000-01-01&until=2000-12-31",
        "/runs?status=nonsense")
    assert (s1, s2, s3, s4) == (200, 200, 200, 200)
    listed = lambda text: set(re.findall(r'<tr data-run="([^"]+)"', text))
    assert listed(by_label) == set(stored.a_runs)
    assert listed(by_workload) == {stored.xss_run}
    assert listed(none) == set() and listed(dated) == set()
    assert s5 == 400 and "status: expected one of running, complete" in bad
    api = json.loads(get_all(app, "/api/runs?label=B")[0][2])
    assert sorted(r["run_id"] for r in api) == sorted(stored.b_runs) and {r["status"] for r in api} == {"complete"}


def test_studies_list_filters_by_workload_status_and_date(stored):
    app = partial(create_app, stored.home)
    (s1, _, by_workload), (s2, _, other), (s3, _, later), (s4, _, bad) = get_all(
        app, "/studies?workload=PLAIN&status=complete", "/studies?workload=script", "/studies?since=2100-01-01",
        "/studies?until=31.12.2026")
    listed = lambda text: set(re.findall(r'<tr data-study="([^"]+)"', text))
    assert (s1, s2, s3) == (200, 200, 200)
    assert listed(by_workload) == {stored.study_id} and listed(other) == set() and listed(later) == set()
    assert s4 == 400 and "until: expected a date YYYY-MM-DD" in bad


def test_pages_escape_user_text(stored):
    app = partial(create_app, stored.home)
    pages = get_all(app, "/runs", f"/runs/{stored.xss_run}", f"/runs/{stored.xss_run}/report.html", "/studies",
                    f"/studies/{stored.study_id}", f"/studies/{stored.study_id}/report.html")
    for status, _, text in pages:
        assert status == 200
        for raw in (XSS_WORKLOAD, XSS_DESCRIPTION, XSS_ERROR, XSS_LABEL, XSS_STUDY_TITLE):
            assert raw not in text
    assert html.escape(XSS_WORKLOAD, quote=False) in pages[0][2]
    assert html.escape(XSS_ERROR, quote=False) in pages[2][2]
    assert html.escape(XSS_STUDY_TITLE, quote=False) in pages[4][2]


def test_a_run_page_shows_its_thresholds(stored):
    """The XSS workload declares one threshold any run meets and one its failing script violates
    (test_run_report states the probability)."""
    (status, _, page), = get_all(partial(create_app, stored.home), f"/runs/{stored.xss_run}")
    line = page.split('id="thresholds"', 1)[1].split("</p>", 1)[0]
    assert status == 200 and "1 of 2 violated" in line
    assert re.search(r"<code>tx_ok &gt; 0</code> <span class=\"threshold-pass\">pass</span>", line)
    assert re.search(r"<code>error_pct_t &lt; 1</code> <span class=\"threshold-fail\">FAIL</span>", line)


def test_pages_run_only_the_shipped_script_under_the_policy(stored):
    app = partial(create_app, stored.home)
    pages = get_all(app, "/runs", f"/runs/{stored.a_runs[0]}", "/studies", f"/studies/{stored.study_id}",
                    "/compare?a=label:A&b=label:B", "/compare")
    for status, headers, text in pages:
        assert status == 200, text
        assert headers["Content-Security-Policy"] == PAGE_CSP
        assert "script-src 'self'" in PAGE_CSP and "unsafe-inline" not in PAGE_CSP
        scripts = re.findall(r"<script\b[^>]*>", text)
        assert scripts == ['<script src="/static/app.js" defer>'], scripts
        assert not re.search(r"\son[a-z]+=", text), "no inline event handlers"
    status, headers, _ = get_all(app, f"/runs/{stored.a_runs[0]}/report.html")[0]
    assert status == 200 and headers["Content-Security-Policy"] == REPORT_CSP


def test_downloads_are_the_stored_files(stored):
    app = partial(create_app, stored.home)
    run_dir = stored.home / "runs" / stored.xss_run

    async def fn(client):
        out = {}
        for name in ("transactions.parquet", "samples.parquet", "run.json"):
            response = await client.get(f"/runs/{stored.xss_run}/files/{name}")
            out[name] = (response.status, response.headers.get("Content-Disposition"), await response.read())
        for fmt in ("html", "md", "json"):
            response = await client.get(f"/runs/{stored.xss_run}/report.{fmt}?download=1")
            out[fmt] = (response.status, response.headers.get("Content-Disposition"), await response.read())
        response = await client.get(f"/studies/{stored.study_id}/report.md?download=1")
        out["study"] = (response.status, None, await response.read())
        return out

    out = call(app, fn)
    for name in ("transactions.parquet", "samples.parquet", "run.json"):
        status, disposition, body = out[name]
        assert status == 200 and body == (run_dir / name).read_bytes()
        assert disposition == f'attachment; filename="{stored.xss_run}-{name}"'
    assert out["html"][2].startswith(b"<!DOCTYPE html>") and out["html"][1].startswith("attachment")
    assert json.loads(out["json"][2])["run_id"] == stored.xss_run
    assert out["md"][2].decode().startswith(f"# Run {stored.xss_run}")
    assert out["study"][2] == (stored.home / "studies" / stored.study_id / "report.md").read_bytes()


def test_ids_cannot_leave_the_store(stored):
    app = partial(create_app, stored.home)
    # (A literal /runs/.. never reaches the server: clients normalize it to /.)
    results = get_all(app, "/runs/.hidden", "/runs/a..b", "/runs/..%2Fcatalog.sqlite", f"/runs/{stored.xss_run}/files/..",
                      f"/runs/{stored.xss_run}/files/metrics.json", "/studies/..%2F..", "/runs/no-such-run",
                      "/static/../catalog.sqlite", "/compare?a=/etc&b=label:B", "/compare?a=*&b=label:B")
    statuses = [status for status, _, _ in results]
    assert all(status in (400, 403, 404) for status in statuses), statuses
    assert statuses[-2:] == [400, 400]
    assert "expected run ids" in results[-2][2]


# -- compare ---------------------------------------------------------------------------------------

def _verdicts(doc: dict) -> list[tuple]:
    return [(m["key"], m["role"], m["verdict"], m["verdict_unadjusted"], m["adjustment"], m["no_comparison"])
            for c in doc["comparisons"] for m in c["metrics"]]


def test_compare_gives_the_clis_verdicts_and_exit_code(stored, tmp_path):
    """The same stored runs through `perflab compare` and through the page: the verdicts and the
    exit code agree (both are computed from the same files, so this holds whatever the runs
    measured)."""
    cli = perflab("compare", "label:A", "label:B", "--out", str(tmp_path), store=stored.home)
    assert cli.returncode in (0, 1, 3, 4), cli.stderr
    cli_doc = json.loads((tmp_path / "study.json").read_text())
    app = partial(create_app, stored.home)
    (s1, _, page), (s2, _, api), (s3, headers, frame) = get_all(
        app, "/compare?a=label:A&b=label:B", "/api/compare?a=label:A&b=label:B", "/compare/report.html?a=label:A&b=label:B")
    assert (s1, s2, s3) == (200, 200, 200)
    data = json.loads(api)
    assert data["exit_code"] == cli.returncode == cli_doc["verdict"]["exit_code"]
    assert data["meaning"] == cli_doc["verdict"]["meaning"] and data["verdict"] == cli_doc["verdict"]
    assert re.search(rf'<strong id="exit-code">{cli.returncode}</strong>', page)
    assert html.escape(cli_doc["verdict"]["meaning"], quote=False) in page
    assert _verdicts(data["report"]) == _verdicts(cli_doc)
    assert [m["key"] for m in data["primary"]] == ["itr_s"]
    assert headers["Content-Security-Policy"] == REPORT_CSP and 'id="general-observations"' in frame


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> Path:
    """A store of three studies whose verdicts are known in advance (serve_data.write_synthetic_study)."""
    home = tmp_path_factory.mktemp("synthetic") / "store"
    write_synthetic_study(home, "20260102-000000-eq-0001", 1.0, 2.0, aa=True)   # EQUIVALENT; PBT doubles
    write_synthetic_study(home, "20260102-000000-worse-0002", 0.8, 1.0)         # ITR (S) 20% lower: WORSE
    write_synthetic_study(home, "20260102-000000-none-0003", 1.0, 1.0, exclude_new=True)  # every B run excluded
    return home


def _rows(page: str) -> list[tuple[str, str, str]]:
    """(role, key, verdict cell) of each row of the compare page's verdict table."""
    table = page.split('id="verdicts"', 1)[1].split("</table>", 1)[0]
    return [(role, key, html.unescape(re.sub(r"<[^>]+>", "", cell)).strip()) for role, key, cell in re.findall(
        r'<tr class="(primary|secondary)" data-key="([^"]+)">.*?<td class="verdict-[a-z]+">(.*?)</td></tr>', table,
        re.S)]


@pytest.mark.parametrize("study_id, code, rows", [
    ("20260102-000000-eq-0001", 0, [("primary", "itr_s", "EQUIVALENT"),
                                    # the primary claims are not all rejected: PBT/CMD is not tested
                                    ("secondary", "pbt_cmd_s", "worse, untested")]),
    ("20260102-000000-worse-0002", 1, [("primary", "itr_s", "WORSE (material)"),
                                       ("secondary", "pbt_cmd_s", "EQUIVALENT")]),
    ("20260102-000000-none-0003", 4, [("primary", "itr_s", "no valid comparison"),
                                      ("secondary", "pbt_cmd_s", "no valid comparison")]),
])
def test_compare_shows_each_exit_code_and_verdict_of_perflab_compare(synthetic, study_id, code, rows):
    """Studies whose numbers are chosen so each outcome is known: exit 0 (with a secondary shown
    with its untested call), 1 and 4; the page agrees with the command, primary rows first."""
    a, b = f"study:{study_id}:A", f"study:{study_id}:B"
    cli = perflab("compare", a, b, store=synthetic)
    assert cli.returncode == code, cli.stderr
    query = urlencode({"a": a, "b": b})
    (s1, _, page), (s2, _, api) = get_all(partial(create_app, synthetic), f"/compare?{query}", f"/api/compare?{query}")
    assert (s1, s2) == (200, 200)
    data = json.loads(api)
    assert data["exit_code"] == code and f'<strong id="exit-code">{code}</strong>' in page
    assert f'class="exit exit-{code}"' in page
    got = _rows(page)
    assert [(role, key) for role, key, _ in got] == [(role, key) for role, key, _ in rows]
    for (_, _, shown), (_, _, expected) in zip(got, rows):
        assert shown.startswith(expected), (shown, expected)
    if code == 4:
        assert "0 valid of 6 run(s) of B" in data["meaning"] and html.escape(data["meaning"], quote=False) in page
        # the reason once, above the table, not repeated on every row
        reasons = page.split('id="no-comparison"', 1)[1].split("</ul>", 1)[0]
        assert reasons.count("<li>") == 1 and all(shown == "no valid comparison" for _, _, shown in got)


def test_a_study_page_shows_its_answer_aa_noise_and_exclusions(synthetic):
    app = partial(create_app, synthetic)
    (s1, _, eq), (s2, _, none) = get_all(app, "/studies/20260102-000000-eq-0001", "/studies/20260102-000000-none-0003")
    assert (s1, s2) == (200, 200)
    assert '<span id="meaning">every primary verdict is EQUIVALENT or BETTER</span>' in eq
    assert '<strong id="exit-code">0</strong>' in eq and '<strong id="exit-code">4</strong>' in none
    primary = eq.split('id="primary-verdicts"', 1)[1].split("</table>", 1)[0]
    assert re.search(r'<th scope="row">ITR \(S\)</th><td>A → B</td>.*<td class="verdict-equivalent">EQUIVALENT</td>',
                     primary, re.S)
    aa = eq.split('id="aa"', 1)[1].split("</section>", 1)[0]
    for shown in ("<dd>1.23%</dd>", "<dd>6</dd>", "<dd>1</dd>", "B vs A: ITR (S) BETTER", "<dd>4</dd>",
                  "<dd>0.91</dd>"):
        assert shown in aa, shown
    noise = eq.split('id="noise-table"', 1)[1].split("</table>", 1)[0]
    assert re.search(r"<th scope=\"row\">ITR \(S\)</th><td>A</td><td>6</td><td>1.23%</td><td>0.45%</td>"
                     r"<td>na</td><td>4</td>", noise)  # na: no paired CV in this stored row
    assert 'id="aa"' not in none and 'id="noise"' not in none
    runs = none.split('id="study-runs"', 1)[1].split("</table>", 1)[0]
    first_b = runs.split('data-run="20260102-000000-none-0003-B0"', 1)[1].split("</tr>", 1)[0]
    assert '<code class="code">driver_saturated</code>' in first_b and '<code class="code">error_rate</code>' in first_b
    assert "error rate 20.0% above 1.0%" in first_b
    assert runs.count('<code class="code">error_rate</code>') == 6


def test_a_run_page_shows_why_the_run_is_invalid(synthetic):
    run_id = "20260102-000000-none-0003-B0"
    app = partial(create_app, synthetic)
    (s1, _, page), (s2, _, report) = get_all(app, f"/runs/{run_id}", f"/runs/{run_id}/report.html")
    assert (s1, s2) == (200, 200)
    invalid = page.split('id="invalid"', 1)[1].split("</ul>", 1)[0]
    assert '<code class="code">driver_saturated</code> driver CPU 97% of one core' in invalid
    assert '<span class="badge invalid" id="outcome" title="driver CPU 97% of one core' in page
    assert ">invalid (driver saturated)</span>" in page
    # The report: the record's reasons, and the study's own decision with its codes.
    assert '<section id="invalid">' in report and '<code class="code">driver_saturated</code>' in report
    exclusions = report.split('id="exclusions"', 1)[1].split("</ul>", 1)[0]
    assert "The study's exclusions" in exclusions and '<code class="code">error_rate</code>' in exclusions


def test_compare_rejects_bad_input_with_one_line(stored):
    app = partial(create_app, stored.home)
    results = get_all(app, "/compare?a=label:A", "/compare?a=label:A&b=label:B&margin=2",
                      "/compare?a=label:A&b=label:nobody", "/api/compare?a=label:A&b=label:A")
    assert [r[0] for r in results] == [400, 400, 400, 400]
    assert "B: give both groups" in results[0][2]
    assert "margin: expected a number between 0 and 0.5" in results[1][2]
    assert "no runs found for &#39;label:nobody&#39;" in results[2][2]
    assert "A and B share runs" in results[3][2]


# -- safe by default -----------------------------------------------------------------------------------

def test_a_token_is_checked_on_every_request(stored):
    token = "t" * 24
    app = partial(create_app, stored.home, token=token, check_host=False)
    run = stored.a_runs[0]

    async def fn(client):
        out = {}
        for path in ("/runs", f"/runs/{run}/files/run.json", "/static/app.js", f"/events/runs/{run}", "/api/runs",
                     f"/runs/{run}/report.html"):
            out[path] = (await client.get(path)).status
        out["wrong"] = (await client.get("/runs?token=" + "x" * 24)).status
        out["bearer"] = (await client.get("/runs", headers={"Authorization": f"Bearer {token}"})).status
        first = await client.get(f"/runs?token={token}")
        out["query"] = first.status
        out["cookie"] = first.cookies.get(TOKEN_COOKIE)
        # the client keeps the cookie: later requests (the live stream too) need no parameter
        out["after"] = (await client.get("/static/app.js")).status
        stream = await client.get(f"/events/runs/{run}")
        out["stream"] = (stream.status, (await stream.text()).splitlines()[0])
        return out

    out = call(app, fn)
    assert {v for k, v in out.items() if k.startswith("/")} == {401}
    assert out["wrong"] == 401 and out["bearer"] == 200 and out["query"] == 200 and out["after"] == 200
    cookie = out["cookie"]
    assert cookie is not None and cookie.value == token and cookie["httponly"] and cookie["samesite"] == "Strict"
    assert out["stream"] == (200, "event: end")   # the run is complete: the stream says so and ends


def test_loopback_server_answers_only_loopback_host_names(stored):
    app = partial(create_app, stored.home)
    results = get_all(app, "/runs", headers={"Host": "attacker.example:8765"})
    assert results[0][0] == 403
    for host in ("localhost:8765", "127.0.0.1", "[::1]:80"):
        assert get_all(app, "/runs", headers={"Host": host})[0][0] == 200, host


def _tree(home: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(home)): (p.stat().st_size, p.stat().st_mtime_ns) for p in home.rglob("*")
            if p.is_file() and not p.name.startswith("catalog.sqlite")}


def test_the_server_writes_nothing_to_the_store(stored):
    before, rows_before = _tree(stored.home), [r.__dict__ for r in Store(stored.home).rows()]
    app = partial(create_app, stored.home)
    paths = ["/runs", "/studies", "/compare", "/compare?a=label:A&b=label:B", "/api/compare?a=label:A&b=label:B",
             f"/studies/{stored.study_id}", "/api/runs"]
    for run in [stored.xss_run, *stored.a_runs]:
        paths += [f"/runs/{run}", f"/runs/{run}/report.html", f"/runs/{run}/report.json", f"/runs/{run}/files/run.json"]
    assert {status for status, _, _ in get_all(app, *paths)} == {200}
    assert _tree(stored.home) == before
    assert [r.__dict__ for r in Store(stored.home).rows()] == rows_before


# -- live ------------------------------------------------------------------------------------------

def test_a_running_run_streams_its_live_json_then_ends(tmp_path):
    home = tmp_path / "store"
    run_dir = fake_running_run(home, "20260101-000000-live-0001")
    recorder = Recorder(["s"], ["t"], ["c"], 0.0)
    engine = FakeEngine(Phases(1.0, 1.0, 10.0), recorder)
    writer = LiveWriter(run_dir, run_dir.name)
    for second in range(3):
        for k in range(4):
            add(recorder, second + 0.1 * k, second + 0.1 * k + 0.02, ok=k != 3, error=XSS_ERROR)
        writer.tick(engine, float(second))
    app = partial(create_app, home)

    async def fn(client):
        page = await (await client.get(f"/runs/{run_dir.name}")).text()
        listing = await (await client.get("/runs")).text()
        first = await events(client, f"/events/runs/{run_dir.name}", 1)
        listed = await events(client, "/events/runs", 1)
        finish_fake_run(home, run_dir)
        rest = await events(client, f"/events/runs/{run_dir.name}", 1)
        return page, listing, first, listed, rest

    page, listing, first, listed, rest = call(app, fn)
    assert 'id="live" data-events="/events/runs/20260101-000000-live-0001"' in page
    assert 'class="status-running"' in listing
    (event, data), = first
    assert event == "live" and data["status"] == "running"
    live = data["live"]
    assert live["etr_t"] == pytest.approx(3.0) and live["errors"] == 3 and live["tx_completed"] == 9
    assert live["last_error"] == XSS_ERROR and live["phase"] == "measurement" and len(live["history"]) == 2
    assert listed[0][0] == "runs" and listed[0][1]["live"][run_dir.name]["tx_completed"] == 9
    assert rest == [("end", {"status": "interrupted"})]


def test_a_running_study_streams_its_progress_and_its_live_run(tmp_path):
    home = tmp_path / "store"
    study_id = "20260101-000000-study-0001"
    study_dir = home / "studies" / study_id
    study_dir.mkdir(parents=True)
    doc = {"study_id": study_id, "name": "s", "title": XSS_STUDY_TITLE, "status": "running", "created": "x",
           "workload": {"name": XSS_WORKLOAD}, "design": {"schedule": [[0, "A"], [0, "B"]]},
           "configurations": [{"name": "A", "base": True}, {"name": "B"}], "runs": [], "comparisons": []}
    (study_dir / "study.json").write_text(json.dumps(doc))
    run_dir = fake_running_run(home, "20260101-000001-live-0002", study=study_id)
    writer = LiveWriter(run_dir, run_dir.name)
    writer.tick(FakeEngine(Phases(0.0, 0.0, 5.0), Recorder(["s"], ["t"], ["c"], 0.0)), 1.0)
    app = partial(create_app, home)

    async def fn(client):
        page = await client.get(f"/studies/{study_id}")
        frame = await client.get(f"/studies/{study_id}/report.html")
        got = await events(client, f"/events/studies/{study_id}", 1)
        finish_fake_run(home, run_dir)
        doc["status"] = "interrupted"
        (study_dir / "study.json").write_text(json.dumps(doc))
        ended = await events(client, f"/events/studies/{study_id}", 2)
        return page.status, await page.text(), frame.status, await frame.text(), got, ended

    status, page, frame_status, frame, got, ended = call(app, fn)
    assert status == 200 and f'href="/runs/{run_dir.name}" id="current-run"' in page
    assert frame_status == 200 and html.escape(XSS_STUDY_TITLE, quote=False) in frame
    (event, state), = got
    assert event == "study" and state["status"] == "running" and (state["done"], state["planned"]) == (0, 2)
    assert state["current"]["run_id"] == run_dir.name and state["current"]["live"]["phase"] == "measurement"
    assert [e for e, _ in ended] == ["study", "end"] and ended[1][1] == {"status": "interrupted"}


# -- the command ---------------------------------------------------------------------------------------

def _start(*args: str) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen([sys.executable, "-m", "perflab.cli", "serve", *args], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    assert line.startswith("perflab serve: http://"), process.stderr.read() if process.poll() is not None else line
    return process, line.split(": ", 1)[1].strip()


def test_serve_on_another_address_generates_and_requires_a_token(stored):
    import urllib.error
    import urllib.request

    # Listening on every address; the requests go to the loopback only.
    process, url = _start("--store", str(stored.home), "--host", "0.0.0.0", "--port", "0")
    try:
        assert re.fullmatch(r"http://0\.0\.0\.0:\d+/\?token=[A-Za-z0-9_-]{32}", url)
        local = url.replace("0.0.0.0", "127.0.0.1")
        with urllib.request.urlopen(local.replace("/?", "/runs?"), timeout=30) as response:
            assert response.status == 200
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(local.split("?")[0] + "runs", timeout=30)
        assert refused.value.code == 401
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert process.returncode == 0


def test_serve_refuses_bad_arguments_in_one_line(tmp_path, stored):
    missing = perflab("serve", "--store", str(tmp_path / "nowhere"), "--port", "0")
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "no run store at" in missing.stderr
    short = perflab("serve", "--store", str(stored.home), "--token", "short", "--port", "0")
    assert short.returncode == 2 and "--token: a token needs at least 16 characters" in short.stderr

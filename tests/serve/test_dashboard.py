"""The dashboard's own views over HTTP: the per-transaction table, the charts' data and the CSV
files are the reduction's numbers; the study answer carries the ratio and its interval; the
compare overlay has every run of both groups; bad ids and runs without data are a 4xx page."""

from __future__ import annotations

import csv
import html
import io
import json
import re
from functools import partial
from urllib.parse import urlencode

from perflab.reduce.reduce import INTERVAL_KEYS, TRANSACTION_KEYS, reduce_run
from perflab.report import numbers as fmt
from perflab.report.run.model import heading
from perflab.serve.app import create_app
from perflab.report.run.data import cell
from perflab.serve.security import DOWNLOAD_CSP

from .serve_data import XSS_TX, fake_running_run, write_synthetic_study
from .test_app import get_all


def table_rows(page: str, table_id: str) -> dict[str, list[str]]:
    """A server-rendered table keyed by its first column: name -> the other cells (unescaped)."""
    body = page.split(f'id="{table_id}"', 1)[1].split("</table>", 1)[0]
    out = {}
    for row in re.findall(r"<tr data-name=\"[^\"]*\">(.*?)</tr>", body, re.S):
        cells = [html.unescape(c) for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S)]
        out[cells[0]] = cells[1:]
    return out


def read_csv(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def number(text: str) -> float | None:
    return None if text == "" else float(text)


def test_the_run_page_shows_each_transaction_name_with_the_reductions_numbers(stored):
    run_dir = stored.home / "runs" / stored.xss_run
    metrics = reduce_run(run_dir)
    (status, _, page), = get_all(partial(create_app, stored.home), f"/runs/{stored.xss_run}")
    assert status == 200
    rows = table_rows(page, "transactions-table")
    assert set(rows) == set(metrics.per_transaction) == {"ok", XSS_TX}
    header = page.split('id="transactions-table"', 1)[1].split("</thead>", 1)[0]
    assert [html.unescape(h) for h in re.findall(r"<th scope=\"col\">(.*?)</th>", header)] == \
        ["transaction"] + [heading(k) for k in TRANSACTION_KEYS]
    for name, row in metrics.per_transaction.items():
        assert rows[name] == [fmt.value(row[k], k) for k in TRANSACTION_KEYS], name
    # the failing transaction (one script in ten; serve_data) fails every time it runs
    assert rows[XSS_TX][TRANSACTION_KEYS.index("tx_ok")] == "0"
    assert html.escape(XSS_TX, quote=False) in page and XSS_TX not in page
    errors = page.split('id="errors-table"', 1)[1].split("</table>", 1)[0]
    assert "RuntimeError: &lt;img" in errors and html.escape(XSS_TX, quote=False) in errors
    for link in ("intervals.csv", "transactions.csv"):
        assert f'href="/runs/{stored.xss_run}/{link}" download' in page
    assert 'data-src="/runs/%s/data.json"' % stored.xss_run in page


def test_the_csv_files_and_the_chart_data_are_the_reductions_rows(stored):
    run_id = stored.a_runs[0]
    run_dir = stored.home / "runs" / run_id
    metrics = reduce_run(run_dir, timeline=True)
    (s1, h1, intervals), (s2, _, transactions), (s3, _, data) = get_all(
        partial(create_app, stored.home), f"/runs/{run_id}/intervals.csv", f"/runs/{run_id}/transactions.csv",
        f"/runs/{run_id}/data.json")
    assert (s1, s2, s3) == (200, 200, 200)
    assert h1["Content-Type"].startswith("text/csv") and h1["Content-Security-Policy"] == DOWNLOAD_CSP
    assert h1["Content-Disposition"] == f'attachment; filename="{run_id}-intervals.csv"'
    rows = read_csv(intervals)
    assert list(rows[0]) == ["t_start", "t_end", "in_window", *INTERVAL_KEYS]
    assert len(rows) == len(metrics.timeline) > len(metrics.per_interval) > 0
    for got, want in zip(rows, metrics.timeline):
        assert {k: number(got[k]) for k in want} == want
    window = [r for r in rows if r["in_window"] == "1"]
    assert [{k: number(r[k]) for k in ("t_start", "t_end", *INTERVAL_KEYS)} for r in window] == metrics.per_interval
    assert sum(number(r["tx_ok"]) for r in rows if r["in_window"] == "0") > 0     # the ramp-up is there
    by_name = {r["transaction"]: r for r in read_csv(transactions)}
    assert set(by_name) == set(metrics.per_transaction)
    for name, want in metrics.per_transaction.items():
        assert {k: number(by_name[name][k]) for k in TRANSACTION_KEYS} == want
    document = json.loads(data)
    assert document["window"] == {"start": metrics.window.start, "end": metrics.window.end,
                                  "duration_s": metrics.window.duration}
    assert [r["t_start"] for r in document["intervals"]] == [r["t_start"] for r in metrics.timeline]
    assert document["units"]["resp_p95_t"] == {"label": "RESP P95 (T)", "unit": "s", "decimals": 3}


def test_csv_cells_read_back_and_a_name_is_never_a_formula():
    assert [cell(None), cell(0.1), cell(3), cell(True)] == ["", "0.1", "3", "1"]
    assert float(cell(1 / 3)) == 1 / 3
    assert [cell("=HYPERLINK(1)"), cell("+1"), cell("-x"), cell("@a"), cell("plain")] == \
        ["'=HYPERLINK(1)", "'+1", "'-x", "'@a", "plain"]


def test_bad_ids_and_runs_without_data_get_a_clear_4xx(stored, tmp_path):
    home = tmp_path / "store"
    running = fake_running_run(home, "20260101-000000-live-0009")
    results = get_all(partial(create_app, home), f"/runs/{running.name}/intervals.csv",
                      f"/runs/{running.name}/data.json", "/runs/a..b/intervals.csv", "/runs/no-such-run/data.json",
                      "/runs/no-such-run/other.csv", "/compare/series.json?a=label:A")
    codes = [status for status, _, _ in results]
    assert codes == [404, 404, 400, 404, 404, 400]
    first = results[0][2]
    assert "has no measurements to give" in first and "no measurement window" in first
    assert "Traceback" not in "".join(text for _, _, text in results)


def test_the_study_answer_gives_the_ratio_and_its_interval(tmp_path):
    home = tmp_path / "store"
    study_id = "20260102-000000-worse-0002"
    write_synthetic_study(home, study_id, 0.8, 1.0)             # ITR (S) 20% lower: WORSE
    from perflab.records.study import read_study_document

    doc = read_study_document(home / "studies" / study_id / "study.json")
    entry = next(m for m in doc.comparisons[0].metrics if m.key == "itr_s")
    (status, _, page), = get_all(partial(create_app, home), f"/studies/{study_id}")
    assert status == 200
    row = page.split('id="primary-verdicts"', 1)[1].split("</table>", 1)[0].split('data-key="itr_s">', 1)[1]
    cells = [html.unescape(re.sub(r"<[^>]+>", "", c)).strip()
             for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row.split("</tr>", 1)[0], re.S)]
    level = fmt.percent_level(entry.level or doc.design.confidence)
    assert cells == ["ITR (S)", "A → B", fmt.quantity(entry.base_value, "itr_s", entry),
                     fmt.quantity(entry.new_value, "itr_s", entry), fmt.ratio(entry.ratio, entry),
                     f"{fmt.ci_ratio(entry.ci_low, entry.ci_high)} ({level})", fmt.ci_pct(entry.ci_low, entry.ci_high),
                     "±3%", "WORSE"]
    assert 0.78 < entry.ratio < 0.82 and entry.ci_high < 0.97             # the chosen numbers


def test_compare_series_has_every_run_of_both_groups(stored):
    query = urlencode({"a": "label:A", "b": "label:B"})
    (status, _, text), (page_status, _, page) = get_all(partial(create_app, stored.home), f"/compare/series.json?{query}",
                                                        f"/compare?{query}")
    assert (status, page_status) == (200, 200)
    groups = json.loads(text)["groups"]
    assert [len(g["runs"]) for g in groups] == [2, 2]
    assert {r["run_id"] for r in groups[0]["runs"]} == set(stored.a_runs)
    assert {r["run_id"] for r in groups[1]["runs"]} == set(stored.b_runs)
    for group in groups:
        for run in group["runs"]:
            assert run["intervals"] == reduce_run(stored.home / "runs" / run["run_id"]).per_interval
    assert f'data-src="/compare/series.json?{html.escape(query)}"' in page

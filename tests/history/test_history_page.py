"""The dashboard's history page through aiohttp's test client (the fast tier; Chromium's view of it
is test_history_browser.py): the series list, the drawn series with its change point, bad input as
a 400 page, and the store left unwritten."""

from __future__ import annotations

import asyncio
import html
import re

from aiohttp.test_utils import TestClient, TestServer

from perflab.serve.app import create_app

from .history_data import KNOB, history, workload_file


def get(home, path: str) -> tuple[int, str]:
    async def main():
        async with TestClient(TestServer(create_app(home, check_host=False))) as client:
            response = await client.get(path)
            return response.status, await response.text()

    return asyncio.run(main())


def test_the_page_lists_series_draws_one_and_refuses_bad_input(tmp_path):
    w = workload_file(tmp_path)
    ids = history(tmp_path / "store", w, [2.0] * 10 + [2.2] * 6, versions=["v1"] * 10 + ["v2"] * 6, exact_itr=True)
    cache = tmp_path / "store" / "history" / "metrics.sqlite"
    before = cache.stat().st_mtime_ns

    status, text = get(tmp_path / "store", "/history")
    assert status == 200
    assert len(re.findall(r'<tr data-series="', text)) == 2          # the knob is configuration: two series

    status, text = get(tmp_path / "store", f"/history?ignore={KNOB}")
    assert status == 200                                             # one series: drawn at once
    assert re.findall(r'<a class="point" href="/runs/([^"]+)"', text) == ids
    assert text.count('class="change-point worse cause-software"') == 1
    assert f'<a href="/runs/{ids[10]}">' in html.unescape(text) and "v1 → v2" in html.unescape(text)

    status, text = get(tmp_path / "store", "/history?metric=no_such_metric")
    assert status == 400 and "no_such_metric" in html.unescape(text)
    status, _ = get(tmp_path / "store", "/history?by=size")
    assert status == 400
    assert cache.stat().st_mtime_ns == before                        # read, never written

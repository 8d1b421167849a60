"""The dashboard's runs list shows each run's outcome (perflab.store.outcome) distinctly: a run
with errors above the gate is not a green "complete", nor is one whose SUT monitor was lost
(issue 25). The outcomes come from the catalog, as `perflab runs` shows them."""

from __future__ import annotations

import json
import re
from functools import partial

from perflab import caveats as cav
from perflab.records.run import RunRecord, SutHostRecord, SutRecord, WindowRecord
from perflab.serve.app import create_app
from perflab.store.catalog import Store
from perflab.store.outcome import classify

from .test_app import get_all


def make_store(home):
    store = Store(home)
    window = WindowRecord(start=0.0, end=10.0)

    def add(run_id, status="complete", invalid=(), lost_at=None, reason=None):
        host = None if lost_at is None else SutHostRecord(monitor="agent", url="http://sut:9", lost_at=lost_at)
        record = RunRecord(run_id=run_id, status=status, reason=reason, invalid=list(invalid), valid=not invalid,
                           workload={"name": "w"}, sut=SutRecord(host=host), window=window,
                           created=f"2026-01-01T00:00:0{len(ids)}+00:00")
        store.index(record)
        ids.append(run_id)
        return record

    ids: list[str] = []
    add("r-complete")
    add("r-failed", status="failed", reason="SUT worker 0 died (exit code 3)",
        invalid=[cav.run_not_complete("failed", "SUT worker 0 died (exit code 3)")])
    add("r-hung", invalid=[cav.hung_transactions(2, 60.0)])
    add("r-lost", lost_at=4.0)
    errors = add("r-errors")
    # Judged with its reduction: 10% of its transactions failed.
    store.set_etr("r-errors", 9.0, classify(errors, [cav.error_rate(0.10, 0.01)], []))
    return store


def test_the_runs_list_shows_failed_invalid_errors_and_monitor_lost_apart(tmp_path):
    store = make_store(tmp_path)
    app = partial(create_app, store.home)
    (s1, _, page), (s2, _, api), (s3, _, only) = get_all(app, "/runs", "/api/runs", "/runs?status=errors")
    assert (s1, s2, s3) == (200, 200, 200)
    shown = dict(re.findall(r'data-run="([^"]+)".*?data-outcome="([^"]+)"', page, re.S))
    assert shown == {"r-complete": "complete", "r-failed": "failed", "r-hung": "invalid", "r-lost": "monitor_lost",
                     "r-errors": "errors"}
    assert '<span class="badge errors" title="error rate 10.0% above 1.0%">errors (10.0%)</span>' in page
    assert '>invalid (hung transactions)</span>' in page and '>monitor lost</span>' in page
    listed = {r["run_id"]: r for r in json.loads(api)}
    assert listed["r-errors"]["outcome"] == "errors" and listed["r-errors"]["status"] == "complete"
    assert listed["r-errors"]["judged"] is True and listed["r-lost"]["judged"] is False
    assert re.findall(r'data-run="([^"]+)"', only) == ["r-errors"]

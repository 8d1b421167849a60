"""Run outcomes a user can trust at a glance (issue 25).

Before: a python SUT whose transaction slept forever ran 43 s for a 4 s window and ended
"complete" -- ERRORS (T) 0, no hung_transactions caveat, exit 0: the driver waited a fixed 30 s
for the transactions in flight at the window's end, then dropped them uncounted, shorter than
their 60 s deadline. A run with 10% errors was a green "complete", and an invalid run exited 0.

Now a transaction in flight at the window's end is waited for until its deadline, then counted
as hung (the run invalid), so a run ends one deadline after its window at most; `perflab run`
exits 5 for a complete but invalid run; and the one outcome (perflab.store.outcome, judged by
perflab.outcome) is what `perflab run`, `perflab runs` and `perflab show` say.

Bounds on a run's length are read from its own record (t0 to `finished`, whole seconds) and are
laws with generous slack: window + deadline + the worker's kill + storing, never a timing.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3

import pytest
from cli_helpers import load_run, perflab, run_dir_of, write_workload

from perflab import caveats as cav
from perflab.drive.load.engine import DRAIN_SLACK_S
from perflab.errors import EXIT_FAILED, EXIT_INVALID, EXIT_OK
from perflab.records.run import RunRecord, SutHostRecord, SutRecord, WindowRecord
from perflab.store.catalog import Store
from perflab.store.outcome import OutcomeKind, RunOutcome, classify, run_exit_code

#: Slack for what follows the last transaction: stopping the monitor and the workers, writing
#: the run (seconds; `finished` is in whole seconds). The defect's run took 39 s past its t0.
STORE_SLACK_S = 8.0


# -- the outcome, decided in one place --------------------------------------------------------


def record(status="complete", invalid=(), lost_at=None, end=10.0) -> RunRecord:
    host = None if lost_at is None else SutHostRecord(monitor="agent", url="http://sut:9", lost_at=lost_at,
                                                      lost_reason="connection refused")
    return RunRecord(run_id="r", status=status, reason="worker died" if status == "failed" else None,
                     invalid=list(invalid), valid=not invalid, sut=SutRecord(host=host),
                     window=WindowRecord(start=0.0, end=end))


HUNG = cav.hung_transactions(2, 60.0)
ERRORS = cav.error_rate(0.10, 0.01)
LOST = cav.monitor_lost("agent", "http://sut:9", 4.0, "connection refused", ["UTIL/PROC (S)"])


@pytest.mark.parametrize("case, kind, code", [
    (dict(rec=record(), exclusions=[], caveats=[]), OutcomeKind.COMPLETE, EXIT_OK),
    (dict(rec=record("failed"), exclusions=[], caveats=[]), OutcomeKind.FAILED, EXIT_FAILED),
    (dict(rec=record(invalid=[HUNG]), exclusions=[HUNG, ERRORS], caveats=[]), OutcomeKind.INVALID, EXIT_INVALID),
    (dict(rec=record(), exclusions=[ERRORS], caveats=[]), OutcomeKind.ERRORS, EXIT_INVALID),
    (dict(rec=record(), exclusions=[ERRORS, cav.no_transactions()], caveats=[]), OutcomeKind.INVALID, EXIT_INVALID),
    (dict(rec=record(lost_at=4.0), exclusions=[], caveats=[LOST]), OutcomeKind.MONITOR_LOST, EXIT_OK),
    (dict(rec=record(lost_at=4.0), exclusions=[ERRORS], caveats=[LOST]), OutcomeKind.ERRORS, EXIT_INVALID),
], ids=["complete", "failed", "hung", "errors", "errors-and-nothing", "monitor-lost", "errors-beat-monitor"])
def test_the_outcome_of_a_judged_run(case, kind, code):
    outcome = classify(case["rec"], case["exclusions"], case["caveats"])
    assert outcome.kind is kind and outcome.judged
    assert outcome.exit_code == code
    assert run_exit_code(outcome, thresholds_violated=True) == (EXIT_FAILED if code == EXIT_OK else code)


def test_the_outcome_of_a_record_alone():
    assert classify(record()).kind is OutcomeKind.COMPLETE
    assert not classify(record()).judged
    assert classify(record(invalid=[HUNG])).kind is OutcomeKind.INVALID
    assert classify(record(status="interrupted")).exit_code == 130
    assert classify(record(lost_at=4.0)).kind is OutcomeKind.MONITOR_LOST
    assert classify(record(lost_at=12.0)).kind is OutcomeKind.COMPLETE   # lost after the window's end
    assert RunOutcome(OutcomeKind.ERRORS, (ERRORS,)).short == "errors (10.0%)"
    assert RunOutcome(OutcomeKind.INVALID, (HUNG, ERRORS)).short == "invalid (hung transactions, error rate)"


def test_the_catalog_keeps_a_judged_outcome_and_reads_an_old_catalog(tmp_path):
    store = Store(tmp_path)
    store.runs_dir.mkdir(parents=True)
    # A catalog written before outcomes were stored: its 13 columns, a valid and an invalid run.
    conn = sqlite3.connect(store.catalog_path)
    conn.execute("CREATE TABLE runs (run_id TEXT PRIMARY KEY, created TEXT NOT NULL, workload TEXT NOT NULL, "
                 "label TEXT, study TEXT, status TEXT NOT NULL, reason TEXT, valid INTEGER, users INTEGER, "
                 "rate REAL, pid INTEGER, etr_t REAL, path TEXT NOT NULL)")
    conn.execute("INSERT INTO runs VALUES ('old-ok', '2026-01-01', 'w', NULL, NULL, 'complete', NULL, 1, 2, NULL, "
                 "1, 5.0, 'x')")
    conn.execute("INSERT INTO runs VALUES ('old-bad', '2026-01-02', 'w', NULL, NULL, 'complete', NULL, 0, 2, NULL, "
                 "1, 5.0, 'y')")
    conn.commit()
    conn.close()
    shown = {r.run_id: r.shown_outcome for r in store.rows()}
    assert shown["old-ok"].kind is OutcomeKind.COMPLETE and shown["old-bad"].kind is OutcomeKind.INVALID
    # A new run: indexed from its record at its end, then judged with its reduction (errors);
    # indexing the record again (a rescan) keeps the judged outcome.
    rec = record(lost_at=4.0)
    store.index(rec)
    assert {r.run_id: r.shown_outcome.kind for r in store.rows()}["r"] is OutcomeKind.MONITOR_LOST
    store.set_etr("r", 3.0, classify(rec, [ERRORS], [LOST]))
    store.index(rec)
    store.rescan(rebuild=True)
    row = {r.run_id: r for r in store.rows()}["r"]
    assert row.shown_outcome.kind is OutcomeKind.ERRORS and row.shown_outcome.judged
    assert row.shown_outcome.reasons[0].code is cav.Code.ERROR_RATE
    assert row.shown_outcome_fields["outcome"] == "errors" and row.etr_t == 3.0


# -- real runs ---------------------------------------------------------------------------------


HANG_AT_END = """
name: hang-at-window-end
target: {kind: python}
transactions:
  - {name: hang, call: "time:sleep", args: [1000]}
scripts: [{name: s, steps: [hang]}]
think: 0.1
load: {users: 2}
timing: {measurement: 2s, deadline: 1s}
placement: {workers: 2}
"""


def seconds_to_finish(run: dict) -> float:
    """From the run's t0 to its record's `finished` (whole seconds, so up to 1 s short)."""
    return dt.datetime.fromisoformat(run["finished"]).timestamp() - run["clock"]["t0_epoch"]


def runs_json(store) -> dict[str, dict]:
    listed = perflab("runs", "--json", store=store)
    assert listed.returncode == 0, listed.stderr
    return {r["run_id"]: r for r in json.loads(listed.stdout)}


def test_a_run_hung_at_its_window_end_is_invalid_ends_a_deadline_later_and_exits_5(tmp_path, store):
    # Every transaction sleeps 1000 s under a 1 s deadline: the ones running at the window's end
    # (2 s) are killed a deadline later at most, counted, and the run is invalid.
    done = perflab("run", write_workload(tmp_path, HANG_AT_END), "--no-monitor", "-q", store=store, timeout=60)
    assert done.returncode == EXIT_INVALID, done.stderr
    run_id = done.stdout.strip().splitlines()[-1]
    run, tx = load_run(run_dir_of(store, run_id))
    assert run["status"] == "complete" and run["valid"] is False
    hung = {c["code"]: c for c in run["invalid"]}["hung_transactions"]
    assert hung["values"]["deadline_s"] == 1.0
    assert hung["values"]["count"] == len(tx) >= 2 and not tx["ok"].any()
    assert tx["end"].max() <= run["window"]["end"] + 1.0 + DRAIN_SLACK_S + 0.5
    assert seconds_to_finish(run) <= run["window"]["end"] + 1.0 + STORE_SLACK_S
    assert "invalid (hung transactions" in done.stderr
    listed = runs_json(store)[run_id]
    assert listed["outcome"] == "invalid" and listed["judged"] is True
    assert any("did not finish in time" in text for text in listed["outcome_reasons"])


ERRORS_WORKLOAD = """
name: some-errors
target: {kind: python}
transactions:
  - {name: ok, call: "perflab.sut.synthetic:noop"}
  - {name: bad, call: "perflab.sut.synthetic:fail"}
scripts:
  - {name: good, weight: 9, steps: [ok]}
  - {name: failing, weight: 1, steps: [bad]}
think: 0.005
load: {users: 2}
timing: {measurement: 2s}
placement: {workers: 1}
seed: 3
"""


def test_a_run_with_errors_shows_errors_and_exits_5(tmp_path, store):
    done = perflab("run", write_workload(tmp_path, ERRORS_WORKLOAD), "--no-monitor", "-q", store=store, timeout=60)
    assert done.returncode == EXIT_INVALID, done.stderr
    errors_id = done.stdout.strip().splitlines()[-1]
    run, tx = load_run(run_dir_of(store, errors_id))
    assert run["status"] == "complete" and run["valid"] is True   # nothing wrong with the run itself
    assert 0.05 < (~tx["ok"]).mean() < 0.2                        # about one script in ten fails
    shown = perflab("show", errors_id, store=store)
    assert shown.returncode == 0, shown.stderr
    assert "outcome: errors (" in shown.stdout
    listed = runs_json(store)[errors_id]
    assert listed["outcome"] == "errors" and listed["status"] == "complete"
    assert listed["outcome_reasons"][0].startswith("error rate ")
    assert "errors (" in perflab("runs", store=store).stdout


def test_a_clean_run_is_complete_and_exits_0(tmp_path, store):
    clean = ERRORS_WORKLOAD.replace("weight: 1, steps: [bad]", "weight: 0, steps: [bad]")
    ok = perflab("run", write_workload(tmp_path, clean), "--no-monitor", "-q", store=store, timeout=60)
    assert ok.returncode == EXIT_OK, ok.stderr
    clean_id = ok.stdout.strip().splitlines()[-1]
    listed = runs_json(store)[clean_id]
    assert listed["outcome"] == "complete" and listed["outcome_reasons"] == [] and listed["judged"] is True

"""The status rules (perflab.store.status) and the run-group reference parser
(perflab.study.groups.parse_group), each defined once and asked by the lists, the dashboard and
`perflab compare`."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from perflab.errors import InputError
from perflab.records.run import RunConfig, RunRecord
from perflab.records.study import StudyDocument
from perflab.store.catalog import Store
from perflab.store.status import STUDY_QUIET_S, current_run, shown_status, study_status
from perflab.study.groups import GroupRef, parse_group


def dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_a_running_run_whose_driver_is_gone_is_abandoned():
    assert shown_status("running", os.getpid()) == "running"
    assert shown_status("running", dead_pid()) == "abandoned"
    assert shown_status("running", None) == "abandoned"
    assert shown_status("complete", None) == "complete"


def index_run(store: Store, run_id: str, study: str, pid: int) -> None:
    record = RunRecord(run_id=run_id, status="running", study=study, created="2026-01-01T00:00:00+00:00",
                       workload={"name": "w", "transactions": [], "scripts": []},
                       config=RunConfig(users=2, processors=1), pid=pid)
    run_dir = store.create_run_dir(run_id)
    (run_dir / "run.json").write_text(json.dumps(record.dump()))
    store.index(record)


def test_a_study_is_running_while_a_run_of_it_is_or_its_file_is_fresh(tmp_path):
    store = Store(tmp_path / "store")
    study_dir = store.home / "studies" / "s1"
    study_dir.mkdir(parents=True)
    (study_dir / "study.json").write_text("{}")
    written = (study_dir / "study.json").stat().st_mtime
    doc = StudyDocument(study_id="s1", status="running")
    assert study_status(store, doc.model_copy(update={"status": "complete"})) == "complete"
    assert study_status(store, doc, now=written + 1) == "running"           # between two runs
    assert study_status(store, doc, now=written + STUDY_QUIET_S + 1) == "abandoned"
    index_run(store, "r-dead", "s1", dead_pid())
    assert current_run(store, "s1") is None
    assert study_status(store, doc, now=written + STUDY_QUIET_S + 1) == "abandoned"
    index_run(store, "r-live", "s1", os.getpid())
    assert current_run(store, "s1").run_id == "r-live"
    assert study_status(store, doc, now=written + STUDY_QUIET_S + 1) == "running"
    assert study_status(store, StudyDocument(study_id="../x", status="running")) == "abandoned"


def test_group_references_parse_once():
    assert parse_group("label:fast", "A") == GroupRef("label:fast", label="fast")
    assert parse_group("study:20260101-x:new cfg", "B") == GroupRef("study:20260101-x:new cfg", study="20260101-x",
                                                                    config="new cfg")
    assert parse_group(" r1 , r2,,", "A") == GroupRef("r1,r2", runs=("r1", "r2"))
    for bad, message in (("label:", "expected label:NAME"), ("study:x", "expected study:ID:CONFIG"),
                         ("study::c", "expected study:ID:CONFIG"), (" , ", "no run given")):
        with pytest.raises(InputError, match=message) as raised:
            parse_group(bad, "B")
        assert raised.value.field == "B"


def test_the_dashboard_takes_the_same_references_but_no_paths():
    from perflab.serve.compare import check_ref

    assert check_ref(" r1 , r2", "A") == "r1,r2"
    assert check_ref("study:s1:base", "A") == "study:s1:base"
    for bad in ("../runs/x", "study:../s:base", "/tmp/run"):
        with pytest.raises(InputError):
            check_ref(bad, "A")

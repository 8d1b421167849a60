"""A small real store for the serve tests: runs driven here (in-process), a compare document
stored as a study, and helpers to fake a run in progress without waiting for one."""

from __future__ import annotations

import json
import os
import textwrap
from dataclasses import dataclass
from pathlib import Path

#: Every user-supplied string a page shows, as markup that would run if it were not escaped.
XSS_WORKLOAD = "<script>alert(1)</script>"
XSS_DESCRIPTION = "a <b>bold</b> & <img src=x onerror=alert(2)> description"
XSS_TX = "<i>bad</i>"
XSS_CLASS = "<em>cls</em>"
XSS_ERROR = "<img src=x onerror=alert(3)>"
XSS_LABEL = "<u>lab</u>"
XSS_STUDY_TITLE = "<script>alert(4)</script> study"

XSS_YAML = f"""
name: "{XSS_WORKLOAD}"
description: "{XSS_DESCRIPTION}"
target: {{kind: python}}
transactions:
  - {{name: ok, call: "perflab.sut.synthetic:noop"}}
  - {{name: "{XSS_TX}", class: "{XSS_CLASS}", call: "perflab.sut.synthetic:fail", kwargs: {{message: "{XSS_ERROR}"}}}}
scripts:
  - {{name: main, weight: 9, steps: [ok]}}
  - {{name: rare, weight: 1, steps: ["{XSS_TX}"]}}
think: 0.01
load: {{users: 2}}
timing: {{stagger: 0.2s, stabilization: 0.5s, measurement: 2s}}
placement: {{workers: 1}}
"""

PLAIN_YAML = """
name: plain
target: {kind: python}
transactions:
  - {name: t, call: "perflab.sut.synthetic:noop"}
scripts: [{name: s, steps: [t]}]
think: 0.01
load: {users: 2}
timing: {stagger: 0.2s, stabilization: 0.5s, measurement: 1.5s}
placement: {workers: 1}
"""

#: A run long enough to be watched live from a browser.
LIVE_YAML = XSS_YAML.replace("measurement: 2s", "measurement: 10s").replace("stabilization: 0.5s", "stabilization: 1s")


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(text).lstrip())
    return path


@dataclass
class Stored:
    home: Path
    xss_run: str
    a_runs: list[str]
    b_runs: list[str]
    study_id: str
    workloads: Path


def build_store(root: Path) -> Stored:
    from perflab.drive.run import RunRequest, execute_run
    from perflab.report.write import write_reports
    from perflab.store.atomic import write_json_atomic
    from perflab.store.catalog import Store
    from perflab.study.groups import comparison_document
    from perflab.workload.loader import load_workload

    workloads = root / "workloads"
    workloads.mkdir(parents=True)
    xss_path, plain_path = write(workloads, "xss.yaml", XSS_YAML), write(workloads, "plain.yaml", PLAIN_YAML)
    write(workloads, "live.yaml", LIVE_YAML)
    store = Store(root / "store")
    xss = execute_run(RunRequest(load_workload(xss_path), xss_path, label=XSS_LABEL), store)
    runs: dict[str, list[str]] = {"A": [], "B": []}
    for seed in (1, 2):
        for label in ("A", "B"):
            result = execute_run(RunRequest(load_workload(plain_path), plain_path, label=label, seed=seed), store)
            runs[label].append(result.run_id)
    study_id = "20260101-000000-stored-ab12"
    doc = comparison_document(store, "label:A", "label:B", 0.03, 0.90)
    doc.update(study_id=study_id, name="stored", title=XSS_STUDY_TITLE, finished=doc["created"])
    study_dir = store.home / "studies" / study_id
    study_dir.mkdir(parents=True)
    write_json_atomic(study_dir / "study.json", doc)
    write_reports(doc, study_dir)
    return Stored(store.home, xss.run_id, runs["A"], runs["B"], study_id, workloads)


def fake_running_run(home: Path, run_id: str, study: str | None = None, workload: str = XSS_WORKLOAD) -> Path:
    """A run directory whose run.json says `running`, with this (alive) process as its driver:
    what a run in progress looks like to the server, without driving one."""
    from perflab.store.catalog import Store

    store = Store(home)
    run_dir = store.create_run_dir(run_id)
    run = {"run_id": run_id, "status": "running", "reason": None, "valid": None, "invalid_reasons": [],
           "label": None, "study": study, "workload": {"name": workload, "transactions": [], "scripts": []},
           "config": {"users": 2, "rate": None, "processors": 1}, "fingerprint": {}, "pid": os.getpid(),
           "created": "2026-01-01T00:00:00+00:00"}
    (run_dir / "run.json").write_text(json.dumps(run))
    store.index(run)
    return run_dir


def finish_fake_run(home: Path, run_dir: Path) -> None:
    from perflab.store.catalog import Store

    run = json.loads((run_dir / "run.json").read_text())
    run.update(status="interrupted", reason="test over")
    (run_dir / "run.json").write_text(json.dumps(run))
    Store(home).index(run)

"""A small store for the serve tests: runs of the model driver (perflab.drive.model_driver: the
run directories perflab writes, from a model, in a fraction of a second each), a compare
document stored as a study, and helpers to fake a run in progress without waiting for one."""

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

#: The XSS workload's thresholds: one met by any run that completes a transaction, one violated
#: by its one-in-ten failing script (see test_run_report for the probability).
THRESHOLD_MET = "tx_ok > 0"
THRESHOLD_VIOLATED = "error_pct_t < 1"

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
thresholds: ["{THRESHOLD_MET}", "{THRESHOLD_VIOLATED}"]
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

#: A run long enough to be watched live from a browser (without thresholds: it must exit 0).
LIVE_YAML = (XSS_YAML.replace("measurement: 2s", "measurement: 10s").replace("stabilization: 0.5s", "stabilization: 1s")
             .replace(f'thresholds: ["{THRESHOLD_MET}", "{THRESHOLD_VIOLATED}"]\n', ""))


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
    from functools import partial

    from perflab.drive.model_driver import Model, execute_model_run
    from perflab.drive.run import RunRequest
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
    # The failing script's transactions fail as perflab.sut.synthetic:fail does, with its message.
    model_run = partial(execute_model_run, model=Model(noise=0.005, seed=11))
    xss = model_run(RunRequest(load_workload(xss_path), xss_path, label=XSS_LABEL), store)
    runs: dict[str, list[str]] = {"A": [], "B": []}
    for seed in (1, 2):
        for label in ("A", "B"):
            result = model_run(RunRequest(load_workload(plain_path), plain_path, label=label, seed=seed), store)
            runs[label].append(result.run_id)
    study_id = "20260101-000000-stored-ab12"
    doc = comparison_document(store, "label:A", "label:B")
    doc = doc.model_copy(update={"study_id": study_id, "name": "stored", "title": XSS_STUDY_TITLE,
                                 "finished": doc.created})
    study_dir = store.home / "studies" / study_id
    study_dir.mkdir(parents=True)
    write_json_atomic(study_dir / "study.json", doc.dump())
    write_reports(doc, study_dir)
    return Stored(store.home, xss.run_id, runs["A"], runs["B"], study_id, workloads)


def fake_run(home: Path, run_id: str, study: str | None = None, workload: str = XSS_WORKLOAD,
             **fields) -> Path:
    """A run directory with only its run.json (a RunRecord): by default `running`, with this
    (alive) process as its driver -- what a run in progress looks like to the server, without
    driving one. `fields` override the record's fields."""
    from perflab.records.run import RunConfig, RunRecord
    from perflab.store.catalog import Store

    store = Store(home)
    run_dir = store.create_run_dir(run_id)
    record = RunRecord(run_id=run_id, status="running", study=study, created="2026-01-01T00:00:00+00:00",
                       workload={"name": workload, "transactions": [], "scripts": []},
                       config=RunConfig(users=2, processors=1), pid=os.getpid())
    record = record.model_copy(update=fields)
    (run_dir / "run.json").write_text(json.dumps(record.dump()))
    store.index(record)
    return run_dir


def fake_running_run(home: Path, run_id: str, study: str | None = None, workload: str = XSS_WORKLOAD) -> Path:
    return fake_run(home, run_id, study, workload)


def finish_fake_run(home: Path, run_dir: Path) -> None:
    from perflab.records.run import read_run_record
    from perflab.store.catalog import Store

    record = read_run_record(run_dir).model_copy(update={"status": "interrupted", "reason": "test over"})
    (run_dir / "run.json").write_text(json.dumps(record.dump()))
    Store(home).index(record)


#: Per-block wobble of the synthetic studies' metrics: small, fixed, so every verdict is known.
WOBBLE = (0.001, -0.001, 0.002, -0.002, 0.0005, -0.0005)


def write_synthetic_study(home: Path, study_id: str, itr_factor: float, pbt_factor: float, exclude_new: bool = False,
                          aa: bool = False) -> Path:
    """A finished study of configurations A and B over 6 blocks whose numbers are chosen, not
    measured: B's ITR (S) is A's x `itr_factor`, its PBT/CMD (S) A's x `pbt_factor` (each
    within 0.2% per block), so its verdicts are known in advance. Every run gets a run
    directory with its run.json (what `perflab compare study:ID:CONFIG` reads). `exclude_new`:
    every B run excluded (error rate; the first one's own record also says its driver was
    saturated). `aa`: an A/A result and a noise table are added."""
    from perflab import caveats as cav
    from perflab.records.run import RunConfig
    from perflab.records.study import AAResult, ConfigurationRecord, Design, NoiseRow, StudyDocument, StudyRun, WorkloadSummary
    from perflab.stats.criteria import Criteria
    from perflab.store.atomic import write_json_atomic
    from perflab.study.compare import judge_all

    runs = []
    for block, wobble_a in enumerate(WOBBLE):
        wobble_b = WOBBLE[(block + 1) % len(WOBBLE)]      # B's own wobble: the paired ratios vary a little
        for config, itr, pbt, wobble in (("A", 1000.0, 2.0, wobble_a),
                                         ("B", 1000.0 * itr_factor, 2.0 * pbt_factor, wobble_b)):
            run_id = f"{study_id}-{config}{block}"
            invalid = [cav.driver_saturated(97.0)] if exclude_new and config == "B" and block == 0 else []
            fake_run(home, run_id, study=study_id, workload="synthetic", status="complete", pid=None, label=config,
                     invalid=invalid, valid=not invalid, config=RunConfig(users=2, block=block, configuration=config))
            exclusions = list(invalid) + ([cav.error_rate(0.2, 0.01)] if exclude_new and config == "B" else [])
            runs.append(StudyRun(run_id=run_id, config=config, block=block, order=len(runs), exclusions=exclusions,
                                 users=2, metrics={"itr_s": itr * (1 + wobble), "pbt_cmd_s": pbt * (1 - wobble)}))
    doc = StudyDocument(study_id=study_id, name=study_id, title=f"synthetic {study_id}", status="complete",
                        created="2026-01-02T00:00:00+00:00", finished="2026-01-02T00:10:00+00:00",
                        study={"metrics": ["itr_s", "pbt_cmd_s"]}, workload=WorkloadSummary(name="synthetic"),
                        design=Design(blocks=6, margin=0.03, confidence=0.9, family_alpha=0.05,
                                      primary_metrics=["itr_s"], schedule=[(r.block, r.config) for r in runs]),
                        configurations=[ConfigurationRecord(name="A", base=True), ConfigurationRecord(name="B")],
                        runs=runs)
    doc.comparisons, doc.verdict = judge_all(doc.runs, [("A", "B")], ["itr_s", "pbt_cmd_s"], ["itr_s"], Criteria())
    if aa:
        doc.aa = AAResult(metric="itr_s", cv=0.0123, n_blocks=6, false_claims=1, claims=["B vs A: ITR (S) BETTER"],
                          blocks_needed=4, power=0.91, margin=0.03)
        doc.noise = [NoiseRow(config="A", key="itr_s", runs=6, cv_between=0.0123, cv_within=0.0045, blocks_needed=4)]
    study_dir = home / "studies" / study_id
    study_dir.mkdir(parents=True)
    write_json_atomic(study_dir / "study.json", doc.dump())
    return study_dir

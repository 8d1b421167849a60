"""Studies end to end through the model driver: what `perflab study` does with its runs --
calibration, the interleaved schedule, every run stored, study.json after every run, a run that
fails or a study that is interrupted -- and the verdicts and exit codes it gives on a known
truth. The model's noise is seeded, so every outcome here is the same on every run of the tests;
the assertions are ones any sound statistics make at the stated noise (a +10% cost is 20 standard
errors from no change), not interval widths."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from model_helpers import KNOWN_COST, KNOWN_COST_USERS, metric, perflab_model, study_of, write

from perflab.drive.model_driver import Model, execute_model_run
from perflab.records.run import read_run_record
from perflab.store.catalog import Store
from perflab.study.runner import StudyOptions, StudyRunner

CLAIMS = ("WORSE", "BETTER")
#: Noise like this host's quiet one (a run's cost wanders 0.5%; a block's by 2%, which the
#: paired design cancels).
QUIET = Model(noise=0.005, block_noise=0.02, seed=1)


def _files(tmp_path: Path, body: str, workload: str = KNOWN_COST) -> Path:
    write(tmp_path, "w.yaml", workload)
    return write(tmp_path, "s.yaml", "workload: w.yaml\n" + body)


def _ab(tmp_path: Path, candidate_ms: float, extra: str = "", blocks: int = 6) -> Path:
    return _files(tmp_path, f"""
name: ab
configurations:
  - name: base
  - name: candidate
    set: {{transactions.work.kwargs.cpu_ms: {candidate_ms}}}
blocks: {blocks}
seed: 2
metrics: [itr_s, pbt_cmd_s, etr_t, avg_last_t]
{extra}""")


# -- verdicts on a known truth, and the exit codes of perflab study ----------------------------

def test_a_known_added_cost_of_10_percent_is_worse(tmp_path):
    done = perflab_model("study", _ab(tmp_path, 2.2), "--gate", model=QUIET, store=tmp_path / "st", reports=True)
    doc, directory = study_of(done)
    itr, pbt = metric(doc, "itr_s"), metric(doc, "pbt_cmd_s")
    assert itr["verdict"] == "WORSE" and pbt["verdict"] == "WORSE", (itr, pbt)
    assert done.returncode == 1 == doc["verdict"]["exit_code"], done.stderr[-2000:]
    assert itr["n_blocks"] == 6 and itr["role"] == "primary"
    # the estimate is the truth (1/1.1) within a few of its standard errors (0.5% a run: 0.3% here)
    assert itr["ratio"] == pytest.approx(1 / 1.1, rel=0.01) and pbt["ratio"] == pytest.approx(1.1, rel=0.01)
    assert "ITR (S)" in (directory / "report.md").read_text() and "WORSE" in done.stderr
    # the report: the seeds' five sections, charts inline, nothing fetched
    html = (directory / "report.html").read_text()
    for section in ("general-observations", "workload", "hardware", "software", "discussion", "data"):
        assert f'id="{section}' in html
    assert "<svg" in html and "http://" not in html and "https://" not in html
    assert json.loads((directory / "report.json").read_text())
    # without --gate a study that answered exits 0 whatever its verdict
    again = perflab_model("study", _ab(tmp_path, 2.2), model=QUIET, store=tmp_path / "st")
    assert again.returncode == 0, again.stderr[-2000:]


def test_identical_configurations_make_no_claim(tmp_path):
    done = perflab_model("study", _ab(tmp_path, 2.0), "--gate", model=QUIET, store=tmp_path / "st")
    doc, _ = study_of(done)
    itr = metric(doc, "itr_s")
    assert itr["verdict"] not in CLAIMS and itr["verdict"] == "EQUIVALENT", itr
    assert done.returncode == 0 == doc["verdict"]["exit_code"]
    assert doc["status"] == "complete" and not any(r["exclusions"] for r in doc["runs"])


def test_a_faster_candidate_is_better(tmp_path):
    done = perflab_model("study", _ab(tmp_path, 1.8), "--gate", model=QUIET, store=tmp_path / "st")
    doc, _ = study_of(done)
    assert metric(doc, "itr_s")["verdict"] == "BETTER" and done.returncode == 0


def test_noise_beyond_what_the_blocks_can_resolve_is_inconclusive_exit_3(tmp_path):
    # 5% per run over 3 blocks: an interval of about ±12% that holds 1 and changes beyond ±3%
    done = perflab_model("study", _ab(tmp_path, 2.0, blocks=3), "--gate", model=Model(noise=0.05, seed=4),
                         store=tmp_path / "st")
    doc, _ = study_of(done)
    assert metric(doc, "itr_s")["verdict"] == "INCONCLUSIVE" and done.returncode == 3, metric(doc, "itr_s")


def test_a_study_whose_every_pair_is_excluded_exits_4_and_says_why(tmp_path):
    # The base runs at 30% utilization; a band of 99-100% excludes every base run: deterministic.
    done = perflab_model("study", _ab(tmp_path, 2.0, "gates: {util_band: [99, 100]}"), model=QUIET,
                         store=tmp_path / "st")
    assert done.returncode == 4, done.stderr[-2000:]
    doc, directory = study_of(done)
    assert doc["verdict"]["exit_code"] == 4
    assert all(r["exclusions"][0]["code"] == "util_out_of_band" for r in doc["runs"] if r["config"] == "base")
    itr = metric(doc, "itr_s")
    assert itr["verdict"] is None and itr["no_comparison"].startswith("no valid comparison")
    assert "UTIL/PROC (S)" in itr["no_comparison"]
    assert "no valid comparison" in (directory / "report.md").read_text() and "no valid comparison" in done.stderr


def test_bad_input_is_exit_2_before_any_run(tmp_path):
    done = perflab_model("study", _ab(tmp_path, 2.0, "metrics: [itr_x]"), store=tmp_path / "st")
    assert done.returncode == 2 and "Traceback" not in done.stderr and "itr_x" in done.stderr
    assert not (tmp_path / "st" / "runs").exists() or not any((tmp_path / "st" / "runs").iterdir())


def test_an_a_a_study_reports_the_noise_and_the_blocks_the_margin_needs(tmp_path):
    done = perflab_model("study", _ab(tmp_path, 2.2, blocks=4), "--aa", model=QUIET, store=tmp_path / "st")
    doc, directory = study_of(done)
    assert doc["design"]["aa"] is True and [c["name"] for c in doc["configurations"]] == ["base", "base (A/A)"]
    aa, itr = doc["aa"], metric(doc, "itr_s")
    assert aa["metric"] == "itr_s" and aa["cv"] == itr["cv"] and aa["n_blocks"] == itr["n_blocks"] == 4
    assert aa["false_claims"] == 0 and itr["verdict"] not in CLAIMS
    assert 0.001 < aa["cv"] < 0.02   # the model's 0.5% a run, as measured by four pairs
    assert aa["blocks_needed"] >= 3 and "A/A study" in (directory / "report.md").read_text()
    assert all(r["config"] in ("base", "base (A/A)") for r in doc["runs"])


# -- orchestration: calibration, schedule, storage -----------------------------------------------

CALIBRATED = """
name: calibrated
configurations:
  - name: base
  - name: dearer
    set: {transactions.work.kwargs.cpu_ms: 2.4}
load: {calibrate: {target_util: 60, tolerance: 5, start_users: 2, measurement: 4s}}
blocks: 4
seed: 3
"""


def test_calibration_picks_a_load_and_every_run_of_the_schedule_is_stored(tmp_path):
    store = tmp_path / "st"
    done = perflab_model("study", _files(tmp_path, CALIBRATED, KNOWN_COST_USERS), model=QUIET, store=store)
    doc, _ = study_of(done)
    load = doc["design"]["load"]
    steps = load["calibration"]
    chosen = next(s for s in steps if s["users"] == load["users"])
    assert load["mode"] == "calibrated" and len(steps) >= 2 and steps[0]["users"] == 2
    assert abs(chosen["util_proc_s"] - 60) <= 5, steps
    # the schedule: every block holds each configuration once, in the recorded order
    schedule = [tuple(s) for s in doc["design"]["schedule"]]
    assert sorted(schedule) == sorted((b, c) for b in range(4) for c in ("base", "dearer"))
    assert [(r["block"], r["config"]) for r in sorted(doc["runs"], key=lambda r: r["order"])] == schedule
    # every run stored (calibration too), at the calibrated load, in the catalog, with its place
    ids = {r["run_id"] for r in doc["runs"]} | {s["run_id"] for s in steps}
    assert {row.run_id for row in Store(store).rows()} == ids
    for run in doc["runs"]:
        record = read_run_record(store / "runs" / run["run_id"] / "run.json")
        assert record.study == doc["study_id"] and record.status == "complete"
        assert (record.config.users, record.config.block, record.config.order, record.config.configuration) == \
            (load["users"], run["block"], run["order"], run["config"])
    assert metric(doc, "itr_s")["verdict"] == "WORSE"   # 20% more CPU a transaction


def test_only_measured_runs_carry_the_counted_pass(tmp_path):
    # A calibration step's pathlength pass would be valgrind time spent on a number no comparison
    # reads: the study drops it from every run that is not a block's measured run.
    path = _files(tmp_path, CALIBRATED.replace("blocks: 4", "blocks: 3").replace(
        "  - name: base\n", "  - name: base\n    set: {pathlength: {transactions: 20}}\n"), KNOWN_COST_USERS)
    seen: list[tuple[str, object]] = []

    def watching(request, store, observer=None):
        seen.append((request.purpose, request.workload.pathlength))
        return execute_model_run(request, store, observer, model=QUIET)

    StudyRunner(path, Store(tmp_path / "st"), StudyOptions(executor=watching)).run()
    calibration = [p for purpose, p in seen if purpose == "calibrate"]
    measured = [(purpose, p) for purpose, p in seen if purpose == "measure"]
    assert len(calibration) >= 2 and all(p is None for p in calibration)
    assert len(measured) == 6
    # the base's measured runs keep the pass as the file set it; the other configuration has none
    assert sorted(p.transactions if p else 0 for _, p in measured) == [0, 0, 0, 20, 20, 20]


def test_study_json_is_written_after_every_run(tmp_path):
    path = _ab(tmp_path, 2.2, blocks=3)
    seen: list[int] = []

    def watching(request, store, observer=None):
        seen.append(len(json.loads((runner.dir / "study.json").read_text())["runs"]))
        return execute_model_run(request, store, observer, model=QUIET)

    runner = StudyRunner(path, Store(tmp_path / "st"), StudyOptions(executor=watching))
    doc = runner.run()
    assert seen == list(range(6)) and len(doc.runs) == 6
    assert json.loads((runner.dir / "study.json").read_text())["status"] == "complete"


def test_a_failed_run_is_kept_shown_with_its_reason_and_excluded(tmp_path):
    done = perflab_model("study", _ab(tmp_path, 2.2), model=Model(noise=0.005, seed=1, fail_at=2),
                         store=tmp_path / "st")
    doc, directory = study_of(done)
    failed = next(r for r in doc["runs"] if r["order"] == 2)
    assert failed["status"] == "failed" and failed["exclusions"]
    assert any(e["code"] == "run_not_complete" for e in failed["exclusions"])
    assert doc["status"] == "complete" and len(doc["runs"]) == 12   # the study went on
    assert metric(doc, "itr_s")["n_blocks"] == 5 and metric(doc, "itr_s")["verdict"] == "WORSE"
    assert failed["run_id"] in (directory / "report.md").read_text()


def test_an_interrupted_study_keeps_what_it_measured_and_runs_nothing_more(tmp_path):
    store = tmp_path / "st"
    done = perflab_model("study", _ab(tmp_path, 2.2), model=Model(noise=0.005, seed=1, interrupt_at=3), store=store)
    doc, directory = study_of(done)
    assert doc["status"] == "interrupted" and "interrupted" in doc["reason"]
    assert [r["order"] for r in doc["runs"]] == [0, 1, 2, 3]
    last = doc["runs"][-1]
    assert last["status"] == "interrupted" and last["exclusions"]
    assert len(Store(store).rows()) == 4          # no run after the interruption
    assert json.loads((directory / "study.json").read_text())["status"] == "interrupted"
    assert "interrupted" in (directory / "report.md").read_text()
    assert math.isfinite(metric(doc, "itr_s")["ratio"] or math.nan) or metric(doc, "itr_s")["verdict"] is None

"""`perflab study --resume ID` after a SIGKILL at each phase of a study (study/resume.py), on the
model driver: killed while calibrating, while measuring the knob's truth, inside a window,
between blocks and while writing the reports, the resumed study ends complete with the verdict,
ratio and interval of the same study run without a stop (the model's runs are pure functions of
their places in the study, so a resumed study that kept and re-measured the right blocks gives
the very numbers of an uninterrupted one)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from model_helpers import KNOWN_COST_USERS, metric, perflab_model, study_of, write

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from model_kill import MODEL  # noqa: E402

HARNESS = Path(__file__).resolve().parents[1] / "model_kill.py"

STUDY = """name: resume
workload: w.yaml
configurations:
  - name: base
  - name: dearer
    set: {{transactions.work.kwargs.cpu_ms: 2.2}}
load:
  calibrate: {{target_util: 60, tolerance: 10, start_users: 2, measurement: 1s, max_users: 40}}
blocks: 4
{extra}
metrics: [itr_s, pbt_cmd_s]
"""


def _files(tmp_path: Path, extra: str = "") -> Path:
    write(tmp_path, "w.yaml", KNOWN_COST_USERS.replace("measurement: 4s", "measurement: 2s"))
    return write(tmp_path, "s.yaml", STUDY.format(extra=extra))


def _killed(study: Path, store: Path, point: str) -> str:
    done = subprocess.run([sys.executable, str(HARNESS), point, "study", str(study), "--store", str(store)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == -signal.SIGKILL, (point, done.returncode, done.stderr[-2000:])
    (study_dir,) = (store / "studies").iterdir()
    return study_dir.name


def _uninterrupted(tmp_path: Path, study: Path) -> dict:
    done = perflab_model("study", study, model=MODEL, store=tmp_path / "whole")
    return study_of(done)[0]


CASES = [("calibrate:2", ""), ("window:3", ""), ("between:2", ""), ("reports", ""),
         ("between:1", "arrangement: duet\nself_calibration: {mode: on, truth_runs: 2, truth_measurement: 1s}"),
         ("knob:2", "arrangement: duet\nself_calibration: {mode: on, truth_runs: 2, truth_measurement: 1s}")]


@pytest.mark.parametrize("point,extra", CASES, ids=[f"{p}{'-duet' if e else ''}" for p, e in CASES])
def test_a_study_killed_at_any_phase_resumes_to_the_uninterrupted_verdict(tmp_path, point, extra):
    study = _files(tmp_path, extra)
    store = tmp_path / "store"
    study_id = _killed(study, store, point)
    stopped = json.loads((store / "studies" / study_id / "study.json").read_text())
    assert stopped["status"] in ("running", "complete")   # killed: nothing marked it
    done = perflab_model("study", "--resume", study_id, model=MODEL, store=store)
    assert done.returncode == 0, done.stderr[-3000:]
    doc, directory = study_of(done)
    assert doc["study_id"] == study_id and doc["status"] == "complete"
    assert (directory / "report.md").is_file() and (directory / "report.json").is_file()
    whole = _uninterrupted(tmp_path, study)
    mine, theirs = metric(doc, "itr_s"), metric(whole, "itr_s")
    assert (mine["verdict"], mine["n_blocks"]) == (theirs["verdict"], theirs["n_blocks"])
    assert mine["ratio"] == pytest.approx(theirs["ratio"], rel=1e-9)
    assert mine["ci_low"] == pytest.approx(theirs["ci_low"], rel=1e-9)
    assert sorted((r["block"], r["config"]) for r in doc["runs"]) == \
        sorted((r["block"], r["config"]) for r in whole["runs"])
    if point != "reports":
        assert doc["resumed"] and any("resumed at" in w["text"] for w in doc["warnings"])
        assert "resumed" in (directory / "report.md").read_text()


def test_a_changed_workload_or_an_unknown_id_is_refused(tmp_path):
    study = _files(tmp_path)
    store = tmp_path / "store"
    study_id = _killed(study, store, "between:2")
    (tmp_path / "w.yaml").write_text((tmp_path / "w.yaml").read_text().replace("cpu_ms: 2.0", "cpu_ms: 2.5"))
    done = perflab_model("study", "--resume", study_id, model=MODEL, store=store)
    assert done.returncode == 2 and "workload file changed since the study began" in done.stderr
    assert perflab_model("study", "--resume", "nope", model=MODEL, store=store).returncode == 2
    both = perflab_model("study", study, "--resume", study_id, model=MODEL, store=store)
    assert both.returncode == 2 and "--resume" in both.stderr

"""Ctrl-C and SIGTERM anywhere in a study (study/interrupt.py), through the model driver: between
runs, the study still judges what it measured, writes study.json and its reports marked
interrupted, and exits 130 -- not Python's "Aborted!" with exit 1 and no report."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from model_helpers import KNOWN_COST, perflab_model, write

from perflab.drive.model_driver import Model

MODEL = Model(noise=0.002, block_noise=0.01, seed=3)


class SignalAfter:
    """The model's executor, sending `signum` to this process once `runs` measured runs are
    stored: the signal arrives between two runs of the study (after one, before the next)."""

    def __init__(self, runs: int, signum: int):
        self.runs, self.signum, self.done = runs, signum, 0
        self.inner = MODEL.executor()

    def __call__(self, request, store, observer=None):
        result = self.inner(request, store, observer)
        if getattr(request, "purpose", None) == "measure":
            self.done += 1
            if self.done == self.runs:
                os.kill(os.getpid(), self.signum)
        return result


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_signal_between_runs_writes_the_reports_and_exits_130(tmp_path, monkeypatch, signum):
    from perflab.study import runner

    workload = write(tmp_path, "w.yaml", KNOWN_COST.replace("measurement: 4s", "measurement: 2s"))
    study = write(tmp_path, "s.yaml", f"""name: stop
workload: {workload.name}
configurations:
  - name: base
  - name: dearer
    set: {{transactions.work.kwargs.cpu_ms: 2.2}}
blocks: 4
""")
    executor = SignalAfter(3, signum)
    real = runner.StudyOptions

    def options(**kw):
        return real(**{**kw, "executor": executor})

    monkeypatch.setattr(runner, "StudyOptions", options)
    before = signal.getsignal(signum)
    done = perflab_model("study", study, store=tmp_path / "st")
    assert done.returncode == 130, done.stderr[-2000:]
    assert signal.getsignal(signum) == before   # the study's handlers are gone with it
    directory = Path(done.stdout.strip().splitlines()[-1])
    doc = json.loads((directory / "study.json").read_text())
    name = "SIGTERM" if signum == signal.SIGTERM else "SIGINT"
    assert doc["status"] == "interrupted" and name in doc["reason"]
    # The signal came as the third run returned: two runs are judged in the document, the third
    # is stored (its own run.json, complete) but never reached the study; no fourth was started.
    assert len(doc["runs"]) == 2 and executor.done == 3
    measured = [json.loads(p.read_text()) for p in (tmp_path / "st" / "runs").glob("*/run.json")]
    assert sum(r["config"]["purpose"] == "measure" for r in measured) == 3
    assert (directory / "report.md").is_file() and (directory / "report.json").is_file()
    assert "interrupted" in (directory / "report.md").read_text()
    assert "Aborted" not in done.stderr

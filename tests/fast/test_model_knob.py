"""A duet that measures its own bias (study/knob.py), through the model driver: the model's pairs
magnify every cost change by a known k (Model.pair_k) and its knob units cost a known CPU alone
(Model.knob_us). The study's knob truth (mixed runs alone), its knob blocks (in the duet) and the
k they give must find the model's k, de-bias the study's estimate and widen its interval to hold
the true ratio -- which the duet's own interval, magnified, misses."""

from __future__ import annotations

import math

import pytest
from model_helpers import KNOWN_COST_USERS, metric, perflab_model, study_of, write

from perflab.drive.model_driver import Model

# 0.2% run noise, 1% block noise (the host's slow spells, which a pair cancels), a duet that
# magnifies changes by 30%, and a knob unit that costs 10 ns alone.
MODEL = Model(noise=0.002, block_noise=0.01, seed=11, pair_k=0.3, knob_us=0.01)
TRUE = 1 / 1.1   # ITR (S) of a transaction costing 2.2 ms against 2.0


def _duet(tmp_path, self_calibration: str, model: Model = MODEL):
    write(tmp_path, "w.yaml", KNOWN_COST_USERS.replace("measurement: 4s", "measurement: 2s"))
    study = write(tmp_path, "s.yaml", f"""name: knob
workload: w.yaml
configurations:
  - name: base
  - name: dearer
    set: {{transactions.work.kwargs.cpu_ms: 2.2}}
arrangement: duet
blocks: 4
self_calibration: {self_calibration}
metrics: [itr_s, pbt_cmd_s]
""")
    done = perflab_model("study", study, model=model, store=tmp_path / "st")
    return done, *study_of(done)


def test_a_duet_measures_its_own_magnification_and_its_interval_holds_the_truth(tmp_path):
    done, doc, _ = _duet(tmp_path, "{mode: auto, truth_runs: 2, truth_measurement: 2s}")
    design = doc["design"]
    assert design["bias"]["route"] == "in-study" and design["bias"]["widened"], done.stderr[-2000:]
    knob = design["knob"]
    # the knob's truth, alone: 10 ns a unit over the base's 2 ms per transaction (its own mixed runs'
    # CPU, perflab's share included, is a little above 2 ms: the relative cost a little under 5e-6)
    assert knob["per_unit"] == pytest.approx(0.01e-3 / 2.0, rel=0.05)
    assert knob["k"] == pytest.approx(0.3, abs=0.05) and knob["k_low"] < 0.3 < knob["k_high"]
    itr = metric(doc, "itr_s")
    assert itr["design_ratio"] == pytest.approx(TRUE ** 1.3, rel=0.01)      # the duet's own, magnified
    assert not itr["design_ci_low"] <= TRUE <= itr["design_ci_high"]          # its own interval misses
    assert itr["ratio"] == pytest.approx(TRUE, rel=0.01)                      # de-biased by the fitted k
    assert itr["ci_low"] <= TRUE <= itr["ci_high"] and itr["verdict"] == "WORSE"
    # the knob's pairs ran in the duet, interleaved with the study's blocks, and are no comparison
    calibration = [c["name"] for c in doc["configurations"] if c["calibration"]]
    assert len(calibration) == 2 and len(doc["comparisons"]) == 1
    knob_runs = [r for r in doc["runs"] if r["config"] in calibration]
    assert len(knob_runs) == 8 and {r["block"] for r in knob_runs} == {4, 5, 6, 7}


def test_without_its_own_measurement_a_duet_says_its_bias_is_not_measured(tmp_path):
    done, doc, _ = _duet(tmp_path, "{mode: off}")
    assert doc["design"]["bias"]["route"] == "none" and doc["design"]["knob"] is None
    assert any(w["code"] == "bias_unmeasured" and "self_calibration is off" in w["text"] for w in doc["warnings"])
    assert "has not been measured on this host" in done.stderr
    itr = metric(doc, "itr_s")
    assert itr["design_ci_low"] is None and itr["ratio"] == pytest.approx(TRUE ** 1.3, rel=0.01)


def test_a_kind_perflab_cannot_add_a_cost_to_keeps_its_own_interval_and_says_why(tmp_path):
    # a command target runs each transaction as a process: no per-transaction knob
    from perflab.study.knob import unsupported
    from perflab.workload.model import Workload

    workload = Workload.model_validate({"name": "c", "target": {"kind": "command"},
                                        "transactions": [{"name": "t", "command": ["true"]}],
                                        "scripts": [{"name": "s", "steps": ["t"]}], "load": {"users": 1}})
    assert "its own workers" in unsupported(workload)
    assert math.isfinite(MODEL.knob_us)

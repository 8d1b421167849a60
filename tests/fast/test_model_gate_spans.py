"""A validity gate protects the metrics it is about, and only those (perflab.study.validity):
the gates about the window's pace -- here the driver's saturation -- protect the rows measured
over the window (ITR, response times, CPU per command), not those measured after it (a
server's restart once its load has ended, catalog `Span.AFTER`). A study deciding on a restart
row keeps a run whose driver saturated, shows the failed gate with its measured value and limit,
and does not count the run in its window rows; a study deciding on ITR still excludes it.

The model's driver costs 7 ms of CPU per arrival at 150 arrivals a second: 105% of its core
in every run. The modelled server replays the work its transactions did when it restarts after
the window, so the candidate's +10% CPU per transaction is a longer restart (the known truth).
"""

from __future__ import annotations

from pathlib import Path

from model_helpers import KNOWN_COST, metric, perflab_model, study_of, write

from perflab.catalog.metric import Span
from perflab.catalog.registry import REGISTRY
from perflab.drive.model_driver import Model

SATURATED = Model(noise=0.005, block_noise=0.02, seed=1, driver_us=7000.0, restart_share=0.1)


def _study(tmp_path: Path, primary: list[str]) -> Path:
    write(tmp_path, "w.yaml", KNOWN_COST)
    return write(tmp_path, "s.yaml", f"""
workload: w.yaml
name: restart-spans
configurations:
  - name: base
  - name: candidate
    set: {{transactions.work.kwargs.cpu_ms: 2.2}}
blocks: 4
seed: 2
metrics: [restart_t, startup_t, itr_s, pbt_cmd_s]
gate_metrics: {primary}
""")


def test_the_restart_rows_are_measured_after_the_window_and_itr_over_it():
    assert {REGISTRY.span(k) for k in ("restart_t", "startup_t", "redo_s", "redo_mb_sec", "recovery_ckpt_s",
                                       "wal_ckpt_mb")} == {Span.AFTER}
    assert REGISTRY.span("itr_s") is REGISTRY.span("avg_last_t") is REGISTRY.span("elapsed_t") is Span.WINDOW


def test_a_study_on_a_restart_row_keeps_a_run_whose_driver_saturated_with_the_caveat_shown(tmp_path):
    done = perflab_model("study", _study(tmp_path, ["restart_t"]), "--gate", model=SATURATED,
                         store=tmp_path / "st")
    doc, directory = study_of(done)
    runs = doc["runs"]
    assert len(runs) == 8 and not any(r["exclusions"] for r in runs), [r["exclusions"] for r in runs]
    for run in runs:
        # the failed gate, typed: measured and limit, the rows it protects; and shown as a note
        [aside] = run["set_aside"]
        assert aside["gate"] == "driver not saturated" and aside["protects"] == ["window"]
        assert aside["measured"] > aside["limit"] == 90.0 and aside["caveat"]["code"] == "driver_saturated"
        assert any(n["code"] == "driver_saturated" and "kept" in n["text"] for n in run["notes"])
    restart = metric(doc, "restart_t")
    assert restart["role"] == "primary" and restart["verdict"] == "WORSE", restart
    assert restart["n_base"] == restart["n_new"] == 4 and restart["ratio"] > 1.03
    assert done.returncode == 1 == doc["verdict"]["exit_code"], done.stderr[-2000:]
    # the window's rows do not count the saturated runs: no comparison, and the reason given
    itr = metric(doc, "itr_s")
    assert itr["n_base"] == itr["n_new"] == 0 and itr["verdict"] is None
    assert "driver CPU" in (itr["no_comparison"] or "")
    report = (directory / "report.md").read_text()
    assert "kept: this gate protects the rows measured over the window" in report
    assert "driver CPU 105% of one core" in report


def test_a_study_on_itr_still_excludes_a_run_whose_driver_saturated(tmp_path):
    done = perflab_model("study", _study(tmp_path, ["itr_s"]), "--gate", model=SATURATED, store=tmp_path / "st")
    doc, _ = study_of(done)
    assert all(r["exclusions"] and r["exclusions"][0]["code"] == "driver_saturated" for r in doc["runs"])
    assert not any(r["set_aside"] for r in doc["runs"])
    assert done.returncode == 4 == doc["verdict"]["exit_code"]
    # and the restart row, a secondary row here, has no valid run either
    assert metric(doc, "restart_t")["n_base"] == 0

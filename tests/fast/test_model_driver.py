"""The model driver (perflab.drive.model_driver) writes run directories that perflab reads as it
reads a real run's, with the model's known numbers: reduction gives back its cost per
transaction, the closed-loop laws hold, and its noise, drift, errors, hangs and endings are the
ones it was given."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from model_helpers import KNOWN_COST, KNOWN_COST_USERS, write

from perflab import caveats as cav
from perflab.drive.load.recorder import SCHEMA
from perflab.drive.model_driver import Model, execute_model_run
from perflab.drive.plan import RunRequest, resolve_plan
from perflab.records.run import read_run_record
from perflab.reduce.reduce import reduce_run
from perflab.store.catalog import Store
from perflab.workload.loader import load_workload


def _request(tmp_path: Path, text: str = KNOWN_COST, **fields) -> RunRequest:
    path = write(tmp_path, "w.yaml", text)
    return RunRequest(load_workload(path), path, **fields)


def _run(tmp_path: Path, model: Model = Model(), text: str = KNOWN_COST, **fields):
    result = execute_model_run(_request(tmp_path, text, **fields), Store(tmp_path / "store"), model=model)
    return result, reduce_run(result.run_dir)


@pytest.mark.parametrize("text, load", [(KNOWN_COST, {"rate": 300.0}), (KNOWN_COST_USERS, {"users": 6}),
                                        (KNOWN_COST_USERS, {"users": 40})])
def test_reduction_gives_back_the_model_s_cost_per_transaction(tmp_path, text, load):
    # 2 ms of user CPU and 0.5 ms of system CPU a transaction, on one server, a 20 s window:
    # PBT/CMD (S) and ITR (S) to 0.1% (what is left is the window's edges: a transaction in
    # service at an edge has part of its CPU outside; one 2.5 ms transaction in thousands).
    text = text.replace("{cpu_ms: 2.0}", "{cpu_ms: 2.0, sys_ms: 0.5}")
    result, m = _run(tmp_path, text=text, duration=20.0, **load)
    v = m.values
    assert result.status == "complete" and result.valid and m.warnings == [], m.warnings
    assert v["tx_ok"] > 2000
    assert v["pbt_cmd_s"] == pytest.approx(2.5, rel=1e-3)
    assert v["emul_cmd_s"] == pytest.approx(2.0, rel=1e-3) and v["cp_cmd_s"] == pytest.approx(0.5, rel=1e-3)
    assert v["itr_s"] == pytest.approx(1000.0 / 2.5, rel=1e-3)
    # the utilization law: U = X · D / processors
    assert v["util_proc_s"] == pytest.approx(100.0 * v["etr_t"] * 2.5e-3 / v["processors"], rel=2e-3)


def test_a_closed_loop_obeys_little_s_law(tmp_path):
    # 12 users, 20 ms thinks, 2 ms a transaction on one server: near the knee (N* = 11), so
    # queueing is real -- and USERS = ETR · (Z + R) holds as a law of the system (edges apart).
    _, m = _run(tmp_path, text=KNOWN_COST_USERS, users=12, duration=20.0)
    v = m.values
    assert v["users"] / (v["etr_t"] * (v["avg_think_t"] + v["avg_last_t"])) == pytest.approx(1.0, abs=0.01)
    assert v["avg_last_t"] > 2 * 0.002   # the users queue at the SUT
    assert not any(c.code is cav.Code.LITTLE_LAW for c in m.caveats)


def test_the_run_directory_is_typed_complete_and_catalogued(tmp_path):
    result, m = _run(tmp_path, label="base")
    record = read_run_record(result.run_dir / "run.json")
    assert record.status == "complete" and record.valid and record.label == "base"
    assert record.window.start == 1.0 and record.window.end == 5.0
    assert record.config.sut_cpus and record.config.driver_cpus and record.fingerprint["model"]["factor"] == 1.0
    table = pq.read_table(result.run_dir / "transactions.parquet")
    assert table.schema.equals(SCHEMA) and table.num_rows == result.transactions
    samples = pq.read_table(result.run_dir / "samples.parquet").column_names
    assert {"t", "s.cpu_user", "s.cpu_sys", "driver.cpu_user", "monitor.cpu_user"} <= set(samples)
    for cpu in record.config.sut_cpus + record.config.driver_cpus:
        assert {f"h.cpu{cpu}.user", f"h.cpu{cpu}.system", f"h.cpu{cpu}.idle"} <= set(samples)
    (row,) = Store(tmp_path / "store").rows()
    assert row.run_id == result.run_id and row.status == "complete"
    assert m.values["util_proc_h"] is not None and m.values["driver_cpu"] is not None


def test_noise_is_seeded_per_run_and_recorded(tmp_path):
    model = Model(noise=0.02, seed=7)
    request = _request(tmp_path)
    factors = {}
    for block in range(40):
        plan = resolve_plan(dataclasses.replace(request, block=block, order=block, configuration="base"))
        factors[block] = model.factor(plan)
        assert model.factor(plan) == factors[block]   # a pure function of the run's place
    spread = np.std(np.log(list(factors.values())), ddof=1)
    assert 0.01 < spread < 0.03          # 40 draws of SD 2% (seeded: the same 40 every time)
    assert Model(noise=0.02, seed=8).factor(plan) != factors[39]
    result, m = _run(tmp_path, model, block=3, order=3, configuration="base")
    assert read_run_record(result.run_dir / "run.json").fingerprint["model"]["factor"] == factors[3]
    assert m.values["pbt_cmd_s"] == pytest.approx(2.0 * factors[3], rel=2e-3)


def test_drift_within_the_window_shows_in_the_per_interval_series(tmp_path):
    _, m = _run(tmp_path, Model(drift=0.10), duration=10.0, rate=200.0)
    itr = [row["itr_s"] for row in m.per_interval if row["itr_s"] is not None]
    assert itr[0] > itr[-1] * 1.07      # the cost rose 10% across the window
    assert m.values["pbt_cmd_s"] == pytest.approx(2.0 * 1.05, rel=0.01)   # its mean over the window


def test_run_drift_follows_the_schedule(tmp_path):
    model = Model(run_drift=0.01)
    _, first = _run(tmp_path, model, order=0)
    _, tenth = _run(tmp_path, model, order=10)
    assert tenth.values["pbt_cmd_s"] / first.values["pbt_cmd_s"] == pytest.approx(1.10, rel=2e-3)


def test_errors_are_recorded_and_hangs_make_the_run_invalid(tmp_path):
    _, m = _run(tmp_path, Model(errors=0.05), duration=10.0)
    assert m.values["error_pct_t"] == pytest.approx(5.0, abs=1.5)   # 600 seeded draws (the same every time)
    result, m = _run(tmp_path, Model(hangs=0.01), text=KNOWN_COST.replace("measurement: 4s", "measurement: 4s, "
                                                                          "deadline: 0.5s"))
    assert not result.valid
    assert any(c.code is cav.Code.HUNG_TRANSACTIONS for c in result.record.invalid)
    assert any("deadline 0.5 s exceeded" == e for e in pq.read_table(result.run_dir / "transactions.parquet")
               .column("error").to_pylist())


@pytest.mark.parametrize("field, status", [("interrupt_at", "interrupted"), ("fail_at", "failed")])
def test_a_run_ended_early_is_stored_as_perflab_stores_it(tmp_path, field, status):
    result, m = _run(tmp_path, Model(**{field: 2}), order=2)
    assert result.status == status and not result.valid
    record = read_run_record(result.run_dir / "run.json")
    assert record.window.end < record.window.planned_end
    assert any(c.code is cav.Code.RUN_NOT_COMPLETE for c in m.caveats)
    untouched, _ = _run(tmp_path, Model(**{field: 2}), order=3)
    assert untouched.status == "complete"


def test_open_loop_overload_grows_a_queue(tmp_path):
    # 600 arrivals a second at 2 ms each: 120% of one server -- the backlog grows all window long
    _, m = _run(tmp_path, rate=600.0, duration=4.0)
    assert m.values["util_proc_s"] == pytest.approx(100.0, abs=1.0)
    resp = [row["avg_last_t"] for row in m.per_interval]
    assert resp[-1] > 2 * resp[0]


def test_the_driver_s_cost_is_modelled_and_saturation_is_a_caveat(tmp_path):
    result, m = _run(tmp_path, Model(driver_us=4000.0), rate=300.0)   # 4 ms of driver CPU a transaction
    assert not result.valid and any(c.code is cav.Code.DRIVER_SATURATED for c in result.record.invalid)
    result, m = _run(tmp_path, Model(driver_us=100.0), rate=300.0)
    assert result.valid and m.values["driver_cpu"] == pytest.approx(3.0, rel=0.1)


def test_a_model_is_stated_once_and_travels(tmp_path):
    import pickle

    model = Model(noise=0.01, seed=3)
    executor = pickle.loads(pickle.dumps(model.executor()))   # a duet's child process gets it so
    result = executor(_request(tmp_path), Store(tmp_path / "store"))
    assert result.status == "complete" and math.isfinite(reduce_run(result.run_dir).values["itr_s"])

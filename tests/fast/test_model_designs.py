"""Study designs through the model driver: two-factor shapes (every configuration at every sweep
value, a verdict per level, a curve per configuration), sweeps of the load and of any workload
field, equal utilization, and the duet (each block's pair in two processes at once). Moved here
from tests/study/test_two_factor.py, where real runs served only the orchestration."""

from __future__ import annotations

from pathlib import Path

import pytest
from model_helpers import KNOWN_COST, KNOWN_COST_USERS, metric, perflab_model, study_of, write

from perflab.drive.model_driver import Model

QUIET = Model(noise=0.005, block_noise=0.02, seed=1)

SLOW_RATE = KNOWN_COST.replace("rate: 150", "rate: 60").replace("measurement: 4s", "measurement: 2s")


def _study(tmp_path: Path, body: str, workload: str = SLOW_RATE, *args: str, model: Model = QUIET,
           expect: int = 0, reports: bool = False) -> tuple[dict, Path]:
    write(tmp_path, "w.yaml", workload)
    path = write(tmp_path, "s.yaml", "name: design\nworkload: w.yaml\n" + body)
    done = perflab_model("study", path, *args, model=model, store=tmp_path / "st", reports=reports)
    assert done.returncode == expect, done.stderr[-3000:]
    return study_of(done)


def test_a_sweep_of_two_configurations_gives_a_verdict_per_level_and_a_curve_each(tmp_path):
    doc, directory = _study(tmp_path, """
configurations:
  - name: base
  - name: heavier
    set: {transactions.work.kwargs.cpu_ms: 2.4}
sweep: {factor: rate, values: [40, 80]}
blocks: 3
metrics: [itr_s, pbt_cmd_s, etr_t]
""", reports=True)
    names = [c["name"] for c in doc["configurations"]]
    assert names == ["base @ rate=40", "heavier @ rate=40", "base @ rate=80", "heavier @ rate=80"]
    pairs = [(c["base"], c["new"]) for c in doc["comparisons"]]
    assert pairs == [("base @ rate=40", "heavier @ rate=40"), ("base @ rate=80", "heavier @ rate=80")]
    for i in range(2):
        itr = metric(doc, "itr_s", i)
        assert itr["role"] == "primary" and itr["n_blocks"] == 3 and itr["ci_low"] is not None
        assert itr["verdict"] == "WORSE" and itr["ratio"] == pytest.approx(2.0 / 2.4, rel=0.02)
    for run in doc["runs"]:
        assert run["rate"] == (40 if "rate=40" in run["config"] else 80)
    assert len(doc["runs"]) == 4 * 3
    series = {p["config"]: p["series"] for p in doc["sweep"]["points"]}
    assert series["heavier @ rate=80"] == "heavier" and series["base @ rate=40"] == "base"
    assert "<svg" in (directory / "report.html").read_text()


def test_any_workload_field_can_be_swept_and_a_bad_value_is_bad_input(tmp_path):
    doc, _ = _study(tmp_path, """
sweep: {factor: transactions.work.kwargs.cpu_ms, values: [1.0, 3.0]}
blocks: 1
metrics: [pbt_cmd_s]
""", model=Model())
    cost = {p["value"]: p["metrics"]["pbt_cmd_s"] for p in doc["sweep"]["points"]}
    assert cost[1.0] == pytest.approx(1.0, rel=1e-3) and cost[3.0] == pytest.approx(3.0, rel=1e-3)
    write(tmp_path, "bad.yaml", "name: bad\nworkload: w.yaml\nsweep:\n  factor: users\n  values: [a, 2]\n")
    done = perflab_model("study", tmp_path / "bad.yaml", store=tmp_path / "st2")
    assert done.returncode == 2 and "Traceback" not in done.stderr and "bad.yaml:3" in done.stderr, done.stderr
    assert not (tmp_path / "st2" / "studies").exists() or not any((tmp_path / "st2" / "studies").iterdir())


def test_equal_utilization_calibrates_each_configuration_to_the_target(tmp_path):
    doc, _ = _study(tmp_path, """
configurations:
  - name: base
  - name: twice the cost
    set: {transactions.work.kwargs.cpu_ms: 4.0}
load:
  calibrate: {target_util: 40, tolerance: 4, start_rate: 50, measurement: 2s, max_steps: 4,
              equal_utilization: true}
blocks: 3
metrics: [itr_s, util_proc_s]
""", model=Model())
    loads = doc["design"]["loads"]
    assert set(loads) == {"base", "twice the cost"}
    # the same target, twice the cost per transaction: half the arrival rate (within the band)
    assert loads["base"]["rate"] / loads["twice the cost"]["rate"] == pytest.approx(2.0, rel=0.2)
    for run in doc["runs"]:
        assert run["rate"] == loads[run["config"]]["rate"]
        assert abs(run["metrics"]["util_proc_s"] - 40) <= 10   # the band, and a 2 s window's Poisson arrivals


def test_a_users_sweep_gives_a_curve_obeying_the_closed_loop_law(tmp_path):
    doc, _ = _study(tmp_path, """
sweep: {factor: users, values: [1, 2, 4, 8, 16]}
blocks: 1
metrics: [etr_t, avg_last_t, avg_think_t, pbt_cmd_s, util_proc_s]
""", KNOWN_COST_USERS)
    points = doc["sweep"]["points"]
    assert [p["value"] for p in points] == [1, 2, 4, 8, 16]
    for point in points:
        m = point["metrics"]
        assert m["etr_t"] == pytest.approx(point["value"] / (m["avg_think_t"] + m["avg_last_t"]), rel=0.03)
    etr = [p["metrics"]["etr_t"] for p in points]
    assert etr == sorted(etr) and etr[-1] < 1000 / 2.0    # grows with users, never past 1/D
    assert points[-1]["metrics"]["util_proc_s"] > 90      # 16 users saturate the one server


def test_a_duet_runs_each_block_s_pair_together_in_processes_of_their_own(tmp_path):
    doc, _ = _study(tmp_path, """
configurations:
  - name: base
  - name: dearer
    set: {transactions.work.kwargs.cpu_ms: 4.0}
blocks: 3
metrics: [itr_s, pbt_cmd_s, util_proc_s]
""", KNOWN_COST_USERS, "--duet")
    assert doc["design"]["duet"] is True and len(doc["runs"]) == 6
    assert any(w["code"] == "duet" for w in doc["warnings"])
    store = tmp_path / "st"
    from perflab.records.run import read_run_record

    for block in range(3):
        pair = [r for r in doc["runs"] if r["block"] == block]
        assert sorted(r["config"] for r in pair) == ["base", "dearer"]
        records = [read_run_record(store / "runs" / r["run_id"] / "run.json") for r in pair]
        assert records[0].config.duet == records[1].config.duet is not None
        assert {r.config.users for r in records} == {4}   # the workload's load (a calibrated one is halved)
    assert metric(doc, "pbt_cmd_s")["verdict"] == "WORSE"
    assert metric(doc, "pbt_cmd_s")["ratio"] == pytest.approx(2.0, rel=0.02)


@pytest.mark.parametrize("seed", [1, 4])
def test_a_split_duet_swaps_sides_per_configuration_whatever_the_start_order(tmp_path, seed):
    # The sides the runner assigns (each run's SUT CPUs, as stored): each configuration takes each
    # half of the machine in 3 of 6 blocks, the two configurations never on one side together, and
    # the side follows the design's record -- not the run's place in its block (the start order
    # alternates, and a side that followed it never swapped: a quarter of 6-block studies; seed 4's
    # start order is such a schedule).
    doc, _ = _study(tmp_path, f"""
configurations:
  - name: base
  - name: dearer
    set: {{transactions.work.kwargs.cpu_ms: 4.0}}
blocks: 6
seed: {seed}
metrics: [itr_s, pbt_cmd_s]
""", KNOWN_COST_USERS, "--arrangement", "split-duet")
    sides = doc["design"]["sides"]
    assert sorted(sides) == [0, 0, 0, 1, 1, 1]
    by_block = {}
    for run in doc["runs"]:
        by_block.setdefault(run["block"], {})[run["config"]] = tuple(run["sut_cpus"])
    halves = {cpus for pair in by_block.values() for cpus in pair.values()}
    assert len(halves) == 2
    first = min(halves)
    for block, pair in by_block.items():
        assert pair["base"] != pair["dearer"]
        assert (pair["base"] != first) == bool(sides[block])
    entry = metric(doc, "pbt_cmd_s")
    assert entry["method"] == "crossover" and entry["ratio"] == pytest.approx(2.0, rel=0.03)


def test_interleaved_trials_run_many_short_pairs_one_at_a_time(tmp_path):
    # arrangement: interleaved: its pairs replace `blocks`, its windows the study's timing; each
    # run alone (no pair key, no bias bound: unbiased by construction); each pair in a random
    # order of its own, the first place balanced.
    doc, _ = _study(tmp_path, """
configurations:
  - name: base
  - name: dearer
    set: {transactions.work.kwargs.cpu_ms: 2.2}
arrangement: interleaved
interleaved: {pairs: 8, stabilization: 1s, measurement: 2s}
blocks: 3
metrics: [itr_s, pbt_cmd_s]
""", KNOWN_COST_USERS)
    design = doc["design"]
    assert design["arrangement"] == "interleaved" and design["duet"] is False and design["bias"] is None
    assert design["blocks"] == 8 and design["timing"]["measurement"] == 2.0 and design["timing"]["stabilization"] == 1.0
    firsts = [config for _, config in design["schedule"][::2]]
    assert sorted(firsts) == ["base"] * 4 + ["dearer"] * 4   # balanced first places
    assert len(doc["runs"]) == 16 and all(r["block"] in range(8) for r in doc["runs"])
    entry = metric(doc, "pbt_cmd_s")
    assert entry["n_blocks"] == 8 and entry["ratio"] == pytest.approx(1.1, rel=0.03) and entry["design_ci_low"] is None

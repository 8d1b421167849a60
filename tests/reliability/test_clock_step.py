"""The host's wall clock stepped during a run (issue 40): NTP correcting a drifting clock, an
administrator's `date -s`. perflab's data are on CLOCK_MONOTONIC (every time in
transactions.parquet and samples.parquet is seconds since the run's t0 on it), which no step
moves; the wall clock only dates the run (run.json's clock.t0_epoch, created and finished) and
the live file's writes. So a run whose wall clock steps back an hour in the middle of its window
is measured as if nothing had happened: complete and valid, its window and transactions whole.

How the clock is stepped: CLOCK_REALTIME is the machine's, and a time namespace
(`unshare --time`) offsets CLOCK_MONOTONIC and CLOCK_BOOTTIME only, so the step happens in the
test's own process, where the run's driver runs (execute_run in-process): its wall clock,
Python's time.time, jumps back an hour a second into the window. Nothing outlives the test."""

from __future__ import annotations

import json
import threading
import time

import pyarrow.parquet as pq
from cli_helpers import write_workload

from perflab.drive.run import RunRequest, execute_run
from perflab.store.catalog import Store
from perflab.workload.loader import load_workload

STEP_S = -3600.0
RATE, WINDOW_S = 200, 3.0

WORKLOAD = f"""
name: clock-step
target: {{kind: python}}
transactions:
  - {{name: t, call: "perflab.sut.synthetic:noop"}}
scripts: [{{name: s, steps: [t]}}]
load: {{rate: {RATE}, arrival: constant}}
timing: {{stagger: 0s, stabilization: 0.5s, measurement: {WINDOW_S:g}s}}
placement: {{workers: 1}}
"""


def test_a_wall_clock_step_mid_window_leaves_the_run_whole(tmp_path, monkeypatch):
    path = write_workload(tmp_path, WORKLOAD)
    store = tmp_path / "store"
    real = time.time
    offset = {"s": 0.0, "stepped_at": None}
    monkeypatch.setattr(time, "time", lambda: real() + offset["s"])

    def step_in_the_window() -> None:
        deadline = time.monotonic() + 60
        while not list(store.glob("runs/*/live.json")) and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(1.5)   # the window began at 0.5 s: no assertion on when
        offset["s"], offset["stepped_at"] = STEP_S, time.monotonic()

    stepper = threading.Thread(target=step_in_the_window)
    before = real()
    stepper.start()
    try:
        result = execute_run(RunRequest(load_workload(path), path, monitor=False), Store(store))
    finally:
        stepper.join()
    assert offset["stepped_at"] is not None
    run = json.loads((result.run_dir / "run.json").read_text())
    # dated by the wall clock before the step; measured on the monotonic clock, which did not move
    assert before - 1 <= run["clock"]["t0_epoch"] <= before + 60
    assert run["status"] == "complete" and run["valid"] is True, (run["reason"], run["invalid"])
    window = run["window"]
    assert window["end"] == window["planned_end"] and abs(window["end"] - window["start"] - WINDOW_S) < 1e-6
    tx = pq.read_table(result.run_dir / "transactions.parquet").to_pandas()
    in_window = tx[(tx["intended_start"] >= window["start"]) & (tx["intended_start"] < window["end"])]
    # a constant arrival rate: exactly RATE x WINDOW_S arrivals due in the window, each on time
    assert len(in_window) == RATE * WINDOW_S and in_window["ok"].all()
    assert ((tx["actual_start"] >= tx["intended_start"]) & (tx["end"] >= tx["actual_start"])).all()
    assert (tx["end"] - tx["actual_start"]).max() < 1.0
    # the step reached the driver: its last live file was written by the stepped clock
    live = json.loads((result.run_dir / "live.json").read_text())
    assert live["updated"] < run["clock"]["t0_epoch"] + STEP_S / 2

"""Runs started from one process (as a study does) keep the driver and SUT apart every time."""

from __future__ import annotations

import os

import pytest
from cli_helpers import write_workload

from perflab.drive.run import RunRequest, execute_run
from perflab.store.catalog import Store
from perflab.workload.loader import load_workload

WORKLOAD = """
name: inproc
target: {kind: python}
transactions:
  - {name: t, call: "perflab.sut.synthetic:noop"}
scripts: [{name: s, steps: [t]}]
think: 0.01
load: {users: 2}
timing: {measurement: 1s}
placement: {workers: 1}
"""


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to separate driver and SUT")
def test_consecutive_runs_restore_affinity_and_do_not_share_cpus(tmp_path):
    before = os.sched_getaffinity(0)
    path = write_workload(tmp_path, WORKLOAD)
    store = Store(tmp_path / "store")
    placements = []
    for _ in range(2):
        result = execute_run(RunRequest(load_workload(path), path, monitor=False), store)
        assert result.status == "complete"
        import json

        config = json.loads((result.run_dir / "run.json").read_text())["config"]
        placements.append((config["driver_cpus"], config["sut_cpus"], config["shared_cpus"]))
        assert os.sched_getaffinity(0) == before  # the driver's pin ends with the run
    assert placements[0] == placements[1]
    assert placements[0][2] is False

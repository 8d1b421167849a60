"""The monitor samples the window's edges: a run's counters at the start and the end of its
window are read there, not interpolated across a second of the monitor's grid (which would
smear the workers' start-up or the drain into the window's SUT CPU)."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
from cli_helpers import perflab, run_dir_of, write_workload

# The window starts half an interval after a grid point (0.5 s of stabilization on a 1 s grid):
# without a sample at the edge, the nearest ones would be 0.5 s away on either side.
WORKLOAD = """
name: edges
target: {kind: python}
transactions:
  - {name: work, call: "perflab.sut.synthetic:work", kwargs: {cpu_ms: 1.0}}
scripts: [{name: s, steps: [work]}]
load: {rate: 100, arrival: poisson}
timing: {stabilization: 0.5s, measurement: 1.5s}
placement: {workers: 1}
monitor_interval: 1s
"""

#: How soon after an edge its sample must be: the monitor answers a control message at once
#: (its select wakes on it); 0.2 s is a fifth of the grid and far beyond a loaded host's delay.
EDGE_SLACK_S = 0.2


def test_the_window_s_start_and_end_are_sampled(tmp_path):
    store = tmp_path / "store"
    result = perflab("run", write_workload(tmp_path, WORKLOAD), "-q", store=store)
    assert result.returncode == 0, result.stderr
    run_dir = run_dir_of(store, result.stdout.strip().splitlines()[-1])
    window = json.loads((run_dir / "run.json").read_text())["window"]
    t = pq.read_table(run_dir / "samples.parquet").column("t").to_pylist()
    for edge in (window["start"], window["end"]):
        assert any(edge <= x <= edge + EDGE_SLACK_S for x in t), (edge, t)

"""Smoke test of bench/: every perflab-side benchmark once, at tiny size, no peers.

Benchmarks are not tests and nothing here is timed. What is asserted is what would make a
published number wrong: the counts a benchmark divides by, the lateness it reads (perflab never
starts a transaction before its intended time), the synthetic run the reduction benchmark
times (its window count must be what perflab's reduction finds), and the report that carries
"not yet" instead of a number when perflab's HTTP adapter is missing.
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

import programs
import pytest

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench"


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    os.environ["PERFLAB_BENCH_WORK"] = str(tmp_path_factory.mktemp("bench-work"))
    sys.path.insert(0, str(BENCH))
    import common

    common.WORK = Path(os.environ["PERFLAB_BENCH_WORK"])
    common.SMOKE = True  # one attempt, no waiting for a quiet machine
    yield common
    common.SMOKE = False
    sys.path.remove(str(BENCH))


needs_two_cpus = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="the benchmarks pin to CPUs 0 and 1")


@pytest.mark.lab   # the benchmark drives real runs (bench/)
@needs_two_cpus
def test_null_target_driver_cost(bench):
    import driver_cost

    row = driver_cost._perflab_null(users=4, measurement=1.0, workers=1)
    assert row["tx"] > 0 and row["cpu_s"] > 0
    assert math.isclose(row["cpu_us_per_tx"] * row["tx_per_core_s"], 1e6, rel_tol=1e-9)
    assert row["command"].startswith("perflab run bench/work/workloads/bench-null.yaml")


@pytest.mark.lab   # the benchmark drives real runs (bench/)
@needs_two_cpus
def test_idle_users_memory_reads_the_window(bench):
    import memory

    row = memory.perflab_rss(50, stabilization=1.0, measurement=1.0)
    assert row["samples"] >= 3  # RSS samples taken inside the measurement window
    assert row["rss_bytes"] > 10 * 2**20  # a Python driver with perflab imported


@pytest.mark.lab   # the benchmark drives real runs (bench/)
@needs_two_cpus
def test_schedule_lateness_is_never_negative(bench):
    import schedule

    closed = schedule.perflab_closed(100, measurement=1.0, stabilization=0.5)
    opened = schedule.perflab_open(300, measurement=1.0, stabilization=0.5)
    for row in (closed, opened):
        assert row["n"] > 0
        assert row["early"] == 0
        assert 0 <= row["p50_ms"] <= row["p99_ms"] <= row["max_ms"]
    assert opened["n"] == pytest.approx(300, abs=3)  # constant arrivals: rate x window


@pytest.mark.lab   # the benchmark drives real runs (bench/)
@needs_two_cpus
def test_monitor_overhead_is_reported(bench):
    import monitor_reduce

    row = monitor_reduce.monitor_overhead("200ms", measurement=1.0)
    assert row["samples"] >= 5
    assert row["sampling_cpu_per_s"] > 0
    assert row["pct_of_core"] == pytest.approx(100 * row["sampling_cpu_per_s"])


def test_reduction_of_a_synthetic_run(bench):
    import monitor_reduce
    import numpy as np
    import pyarrow.parquet as pq

    run_dir = monitor_reduce.synthetic_run(5000)
    table = pq.read_table(run_dir / "transactions.parquet")
    window = json.loads((run_dir / "run.json").read_text())["window"]
    end = table.column("end").to_numpy()
    ok = table.column("ok").to_numpy(zero_copy_only=False)
    expected = int(((end >= window["start"]) & (end < window["end"]) & ok).sum())
    row = monitor_reduce.time_show(run_dir)
    assert row["tx_ok_in_window"] == expected
    assert np.all(table.column("actual_start").to_numpy() >= table.column("intended_start").to_numpy())


def test_http_row_says_not_yet_when_the_workload_does_not_fit(bench, tmp_path):
    import driver_cost

    broken = tmp_path / "http.yaml"
    text = driver_cost.PERFLAB_HTTP_WORKLOADS["perflab (compiled loop)"].read_text()
    broken.write_text(text.replace("base_url:", "no_such_field:"))
    usable, note = driver_cost.http_adapter_status(broken)
    assert not usable and note.startswith("not yet")


@needs_two_cpus
@programs.needs("nginx")
@pytest.mark.lab   # the benchmark drives real runs (bench/)
def test_http_target_once(bench):
    import run_all
    from nginx import Nginx

    with Nginx() as nginx:
        before = nginx.requests()
        row = run_all._smoke_http(nginx)
        handled = nginx.requests() - before
    if "note" in row:
        assert row["note"].startswith("not yet")
    else:
        assert 0 < row["tx"] <= handled


def test_render_carries_notes_and_goals(bench):
    import render

    results = {"driver": {"http": {"perflab (compiled loop)": {"note": "not yet: the HTTP adapter has not landed"},
                                   "k6": {"tx_per_core_s": {"median": 12000.0, "min": 11000.0, "max": 13000.0,
                                                            "n": 3, "spread_pct": 16.7, "values": []},
                                          "command": "k6 run x.js"}}},
               "monitor": {"1s": {"pct_of_core": {"median": 0.1, "min": 0.1, "max": 0.1, "n": 3, "spread_pct": 0,
                                                  "values": []}, "reps": []}}}
    text = render.render(results)
    assert "not yet: the HTTP adapter has not landed" in text
    assert "| monitors ≤ 0.5 % of one core at 1 s | 0.100 % | **met** |" in text
    assert "`k6 run x.js`" in text


def test_a_part_kept_from_another_kernel_is_named_beside_the_machine(bench):
    """Parts are measured one at a time and kept; the machine record is the newest part's. A part
    measured under another kernel build (another guest of the family), or before parts recorded
    theirs, is named -- never shown under the newest machine as if measured there."""
    import render

    results = {"machine": {"cpu_model": "X", "kernel": "6.18.44-fc-v1300"},
               "monitor_meta": {"finished": "2026-11-28T23:20:58"},
               "pairs": {"memory_meta": {"kernel": "6.18.44-fc-v1300"}, "http_meta": {"kernel": "6.18.44-fc-v1272"}}}
    assert render.part_kernels(results) == {"monitor": "not recorded", "pairs/memory": "6.18.44-fc-v1300",
                                            "pairs/http": "6.18.44-fc-v1272"}
    (row,) = [line for line in render.machine_section(results) if "another kernel" in line]
    assert row == "| parts measured under another kernel | monitor: not recorded, pairs/http: 6.18.44-fc-v1272 |"

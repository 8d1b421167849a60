"""The (I) source: detection of hardware counters and the perf_event plumbing."""

from __future__ import annotations

import os
import subprocess
import time

import programs
import pytest

from perflab.monitor.sources import SourceUnavailable
from perflab.monitor.sources.perf_counters import (
    PERF_COUNT_SW_TASK_CLOCK,
    PERF_TYPE_SOFTWARE,
    PerfCounterSource,
    _open_counter,
    _read_counter,
    probe,
)


@programs.needs("perf")
def test_probe_agrees_with_perf_stat():
    ok, why = probe()
    assert ok == (why is None)
    if not ok:
        with pytest.raises(SourceUnavailable):
            PerfCounterSource([1])
    perf = programs.path("perf")
    out = subprocess.run([perf, "stat", "-e", "instructions", "-x", ",", "true"],
                         capture_output=True, text=True)
    perf_counts = out.returncode == 0 and "<not supported>" not in out.stderr \
        and "<not counted>" not in out.stderr
    assert ok == perf_counts, (why, out.stderr)


def test_perf_event_plumbing_counts_task_clock():
    # The software task clock goes through the same perf_event_open/read path as the hardware
    # counters and is available everywhere: it must equal this thread's CPU time (pid 0 counts the
    # calling thread; the process's time would add any other thread a previous test left running).
    try:
        fd = _open_counter(0, PERF_COUNT_SW_TASK_CLOCK, inherit=False, type_=PERF_TYPE_SOFTWARE)
    except OSError as e:
        pytest.skip(f"perf_event_open not permitted: {e}")
    start_ns, cpu0 = _read_counter(fd), time.thread_time()
    x = 0
    while time.thread_time() - cpu0 < 0.2:
        x += 1
    counted = (_read_counter(fd) - start_ns) / 1e9
    spent = time.thread_time() - cpu0
    os.close(fd)
    assert abs(counted - spent) <= 0.01

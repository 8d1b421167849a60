"""Schedule accuracy: how late transactions start against their intended start.

lateness = actual_start - intended_start, from transactions.parquet, over the transactions
intended to start inside the measurement window (p50, p99, max; nearest rank).

Closed loop: 1k, 10k and 50k users on the null python target, exponential think time with a
mean of users / 1000 s, so every size offers the same ~1000 tx/s and only the number of users
(timers, tasks, memory) changes. Open loop: constant arrivals at rising rates up to the
driver's limit on the null target.

Peer: k6's constant-arrival-rate executor with an iteration that records its own lateness
against scenario start + iteration / rate (Date.now(), 1 ms resolution), same rates, on one
core. wrk2 (the constant-throughput wrk) is not available here: it is C, in none of the
reachable registries (Debian, PyPI, npm; the Go module proxy serves Go modules only).
"""

from __future__ import annotations

import json
import subprocess
import time
from typing import Any

from common import (BENCH, DRIVER_CPU, find_tool, machine_busy_s, quiet_enough, shell_join, taskset, wait_rusage,
                    with_retries, workdir)
from perflab_runs import python_workload, run_perflab, window_lateness

CLOSED_USERS = (1000, 10000, 50000)
CLOSED_RATE = 1000.0  # tx/s offered at every size
OPEN_RATES = (1000, 5000, 10000, 20000, 30000)


def perflab_closed(users: int, measurement: float = 10.0, stabilization: float = 5.0) -> dict[str, Any]:
    mean = users / CLOSED_RATE
    think = f"{{dist: exponential, mean: {mean:g}}}"

    def measure() -> dict[str, Any]:
        run = run_perflab(python_workload(f"bench-late-{users}u", users=users, think=think, workers=4,
                                          stabilization=stabilization, measurement=measurement),
                          f"bench-late-{users}u")
        return {**window_lateness(run), "command": run.command, "run_id": run.run_id,
                "background_cores": run.background_cores, "think": think}

    return with_retries(measure, quiet_enough)


def perflab_open(rate: float, measurement: float = 10.0, stabilization: float = 2.0) -> dict[str, Any]:
    def measure() -> dict[str, Any]:
        run = run_perflab(python_workload(f"bench-late-{rate:g}ps", rate=rate, workers=4, arrival="constant",
                                          stabilization=stabilization, measurement=measurement),
                          f"bench-late-{rate:g}ps")
        row = {**window_lateness(run), "command": run.command, "run_id": run.run_id,
               "background_cores": run.background_cores}
        driver = run.run.get("driver") or {}
        row["driver_util_pct"] = driver.get("util_pct")
        return row

    return with_retries(measure, quiet_enough)


def k6_open(rate: float, duration_s: int = 10, vus: int = 200) -> dict[str, Any]:
    exe = find_tool("k6")
    summary = workdir("k6") / f"lateness-{rate:g}.json"
    argv = [exe, "run", "--quiet", "--no-usage-report", "-e", f"RATE={rate:g}", "-e", f"DURATION={duration_s}s",
            "-e", f"VUS={vus}", "--summary-export", str(summary), str(BENCH / "peers" / "k6_lateness.js")]

    def measure() -> dict[str, Any]:
        busy0, t0 = machine_busy_s(), time.monotonic()
        proc = subprocess.Popen(taskset(DRIVER_CPU, argv), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, cpu = wait_rusage(proc, timeout=duration_s + 120)
        background = max(0.0, machine_busy_s() - busy0 - cpu) / (time.monotonic() - t0)
        metrics = json.loads(summary.read_text())["metrics"]
        late = metrics.get("lateness", {})
        dropped = metrics.get("dropped_iterations", {}).get("count", 0)
        n = metrics.get("iterations", {}).get("count", 0)
        return {"n": n, "p50_ms": late.get("med"), "p99_ms": late.get("p(99)"), "max_ms": late.get("max"),
                "dropped": dropped, "rate_per_s": n / duration_s, "background_cores": background,
                "command": "taskset -c 0 " + shell_join(argv), "note": "whole run (k6 has no warm-up exclusion)"}

    return with_retries(measure, quiet_enough)

"""Memory per simulated user: RSS of the load generator with N idle users (long think times)
minus its RSS with one, divided by N - 1.

perflab: the null python target; every user logs on at t0 and thinks through the idle part of
the window, so all of them are alive and idle while the driver's VmRSS is sampled (every 0.2 s,
the median over that part; run.json gives the window on the wall clock); then each makes one
transaction, in a part of the window of its own. The engine
ends a user whose next transaction falls after the window, so a think time past the window
(the 3600 s this benchmark once used) would measure users that no longer exist: the run must
show a transaction of every user, none of them due before the idle part ended, or the
measurement is refused. The idle part starts once the driver has created every user (about
12 us each: 12 s at a million).
Locust (a bare User and a FastHttpUser, wait_time 3600 s)
and k6 (VUs sleeping an hour): VmRSS sampled every 0.2 s, the median of the last 40 % of the
process's life (after the users are spawned / the VUs initialized, before shutdown).
"""

from __future__ import annotations

import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pyarrow.parquet as pq

from common import (BENCH, DRIVER_CPU, find_tool, proc_rss_bytes, quiet_enough, shell_join, taskset,
                    with_retries, workdir)
from perflab_runs import python_workload, run_perflab

# A run of idle users then a burst of one transaction each is not steady (Little's law), so it
# may be invalid (exit 5); what is measured here is its memory, and every user's transaction
# stored is still checked.
EXIT_INVALID = 5

# After the idle part, the users' one transaction each: time for the null target to run them all
# (and half a second), so every one is stored -- the proof that every user was alive. (At 1M users
# the null target runs them at about 10,000/s, not 20,000: the drain waits for the rest, and the
# users whose transaction ended early make a second one.)
BURST_S_PER_USER = 1 / 20000
# The driver creates its users at about 12 us each (their random streams, their first think), a
# million in 12 s: the idle part starts only once every user exists and is thinking.
LOGON_S_PER_USER = 15e-6


def perflab_rss(users: int, stabilization: float | None = None, measurement: float = 4.0) -> dict[str, Any]:
    def poll(pid: int):
        return proc_rss_bytes(pid)

    if stabilization is None:
        stabilization = max(4.0, 2.0 + users * LOGON_S_PER_USER)
    burst = 0.5 + users * BURST_S_PER_USER
    think = f"{{dist: constant, value: {stabilization + measurement:g}}}"  # due when the idle part ends
    run = run_perflab(python_workload(f"bench-idle-{users}", users=users, think=think,
                                      stabilization=stabilization, measurement=measurement + burst, workers=1),
                      f"bench-idle-{users}", poll=poll, ok_exits=(0, EXIT_INVALID), timeout=600.0 + users * 2e-4)
    window = run.run["window"]
    idle_end = window["start"] + measurement
    # Every user alive through the idle part: each has a transaction, and none was due before the
    # idle part ended (a user that logged on late, or a think cut short, would show one).
    tx = pq.read_table(run.run_dir / "transactions.parquet", columns=["user", "intended_start"])
    alive = len(pc.unique(tx.column("user")))
    first = pc.min(tx.column("intended_start")).as_py()
    if alive != users or first is None or first < idle_end:
        raise RuntimeError(f"{run.run_id}: {alive} of {users} users made a transaction, the first intended at "
                           f"{first} s (idle part until {idle_end:g} s): not every user was alive and idle "
                           "through the window")
    t0 = run.run["clock"]["t0_epoch"]
    # the idle part of the window only: the users thinking, not the burst of their transactions
    inside = [rss for t, rss in run.polls if rss and t0 + window["start"] <= t < t0 + idle_end]
    if not inside:
        raise RuntimeError(f"no RSS sample inside the window of {run.run_id}")
    # the whole run's highest sample too: the users' burst of transactions (all in flight at once)
    # and the run's end (its tables written, reduced) hold more than idle users do
    peak = max((rss for _, rss in run.polls if rss), default=None)
    return {"rss_bytes": statistics.median(inside), "samples": len(inside), "command": run.command,
            "run_id": run.run_id, "background_cores": run.background_cores, "peak_rss_bytes": peak}


def _tool_rss(argv: list[str], timeout: float) -> dict[str, Any]:
    samples: list[tuple[float, int]] = []
    log_path = workdir("logs") / f"{Path(argv[0]).name}-memory.log"
    with open(log_path, "w") as log_file:
        proc = subprocess.Popen(taskset(DRIVER_CPU, argv), stdout=log_file, stderr=subprocess.STDOUT)
    started = time.monotonic()
    while proc.poll() is None:
        rss = proc_rss_bytes(proc.pid)
        if rss:
            samples.append((time.monotonic(), rss))
        if time.monotonic() - started > timeout:
            proc.kill()
        time.sleep(0.2)
    proc.wait()
    end = time.monotonic()
    life = end - started
    tail = [rss for t, rss in samples if started + 0.6 * life <= t <= end - 1.0]
    if proc.returncode not in (0, None) or not tail:
        raise RuntimeError(f"{argv[0]} exited {proc.returncode} with {len(tail)} samples: see {log_path}")
    return {"rss_bytes": statistics.median(tail), "samples": len(tail), "command": "taskset -c 0 " + shell_join(argv),
            "background_cores": 0.0}


def locust_rss(users: int, user_class: str = "IdleUser", duration_s: int = 20) -> dict[str, Any]:
    exe = find_tool("locust")
    argv = [exe, "-f", str(BENCH / "peers" / "locustfile.py"), "--headless", "-u", str(users), "-r", str(users),
            "-t", f"{duration_s}s", "--only-summary", "--loglevel", "WARNING", "--host", "http://127.0.0.1:18080",
            user_class]
    return _tool_rss(argv, timeout=duration_s + 120)


def k6_rss(vus: int, duration_s: int = 20) -> dict[str, Any]:
    exe = find_tool("k6")
    argv = [exe, "run", "--quiet", "--no-usage-report", "--no-summary", "-e", f"VUS={vus}", "-e",
            f"DURATION={duration_s}s", str(BENCH / "peers" / "k6_idle.js")]
    return _tool_rss(argv, timeout=duration_s + 300)


def per_user(tool, users: int) -> dict[str, Any]:
    """One repetition: the baseline (1 user) and N users, each run waiting for a quiet machine."""
    base = with_retries(lambda: tool(1), quiet_enough)
    full = with_retries(lambda: tool(users), quiet_enough)
    value = (full["rss_bytes"] - base["rss_bytes"]) / (users - 1)
    return {"bytes_per_user": value, "rss_bytes": full["rss_bytes"], "baseline_rss_bytes": base["rss_bytes"],
            "command": full["command"], "baseline_command": base["command"]}


def mem_available() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0

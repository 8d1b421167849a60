"""Monitor overhead and the cost of reduction and reporting.

Monitor: a perflab run with the monitors on (every machine source, the SUT's process tree,
the driver's CPU) at 1 s and at 100 ms; run.json's monitor block reports the monitor
process's CPU between its first and last sample per second of sampling
(`sampling_cpu_per_s`) and its whole CPU (`monitor_cpu_s`, start-up and the final parquet
write included).

Reduction: a synthetic run directory per docs/architecture.md laid out as the driver writes
one (run.json; transactions.parquet of 1M or 10M rows in completion order, in row groups of
2^20: 4 classes, 3 transactions, 2 scripts, 1000 users, lognormal response times, exponential
thinks, 1 % errors; thinks.parquet with each user's think still running at the end), timed as
a user meets it: `perflab show --json DIR` (a new process: interpreter, imports, reduction,
JSON rendering) and, apart, `reduce_run` in a warm process.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from common import machine_busy_s, perflab_cmd, quiet_enough, shell_join, with_retries, workdir
from perflab_runs import python_workload, run_perflab


def monitor_overhead(interval: str, measurement: float = 15.0) -> dict[str, Any]:
    def measure() -> dict[str, Any]:
        name = f"bench-monitor-{interval}"
        run = run_perflab(python_workload(name, users=10, think="{dist: exponential, mean: 0.01}", workers=2,
                                          stabilization=2.0, measurement=measurement, monitor_interval=interval),
                          name, monitor=True)
        mon = run.run.get("monitor") or {}
        per_s = mon.get("sampling_cpu_per_s")
        return {"sampling_cpu_per_s": per_s, "pct_of_core": None if per_s is None else 100.0 * per_s,
                "monitor_cpu_s": mon.get("monitor_cpu_s"), "monitor_write_cpu_s": mon.get("monitor_write_cpu_s"),
                "samples": mon.get("samples"), "span_s": mon.get("span_s"), "command": run.command,
                "run_id": run.run_id, "background_cores": run.background_cores,
                "sut_processes": len((run.run.get("sut") or {}).get("pids") or [])}

    return with_retries(measure, quiet_enough)


# --- reduction -----------------------------------------------------------------------------------


#: Bumped when the synthetic run's layout changes, so a cached one of the old layout is not used.
SYNTHETIC_LAYOUT = 2


def synthetic_run(rows: int, seed: int = 7) -> Path:
    """A stored run of `rows` transactions (made once, then reused)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from perflab.drive.load.recorder import SCHEMA, THINKS_SCHEMA

    directory = workdir("reduce") / f"synthetic-{rows}-v{SYNTHETIC_LAYOUT}"
    if (directory / "run.json").exists() and (directory / "thinks.parquet").exists():
        return directory
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    window = (60.0, 60.0 + rows / 10000.0)  # 10,000 tx/s
    end_all = window[1] + 5.0
    intended = rng.uniform(0.0, end_all, rows)
    lateness = rng.exponential(0.0002, rows)
    service = rng.lognormal(np.log(0.004), 0.6, rows)
    actual = intended + lateness
    end = actual + service
    order = np.argsort(end, kind="stable")  # the driver records a transaction when it ends
    intended, actual, end, service = intended[order], actual[order], end[order], service[order]
    first = actual + service * 0.3
    ok = rng.random(rows) >= 0.01
    error = pa.array(np.where(ok, None, "RuntimeError: synthetic"), pa.string())
    users = 1000

    def names(codes, dictionary):
        return pa.DictionaryArray.from_arrays(pa.array(codes, pa.int16()), pa.array(dictionary, pa.string()))

    classes = ["trivial", "light", "medium", "heavy"]
    table = pa.Table.from_arrays([
        pa.array(rng.integers(0, users, rows).astype(np.int32)),
        names(rng.integers(0, 2, rows).astype(np.int16), ["browse", "buy"]),
        names(rng.integers(0, 3, rows).astype(np.int16), ["home", "search", "order"]),
        names(rng.integers(0, 4, rows).astype(np.int16), classes),
        pa.array(intended), pa.array(actual), pa.array(first), pa.array(end), pa.array(ok), error,
        pa.array(rng.exponential(0.1, rows)), pa.array(service * 0.5), pa.array(np.full(rows, np.nan)),
        pa.array(np.full(rows, np.nan)), pa.array(np.full(rows, np.nan)),
        pa.array(rng.integers(0, 8, rows).astype(np.int16)),
        pa.array(np.full(rows, np.nan)),  # harness_cpu
    ], schema=SCHEMA)
    pq.write_table(table, directory / "transactions.parquet", row_group_size=1 << 20)
    last = end_all + rng.uniform(0.0, 0.1, users)  # each user's think running when the run stopped
    pq.write_table(pa.Table.from_arrays([
        pa.array(np.arange(users, dtype=np.int32)),
        names(rng.integers(0, 3, users).astype(np.int16), ["home", "search", "order"]),
        names(rng.integers(0, 4, users).astype(np.int16), classes),
        pa.array(last), pa.array(rng.exponential(0.1, users)),
    ], schema=THINKS_SCHEMA), directory / "thinks.parquet")
    run = {
        "run_id": f"synthetic-{rows}", "status": "complete", "reason": None, "valid": True, "invalid_reasons": [],
        "label": "synthetic", "workload_path": "bench/monitor_reduce.py",
        "workload": {"name": "synthetic"},
        "config": {"users": users, "rate": None, "seed": seed, "workers": 8, "processors": 1, "sut_cpus": [1],
                   "driver_cpus": [0], "stagger_s": 0, "stabilization_s": 60, "measurement_s": window[1] - window[0]},
        "fingerprint": {"cores": 2}, "clock": {"t0_monotonic": 0.0, "t0_epoch": 0.0},
        "window": {"start": window[0], "end": window[1], "planned_end": window[1]},
        "monitor": {"interval_s": 1.0},
        "created": "synthetic", "finished": "synthetic",
    }
    (directory / "run.json").write_text(json.dumps(run))
    return directory


def time_show(run_dir: Path) -> dict[str, Any]:
    """`perflab show --json DIR` in a new process: wall and CPU seconds."""
    argv = [*perflab_cmd(), "show", "--json", str(run_dir), "--store", str(workdir("store"))]

    def measure() -> dict[str, Any]:
        busy0 = machine_busy_s()
        started = time.monotonic()
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            proc = subprocess.Popen(argv, stdout=out, stderr=err)
            # this child's own rusage (wait4): RUSAGE_CHILDREN's maxrss is the largest of every
            # child reaped so far -- the 1M-user memory run's, 2.1 GB, in a whole run of bench/
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.monotonic() - started
            proc.returncode = os.waitstatus_to_exitcode(status)
            out.seek(0)
            err.seek(0)
            stdout, stderr = out.read().decode(), err.read().decode()
        if proc.returncode != 0:
            raise RuntimeError(f"perflab show failed: {stderr[-1000:]}")
        cpu = usage.ru_utime + usage.ru_stime
        tx = json.loads(stdout)["values"].get("tx_ok")
        return {"wall_s": wall, "cpu_s": cpu, "tx_ok_in_window": tx, "peak_rss_mb": usage.ru_maxrss / 1024,
                "background_cores": max(0.0, machine_busy_s() - busy0 - cpu) / wall,
                "command": shell_join(["perflab", "show", "--json", f"bench/work/reduce/{run_dir.name}"])}

    return with_retries(measure, quiet_enough)


def time_reduce_in_process(run_dir: Path) -> dict[str, Any]:
    """reduce_run alone, in a warm process (no interpreter start, imports done)."""
    code = ("import sys, time, json; from perflab.reduce.reduce import reduce_run; t=time.perf_counter(); "
            "c=time.process_time(); m=reduce_run(sys.argv[1]); json.dumps(m.to_json()); "
            "print(json.dumps({'wall_s': time.perf_counter()-t, 'cpu_s': time.process_time()-c}))")

    def measure() -> dict[str, Any]:
        busy0, t0 = machine_busy_s(), time.monotonic()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        proc = subprocess.run([perflab_cmd()[0], "-c", code, str(run_dir)], capture_output=True, text=True,
                              timeout=600)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        child_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if proc.returncode != 0:
            raise RuntimeError(f"reduce_run failed: {proc.stderr[-1000:]}")
        row = json.loads(proc.stdout.strip().splitlines()[-1])
        whole = time.monotonic() - t0
        row["background_cores"] = max(0.0, (machine_busy_s() - busy0) - child_cpu) / whole
        return row

    return with_retries(measure, quiet_enough)

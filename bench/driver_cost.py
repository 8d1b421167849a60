"""Driver cost: CPU microseconds per transaction in the load generator, and the most
transactions per second one generator core sustains.

(a) Null in-process target. perflab: the python adapter calling perflab.sut.synthetic:noop,
    think 0, 50 users, 4 SUT workers on CPU 1, the driver on CPU 0; DRIVER SEC and COMMANDS
    (T) over the measurement window come from perflab's own reduction. Peers: the nearest
    analogue each has -- a Locust User whose task only reports itself, a k6 iteration that
    does nothing. Their cost is measured by difference between a short and a long run
    (wait4 CPU and the tool's own count), which cancels start-up and shutdown.
(b) Local HTTP target: nginx (bench/nginx.py) on CPU 1, the generator on CPU 0, 50
    connections / users / VUs, 10 s. Every tool is measured identically from outside: after
    the requests start and 1.5 s of warm-up, a 6 s window of the generator's CPU (its process
    tree, /proc/PID/stat) against nginx's handled-request count (stub_status).

Both give CPU us/tx = generator CPU / transactions and tx/s per generator core = transactions
/ generator CPU-second (the throughput a saturated core would give at that cost).
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

from common import (BENCH, DRIVER_CPU, cpu_busy_s, descendants, find_tool, log, machine_busy_s, proc_cpu_s,
                    quiet_enough, shell_join, taskset, wait_rusage, with_retries, workdir)
from perflab_runs import python_workload, run_perflab

USERS = 50
DURATION_S = 10
WARMUP_S = 1.5
WINDOW_S = 6.0
NOT_LANDED = "not yet: the HTTP adapter has not landed"
# perflab's rows: the compiled loop (drive/load/native_http.py, what a workload of one fixed
# request per transaction runs on), the Python path it falls back to, and the aiohttp client.
PERFLAB_HTTP_WORKLOADS = {"perflab (compiled loop)": BENCH / "workloads" / "http-nginx-httptools.yaml",
                          "perflab (httptools, Python path)": BENCH / "workloads" / "http-nginx-httptools-python.yaml",
                          "perflab (aiohttp client)": BENCH / "workloads" / "http-nginx-aiohttp.yaml"}


# --- (a) the null target -----------------------------------------------------------------------


def perflab_null(users: int = USERS, measurement: float = DURATION_S, workers: int = 4) -> dict[str, Any]:
    return with_retries(lambda: _perflab_null(users, measurement, workers), quiet_enough)


def _perflab_null(users: int, measurement: float, workers: int) -> dict[str, Any]:
    run = run_perflab(python_workload("bench-null", users=users, workers=workers, measurement=measurement),
                      "bench-null")
    values = run.metrics().values
    cpu, tx = values.get("driver_sec"), values.get("tx_ok")
    return {"command": run.command, "run_id": run.run_id, "tx": tx, "cpu_s": cpu, "tps": values.get("etr_t"),
            "gen_util_pct": values.get("driver_cpu"), "cpu_us_per_tx": 1e6 * cpu / tx if cpu and tx else None,
            "tx_per_core_s": tx / cpu if cpu and tx else None, "background_cores": run.background_cores}


def _difference(short: dict[str, Any], long: dict[str, Any]) -> dict[str, Any]:
    d_tx = long["tx"] - short["tx"]
    d_cpu = long["cpu_s"] - short["cpu_s"]
    d_t = long["duration_s"] - short["duration_s"]
    ok = d_tx > 0 and d_cpu > 0
    return {"tx": d_tx, "cpu_s": d_cpu, "tps": d_tx / d_t, "gen_util_pct": 100.0 * d_cpu / d_t,
            "cpu_us_per_tx": 1e6 * d_cpu / d_tx if ok else None, "tx_per_core_s": d_tx / d_cpu if ok else None,
            "command": long["command"], "note": f"difference of a {short['duration_s']:g} s and a "
                                                f"{long['duration_s']:g} s run"}


def locust_null_once(duration_s: float, users: int = USERS) -> dict[str, Any]:
    exe = find_tool("locust")
    argv = [exe, "-f", str(BENCH / "peers" / "locustfile.py"), "--headless", "-u", str(users), "-r", str(users),
            "-t", f"{duration_s:g}s", "--only-summary", "--json", "--loglevel", "WARNING", "NullUser"]
    busy0, t0 = machine_busy_s(), time.monotonic()
    proc = subprocess.Popen(taskset(DRIVER_CPU, argv), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out = proc.stdout.read()
    _, cpu = wait_rusage(proc, timeout=duration_s + 60)
    background = max(0.0, machine_busy_s() - busy0 - cpu) / (time.monotonic() - t0)
    stats = json.loads(out)
    tx = sum(s.get("num_requests", 0) for s in stats)
    return {"tx": tx, "cpu_s": cpu, "duration_s": duration_s, "command": "taskset -c 0 " + shell_join(argv),
            "background_cores": background}


def k6_null_once(duration_s: float, users: int = USERS) -> dict[str, Any]:
    exe = find_tool("k6")
    summary = workdir("k6") / "null-summary.json"
    argv = [exe, "run", "--quiet", "--no-usage-report", "--vus", str(users), "--duration", f"{duration_s:g}s",
            "--summary-export", str(summary), str(BENCH / "peers" / "k6_null.js")]
    busy0, t0 = machine_busy_s(), time.monotonic()
    proc = subprocess.Popen(taskset(DRIVER_CPU, argv), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, cpu = wait_rusage(proc, timeout=duration_s + 60)
    background = max(0.0, machine_busy_s() - busy0 - cpu) / (time.monotonic() - t0)
    data = json.loads(summary.read_text())
    tx = data["metrics"]["iterations"]["count"]
    return {"tx": tx, "cpu_s": cpu, "duration_s": duration_s, "command": "taskset -c 0 " + shell_join(argv),
            "background_cores": background}


def peer_null(tool: str, short_s: float = 4.0, long_s: float = 4.0 + DURATION_S) -> dict[str, Any]:
    once = {"locust": locust_null_once, "k6": k6_null_once}[tool]

    def measure() -> dict[str, Any]:
        short, long = once(short_s), once(long_s)
        row = _difference(short, long)
        row["background_cores"] = max(short["background_cores"], long["background_cores"])
        return row

    return with_retries(measure, quiet_enough)


# --- (b) the HTTP target -----------------------------------------------------------------------


def _tree_cpu(pid: int) -> float:
    return sum(c for c in (proc_cpu_s(p) for p in [pid, *descendants(pid)]) if c is not None)


def measure_http(argv: list[str], nginx, *, pin: bool = True, pid_of=None, timeout: float = 120.0) -> dict[str, Any]:
    """Start a load generator, measure a window of its steady state against nginx's count."""
    log_path = workdir("logs") / f"{Path(argv[0]).name}.log"
    with open(log_path, "w") as log_file:
        proc = subprocess.Popen(taskset(DRIVER_CPU, argv) if pin else argv, stdout=log_file, stderr=subprocess.STDOUT)
        try:
            start = nginx.requests()
            launched = time.monotonic()
            while nginx.requests() < start + 200:  # the load has begun
                if proc.poll() is not None:
                    raise RuntimeError(f"{argv[0]} exited before sending load: see {log_path}")
                if time.monotonic() - launched > 60:
                    raise RuntimeError(f"{argv[0]} sent no load within 60 s: see {log_path}")
                time.sleep(0.05)
            time.sleep(WARMUP_S)
            pid = pid_of(proc) if pid_of else proc.pid
            m0, k0 = machine_busy_s(), cpu_busy_s(DRIVER_CPU)
            c0, n0, g0, t0 = _tree_cpu(pid), nginx.requests(), nginx.cpu_s(), time.monotonic()
            time.sleep(WINDOW_S)
            c1, n1, g1, t1 = _tree_cpu(pid), nginx.requests(), nginx.cpu_s(), time.monotonic()
            m1, k1 = machine_busy_s(), cpu_busy_s(DRIVER_CPU)
            still_running = proc.poll() is None
            proc.wait(timeout=timeout)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    tx, cpu, wall = n1 - n0 - 1, c1 - c0, t1 - t0  # minus the status request itself
    return {"tx": tx, "cpu_s": cpu, "tps": tx / wall, "gen_util_pct": 100.0 * cpu / wall,
            "target_util_pct": 100.0 * (g1 - g0) / wall, "cpu_us_per_tx": 1e6 * cpu / tx if tx > 0 else None,
            "tx_per_core_s": tx / cpu if cpu > 0 else None, "window_complete": still_running,
            "driver_core_busy_pct": 100.0 * (k1 - k0) / wall,
            "background_cores": max(0.0, (m1 - m0) - cpu - (g1 - g0)) / wall,
            "exit_code": proc.returncode, "log": str(log_path)}


def http_commands(url: str) -> dict[str, list[str]]:
    locust = find_tool("locust")
    k6 = find_tool("k6")
    wrk = find_tool("wrk")
    locustfile = str(BENCH / "peers" / "locustfile.py")
    commands: dict[str, list[str]] = {}
    if wrk:
        commands["wrk"] = [wrk, "-t1", f"-c{USERS}", f"-d{DURATION_S}s", url]
    if k6:
        commands["k6"] = [k6, "run", "--quiet", "--no-usage-report", "--vus", str(USERS), "--duration",
                          f"{DURATION_S}s", "-e", f"TARGET={url}", str(BENCH / "peers" / "k6_http.js")]
    if locust:
        for name, cls in (("Locust FastHttpUser", "FastUser"), ("Locust HttpUser", "PlainUser")):
            commands[name] = [locust, "-f", locustfile, "--headless", "-u", str(USERS), "-r", str(USERS), "-t",
                              f"{DURATION_S}s", "--host", url.rstrip("/"), "--only-summary", "--loglevel", "WARNING",
                              cls]
    return commands


def http_adapter_status(workload: Path) -> tuple[bool, str]:
    """(usable, note): does `target: {kind: http}` exist in this perflab, and does the bench's
    HTTP workload validate against it? (Whether a run works is seen when it runs.)"""
    from perflab.workload.model import Workload

    kinds = json.dumps(Workload.model_json_schema(by_alias=True))
    if '"http"' not in kinds:
        return False, NOT_LANDED
    try:
        from perflab.workload.loader import load_workload

        load_workload(workload)
    except BaseException as exc:  # InputError or a validation error: the template needs updating
        shown = workload.relative_to(BENCH.parent) if workload.is_relative_to(BENCH.parent) else workload
        return False, (f"not yet: kind http exists but {shown} "
                       f"does not validate ({exc}); update the template to the adapter's fields")
    return True, ""


def perflab_http_argv(workload: Path) -> list[str]:
    from common import perflab_cmd

    store = workdir("store")
    return [*perflab_cmd(), "run", str(workload), "--quiet", "--store", str(store), "--no-monitor",
            "--users", str(USERS), "--driver-cpus", str(DRIVER_CPU), "--sut-cpus", "1"]


def perflab_http(nginx, workload: Path) -> dict[str, Any]:
    usable, note = http_adapter_status(workload)
    if not usable:
        return {"note": note}
    argv = perflab_http_argv(workload)
    try:
        # perflab pins its own driver (--driver-cpus 0); taskset would hide CPU 1 from it
        row = with_retries(lambda: measure_http(argv, nginx, pin=False), quiet_enough)
    except RuntimeError as exc:
        last = ""
        log_path = workdir("logs") / f"{Path(argv[0]).name}.log"
        if log_path.exists():
            lines = [l for l in log_path.read_text().splitlines() if l.strip()]
            last = lines[-1].strip() if lines else ""
        return {"note": f"{NOT_LANDED} (perflab run: {last or exc})"}
    row["command"] = shell_join(["perflab", *argv[3:]])
    return row


def run_http_rep(nginx, url: str) -> dict[str, dict[str, Any]]:
    """One repetition: every tool once, in a fixed interleaved order."""
    out: dict[str, dict[str, Any]] = {}
    for name, argv in http_commands(url).items():
        log(f"driver cost / HTTP: {name}")
        row = with_retries(lambda: measure_http(argv, nginx), quiet_enough)
        row["command"] = "taskset -c 0 " + shell_join(argv)
        out[name] = row
    for name, workload in PERFLAB_HTTP_WORKLOADS.items():
        log(f"driver cost / HTTP: {name}")
        out[name] = perflab_http(nginx, workload)
    return out

"""Driver cost as a user gets it, paired (issue 38, item 3): perflab's default settings and its
lean ones, wrk and k6 on nginx; perflab and redis-benchmark on redis-server; perflab and pgbench on
PostgreSQL's debit-credit -- each generator saturated and at a fixed rate below saturation, in
repetitions that run every generator once in a seeded random order, so each repetition gives a
pair (perflab beside the peer, minutes apart at most). Then the compiled loop's own lateness (open
loop at 20,000/s, closed loop at 10,000 users) and 100,000 connected keep-alive users on one
driver core.

Every generator is measured the same way, from outside, over the same wall window: after its load
has begun and WARMUP_S more, WINDOW_S of its process's CPU (utime + stime of all its threads,
/proc/PID/stat) against what the server counted in that window (nginx's stub_status, Redis's
INFO, PostgreSQL's xact_commit). For perflab, three checks reject a run: its recorded rows
ending in the window must match the server's count (to the requests in flight at the edges),
run.json's `fingerprint.driver_core` must be `native`, and the run must be valid -- at a rate,
by every gate; saturated, by every gate but the driver's saturation, which is the point there.
A rejected run is kept in the results with its reason and never enters a ratio.

    python bench/driver_cost_pairs.py                      # everything, 5 repetitions
    python bench/driver_cost_pairs.py --only http,tcp,pg   # parts: http tcp pg lateness memory
    python bench/driver_cost_pairs.py --smoke              # each part once, tiny: the harness works

Writes bench/results/driver_pairs.json (every repetition, its command, check and reason);
bench/run_all.py runs it as the part `pairs` and docs/performance.md's goal rows read it.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import random
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    BENCH,
    DRIVER_CPU,
    PAGE,
    REPO,
    TARGET_CPU,
    descendants,
    find_tool,
    log,
    machine,
    perflab_cmd,
    port_free,
    proc_cpu_s,
    proc_rss_bytes,
    proc_wakes,
    shell_join,
    summarize,
    taskset,
    workdir,
    write_text,
)

OUT = BENCH / "results" / "driver_pairs.json"
PARTS = ("http", "tcp", "pg", "lateness", "memory")
USERS = 50
WARMUP_S = 2.0
WINDOW_S = 6.0
RUN_S = 12  # a generator's whole run: its start, the warm-up, the window and some slack
HTTP_RATE = 10_000  # a fixed rate below every generator's saturation on this machine (wrk's ~100k/s, k6's ~15k/s)
TCP_RATE = 10_000
PG_RATE = 600  # debit-credit's transactions per second, below PostgreSQL's saturation on one CPU
SEED = 38


# --- running a generator and measuring a window of it -----------------------------------------------------------


def _proc_comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def measure(argv: list[str], counted: Callable[[], int], *, pin: bool, ready: Callable[[subprocess.Popen], int | None],
            env: dict[str, str] | None = None, window_s: float = WINDOW_S, warmup_s: float = WARMUP_S,
            timeout: float = 600.0) -> dict[str, Any]:
    """Start a generator; once `ready(process)` says its measured load runs (and names the process
    that drives it: the tool, perflab's own, or pgbench under perflab) and `warmup_s` more has
    passed, a window of that process's CPU against the server's count. Waits for the generator's end."""
    log_path = workdir("logs") / f"pairs-{Path(argv[0]).name}.log"
    with open(log_path, "w") as log_file:
        proc = subprocess.Popen(taskset(DRIVER_CPU, argv) if pin else argv, stdout=log_file, stderr=subprocess.STDOUT,
                                env=env)
        try:
            pid = ready(proc)
            if pid is None:
                raise RuntimeError(f"{argv[0]}: its measured load never began: see {log_path}")
            time.sleep(warmup_s)
            # the server's count is read at some moment of its query (a busy server answers late): the
            # window's edge is the query's middle, and its length bounds how far off the edge may be
            w0, c0, a0 = proc_wakes(pid), proc_cpu_s(pid), time.monotonic()
            n0, b0 = counted(), time.monotonic()
            time.sleep(window_s)
            w1, c1, a1 = proc_wakes(pid), proc_cpu_s(pid), time.monotonic()
            n1, b1 = counted(), time.monotonic()
            t0, t1 = (a0 + b0) / 2, (a1 + b1) / 2
            alive = proc.poll() is None
            proc.wait(timeout=timeout)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    if c0 is None or c1 is None:
        raise RuntimeError(f"{argv[0]}: its driver process ended inside the window")
    served, cpu, wall = n1 - n0, c1 - c0, t1 - t0
    return {"served": served, "cpu_s": cpu, "wall_s": wall, "window_mono": [t0, t1], "edge_s": (b0 - a0) + (b1 - a1),
            "tps": served / wall, "cpu_us_per_tx": 1e6 * cpu / served if served > 0 else None,
            "gen_util_pct": 100.0 * cpu / wall, "window_inside_run": alive,
            "wakes_per_tx": (w1 - w0) / served if served > 0 and w0 is not None and w1 is not None else None,
            "exit_code": proc.returncode,
            "log": str(log_path)}


def _waiting(proc: subprocess.Popen, what: str, found: Callable[[], int | None], limit_s: float = 120.0) -> int | None:
    until = time.monotonic() + limit_s
    while time.monotonic() < until:
        pid = found()
        if pid is not None:
            return pid
        if proc.poll() is not None:
            raise RuntimeError(f"the generator exited before {what}")
        time.sleep(0.05)
    return None


def load_begun(counted: Callable[[], int], more: int = 200) -> Callable[[subprocess.Popen], int | None]:
    """A peer: its measured load has begun when the server has counted `more`; it drives itself."""

    def ready(proc: subprocess.Popen) -> int | None:
        start = counted()
        return _waiting(proc, "sending load", lambda: proc.pid if counted() >= start + more else None)

    return ready


def perflab_measuring(store: Path) -> Callable[[subprocess.Popen], int | None]:
    """perflab's own driver: its window has begun when its live.json says so (its phase)."""

    def phase() -> str | None:
        for live in store.glob("runs/*/live.json"):
            try:
                return json.loads(live.read_text()).get("phase")
            except (OSError, ValueError):  # being rewritten
                return None
        return None

    def ready(proc: subprocess.Popen) -> int | None:
        return _waiting(proc, "its window", lambda: proc.pid if phase() == "measurement" else None)

    return ready


def pgbench_measuring(seconds: int) -> Callable[[subprocess.Popen], int | None]:
    """pgbench under perflab: the pgbench process of the measured period (its -T is the window's
    seconds; a warm-up's is the stabilization's, pgbench -i initializes)."""

    def found(proc: subprocess.Popen) -> int | None:
        for child in descendants(proc.pid):
            try:
                args = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if args and args[0].endswith(b"pgbench") and b"-T" in args and \
                    args[args.index(b"-T") + 1] == str(seconds).encode():
                return child
        return None

    return lambda proc: _waiting(proc, "pgbench's measured run", lambda: found(proc))


# --- perflab's side: its command, and the checks that reject a run ----------------------------------------------


def perflab_argv(workload: Path, store: Path, *extra: str) -> list[str]:
    return [*perflab_cmd(), "run", str(workload), "--quiet", "--store", str(store), *extra]


def shown(argv: list[str]) -> str:
    """The command as a reader types it."""
    return shell_join(["perflab", *argv[3:]])


def judge(store: Path, row: dict[str, Any], *, saturated: bool, tolerance: int, native: bool = True) -> None:
    """The run's checks into `row` (`valid`, `reasons`): rows against the server's count, the
    compiled loop ran, the gates passed (saturated: all but the driver's)."""
    from perflab.records.run import read_run_record
    from perflab.reduce.reduce import reduce_run
    from perflab.study.validity import GateSettings, judge_run

    runs = sorted((store / "runs").iterdir())
    run_dir = runs[-1]
    record = read_run_record(run_dir / "run.json")
    reasons: list[str] = []
    core = record.fingerprint.get("driver_core")
    row.update(run_id=record.run_id, driver_core=core)
    if native and core != "native":
        reasons.append(f"driver_core is {core!r}, not native")
    metrics = reduce_run(run_dir)
    failed = [g.gate for g in judge_run(record, metrics.values, metrics.per_interval, GateSettings()).gates
              if g.outcome == "fail"]
    allowed = {"driver not saturated"} if saturated else set()
    reasons += [f"gate failed: {g}" for g in failed if g not in allowed]
    row["gates_failed"] = failed
    recorded = _rows_in(run_dir, record.clock.t0_monotonic, *row["window_mono"])
    row["recorded"] = recorded
    if recorded is None:
        reasons.append("no transactions.parquet")
    elif abs(recorded - row["served"]) > (tolerance := tolerance + math.ceil(row["tps"] * row["edge_s"] / 2)):
        reasons.append(f"recorded {recorded} transactions in the window, the server counted {row['served']} "
                       f"(at most {tolerance} apart)")
    row["valid"] = not reasons
    row["reasons"] = reasons


def _rows_in(run_dir: Path, t0: float, w0: float, w1: float) -> int | None:
    import pyarrow.parquet as pq

    path = run_dir / "transactions.parquet"
    if not path.exists():
        return None
    table = pq.read_table(path, columns=["end", "ok"]).to_pydict()
    return sum(1 for end, ok in zip(table["end"], table["ok"]) if ok and w0 - t0 <= end < w1 - t0)


def peer_row(row: dict[str, Any], tolerance_ok: bool = True) -> dict[str, Any]:
    """A peer's run is valid when it ran through the window and exited as it should."""
    reasons = [] if row["window_inside_run"] else ["the window outlasted the run"]
    if row["exit_code"] not in (0, None) and not tolerance_ok:
        reasons.append(f"exit code {row['exit_code']}")
    row["valid"] = not reasons
    row["reasons"] = reasons
    return row


def perflab_row(workload: Path, counted: Callable[[], int], mode: str, name: str, *extra: str,
                tolerance: int = USERS + 2) -> dict[str, Any]:
    label = name.replace(" ", "-").replace("(", "").replace(")", "")
    store = workdir("pairs-store") / f"{label}-{mode}-{time.time_ns()}"
    argv = perflab_argv(workload, store, *extra)
    row = measure(argv, counted, pin=False, ready=perflab_measuring(store))  # perflab pins its own driver
    row["command"] = shown(argv)
    judge(store, row, saturated=mode == "saturated", tolerance=tolerance)
    return row


# --- the workloads, as a user writes them ---------------------------------------------------------------------------

HTTP_DEFAULTS = BENCH / "workloads" / "http-nginx-defaults.yaml"  # no client, no connections: perflab's defaults
HTTP_LEAN = BENCH / "workloads" / "http-nginx-httptools.yaml"      # client: httptools, connections: per_user
TCP_WORKLOAD = BENCH / "workloads" / "tcp-redis-ping.yaml"
PG_WORKLOAD = REPO / "examples" / "postgres" / "debit-credit.yaml"
PG_PGBENCH = REPO / "examples" / "postgres" / "debit-credit-pgbench.yaml"


def _with(workload: Path, name: str, text: str) -> Path:
    """A copy of the workload with lines appended (a setting, a rate), in the bench's work dir."""
    return write_text(workdir("pairs-workloads") / name, workload.read_text() + "\n" + text + "\n")


EXACT = "perflab (wake: exact)"


def _exact(workload: Path) -> Path:
    """A copy of the workload with `timing: {wake: exact}` (everything else as written)."""
    text = workload.read_text()
    assert "timing: {stagger:" in text
    return write_text(workdir("pairs-workloads") / f"{workload.stem}-exact.yaml",
                      text.replace("timing: {stagger:", "timing: {wake: exact, stagger:"))


def _open_loop(workload: Path, name: str, rate: float, in_flight: int = USERS) -> Path:
    text = workload.read_text().replace(f"load: {{users: {USERS}}}", f"load: {{rate: {rate:g}, arrival: constant, "
                                                                      f"max_in_flight: {in_flight}}}")
    return write_text(workdir("pairs-workloads") / name, text)


# --- HTTP ---------------------------------------------------------------------------------------------------------------


def http_generators(url: str, rate: float) -> dict[str, dict[str, Callable[[Any], dict[str, Any]]]]:
    """mode -> generator -> measure(nginx)."""
    wrk, k6 = find_tool("wrk"), find_tool("k6")
    gens: dict[str, dict[str, Callable[[Any], dict[str, Any]]]] = {"saturated": {}, "rate": {}}
    for mode in gens:
        for name, workload in (("perflab (defaults)", HTTP_DEFAULTS), ("perflab (lean)", HTTP_LEAN)):
            path = workload if mode == "saturated" else _open_loop(workload, f"{workload.stem}-rate.yaml", rate)
            gens[mode][name] = lambda nginx, p=path, n=name, m=mode: perflab_row(p, nginx.requests, m, n)
    # the defaults with one setting, at the rate only (saturated, nothing waits): each arrival
    # started at its time to the microsecond, a wake-up for each, instead of on the 1 ms grid
    exact = _exact(_open_loop(HTTP_DEFAULTS, f"{HTTP_DEFAULTS.stem}-rate.yaml", rate))
    gens["rate"][EXACT] = lambda nginx, p=exact: perflab_row(p, nginx.requests, "rate", EXACT)
    if wrk:
        sat = [wrk, "-t1", f"-c{USERS}", f"-d{RUN_S}s", url]
        # a wrk2-like rate on wrk 4.1: each connection waits users/rate between its requests (delay())
        paced = [wrk, "-t1", f"-c{USERS}", f"-d{RUN_S}s", "-s", str(BENCH / "peers" / "wrk_rate.lua"), url, "--",
                 str(rate), str(USERS)]
        gens["saturated"]["wrk"] = lambda nginx, a=sat: _peer(a, nginx.requests)
        gens["rate"]["wrk"] = lambda nginx, a=paced: _peer(a, nginx.requests)
    if k6:
        base = [k6, "run", "--quiet", "--no-usage-report", "-e", f"TARGET={url}", "-e", f"DURATION={RUN_S}s",
                "-e", f"VUS={USERS}"]
        saturated = [*base, "--vus", str(USERS), "--duration", f"{RUN_S}s", str(BENCH / "peers" / "k6_http.js")]
        gens["saturated"]["k6"] = lambda nginx, a=saturated: _peer(a, nginx.requests)
        gens["rate"]["k6"] = lambda nginx, a=[*base, "-e", f"RATE={rate:g}", str(BENCH / "peers" / "k6_http_rate.js")]: \
            _peer(a, nginx.requests)
    return gens


def _peer(argv: list[str], counted: Callable[[], int]) -> dict[str, Any]:
    row = measure(argv, counted, pin=True, ready=load_begun(counted))
    row["command"] = "taskset -c 0 " + shell_join(argv)
    return peer_row(row)


def interleaved(reps: int, generators: dict[str, dict[str, Callable[[Any], dict[str, Any]]]], server: Any,
                label: str) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Every generator once per repetition, in an order drawn anew each repetition (seeded)."""
    rng = random.Random(SEED)
    rows: dict[str, dict[str, list[dict[str, Any]]]] = {mode: {} for mode in generators}
    for rep in range(reps):
        order = [(mode, name) for mode, gens in generators.items() for name in gens]
        rng.shuffle(order)
        for mode, name in order:
            log(f"pairs / {label}: {name}, {mode}, repetition {rep + 1}/{reps}")
            try:
                row = generators[mode][name](server)
            except RuntimeError as exc:
                row = {"valid": False, "reasons": [str(exc)]}
            row["rep"] = rep
            rows[mode].setdefault(name, []).append(row)
    return rows


def pairs(rows: dict[str, list[dict[str, Any]]], ours: str, peer: str, key: str = "cpu_us_per_tx") -> list[float | None]:
    """Each repetition's ratio ours ÷ peer (None where either run was rejected)."""
    out: list[float | None] = []
    for a, b in zip(rows.get(ours, []), rows.get(peer, [])):
        ok = a.get("valid") and b.get("valid") and a.get(key) and b.get(key)
        out.append(a[key] / b[key] if ok else None)
    return out


def summary(rows: dict[str, dict[str, list[dict[str, Any]]]], ours: list[str], peers: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"rows": rows, "pairs": {}}
    for mode, by_name in rows.items():
        for a in ours:
            for b in peers:
                if a in by_name and b in by_name:
                    values = pairs(by_name, a, b)
                    out["pairs"][f"{mode}: {a} / {b}"] = {"values": values,
                                                          "summary": summarize(v for v in values if v is not None)}
    return out


def part_http(reps: int, smoke: bool) -> dict[str, Any]:
    from nginx import URL, Nginx

    with Nginx() as nginx:
        gens = http_generators(URL, 500 if smoke else HTTP_RATE)
        if smoke:
            gens = {mode: {k: v for k, v in g.items() if k.startswith("perflab")} for mode, g in gens.items()}
        rows = interleaved(reps, gens, nginx, "HTTP")
    return summary(rows, ["perflab (defaults)", "perflab (lean)", EXACT], ["wrk", "k6"])


# --- TCP: redis-server ----------------------------------------------------------------------------------------------


def part_tcp(reps: int, smoke: bool) -> dict[str, Any]:
    from redis_server import Redis, redis_path

    if redis_path() is None:
        return {"note": "redis-server is not installed (bench/setup_peers.sh installs it)"}
    bench = find_tool("redis-benchmark")
    with Redis() as redis:
        rate = 500 if smoke else TCP_RATE
        gens: dict[str, dict[str, Callable[[Any], dict[str, Any]]]] = {
            "saturated": {"perflab": lambda r: perflab_row(TCP_WORKLOAD, r.requests, "saturated", "perflab-tcp")},
            "rate": {"perflab": lambda r: perflab_row(_open_loop(TCP_WORKLOAD, "tcp-rate.yaml", rate), r.requests,
                                                      "rate", "perflab-tcp")}}
        if bench and not smoke:
            # redis-benchmark has no duration and no rate: a count it cannot finish, stopped after RUN_S
            argv = ["timeout", "-s", "INT", str(RUN_S), bench, "-p", str(redis.port), "-c", str(USERS), "-n",
                    "100000000", "-t", "ping_inline", "-P", "1", "-q"]
            gens["saturated"]["redis-benchmark"] = lambda r, a=argv: _peer_redis(a, r)
        rows = interleaved(reps, gens, redis, "TCP")
    out = summary(rows, ["perflab"], ["redis-benchmark"])
    out["note"] = "redis-benchmark has no rate limit: at a rate, perflab's row stands alone"
    return out


def _peer_redis(argv: list[str], redis: Any) -> dict[str, Any]:
    # (its driver is redis-benchmark under `timeout`)
    begun = load_begun(redis.requests)

    def ready(proc: subprocess.Popen) -> int | None:
        return begun(proc) and _waiting(proc, "redis-benchmark", lambda: next(
            (c for c in descendants(proc.pid) if _proc_comm(c) == "redis-benchmark"), None))

    row = measure(argv, redis.requests, pin=True, ready=ready)
    row["command"] = "taskset -c 0 " + shell_join(argv)
    return peer_row(row, tolerance_ok=True)  # `timeout` ends it with SIGINT: its exit code says nothing


# --- PostgreSQL: the server perflab starts, its own count of commits ---------------------------------------------------


class CommitCount:
    """The transactions the run's server committed, counted by the server itself and read from
    outside while it runs: debit-credit inserts one row into pgbench_history per transaction, and a
    committed row is visible at once (pg_stat_database's xact_commit is flushed by each backend
    up to a second late, and counts the monitor's own queries). perflab starts the server per run
    on a port of its own: found from the run's record."""

    def __init__(self, store: Path):
        self.store = store
        self.dsn: str | None = None

    def _find(self) -> str | None:
        for run in sorted(self.store.glob("runs/*/run.json")):
            port = json.loads(run.read_text()).get("fingerprint", {}).get("postgres_port")
            if port:
                return f"postgresql://postgres@127.0.0.1:{port}/perflab"
        return None

    def __call__(self) -> int:
        if self.dsn is None:
            try:
                self.dsn = self._find()
            except (OSError, ValueError):  # run.json being rewritten: the next poll reads it
                return 0
            if self.dsn is None:
                return 0
        done = subprocess.run(["psql", self.dsn, "-Atc", "SELECT count(*) FROM pgbench_history"],
                              capture_output=True, text=True, timeout=10)
        return int(done.stdout.strip() or 0) if done.returncode == 0 else 0


def part_pg(reps: int, smoke: bool) -> dict[str, Any]:
    rate = 100 if smoke else PG_RATE
    text = PG_PGBENCH.read_text()
    assert "driver: {kind: pgbench, protocol: prepared}" in text  # the example's driver line, given a rate
    pgbench_rate = write_text(workdir("pairs-workloads") / "pgbench-rate.yaml", text.replace(
        "driver: {kind: pgbench, protocol: prepared}", f"driver: {{kind: pgbench, protocol: prepared, options: "
                                                       f"[-R, '{rate:g}']}}"))
    perflab_paced = _with(PG_WORKLOAD, "debit-credit-paced.yaml", f"think: {4 / rate:g}")  # 4 users

    def run(workload: Path, mode: str, name: str, pgbench: bool) -> dict[str, Any]:
        store = workdir("pairs-store") / f"pg-{name}-{mode}-{time.time_ns()}"
        counted = CommitCount(store)
        argv = perflab_argv(workload, store)
        row = measure(argv, counted, pin=False, ready=pgbench_measuring(10) if pgbench else perflab_measuring(store),
                      warmup_s=1.0)
        row["command"] = shown(argv)
        judge(store, row, saturated=mode == "saturated", tolerance=4 + 2, native=not pgbench)  # 4 users in flight
        return row

    gens = {"saturated": {"perflab": lambda _: run(PG_WORKLOAD, "saturated", "perflab", False),
                          "pgbench": lambda _: run(PG_PGBENCH, "saturated", "pgbench", True)},
            "rate": {"perflab": lambda _: run(perflab_paced, "rate", "perflab", False),
                     "pgbench": lambda _: run(pgbench_rate, "rate", "pgbench", True)}}
    rows = interleaved(reps, gens, None, "PostgreSQL")
    return summary(rows, ["perflab"], ["pgbench"])


# --- the compiled loop's lateness ----------------------------------------------------------------------------------


def lateness(store: Path) -> dict[str, Any]:
    import pyarrow.parquet as pq

    run_dir = sorted((store / "runs").iterdir())[-1]
    run = json.loads((run_dir / "run.json").read_text())
    window = run["window"]
    table = pq.read_table(run_dir / "transactions.parquet", columns=["intended_start", "actual_start", "error"])
    rows = table.to_pydict()
    late = sorted(1e3 * (a - i) for i, a, e in zip(rows["intended_start"], rows["actual_start"], rows["error"])
                  if window["start"] <= i < window["end"] and not (e or "").startswith("dropped"))
    dropped = sum(1 for e in rows["error"] if (e or "").startswith("dropped"))

    def q(p: float) -> float | None:
        return late[min(len(late) - 1, int(p * len(late)))] if late else None

    return {"run_id": run["run_id"], "driver_core": run["fingerprint"].get("driver_core"), "n": len(late),
            "p50_ms": q(0.5), "p99_ms": q(0.99), "max_ms": late[-1] if late else None, "dropped": dropped,
            "rate_per_s": len(late) / (window["end"] - window["start"]) if late else None}


def open_loop_workload(rate: int, measurement: str) -> Path:
    """The HTTP workload with default settings as an open loop: poisson arrivals at `rate`."""
    return write_text(workdir("pairs-workloads") / "lateness-open.yaml",
                      HTTP_DEFAULTS.read_text().replace(f"load: {{users: {USERS}}}",
                                                        f"load: {{rate: {rate}, arrival: poisson, max_in_flight: 1000}}")
                      .replace("measurement: 10s", f"measurement: {measurement}"))


def part_lateness(reps: int, smoke: bool) -> dict[str, Any]:
    from nginx import Nginx

    rate, users = (1000, 200) if smoke else (20_000, 10_000)
    measurement = "2s" if smoke else "10s"
    open_loop = open_loop_workload(rate, measurement)
    closed = write_text(workdir("pairs-workloads") / "lateness-closed.yaml",
                        HTTP_DEFAULTS.read_text().replace(f"load: {{users: {USERS}}}", f"load: {{users: {users}}}")
                        .replace("think: 0", "think: {dist: exponential, mean: 5}")
                        .replace("stagger: 0s", "stagger: 5s").replace("measurement: 10s", f"measurement: {measurement}"))
    out: dict[str, Any] = {}
    cases = ((f"open loop, {rate:,}/s poisson", open_loop), (f"closed loop, {users:,} users", closed),
             (f"open loop, {rate:,}/s poisson, wake: exact", _exact(open_loop)))
    with Nginx():
        for name, workload in cases:
            rows = []
            for rep in range(reps):
                log(f"pairs / lateness: {name}, repetition {rep + 1}/{reps}")
                store = workdir("pairs-store") / f"lateness-{time.time_ns()}"
                argv = perflab_argv(workload, store)
                done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600,
                                      preexec_fn=_many_files)
                row = {**lateness(store), "exit_code": done.returncode, "command": shown(argv)}
                row["valid"] = row["driver_core"] == "native" and done.returncode == 0
                rows.append(row)
            out[name] = {"rows": rows, "p99_ms": summarize(r["p99_ms"] for r in rows if r["valid"])}
    return out


# --- 100,000 connected keep-alive users on one driver core --------------------------------------------------------


def _many_files() -> None:
    """A generator's process may hold a descriptor per user: its limit raised as far as it may be
    (root: to 300,000; else to the hard limit)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (300_000, max(hard, 300_000)))
    except (ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _sockstat() -> dict[str, int]:
    """/proc/net/sockstat's TCP line: sockets in use and the pages of their buffers."""
    for line in Path("/proc/net/sockstat").read_text().splitlines():
        if line.startswith("TCP:"):
            parts = line.split()[1:]
            return {parts[i]: int(parts[i + 1]) for i in range(0, len(parts), 2)}
    return {}


def _established(ports: list[int]) -> int:
    """The TCP connections established to nginx's ports, counted by the kernel (ss over netlink):
    nginx's stub_status page stops answering with 100,000 connections open (the first runs' probe
    timed out three times), and a count from outside asks nothing of the server under test."""
    ss = shutil.which("ss")
    if ss is None:
        raise RuntimeError("ss (iproute2) is not installed: the connections cannot be counted")
    match = " or ".join(f"sport = :{p}" for p in ports)
    out = subprocess.run([ss, "-Htn", "state", "established", f"( {match} )"], capture_output=True, text=True,
                         check=True, timeout=120).stdout
    return sum(1 for line in out.splitlines() if line.strip())


def _slab_kb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("SUnreclaim:"):
            return int(line.split()[1])
    return 0


def _files_limit() -> int:
    """The open-file limit a child gets after _many_files: the hard limit, or 300,000 if raised."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return 300_000 if hard == resource.RLIM_INFINITY else max(soft, min(hard, 300_000))


MEMORY_NGINX = """\
worker_processes {workers};
daemon off;
master_process on;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
worker_rlimit_nofile 300000;
events {{ worker_connections 250000; }}
http {{
    access_log off;
    keepalive_requests 100000000;
    keepalive_timeout 3600s;
    client_body_temp_path {dir}/body;
    default_type text/plain;
    server {{
{listens}
        location = /nginx_status {{ stub_status; }}
        location / {{ return 200 "ok"; }}
    }}
}}
"""


def part_memory(reps: int, smoke: bool) -> dict[str, Any]:
    """`users` keep-alive HTTP users, each connected (its first transaction in the stagger) and
    then thinking for the rest of the run, driven by `processes` perflab drivers on CPU 0 (one
    loopback address and port give a driver at most ~28,000 connections: the ephemeral ports;
    each driver has its nginx port). RSS per user: the drivers' resident memory less the same
    drivers' with one user each, over the users; kernel memory per connection: the TCP buffers'
    pages and the unreclaimable slab (socket structures) grown meanwhile, both ends of each
    connection on this host, over the users."""
    from nginx import nginx_path

    users = 2000 if smoke else 100_000
    # every connection is a descriptor at each end: a driver holds its users' and an nginx worker its
    # share, each under the hard limit on open files (20,000 in this lab's container, which does not
    # let root raise it): enough drivers and workers that each stays 2,000 below it
    per_process = max(1_000, min(25_000, _files_limit() - 2_000))
    processes = max(2, math.ceil(users / per_process))
    ports = [18100 + i for i in range(processes)]
    directory = workdir("pairs-nginx")
    conf = write_text(directory / "nginx.conf", MEMORY_NGINX.format(
        dir=directory, workers=processes + 1,  # reuseport spreads each port's connections over them
        listens="\n".join(f"        listen 127.0.0.1:{p} backlog=65535 reuseport;" for p in ports)))
    exe = nginx_path()
    if exe is None:
        return {"note": "nginx is not installed"}
    # 100,000 logons in 40 s (2,500 a second) overflowed the listen queues (somaxconn 4,096, a
    # setting of the machine left as it is): a user whose connect timed out thinks for an hour
    # unconnected, and 0.7-2.2% never connected in 4 minutes (2026-12-07). 120 s is 833 a second.
    stagger = 5 if smoke else 120
    for port in ports:
        port_free(port, "nginx (memory)")
    nginx = subprocess.Popen(taskset(TARGET_CPU, [exe, "-c", str(conf), "-p", str(directory)]),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=_many_files)
    try:
        time.sleep(1.0)
        rows = []
        for rep in range(reps):
            log(f"pairs / memory: {users:,} users, repetition {rep + 1}/{reps}")
            wait_s = stagger + (10.0 if smoke else 20.0)  # every user connected, and its first transaction done
            base = _drivers(ports, processes, 1.0, wait_s=10.0)   # one user a driver: nothing to spread
            s0, k0 = _sockstat(), _slab_kb()
            full = _drivers(ports, users, stagger, wait_s=wait_s, probe=lambda: (_sockstat(), _slab_kb()))
            s1, k1 = full["probe"]
            per_user_rss = (sum(full["rss"]) - sum(base["rss"])) / (users - processes)  # base: one user a driver
            rows.append({"users": users, "processes": processes, "rss_bytes_per_user": per_user_rss,
                         "socket_buffer_bytes_per_user": (s1.get("mem", 0) - s0.get("mem", 0)) * PAGE / users,
                         "slab_bytes_per_user": (k1 - k0) * 1024 / users, "sockets": s1.get("inuse", 0),
                         "connected": full["connected"], "driver_core": full["cores"],
                         "files_limit": _files_limit(),
                         "valid": full["connected"] >= users and all(c == "native" for c in full["cores"]),
                         "command": full["command"]})
        return {"rows": rows, "rss_bytes_per_user": summarize(r["rss_bytes_per_user"] for r in rows if r["valid"])}
    finally:
        nginx.terminate()
        nginx.wait(timeout=30)


def _drivers(ports: list[int], users: int, stagger: float, wait_s: float,
             probe: Callable[[], Any] | None = None) -> dict[str, Any]:
    """One perflab driver per port, `users` in all (each driver its share, the first ones one more
    where they do not divide), all on CPU 0; their RSS once every user is connected."""
    procs, stores = [], []
    shares = [users // len(ports) + (1 if i < users % len(ports) else 0) for i in range(len(ports))]
    for port, share in zip(ports, shares):
        # each user's first transaction at its logon (spread over the stagger) connects it; its next
        # waits an hour: the user stays connected and idle
        workload = write_text(workdir("pairs-workloads") / f"memory-{port}.yaml", HTTP_DEFAULTS.read_text()
                              .replace("18080", str(port)).replace(f"load: {{users: {USERS}}}", f"load: {{users: {share}}}")
                              .replace("scripts: [{name: s, steps: [get]}]",
                                       "scripts: [{name: s, steps: [get, {transaction: get, think: 3600}]}]")
                              .replace("stagger: 0s", f"stagger: {stagger:g}s")
                              .replace("measurement: 10s", f"measurement: {wait_s + 300:g}s"))
        store = workdir("pairs-store") / f"memory-{port}-{time.time_ns()}"
        argv = perflab_argv(workload, store, "--no-monitor")
        procs.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      preexec_fn=_many_files))
        stores.append(store)
    # Every user connected, counted by the kernel -- not a fixed sleep: six drivers starting on one
    # CPU take tens of seconds before their stagger begins (the first runs probed at a fixed 60 s
    # found 90% of 100,000 users connected, each driver's stagger 90% through).
    started = time.monotonic()
    time.sleep(wait_s)
    connected = _established(ports)  # server-side sockets: one per connected user
    while connected < users and time.monotonic() - started < wait_s + 180.0 and \
            all(p.poll() is None for p in procs):
        time.sleep(5.0)
        connected = _established(ports)
    time.sleep(2.0)  # the last users' first transaction answered
    rss = [proc_rss_bytes(p.pid) or 0 for p in procs]
    probed = probe() if probe is not None else None
    connected = _established(ports)
    for p in procs:
        p.terminate()
    for p in procs:
        p.wait(timeout=120)
    cores = []
    for store in stores:
        runs = sorted((store / "runs").glob("*/run.json"))
        cores.append(json.loads(runs[-1].read_text())["fingerprint"].get("driver_core") if runs else None)
    return {"rss": rss, "probe": probed, "connected": connected, "cores": cores,
            "command": shown(perflab_argv(Path("memory-PORT.yaml"), Path("STORE"), "--no-monitor")) +
            f" per port, {len(ports)} drivers on CPU 0"}


# --- the whole -----------------------------------------------------------------------------------------------------

RUNNERS = {"http": part_http, "tcp": part_tcp, "pg": part_pg, "lateness": part_lateness, "memory": part_memory}


def measure_all(reps: int, smoke: bool, parts: list[str] | tuple[str, ...] = PARTS) -> dict[str, Any]:
    """The parts asked for, each with its repetitions (at least 5 unless a smoke run)."""
    reps = 1 if smoke else max(reps, 5)
    results: dict[str, Any] = {}
    for part in parts:
        started = time.time()
        try:
            results[part] = RUNNERS[part](reps, smoke)
        except Exception as exc:  # one part's failure keeps the others' measurements, with its reason
            log(f"pairs / {part}: failed: {type(exc).__name__}: {exc}")
            results[part] = {"error": f"{type(exc).__name__}: {exc}"}
        results[f"{part}_meta"] = {"reps": reps, "smoke": smoke, "seconds": round(time.time() - started),
                                   "finished": time.strftime("%Y-%m-%d %H:%M:%S"), "kernel": platform.release()}
    return results


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--only", default=",".join(PARTS))
    parser.add_argument("--smoke", action="store_true", help="each part once, tiny: the harness works (no numbers)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    results: dict[str, Any] = json.loads(args.out.read_text()) if args.out.exists() and not args.smoke else {}
    results.update(measure_all(args.reps, args.smoke, [p.strip() for p in args.only.split(",") if p.strip()]))
    results["machine"] = machine()
    if not args.smoke:
        args.out.write_text(json.dumps(results, indent=1, default=str) + "\n")
    return results


if __name__ == "__main__":
    out = main()
    print(json.dumps({k: v for k, v in out.items() if not k.endswith("_meta") and k != "machine"}, indent=1,
                     default=str)[:20000])

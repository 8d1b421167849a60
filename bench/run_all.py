"""Run perflab's benchmarks (and its peers' beside it) and regenerate docs/performance.md.

    .venv/bin/python bench/run_all.py                 # everything, 3 repetitions
    .venv/bin/python bench/run_all.py --only memory   # one part; the others keep their stored results
    .venv/bin/python bench/run_all.py --render        # only rewrite docs/performance.md
    .venv/bin/python bench/run_all.py --smoke         # perflab's side once at tiny size (the CI smoke test)

Parts: pairs (driver cost paired, as users get it: driver_cost_pairs.py), driver (null target and
HTTP), tcp, pg, memory, schedule, monitor, reduce, profile.
Results go to bench/results/results.json (each number with its repetitions, command and
machine); docs/performance.md is rendered from that file by bench/render.py.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import BENCH, REPO, find_tool, log, machine, summarize  # noqa: E402

RESULTS = BENCH / "results" / "results.json"
DOC = REPO / "docs" / "performance.md"
PARTS = ("pairs", "driver", "tcp", "pg", "memory", "schedule", "monitor", "reduce", "profile")
SUMMARY_KEYS = ("cpu_us_per_tx", "tx_per_core_s", "tps", "gen_util_pct", "target_util_pct", "driver_core_busy_pct",
                "bytes_per_user", "p50_ms", "p99_ms", "max_ms", "rate_per_s", "dropped", "pct_of_core",
                "sampling_cpu_per_s", "monitor_cpu_s", "wall_s", "cpu_s", "background_cores", "driver_util_pct",
                "peak_rss_mb")


def repeat(reps: int, measure: Callable[[], dict[str, Any]], label: str) -> dict[str, Any]:
    """`reps` repetitions of one measurement -> {key: summary} plus the raw rows."""
    rows = []
    for i in range(reps):
        log(f"{label}: repetition {i + 1}/{reps}")
        rows.append(measure())
    return collect(rows)


def collect(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"reps": rows, "n": len(rows)}
    notes = [r["note"] for r in rows if r.get("note")]
    measured = any(isinstance(r.get(k), (int, float)) for r in rows for k in SUMMARY_KEYS)
    if notes and not measured:  # e.g. "not yet: the HTTP adapter has not landed"
        out["note"] = notes[0]
        return out
    for key in SUMMARY_KEYS:
        values = [r.get(key) for r in rows if isinstance(r.get(key), (int, float))]
        if values:
            out[key] = summarize(values)
    out["command"] = next((r["command"] for r in rows if r.get("command")), None)
    if notes:
        out["note"] = notes[0]
    return out


# --- the parts ---------------------------------------------------------------------------------


def part_driver(reps: int, smoke: bool) -> dict[str, Any]:
    import driver_cost as dc
    from nginx import URL, Nginx

    out: dict[str, Any] = {"null": {}, "http": {}}
    if smoke:
        row = dc._perflab_null(users=8, measurement=1.0, workers=2)
        out["null"]["perflab"] = collect([row])
        with Nginx() as nginx:
            out["http"]["perflab (compiled loop)"] = collect([_smoke_http(nginx)])
        return out
    out["null"]["perflab"] = repeat(reps, dc.perflab_null, "driver / null / perflab")
    for tool, name in (("k6", "k6 (empty iteration)"), ("locust", "Locust (User, task reports itself)")):
        if find_tool(tool):
            out["null"][name] = repeat(reps, lambda t=tool: dc.peer_null(t), f"driver / null / {tool}")
    with Nginx() as nginx:
        rows: dict[str, list] = {}
        for i in range(reps):  # interleaved: every tool once per repetition
            log(f"driver / HTTP: repetition {i + 1}/{reps}")
            for name, row in dc.run_http_rep(nginx, URL).items():
                rows.setdefault(name, []).append(row)
        out["http"] = {name: collect(r) for name, r in rows.items()}
    return out


def _smoke_http(nginx) -> dict[str, Any]:
    """perflab's HTTP row at tiny size: a 1 s run against nginx, or the 'not yet' note."""
    import driver_cost as dc
    from perflab_runs import run_perflab

    workload = dc.PERFLAB_HTTP_WORKLOADS["perflab (compiled loop)"]
    usable, note = dc.http_adapter_status(workload)
    if not usable:
        return {"note": note}
    text = workload.read_text().replace("users: 50", "users: 4").replace("measurement: 10s", "measurement: 1s")
    try:
        run = run_perflab(text, "smoke-http")
    except RuntimeError as exc:
        return {"note": f"{dc.NOT_LANDED} ({exc})"}
    values = run.metrics().values
    cpu, tx = values.get("driver_sec"), values.get("tx_ok")
    return {"tx": tx, "cpu_s": cpu, "tps": values.get("etr_t"), "cpu_us_per_tx": 1e6 * cpu / tx if cpu and tx else None,
            "tx_per_core_s": tx / cpu if cpu and tx else None, "command": run.command}


def part_tcp(reps: int, smoke: bool) -> dict[str, Any]:
    """The TCP driver beside redis-benchmark on redis-server (tcp_driver_cost.py)."""
    if smoke:
        return {"note": "not in a smoke run"}
    import tcp_driver_cost

    return tcp_driver_cost.main(reps)


def part_pg(reps: int, smoke: bool) -> dict[str, Any]:
    """The PostgreSQL driver beside pgbench on the same SQL (pg_driver_cost.py)."""
    if smoke:
        return {"note": "not in a smoke run"}
    import pg_driver_cost

    return pg_driver_cost.main(reps)


def part_memory(reps: int, smoke: bool, stored: dict[str, Any] | None = None) -> dict[str, Any]:
    """perflab's RSS per idle user, and the peers' (unless `stored` rows are to be kept for them)."""
    import memory as mem

    sizes = (200,) if smoke else (1000, 10000, 100000, 1000000)
    out: dict[str, Any] = {"perflab": {}}
    for i in range(1 if smoke else reps):
        base = mem.with_retries(lambda: mem.perflab_rss(1, 2.0 if smoke else None, 1.0 if smoke else 4.0),
                                mem.quiet_enough)
        for n in sizes:
            log(f"memory / perflab {n} users: repetition {i + 1}")
            full = mem.with_retries(lambda n=n: mem.perflab_rss(n, 2.0 if smoke else None, 1.0 if smoke else 4.0),
                                    mem.quiet_enough)
            out["perflab"].setdefault(n, []).append(
                {"bytes_per_user": (full["rss_bytes"] - base["rss_bytes"]) / (n - 1), "command": full["command"],
                 "rss_bytes": full["rss_bytes"], "baseline_rss_bytes": base["rss_bytes"],
                 "peak_rss_mb": full["peak_rss_bytes"] / 1e6 if full.get("peak_rss_bytes") else None,
                 "background_cores": max(full["background_cores"], base["background_cores"])})
    out["perflab"] = {n: collect(rows) for n, rows in out["perflab"].items()}
    if smoke:
        return out
    if stored is not None:
        out.update({name: rows for name, rows in stored.items() if name != "perflab"})
        return out
    peers: dict[str, Any] = {}
    if find_tool("locust"):
        for cls, name in (("IdleUser", "Locust User"), ("IdleFastUser", "Locust FastHttpUser")):
            peers[name] = {}
            for n in (1000, 10000):
                peers[name][n] = repeat(reps, lambda n=n, c=cls: mem.per_user(lambda u: mem.locust_rss(u, c, 12), n),
                                        f"memory / {name} {n}")
    if find_tool("k6"):
        peers["k6 VU"] = {}
        for n in (1000, 10000):
            if n > 1000 and "k6 VU" in peers and 1000 in peers["k6 VU"]:
                per_vu = peers["k6 VU"][1000]["bytes_per_user"]["median"]
                need = per_vu * n * 1.5
                if need > 0.6 * mem.mem_available():
                    peers["k6 VU"][n] = {"note": f"not feasible here: about {need / 2**30:.1f} GiB needed"}
                    continue
            peers["k6 VU"][n] = repeat(reps, lambda n=n: mem.per_user(lambda u: mem.k6_rss(u, 12), n),
                                       f"memory / k6 {n}")
    out.update(peers)
    return out


def part_schedule(reps: int, smoke: bool) -> dict[str, Any]:
    import schedule as sch

    out: dict[str, Any] = {"closed": {}, "open": {}, "k6_open": {}}
    if smoke:
        out["closed"][200] = collect([sch.perflab_closed(200, measurement=1.0, stabilization=1.0)])
        out["open"][500] = collect([sch.perflab_open(500, measurement=1.0, stabilization=0.5)])
        return out
    for n in sch.CLOSED_USERS:
        out["closed"][n] = repeat(reps, lambda n=n: sch.perflab_closed(n), f"schedule / closed {n} users")
    for rate in sch.OPEN_RATES:
        out["open"][rate] = repeat(reps, lambda r=rate: sch.perflab_open(r), f"schedule / open {rate}/s")
        if find_tool("k6"):
            out["k6_open"][rate] = repeat(reps, lambda r=rate: sch.k6_open(r), f"schedule / k6 open {rate}/s")
    return out


def part_monitor(reps: int, smoke: bool) -> dict[str, Any]:
    import monitor_reduce as mr

    if smoke:
        return {"1s": collect([mr.monitor_overhead("1s", measurement=2.0)])}
    return {iv: repeat(reps, lambda iv=iv: mr.monitor_overhead(iv), f"monitor / {iv}") for iv in ("1s", "100ms")}


def part_reduce(reps: int, smoke: bool) -> dict[str, Any]:
    import monitor_reduce as mr

    out: dict[str, Any] = {}
    for rows in ((20_000,) if smoke else (1_000_000, 10_000_000)):
        log(f"reduce: synthetic run of {rows:,} transactions")
        run_dir = mr.synthetic_run(rows)
        n = 1 if smoke else reps
        out[rows] = {"show": repeat(n, lambda d=run_dir: mr.time_show(d), f"reduce / show {rows:,}"),
                     "reduce_run": repeat(n, lambda d=run_dir: mr.time_reduce_in_process(d), f"reduce / reduce_run {rows:,}")}
    return out


def part_profile(reps: int, smoke: bool) -> dict[str, Any]:
    import driver_cost as dc
    from nginx import Nginx
    from perflab_runs import python_workload
    from profiling import profile_perflab

    if smoke:
        return {}
    out = {"null": profile_perflab(python_workload("profile-null", users=50, workers=4, measurement=10),
                                   "profile-null")}
    out["open-10000"] = profile_perflab(python_workload("profile-open", rate=10000, workers=4, measurement=10),
                                        "profile-open")
    workload = dc.PERFLAB_HTTP_WORKLOADS["perflab (compiled loop)"]
    usable, note = dc.http_adapter_status(workload)
    if usable:
        with Nginx():
            out["http-httptools"] = profile_perflab(workload.read_text(), "profile-http")
    else:
        out["http-httptools"] = {"note": note}
    return out


def part_pairs(reps: int, smoke: bool) -> dict[str, Any]:
    """Driver cost as users get it, paired, and the compiled loop's lateness and memory
    (driver_cost_pairs.py: at least 5 repetitions; docs/performance.md's goal rows read it)."""
    if smoke:
        return {"note": "not in a smoke run: python bench/driver_cost_pairs.py --smoke"}
    import driver_cost_pairs

    return driver_cost_pairs.measure_all(reps, smoke)


RUNNERS = {"pairs": part_pairs, "driver": part_driver, "tcp": part_tcp, "pg": part_pg, "memory": part_memory, "schedule": part_schedule,
           "monitor": part_monitor, "reduce": part_reduce, "profile": part_profile}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default=",".join(PARTS), help=f"comma-separated parts ({', '.join(PARTS)})")
    parser.add_argument("--reps", type=int, default=3, help="repetitions per number (at least 3 for the docs)")
    parser.add_argument("--render", action="store_true", help="only render docs/performance.md from the results")
    parser.add_argument("--smoke", action="store_true", help="perflab's side once at tiny size, no peers, no docs")
    parser.add_argument("--keep-peers", action="store_true",
                        help="memory: re-measure perflab only, keep the peers' stored rows (they did not change)")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--doc", type=Path, default=DOC)
    args = parser.parse_args(argv)

    from render import render

    if args.smoke:
        import common

        common.SMOKE = True
    results: dict[str, Any] = json.loads(args.results.read_text()) if args.results.exists() and not args.smoke else {}
    if not args.render:
        parts = [p.strip() for p in args.only.split(",") if p.strip()]
        unknown = set(parts) - set(PARTS)
        if unknown:
            parser.error(f"unknown part(s) {sorted(unknown)}; known: {', '.join(PARTS)}")
        if not args.smoke:
            results["machine"] = machine()
        for part in parts:
            started = time.monotonic()
            log(f"part {part}")
            if part == "memory" and args.keep_peers and "memory" in results:
                results[part] = part_memory(args.reps, args.smoke, stored=results["memory"])
            else:
                results[part] = RUNNERS[part](args.reps, args.smoke)
            results[part + "_meta"] = {"finished": dt.datetime.now().isoformat(timespec="seconds"),
                                       "seconds": round(time.monotonic() - started, 1), "reps": args.reps,
                                       "kernel": platform.release()}  # parts kept from another day may differ
            if not args.smoke:
                args.results.parent.mkdir(parents=True, exist_ok=True)
                args.results.write_text(json.dumps(results, indent=1, default=str))
    if args.smoke:
        print(json.dumps(results, default=str))
        return 0
    args.doc.write_text(render(results))
    log(f"written: {args.doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

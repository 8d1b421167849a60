"""docs/performance.md from bench/results/results.json (and the hand-written profile findings
in bench/findings.md). Every number: median [min - max] over the repetitions, the spread
(max - min) / median, the command that produced it, and the ratio to the peer beside it."""

from __future__ import annotations

import json
from typing import Any

from common import BENCH

FINDINGS = BENCH / "findings.md"
HTTP_PERFLAB = "perflab (compiled loop)"


def _s(x: Any) -> dict | None:
    return x if isinstance(x, dict) and "median" in x else None


def fmt(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "–"
    if abs(value) >= 1000 and digits == 0:
        return f"{value:,.0f}"
    return f"{value:,.{digits}f}"


BACKGROUND_LIMIT = 0.05


def noisy(entry: Any) -> bool:
    """Did any repetition run with more than 5 % of a core of other work on the machine?"""
    if not isinstance(entry, dict):
        return False
    return any((r.get("background_cores") or 0) > BACKGROUND_LIMIT for r in entry.get("reps") or [])


def cell(summary: Any, digits: int = 0, spread: bool = True, entry: Any = None) -> str:
    s = _s(summary)
    if s is None:
        return "–"
    text = f"{fmt(s['median'], digits)} [{fmt(s['min'], digits)}–{fmt(s['max'], digits)}]"
    if spread and s.get("spread_pct") is not None and s["n"] > 1:
        text += f" ±{s['spread_pct'] / 2:.0f}%"
    if noisy(entry):
        text += " †"
    return text


def med(summary: Any) -> float | None:
    s = _s(summary)
    return None if s is None else s["median"]


def ratio_text(a: float | None, b: float | None, digits: int = 2) -> str:
    if a is None or b is None or b == 0:
        return "–"
    value = a / b
    return f"{value:.2g}×" if 0 < value < 0.1 else f"{value:.{digits}f}×"


def code(text: str | None) -> str:
    return f"`{text}`" if text else "–"


def _n(entry: dict) -> int:
    return max((v.get("n", 0) for v in entry.values() if isinstance(v, dict)), default=0)


# --- sections ----------------------------------------------------------------------------------


def machine_section(results: dict) -> list[str]:
    m = results.get("machine") or {}
    rows = ["| | |", "|---|---|"]
    for key in ("cpu_model", "cores", "memory_gib", "kernel", "os", "python", "perflab", "nginx", "wrk", "k6",
                "locust", "wrk2"):
        if key in m:
            rows.append(f"| {key} | {m[key]} |")
    # parts are measured one at a time and kept: one measured under another kernel build (another
    # guest of the same family) is named, not hidden under the newest part's machine
    elsewhere = {part: kernel for part, kernel in part_kernels(results).items() if kernel != m.get("kernel")}
    if elsewhere:
        rows.append("| parts measured under another kernel | "
                    + ", ".join(f"{part}: {kernel}" for part, kernel in sorted(elsewhere.items())) + " |")
    return ["## The machine", "", *rows, ""]


def part_kernels(results: dict) -> dict[str, str]:
    """The kernel each part (and each paired part) was measured under, where its meta says."""
    out = {}
    for scope, prefix in ((results, ""), (results.get("pairs") or {}, "pairs/")):
        for key, meta in scope.items():
            if key.endswith("_meta") and isinstance(meta, dict):
                out[prefix + key[:-len("_meta")]] = str(meta.get("kernel") or "not recorded")
    return out


def driver_section(results: dict) -> list[str]:
    d = results.get("driver") or {}
    out = ["## Driver cost", ""]
    null = d.get("null") or {}
    if null:
        out += ["### (a) The null in-process target", "",
                "perflab: the python adapter calling `perflab.sut.synthetic:noop`, think 0, 50 users, 4 SUT "
                "workers on CPU 1, the driver on CPU 0, monitors off; CPU = DRIVER SEC over the 10 s "
                "window, transactions = COMMANDS (T) (`perflab show --json`). perflab's cost here includes "
                "handing every transaction to a SUT worker process over a pipe and reading its reply -- "
                "its design keeps the SUT's CPU out of the driver's. The peers have no out-of-process null "
                "target; their nearest analogues run the (empty) transaction inside the generator, so the "
                "ratio compares unequal work and is shown for orientation only. Peers' cost: the difference "
                "between a 4 s and a 14 s run (wait4 CPU, the tool's own count), which cancels start-up.", "",
                "| generator | CPU µs / tx | tx/s per generator core | achieved tx/s | generator CPU % "
                "| perflab ÷ this (tx/s per core) | command |",
                "|---|---|---|---|---|---|---|"]
        base = med((null.get("perflab") or {}).get("tx_per_core_s"))
        for name, e in null.items():
            if e.get("note") and "tx_per_core_s" not in e:
                out.append(f"| {name} | {e['note']} | | | | | |")
                continue
            out.append(f"| {name} | {cell(e.get('cpu_us_per_tx'), 1)} | {cell(e.get('tx_per_core_s'), entry=e)} | "
                       f"{cell(e.get('tps'), spread=False)} | {cell(e.get('gen_util_pct'), spread=False)} | "
                       f"{'' if name == 'perflab' else ratio_text(base, med(e.get('tx_per_core_s')))} | "
                       f"{code(e.get('command'))} |")
        out.append("")
    http = d.get("http") or {}
    if http:
        out += ["### (b) A local HTTP server", "",
                "nginx 1.22 (Debian, one worker, `return 200` with a 14-byte body, keepalive_requests "
                "100000000) pinned to CPU 1 with taskset; the load generator pinned to CPU 0; 50 "
                "connections / users / VUs, no think time, 10 s. Every tool measured the same way from "
                "outside: after the load starts and 1.5 s of warm-up, a 6 s window of the generator's CPU "
                "(utime + stime of its process tree, /proc/PID/stat) against the requests nginx handled "
                "(stub_status). *tx/s per generator core* = requests / generator CPU-second: the rate one "
                "saturated core would give at that cost. *Core busy* is CPU 0's whole busy time "
                "(interrupts and softirq included, which the kernel charges to no process).", "",
                "| generator | CPU µs / tx | tx/s per generator core | achieved tx/s | generator CPU % "
                "| CPU 0 busy % | nginx CPU % | perflab (compiled loop) ÷ this | command |",
                "|---|---|---|---|---|---|---|---|---|"]
        base = med((http.get(HTTP_PERFLAB) or {}).get("tx_per_core_s"))
        for name, e in http.items():
            if e.get("note") and "tx_per_core_s" not in e:
                out.append(f"| {name} | {e['note']} | | | | | | | |")
                continue
            out.append(f"| {name} | {cell(e.get('cpu_us_per_tx'), 1)} | {cell(e.get('tx_per_core_s'), entry=e)} | "
                       f"{cell(e.get('tps'), spread=False)} | {cell(e.get('gen_util_pct'), spread=False)} | "
                       f"{cell(e.get('driver_core_busy_pct'), spread=False)} | "
                       f"{cell(e.get('target_util_pct'), spread=False)} | "
                       f"{'' if name == HTTP_PERFLAB else ratio_text(base, med(e.get('tx_per_core_s')))} | "
                       f"{code(e.get('command'))} |")
        out.append("")
    return out


TCP_PERFLAB = "perflab (compiled loop)"


def tcp_section(results: dict) -> list[str]:
    t = results.get("tcp") or {}
    if not t or t.get("note"):
        return []
    out = ["### (c) A TCP service: redis-server", "",
           "redis-server 7.0 (Debian, no persistence, one I/O thread) pinned to CPU 1; each generator alone on "
           "CPU 0; Redis's inline PING (\"PING\\r\\n\" answered \"+PONG\\r\\n\"), 50 connections, no "
           "pipelining, no think time. redis-benchmark's PING_INLINE test beside perflab's TCP adapter "
           "(`message`, `reply`: bench/workloads/tcp-redis-ping.yaml), measured as (b) measures the HTTP "
           "generators, against the commands Redis counted (INFO stats). `python bench/tcp_driver_cost.py`.", "",
           "| generator | CPU µs / tx | achieved tx/s | redis-server CPU % | perflab (compiled loop) ÷ this (CPU per "
           "tx) | command |", "|---|---|---|---|---|---|"]
    base = med((t.get(TCP_PERFLAB) or {}).get("cpu_us_per_tx"))
    for name, e in t.items():
        out.append(f"| {name} | {cell(e.get('cpu_us_per_tx'), 2)} | {cell(e.get('tps'), spread=False)} | "
                   f"{cell(e.get('target_util_pct'), spread=False)} | "
                   f"{'' if name == TCP_PERFLAB else ratio_text(base, med(e.get('cpu_us_per_tx')))} | "
                   f"{code(e.get('command'))} |")
    return out + [""]


def pg_section(results: dict) -> list[str]:
    g = results.get("pg") or {}
    if not g or g.get("note"):
        return []
    out = ["### (d) PostgreSQL beside pgbench", "",
           "The debit-credit workload (examples/postgres/debit-credit.yaml: pgbench's TPC-B-like statements, "
           "scale 8, 4 users, prepared statements, one connection each; its users in perflab's compiled loop, "
           "and on the Python path, asyncpg, with `driver: {core: python}`) and its twin driven by pgbench's `-f` "
           "script (debit-credit-pgbench.yaml); PostgreSQL 15 on CPU 1, the driver on CPU 0, alternated. CPU per "
           "transaction = DRIVER SEC / COMMANDS (T) of each run (`perflab show --json`; pgbench's: its "
           "process's rusage). `python bench/pg_driver_cost.py`.", "",
           "| driver | CPU µs / tx | ETR (T) | command |", "|---|---|---|---|"]
    for name, e in g.items():
        if name == "ratio":
            continue
        out.append(f"| {name} | {cell(e.get('cpu_us_per_tx'), 1)} | {cell(e.get('etr_t'), spread=False)} | "
                   f"{code(e.get('command'))} |")
    ratios = g.get("ratio") or {}
    for key, words in (("perflab_over_pgbench", "perflab (the compiled loop)"),
                       ("python_path_over_pgbench", "perflab's Python path")):
        values = (ratios.get(key) or {}).get("values")
        if values:
            out += ["", f"{words} ÷ pgbench, each repetition's pair: " + ", ".join(f"{v:.2f}" for v in values) + "."]
    return out + [""]


def memory_section(results: dict) -> list[str]:
    m = results.get("memory") or {}
    if not m:
        return []
    out = ["## Memory per simulated user", "",
           "RSS of the load generator with N idle users minus its RSS with one user, divided by N − 1. "
           "perflab: null python target; every user logs on at the start and thinks through the idle part of the window, "
           "which starts once the driver has created every user (then each makes its transaction, after it: "
           "the run must store one of every user, none due before the idle part ended -- proof that every "
           "user was alive and idle), the driver's VmRSS every 0.2 s, median over the idle part; *peak* is the "
           "highest sample of the whole run (the users' transactions all in flight at once, the run's tables "
           "written and reduced). Locust (`User` and `FastHttpUser`, wait_time 3600 s) and k6 "
           "(VUs sleeping 3600 s): VmRSS every 0.2 s, median of the last 40 % of the process's life "
           "(users spawned, VUs initialized, before shutdown).", "",
           "| users | generator | bytes per user | RSS at N users (MB) | peak over the run (MB) | perflab ÷ this | command |",
           "|---|---|---|---|---|---|---|"]
    perflab = m.get("perflab") or {}
    sizes = sorted({int(k) for tool in m.values() if isinstance(tool, dict) for k in tool})
    for n in sizes:
        base = med((perflab.get(str(n)) or {}).get("bytes_per_user"))
        for tool, entries in m.items():
            e = entries.get(str(n)) if isinstance(entries, dict) else None
            if not e:
                continue
            if e.get("note") and "bytes_per_user" not in e:
                out.append(f"| {n:,} | {tool} | {e['note']} | | | | |")
                continue
            rss = _s(e.get("rss_bytes")) or {}
            rss_mb = None if not rss else rss["median"] / 1e6
            if rss_mb is None:
                reps = [r.get("rss_bytes") for r in e.get("reps", []) if r.get("rss_bytes")]
                rss_mb = sorted(reps)[len(reps) // 2] / 1e6 if reps else None
            peak = med(e.get("peak_rss_mb"))
            out.append(f"| {n:,} | {tool} | {cell(e.get('bytes_per_user'), entry=e)} | {fmt(rss_mb)} | "
                       f"{'' if peak is None else fmt(peak)} | "
                       f"{'' if tool == 'perflab' else ratio_text(base, med(e.get('bytes_per_user')), 3)} | "
                       f"{code(e.get('command'))} |")
    out.append("")
    return out


def schedule_section(results: dict) -> list[str]:
    s = results.get("schedule") or {}
    if not s:
        return []
    out = ["## Schedule accuracy", "",
           "Lateness = actual_start − intended_start from transactions.parquet, over the transactions "
           "intended to start inside the measurement window; nearest-rank percentiles; milliseconds.", "",
           "### Closed loop: users at a fixed offered load", "",
           "Null python target, 4 SUT workers, exponential think time with mean users / 1000 s (so every "
           "size offers ~1000 tx/s), 5 s stabilization, 10 s window.", "",
           "| users | think | tx in window | p50 ms | p99 ms | max ms | command |", "|---|---|---|---|---|---|---|"]
    for n, e in sorted((s.get("closed") or {}).items(), key=lambda kv: int(kv[0])):
        think = next((r.get("think") for r in e.get("reps", []) if r.get("think")), "")
        out.append(f"| {int(n):,} | `{think}` | {cell(e.get('rate_per_s'), spread=False)}/s | "
                   f"{cell(e.get('p50_ms'), 3)} | {cell(e.get('p99_ms'), 3, entry=e)} | {cell(e.get('max_ms'), 2)} | "
                   f"{code(e.get('command'))} |")
    out += ["", "### Open loop: constant arrivals up to the driver's limit", "",
            "perflab: null python target, `arrival: constant`, 4 SUT workers, 2 s stabilization, 10 s window. "
            "k6: `constant-arrival-rate` on one core (taskset), 200 pre-allocated VUs, each iteration "
            "recording Date.now() − (scenario start + iteration / rate) -- 1 ms resolution, whole run.", "",
            "**wrk2 is not compared:** it is C and none of the registries this machine reaches carries it "
            "(Debian, PyPI and npm have no package of it; the Go module proxy serves Go modules only). "
            "**wrk, qualitatively (stated as such, not measured as lateness):** wrk has no schedule -- each "
            "of its connections sends the next request when the previous response arrives, and it times "
            "latency from the actual send. So it has no intended start to be late against: when the target "
            "stalls, wrk sends fewer requests and reports the stall as one slow request per connection "
            "(coordinated omission), where perflab's open loop keeps the schedule and records every "
            "arrival's lateness and response time from its intended start.", "",
            "| rate /s | perflab achieved /s | perflab p50 ms | perflab p99 ms | perflab max ms | perflab driver CPU % "
            "| k6 achieved /s | k6 dropped | k6 p50 ms | k6 p99 ms | k6 max ms | p99 perflab ÷ k6 |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    k6 = s.get("k6_open") or {}
    for rate, e in sorted((s.get("open") or {}).items(), key=lambda kv: float(kv[0])):
        k = k6.get(str(rate)) or {}
        out.append(f"| {float(rate):,.0f} | {cell(e.get('rate_per_s'), spread=False)} | {cell(e.get('p50_ms'), 3)} | "
                   f"{cell(e.get('p99_ms'), 3, entry=e)} | {cell(e.get('max_ms'), 2)} | "
                   f"{cell(e.get('driver_util_pct'), spread=False)} | {cell(k.get('rate_per_s'), spread=False)} | "
                   f"{cell(k.get('dropped'), spread=False)} | {cell(k.get('p50_ms'), 2)} | {cell(k.get('p99_ms'), 2, entry=k)} | "
                   f"{cell(k.get('max_ms'), 1)} | {ratio_text(med(e.get('p99_ms')), med(k.get('p99_ms')), 3)} |")
    first = next(iter((s.get("open") or {}).values()), {})
    kfirst = next(iter(k6.values()), {})
    out += ["", f"Commands: perflab {code(first.get('command'))} (rate varied); k6 {code(kfirst.get('command'))}.", ""]
    return out


def monitor_section(results: dict) -> list[str]:
    m = results.get("monitor") or {}
    if not m:
        return []
    out = ["## Monitor overhead", "",
           "A perflab run with the monitors on (all machine sources, the SUT's process tree of 2 workers, "
           "the driver's CPU), null target at ~1000 tx/s, 15 s window. `sampling_cpu_per_s` (run.json "
           "monitor block) = the monitor process's CPU between its first and last sample per second; "
           "`monitor_cpu_s` = its whole CPU, start-up and the final parquet write included.", "",
           "| interval | sampling CPU, % of one core | monitor_cpu_s (whole run) | final write CPU s | samples "
           "| command |", "|---|---|---|---|---|---|"]
    for iv, e in m.items():
        write = [r.get("monitor_write_cpu_s") for r in e.get("reps", []) if r.get("monitor_write_cpu_s") is not None]
        samples = [r.get("samples") for r in e.get("reps", []) if r.get("samples") is not None]
        out.append(f"| {iv} | {cell(e.get('pct_of_core'), 3, entry=e)} | {cell(e.get('monitor_cpu_s'), 3)} | "
                   f"{fmt(sorted(write)[len(write) // 2] if write else None, 3)} | "
                   f"{fmt(sorted(samples)[len(samples) // 2] if samples else None)} | {code(e.get('command'))} |")
    out.append("")
    return out


def reduce_section(results: dict) -> list[str]:
    r = results.get("reduce") or {}
    if not r:
        return []
    out = ["## Reduction and reporting", "",
           "A synthetic run directory laid out as perflab's driver writes one (docs/architecture.md: "
           "run.json; transactions.parquet with every column, in completion order, row groups of 2^20: "
           "4 classes, 3 transactions, 2 scripts, 1000 users, 1 % errors, 60 % of the rows finishing "
           "inside the window; thinks.parquet), made by `bench/monitor_reduce.py`. *show* = `perflab "
           "show --json DIR` in a new process (interpreter start, imports, reduction, JSON); its CPU is "
           "both cores' (the reduction makes the per-class and per-transaction rows on threads of their "
           "own and decodes the next row groups while copying these); *reduce_run* = the reduction "
           "alone in a warm process.", "",
           "| stored transactions | show: wall s | show: CPU s | show: peak RSS MB | reduce_run: wall s | command |",
           "|---|---|---|---|---|---|"]
    for rows, e in sorted(r.items(), key=lambda kv: int(kv[0])):
        show, red = e.get("show") or {}, e.get("reduce_run") or {}
        out.append(f"| {int(rows):,} | {cell(show.get('wall_s'), 2, entry=show)} | {cell(show.get('cpu_s'), 2)} | "
                   f"{cell(show.get('peak_rss_mb'), spread=False)} | {cell(red.get('wall_s'), 2)} | "
                   f"{code(show.get('command'))} |")
    out.append("")
    return out


# --- goals -------------------------------------------------------------------------------------


def run_overhead_section() -> list[str]:
    """A run's time outside its window, from the newest bench/results/run-overhead-*.json
    (bench/run_overhead.py, two source trees side by side)."""
    files = sorted((BENCH / "results").glob("run-overhead-*.json"))
    if not files:
        return []
    from run_overhead import table

    doc = json.loads(files[-1].read_text())
    trees = list(doc["trees"])
    day = files[-1].stem.removeprefix("run-overhead-")
    return ["## A run's own time outside its window", "",
            "What every run of a study and every lab test pays on top of its planned window: the workload "
            "read, the SUT's workers started, cgroup and monitor, then the final sample, the samples file, "
            "the rows and the record. `bench/run_overhead.py` runs the known-cost python SUT (4 ms a "
            "transaction, 150/s, 0.5 s + 2 s, monitors on) as `perflab run` and as a 6-run `perflab study`, "
            "the source trees alternating, and gives the wall time less the planned windows, per run.", "",
            table(doc["rows"], trees), "",
            f"*{day}, this 2-CPU guest, under the lab's quiet lock: `python bench/run_overhead.py "
            + " ".join(f"--tree {t}=..." for t in trees) + f" --reps {1 + max(r['rep'] for r in doc['rows'])}` "
            f"(rows: bench/results/{files[-1].name}; before = fffebd9, after = a SUT worker started as a fresh "
            "interpreter and the samples file written while the driver gathers its rows). The gain is small "
            "beside the spread between repetitions (a second from one to the next). Inside a run "
            "(RunLifecycle's steps timed), starting one SUT worker went from about 1.0 s to 0.4 s -- "
            "multiprocessing's spawn imported the parent's main module, perflab's command line or pytest, into "
            "every worker -- and the monitor's stop from 0.6-0.8 s to 0.2-0.3 s; what is left is the command's "
            "own imports (0.7-0.9 s), the monitor's file (pyarrow's import, 0.3-0.5 CPU-s) and the driver's "
            "first conversion of its rows (pyarrow imports pandas, 0.35-0.7 s).*", ""]


PAIRS_COMMAND = "bench/run_all.sh --only pairs --reps 5"


def _pairs_text(values: list[float | None] | None, digits: int = 2) -> str:
    """Every pair's ratio, a rejected run's pair as ×."""
    if not values:
        return "no pair"
    return ", ".join("×" if v is None else f"{v:.{digits}f}" for v in values)


def _every(values: list[float | None] | None, limit: float) -> bool | None:
    """Met when every pair is measured and within the limit (a rejected run misses it)."""
    if not values:
        return None
    return all(v is not None and v <= limit for v in values)


def _wakes_text(http: dict) -> str:
    """Each generator's median wake-ups per request at the rate (voluntary context switches of its
    threads over the window, bench/common.proc_wakes): what a precise timer costs on a guest."""
    rows = ((http.get("rows") or {}).get("rate")) or {}
    out = []
    for name, reps in rows.items():
        values = sorted(r["wakes_per_tx"] for r in reps if r.get("valid", True) and r.get("wakes_per_tx") is not None)
        if values:
            out.append(f"{name} {values[len(values) // 2]:.2f}")
    return ", ".join(out)


def pairs_goal_rows(results: dict) -> list[tuple[str, str, bool | None]]:
    """Issue 38's goals, each with the conditions it holds under and every pair behind it
    (bench/driver_cost_pairs.py), or the command that measures it."""
    pairs = results.get("pairs") or {}
    missing = f"not measured yet: `{PAIRS_COMMAND}` on a quiet machine"
    rows: list[tuple[str, str, bool | None]] = []

    def pair_values(part: str, key: str) -> list[float | None] | None:
        entry = ((pairs.get(part) or {}).get("pairs") or {}).get(key) or {}
        return entry.get("values")

    http_modes = [(m, pair_values("http", f"{m}: perflab (defaults) / wrk")) for m in ("saturated", "rate")]
    if any(v for _, v in http_modes):
        text = "; ".join(f"{'as fast as nginx answers' if m == 'saturated' else 'at 10,000 requests/s'}: "
                         f"{_pairs_text(v)}" for m, v in http_modes)
        ok = [_every(v, 1.25) for _, v in http_modes]
        exact = pair_values("http", "rate: perflab (wake: exact) / wrk")
        if exact:  # one setting away from the defaults: shown beside them, never the goal's verdict
            text += (f"; with `timing: {{wake: exact}}` (the loop woken for each arrival at its time, where the "
                     f"default starts it at the loop's first turn after it, at the latest on a 1 ms grid), at "
                     f"10,000 requests/s: {_pairs_text(exact)}")
        wakes = _wakes_text(pairs.get("http") or {})
        if wakes:
            text += f" (wake-ups of the generator per request at 10,000/s: {wakes})"
        rows.append(("HTTP with perflab's default workload settings: driver CPU per request ≤ 1.25× wrk's, in "
                     "every pair",
                     f"perflab ÷ wrk per pair -- {text}. nginx (one worker, CPU 1), each generator alone on CPU 0, "
                     "50 connections; CPU of the generator's process over the same 6 s window for every tool; "
                     "perflab's rows matched nginx's count, its compiled loop asserted, invalid runs rejected (×)",
                     None if None in ok else all(ok)))
    else:
        rows.append(("HTTP with perflab's default workload settings: driver CPU per request ≤ 1.25× wrk's, in "
                     "every pair", missing, None))
    pg = [(m, pair_values("pg", f"{m}: perflab / pgbench")) for m in ("saturated", "rate")]
    if any(v for _, v in pg):
        ok = [_every(v, 1.0) for _, v in pg]
        rows.append(("PostgreSQL: driver CPU per transaction ≤ 1.0× pgbench's, in every pair",
                     "perflab ÷ pgbench per pair -- " + "; ".join(
                         f"{'4 users, no think' if m == 'saturated' else 'at a fixed rate (pgbench -R)'}: "
                         f"{_pairs_text(v)}" for m, v in pg) +
                     ". Debit-credit on PostgreSQL 15 (CPU 1); each driver process's CPU against the server's own "
                     "count of committed transactions (pgbench_history) over the same window",
                     None if None in ok else all(ok)))
    else:
        rows.append(("PostgreSQL: driver CPU per transaction ≤ 1.0× pgbench's, in every pair", missing, None))
    tcp = pair_values("tcp", "saturated: perflab / redis-benchmark")
    rows.append(("TCP: driver CPU per request ≤ 1.5× redis-benchmark's, in every pair",
                 f"perflab ÷ redis-benchmark per pair: {_pairs_text(tcp)} (redis-server on CPU 1, inline PING, "
                 "50 connections, as fast as it answers; redis-benchmark has no rate)" if tcp else missing,
                 _every(tcp, 1.5)))
    late = pairs.get("lateness") or {}
    if late:
        parts, ok_all = [], []
        for name, entry in late.items():
            values = (entry.get("p99_ms") or {}).get("values") or []
            parts.append(f"{name}: p99 {', '.join(f'{v:.3f}' for v in values) or 'no valid run'} ms")
            if "wake: exact" not in name:  # a setting's row is shown, the goal is the defaults'
                ok_all.append(bool(values) and max(values) <= 1.0)
        rows.append(("The compiled loop's start lateness p99 ≤ 1 ms at 20,000/s open loop and at 10,000 users "
                     "closed loop", "; ".join(parts) + " (each repetition; nginx on CPU 1, the driver on CPU 0; "
                     "lateness = actual − intended start, the intended from the arrival schedule or the think; by "
                     "default an open loop's arrival starts at the loop's first turn after its time -- the loop "
                     "starts what is due after every turn it was awake for and wakes itself at the latest on a 1 ms "
                     "grid -- a think's end exactly)",
                     all(ok_all)))
    else:
        rows.append(("The compiled loop's start lateness p99 ≤ 1 ms at 20,000/s open loop and at 10,000 users "
                     "closed loop", missing, None))
    memory = (pairs.get("memory") or {}).get("rows") or []
    valid = [r for r in memory if r.get("valid")]
    if valid:
        rss = [r["rss_bytes_per_user"] for r in valid]
        slab = [r["slab_bytes_per_user"] for r in valid]
        buffers = [r["socket_buffer_bytes_per_user"] for r in valid]
        rows.append(("100,000 connected keep-alive users on one driver core: ≤ 2 KB of driver RSS each",
                     f"RSS {', '.join(f'{v:,.0f}' for v in rss)} B per user; kernel memory per connection, both "
                     f"ends on this host: slab {', '.join(f'{v:,.0f}' for v in slab)} B, socket buffers "
                     f"{', '.join(f'{v:,.0f}' for v in buffers)} B (each repetition; {valid[0]['processes']} "
                     "drivers on CPU 0, each to its nginx port: one port gives ~28,000 connections)",
                     max(rss) <= 2048))
    elif memory:  # measured, every repetition rejected: say why rather than "not measured"
        connected = ", ".join(f"{r.get('connected', 0):,}" for r in memory)
        per_connected = ", ".join(f"{r['rss_bytes_per_user'] * r['users'] / r['connected']:,.0f}"
                                  for r in memory if r.get("connected"))
        rows.append(("100,000 connected keep-alive users on one driver core: ≤ 2 KB of driver RSS each",
                     f"not shown: every repetition was rejected because not every user connected ({connected} "
                     f"of {memory[0].get('users', 0):,}, {memory[0].get('processes')} drivers on CPU 0 under an "
                     f"open-file limit of {memory[0].get('files_limit', 'na'):,} a process); the drivers' RSS over "
                     f"the users connected was {per_connected} B each -- not the goal's measurement", None))
    else:
        error = (pairs.get("memory") or {}).get("error")
        rows.append(("100,000 connected keep-alive users on one driver core: ≤ 2 KB of driver RSS each",
                     f"not measured: the harness failed ({error}); {missing}" if error else missing, None))
    return rows


def goals_section(results: dict) -> list[str]:
    d = results.get("driver") or {}
    http = d.get("http") or {}
    perflab = med((http.get(HTTP_PERFLAB) or {}).get("tx_per_core_s"))
    k6 = med((http.get("k6") or {}).get("tx_per_core_s"))
    mem_1m = (((results.get("memory") or {}).get("perflab") or {}).get("1000000") or {})
    mem = med(mem_1m.get("bytes_per_user"))
    mem_peak = med(mem_1m.get("peak_rss_mb"))
    mon = med(((results.get("monitor") or {}).get("1s") or {}).get("pct_of_core"))
    red = med(((((results.get("reduce") or {}).get("10000000") or {}).get("show")) or {}).get("wall_s"))

    def verdict(ok: bool | None) -> str:
        return "–" if ok is None else ("**met**" if ok else "**missed**")

    rows = [(goal, measured, verdict(ok)) for goal, measured, ok in pairs_goal_rows(results)]
    rows += [
        ("perflab ≥ 2× k6's tx/s per core, same HTTP target",
         f"perflab {fmt(perflab)} vs k6 {fmt(k6)} tx/s per core = {ratio_text(perflab, k6)} (medians of unpaired "
         "runs: the driver part below)" if perflab is not None else
         ((http.get(HTTP_PERFLAB) or {}).get("note")) or "not measured",
         verdict(None if perflab is None or k6 is None else perflab >= 2 * k6)),
        ("1M idle users, no connection each (the Python engine's parked users), in ≤ 2.5 GB of driver RSS",
         f"{fmt(mem)} bytes per idle user; the whole run's peak {fmt(mem_peak)} MB",
         verdict(None if mem is None or mem_peak is None else mem <= 2500 and mem_peak <= 2500)),
        ("monitors ≤ 0.5 % of one core at 1 s", f"{fmt(mon, 3)} %", verdict(None if mon is None else mon <= 0.5)),
        ("10M transactions reduced and shown ≤ 2 s (issue 28)", f"{fmt(red, 2)} s (`perflab show --json`, wall)",
         verdict(None if red is None else red <= 2.0)),
    ]
    out = ["## Goals", "",
           "Each goal states the conditions it holds under and every pair behind it (a repetition runs each "
           "generator once, in a seeded random order; a pair is perflab's run and the peer's of the same "
           "repetition); it is met when every pair is. × marks a pair with a rejected run.", "",
           "| goal | measured | |", "|---|---|---|"]
    out += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return out + [""]


def profile_section(results: dict) -> list[str]:
    p = results.get("profile") or {}
    out: list[str] = []
    if p:
        out += ["## Profiles", "",
                "py-spy (peers venv) attached to the `perflab run` driver for 6 s of the measurement window. "
                "*self* = share of on-CPU samples whose innermost Python frame is the function; "
                "`Runner.run (asyncio/runners.py)` as *self* is time inside uvloop's C event loop (epoll, "
                "callback dispatch, socket and pipe system calls), which has no Python frame of its own.", ""]
        for name, e in p.items():
            if e.get("note"):
                out += [f"### {name}", "", e["note"], ""]
                continue
            out += [f"### {name}", "",
                    f"{e.get('samples')} samples; ETR (T) {fmt(e.get('etr_t'))} tx/s, DRIVER CPU "
                    f"{fmt(e.get('driver_cpu'), 1)} %; {code(e.get('command'))}", "",
                    "| self % | function |", "|---|---|"]
            out += [f"| {share:.1f} | `{func}` |" for func, share in (e.get("self") or [])[:12]]
            out.append("")
    if FINDINGS.exists():
        out += [FINDINGS.read_text().rstrip(), ""]
    return out


def render(results: dict) -> str:
    results = json.loads(json.dumps(results, default=str))  # integer keys become strings, as stored
    lines = ["# perflab's own speed", "",
             "<!-- generated by bench/run_all.py from bench/results/results.json; the findings section comes "
             "from bench/findings.md. Do not edit by hand: re-run the benchmark. -->", "",
             "Benchmarks of perflab's driver, monitors and reduction, with Locust, k6 and wrk measured beside "
             "it on the same targets in the same run. Not tests: CI only smoke-runs perflab's side "
             "(tests/bench/test_bench_smoke.py). How to run them and what they need: bench/README.md.", "",
             "Every number is the **median [min–max] ±half-range %** of the repetitions "
             f"({_reps(results)} per number), measured {_when(results)} on the machine below with the command shown. "
             "Measurements wait for the machine to be quiet and are repeated when other work used more "
             "than 5 % of a core meanwhile (up to 4 attempts); † marks a number where a repetition still "
             "had more (its value is kept: another team's tests shared the machine). Ratios are perflab ÷ "
             "the peer on the same row's metric.", ""]
    lines += goals_section(results)
    lines += machine_section(results)
    lines += driver_section(results)
    lines += tcp_section(results)
    lines += pg_section(results)
    lines += memory_section(results)
    lines += schedule_section(results)
    lines += monitor_section(results)
    lines += run_overhead_section()
    lines += reduce_section(results)
    lines += profile_section(results)
    return "\n".join(lines).rstrip() + "\n"


def _when(results: dict) -> str:
    days = sorted({str(meta.get("finished", ""))[:10] for key, meta in results.items()
                   if key.endswith("_meta") and isinstance(meta, dict) and meta.get("finished")})
    return ("on " + " and ".join(days)) if days else "recently"


def _reps(results: dict) -> str:
    reps = {meta.get("reps") for key, meta in results.items() if key.endswith("_meta") and isinstance(meta, dict)}
    reps.discard(None)
    return ", ".join(str(r) for r in sorted(reps)) or "3"

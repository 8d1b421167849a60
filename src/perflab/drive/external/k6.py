"""k6 as the driver: the workload's HTTP transactions run by k6, its JSON output imported.

The script is generated from the workload (k6_script.py): the same requests, checks and
extraction as the native HTTP adapter. Closed loop: `users` VUs (constant-vus; with a stagger,
ramping-vus in the warm-up). Open loop: constant-arrival-rate at `rate` (k6 has no Poisson
arrivals; the loader asks for `arrival: constant`).

What k6's JSON output (`--out json=FILE`) gives per request: points timed at the request's
*end* (lib/netext/httpext/tracer.go: every sample of a request carries Trail.EndTime, the
wall-clock time.Now() when the response body was read; against a server that waits 300 ms the
points are stamped 300 ms after the script's call), with http_req_blocked (waiting for
and opening a connection), http_req_duration (sending + waiting + receiving) and
http_req_receiving (first response byte to end) in milliseconds. So on perflab's clock:

    end            = the point's time - t0_epoch
    actual start   = end - blocked - duration     (when k6 asked for a connection)
    first response = end - receiving              (the response's first byte: TTFB)

for the transaction's first request (start, first response) and its last (end). Intended
start: closed loop, the actual start (k6 has no schedule to be late against); open loop, the
start of the k6 iteration, which k6 begins when the arrival is due or drops (a dropped arrival
is a `dropped_iterations` point, imported as an error row as the native driver records its
drops). k6 does not publish how late it began an iteration.

Timeline, as for pgbench: the stagger and stabilization period is a k6 run without output
(warm-up); the measured run's output is imported. Its window is the measured run's first
iteration start to its last request end, so ETR (T) counts what k6's own summary counts
(http_reqs) over what k6 measured (its test run duration): they agree within 1% without think
time (tests/net/test_external_http_drivers.py). run.json "external" keeps k6's summary; the
JSON output is kept gzipped beside the run.
"""

from __future__ import annotations

import calendar
import json
import re
import subprocess
import time
from pathlib import Path

from perflab.drive.external import (
    MEASURED,
    WARM_UP,
    ExternalResult,
    TableBuilder,
    gzip_evidence,
    k6_script,
    measured_window,
    tool_seed,
)
from perflab.drive.external.process import run_tool, tool_outcome
from perflab.drive.plan import RunPlan
from perflab.errors import SutFailure
from perflab.tools import find_k6
from perflab.workload.model import Workload

NAN = float("nan")
_TIME = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$")
# The points the importer reads (k6 writes about ten per request; http_reqs is only counted)
_WANTED = frozenset({"http_req_duration", "http_req_blocked", "http_req_receiving", "perflab_tx",
                     "perflab_iteration", "dropped_iterations"})


def run_k6(plan: RunPlan, run_dir: Path, t0_epoch: float, failure) -> ExternalResult:
    """Run k6 as the plan says (load, seed, phases, driver CPUs); import its points."""
    workload, phases, users, rate, seed = plan.workload, plan.phases, plan.users, plan.rate, plan.seed
    driver_cpus = plan.placement.driver_cpus
    program = find_k6()
    if program is None:
        raise SutFailure("k6 is not installed (go install go.k6.io/k6@latest)")
    open_loop = rate is not None
    summary: dict = {"version": _version(program),
                     "executor": "constant-arrival-rate" if open_loop else "constant-vus"}

    def scenario(seconds: float, stagger: float = 0.0) -> dict:
        if rate is not None:  # open_loop
            return k6_script.open_scenario(rate, seconds, workload)
        assert users is not None  # a closed loop has its users
        return k6_script.closed_scenario(users, seconds, stagger)

    def k6(name: str, phase: str, seconds: float, stagger: float, output: Path | None):
        script = run_dir / f"{name}.js"
        plan = k6_script.plan(workload, scenario(seconds, stagger), open_loop, tool_seed(seed, phase))
        script.write_text(k6_script.script_text(plan))
        summary_path = run_dir / f"{name}-summary.json"
        argv = [program, "run", "--quiet", "--no-color", "--no-usage-report", "-e",
                f"PERFLAB_K6_SUMMARY={summary_path}", *(["--out", f"json={output}"] if output else []),
                *workload.driver.options, str(script)]
        tool = run_tool(argv, run_dir, name, driver_cpus, failure)
        return tool, {"argv": argv, "returncode": tool.returncode, **_summary(summary_path)}

    if phases.window_start > 0:
        # Stagger + stabilization: a k6 run whose requests are not imported (the warm-up).
        warm, summary["warmup"] = k6("k6-warmup", WARM_UP, phases.window_start, phases.stagger, None)
        bad = tool_outcome(warm, failure, "k6 warm-up")
        if bad is not None:
            return ExternalResult(None, *bad, warm.driver, summary)
    output = run_dir / "k6.json"
    tool, measured = k6("k6", MEASURED, phases.measurement, 0.0, output)
    summary.update(measured)
    table, counts, first_iteration = (import_json(output, workload, t0_epoch, open_loop) if output.exists()
                                      else (None, {}, None))
    summary.update(counts)
    if output.exists():
        gzip_evidence(output)  # the evidence behind every row, compressed
    window = measured_window(table)
    if window is not None and first_iteration is not None:
        # from k6's first iteration: a think time before the first request is part of the window
        window = (min(window[0], first_iteration), window[1])
    bad = tool_outcome(tool, failure, "k6")
    if bad is not None:
        return ExternalResult(table, *bad, tool.driver, summary, window)
    return ExternalResult(table, "complete", None, tool.driver, summary, window)


def import_json(path: Path, workload: Workload, t0_epoch: float, open_loop: bool):
    """k6's JSON output -> (transactions table on perflab's clock, counts for run.json, the first
    iteration's start)."""
    requests: dict[str, list[dict]] = {}  # transaction id -> its requests, in order
    parts: dict[tuple[str, str], dict] = {}  # (id, end stamp) -> one request's timings
    done: dict[str, dict] = {}  # transaction id -> its perflab_tx point's metadata
    iterations: dict[str, float] = {}  # iteration -> start on perflab's clock
    dropped: list[float] = []
    http_reqs = 0
    clock = _Clock(t0_epoch)
    with open(path) as lines:
        for line in lines:
            if not line.startswith('{"metric":"'):
                continue  # metric declarations
            name = line[11:line.index('"', 11)]
            if name == "http_reqs":
                http_reqs += 1
                continue
            if name not in _WANTED:
                continue
            data = json.loads(line)["data"]
            meta = data.get("metadata") or {}
            if name == "perflab_tx":
                done[meta["id"]] = {**meta, "at": clock(data["time"])}
            elif name == "perflab_iteration":
                iterations[meta["it"]] = clock(data["time"])
            elif name == "dropped_iterations":
                dropped.append(clock(data["time"]))
            elif "id" in meta:
                key = (meta["id"], data["time"])
                timings = parts.get(key)
                if timings is None:
                    # status 0: no response came (connection refused, timeout): no first byte either
                    answered = (data.get("tags") or {}).get("status") != "0"
                    timings = parts[key] = {"end": clock(data["time"]), "answered": answered}
                    requests.setdefault(meta["id"], []).append(timings)
                timings[name] = data["value"] / 1000.0
    table = _rows(workload, open_loop, requests, done, iterations, dropped)
    counts = {"http_reqs_points": http_reqs, "requests_imported": len(parts), "transactions_imported": table.num_rows,
              "dropped_imported": len(dropped)}
    return table, counts, min(iterations.values(), default=None)


def _rows(workload: Workload, open_loop: bool, requests, done, iterations, dropped):
    tx_names = [t.name for t in workload.transactions]
    classes = sorted({t.tx_class for t in workload.transactions})
    class_of_tx = [classes.index(t.tx_class) for t in workload.transactions]
    builder = TableBuilder([s.name for s in workload.scripts], tx_names, classes)
    # An arrival is due when k6 began its iteration: that is its first transaction's intended start.
    first_of_iteration: dict[str, int] = {}
    for tx_id, meta in done.items():
        seq = int(tx_id.split(":")[1])
        if seq < first_of_iteration.get(meta["it"], seq + 1):
            first_of_iteration[meta["it"]] = seq
    rows = []
    for tx_id in dict.fromkeys([*requests, *done]):
        user, seq, script, tx = (int(x) for x in tx_id.split(":"))
        meta = done.get(tx_id)
        reqs = requests.get(tx_id)
        if reqs:
            first, last = reqs[0], reqs[-1]
            actual = first["end"] - first.get("http_req_blocked", 0.0) - first.get("http_req_duration", 0.0)
            first_byte = first["end"] - first.get("http_req_receiving", NAN) if first["answered"] else NAN
            end = last["end"]
        else:  # it failed before its first request was sent
            actual = end = meta["at"]
            first_byte = NAN
        intended = actual
        if open_loop and meta is not None and first_of_iteration.get(meta["it"]) == seq:
            intended = min(actual, iterations.get(meta["it"], actual))
        error = (meta.get("error") or None) if meta is not None else "k6 stopped before the transaction completed"
        rows.append((end, user, script, tx, intended, actual, first_byte, error))
    mix_first = next(i for i, s in enumerate(workload.scripts) if s.name != workload.init_script and s.weight > 0)
    tx_first = tx_names.index(workload.scripts[mix_first].steps[0].transaction)
    for at in dropped:  # k6 does not say which script a dropped arrival would have run: the mix's first
        rows.append((at, -1, mix_first, tx_first, at, at, NAN, "k6: arrival dropped (no free VU: max_in_flight)"))
    for end, user, script, tx, intended, actual, first_byte, error in sorted(rows, key=lambda r: r[0]):
        builder.add(user, script, tx, class_of_tx[tx], intended, actual, first_byte, end, error is None, error)
    return builder.table()


class _Clock:
    """RFC 3339 stamps with nanoseconds, as Go writes a time.Time, -> seconds since perflab's
    t0. The whole seconds are converted once per second of output (they repeat)."""

    def __init__(self, t0_epoch: float):
        self.t0_epoch = t0_epoch
        self.cache: dict[tuple[str, str], float] = {}

    def __call__(self, stamp: str) -> float:
        match = _TIME.match(stamp)
        if match is None:
            raise ValueError(f"k6 time stamp {stamp!r} is not RFC 3339")
        whole, fraction, zone = match.groups()
        base = self.cache.get((whole, zone))
        if base is None:
            offset = 0 if zone == "Z" else (1 if zone[0] == "+" else -1) * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60)
            base = calendar.timegm(time.strptime(whole, "%Y-%m-%dT%H:%M:%S")) - offset - self.t0_epoch
            self.cache[(whole, zone)] = base
        return base + (int(fraction) / 10 ** len(fraction) if fraction else 0.0)


def _summary(path: Path) -> dict:
    """The figures k6 printed (its handleSummary data): what perflab's own numbers are checked against."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    metrics = data.get("metrics", {})

    def values(name: str) -> dict:
        return metrics.get(name, {}).get("values", {})

    duration = values("http_req_duration")
    return {
        "http_reqs": values("http_reqs").get("count"),
        "http_reqs_rate": values("http_reqs").get("rate"),
        "test_run_duration_s": data.get("state", {}).get("testRunDurationMs", 0) / 1000.0,
        "iterations": values("iterations").get("count"),
        "dropped_iterations": values("dropped_iterations").get("count", 0),
        "http_req_failed_rate": values("http_req_failed").get("rate"),
        "http_req_duration_ms": {k: duration.get(k) for k in ("avg", "med", "p(90)", "p(95)", "p(99)", "max")},
        "http_req_waiting_avg_ms": values("http_req_waiting").get("avg"),
    }


def _version(program: str) -> str:
    try:
        return subprocess.run([program, "version"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"

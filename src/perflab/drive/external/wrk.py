"""wrk as the driver: per-request times logged from wrk's Lua hooks, one connection per thread.

wrk keeps no per-request log, and its Lua callbacks do not say which connection they are
about. With one connection per thread (-t N -c N, N = the workload's users) they do not need
to: each thread's connection runs one request at a time, so its request() and response() calls
alternate, and the script can time them. The generated Lua script reads CLOCK_MONOTONIC --
perflab's own clock, no conversion -- through LuaJIT's FFI in request() (wrk calls it right
before it writes the request and starts its own timer) and in response() (right after wrk
stops its timer, the whole response parsed), and each thread appends one line per response
to a log of its own. So every row is a request wrk really made, and the rows are exactly what
wrk counts in its summary's `requests`. A closed loop of N users, each with a keep-alive
connection, is what wrk then runs; its delay() hook gives a constant think time.

What wrk cannot give: an intended start (it has no schedule: intended = actual start), the
first response byte (response() sees the whole response: first_response is NaN), an open loop
(wrk2's -R is not in Debian), parameters, extraction or several requests per transaction
(the loader refuses those). A request lost to a socket error (wrk reconnects and calls
request() again) becomes an error row ending when wrk started over; wrk itself counts it only
in errors.read / errors.write.

Seeds: each thread's script choices come from LuaJIT's math.random, seeded in init() from the
seed of the wrk run (tool_seed of the run's seed: one for the warm-up, one for the measured
run) and the thread's number. A thread is a user, and its choices depend on nothing else, so
the same seed gives every user the same sequence of transactions.

Timeline, as for pgbench: an unlogged warm-up run of wrk for the stagger and stabilization
(whole seconds: wrk's -d), then the measured run, logged. Its window is its first request's
start to its last response; wrk's own summary (requests, duration, errors, latency
percentiles, from done()) is kept in run.json "external".
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from pathlib import Path

from perflab.drive.external import (
    MEASURED,
    WARM_UP,
    ExternalResult,
    TableBuilder,
    constant_think,
    gzip_evidence,
    measured_window,
    script_mix,
    tool_seed,
)
from perflab.drive.external.process import run_tool, tool_outcome
from perflab.drive.plan import RunPlan
from perflab.errors import SutFailure
from perflab.workload.model import HttpTarget, Workload

NAN = float("nan")

RUNTIME = r"""
local ffi = require("ffi")
ffi.cdef[[
typedef struct { long tv_sec; long tv_nsec; } perflab_timespec;
int clock_gettime(int clock_id, perflab_timespec *tp);
]]
local clock = ffi.new("perflab_timespec")
local function now()  -- CLOCK_MONOTONIC (1 on Linux): perflab's clock
  ffi.C.clock_gettime(1, clock)
  return tonumber(clock.tv_sec) + tonumber(clock.tv_nsec) * 1e-9
end

-- setup() and done() run in wrk's main Lua state: number the threads, write the summary.
local threads = 0
function setup(thread)
  thread:set("thread_id", threads)
  threads = threads + 1
end

function done(summary, latency, requests)
  local e = summary.errors
  local f = io.open(PLAN.summary, "w")
  f:write(string.format('{"duration_us": %d, "requests": %d, "bytes": %d, "errors": {"connect": %d, ' ..
    '"read": %d, "write": %d, "status": %d, "timeout": %d}, "latency_us": {"mean": %.3f, "max": %d, ' ..
    '"p50": %d, "p90": %d, "p99": %d}}',
    summary.duration, summary.requests, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency.mean, latency.max, latency:percentile(50), latency:percentile(90), latency:percentile(99)))
  f:close()
end

-- Each thread: one connection, one request at a time, one log line per response.
local prepared, log = {}, nil
local script, step, started, pending = nil, 0, 0, false

local function pick()
  local x = math.random() * PLAN.cumulative[#PLAN.cumulative]
  for i, c in ipairs(PLAN.cumulative) do
    if x < c then return PLAN.mix[i] end
  end
  return PLAN.mix[#PLAN.mix]
end

local function advance()
  step = step + 1
  if script == nil or step > #PLAN.scripts[script] then
    script, step = pick(), 1
  end
end

local function write(start, stop, status, err)
  if log then
    log:write(string.format("%.9f %.9f %d %d %d %s\n", start, stop, script - 1,
                            PLAN.scripts[script][step].tx - 1, status, err))
  end
end

function init(args)
  -- exact in a double: PLAN.seed < 2^32; distinct for every (seed, thread) while threads < 7919
  math.randomseed(PLAN.seed * 7919 + thread_id)
  for i, r in ipairs(PLAN.requests) do
    prepared[i] = wrk.format(r.method, r.path, r.headers, r.body)
  end
  if PLAN.log then
    log = io.open(PLAN.log .. thread_id, "w")
    log:setvbuf("full", 1048576)  -- written at exit: wrk ends with a normal exit, even on SIGINT
  end
  advance()
end

local verify = true
function request()
  if verify and thread_id == 0 then
    -- wrk calls thread 0's request() once before the run, to count the requests it returns
    verify = false
    return prepared[PLAN.scripts[script][step].tx]
  end
  if pending then  -- no response came: wrk reconnected after a socket error and starts over
    write(started, now(), 0, "wrk: connection lost before the response (wrk reconnected)")
  end
  pending = true
  started = now()
  return prepared[PLAN.scripts[script][step].tx]
end

function response(status, headers, body)
  local stop = now()
  pending = false
  local r = PLAN.requests[PLAN.scripts[script][step].tx]
  local err = "-"
  if (r.statuses and not r.statuses[status]) or (not r.statuses and (status < 200 or status > 399)) then
    err = string.format("HTTP %d from %s %s", status, r.method, r.path)
  elseif r.expect_body and not (body and string.find(body, r.expect_body, 1, true)) then
    err = string.format("%s %s: body lacks '%s'", r.method, r.path, r.expect_body)
  end
  write(started, stop, status, err)
  advance()
end

if PLAN.think then
  function delay()  -- before the next request (wrk calls it after a response)
    return PLAN.scripts[script][step].think_ms
  end
end
"""


def run_wrk(plan: RunPlan, run_dir: Path, t0: float, failure) -> ExternalResult:
    """Run wrk as the plan says (connections, seed, phases, driver CPUs); import its log."""
    workload, phases, users, rate, seed = plan.workload, plan.phases, plan.users, plan.rate, plan.seed
    driver_cpus = plan.placement.driver_cpus
    program = shutil.which("wrk")
    if program is None:
        raise SutFailure("wrk is not installed (apt-get install wrk)")
    if rate is not None or users is None:
        raise SutFailure("wrk has no arrival schedule (closed loop only): run with --users, or use driver: k6")
    target = workload.target
    assert isinstance(target, HttpTarget)
    summary: dict = {"version": _version(program), "connections": users, "threads": users}

    def wrk(name: str, phase: str, seconds: float, log: str | None):
        script = run_dir / f"{name}.lua"
        summary_path = run_dir / f"{name}-summary.json"
        script.write_text(script_text(workload, tool_seed(seed, phase), log, summary_path))
        # one thread per connection: what lets the script time each request (see above)
        argv = [program, "-t", str(users), "-c", str(users), "-d", f"{math.ceil(seconds)}s",
                "--timeout", f"{math.ceil(target.timeout)}s", "-s", str(script), *workload.driver.options,
                target.base_url + "/"]
        tool = run_tool(argv, run_dir, name, driver_cpus, failure)
        return tool, {"argv": argv, "returncode": tool.returncode, **_summary(summary_path)}

    if phases.window_start > 0:
        warm, summary["warmup"] = wrk("wrk-warmup", WARM_UP, phases.window_start, None)
        bad = tool_outcome(warm, failure, "wrk warm-up")
        if bad is not None:
            return ExternalResult(None, *bad, warm.driver, summary)
    prefix = run_dir / "wrk_log."
    tool, measured = wrk("wrk", MEASURED, phases.measurement, str(prefix))
    summary.update(measured)
    logs = sorted(run_dir.glob("wrk_log.*"))
    table = import_logs(logs, workload, t0)
    summary["requests_imported"] = table.num_rows
    for log in logs:
        gzip_evidence(log)
    window = measured_window(table)
    bad = tool_outcome(tool, failure, "wrk")
    if bad is not None:
        return ExternalResult(table, *bad, tool.driver, summary, window)
    return ExternalResult(table, "complete", None, tool.driver, summary, window)


def script_text(workload: Workload, seed: int, log: str | None, summary_path: Path) -> str:
    target = workload.target
    assert isinstance(target, HttpTarget)  # wrk drives an http target (workload/checks.py)
    default_think = constant_think(workload.think, 0.0)
    tx_index = {t.name: i for i, t in enumerate(workload.transactions)}
    mix, cumulative = script_mix(workload)
    requests = []
    for tx in workload.transactions:
        r = tx.http_body()[0]
        headers = {**target.headers, **r.headers}
        body = r.body
        if r.json_body is not None:
            body = json.dumps(r.json_body)
            if not any(k.lower() == "content-type" for k in headers):
                headers["Content-Type"] = "application/json"
        statuses = [r.expect_status] if isinstance(r.expect_status, int) else r.expect_status
        requests.append({"method": r.method.upper(), "path": r.path, "headers": headers, "body": body,
                         "statuses": {s: True for s in statuses} if statuses else None,
                         "expect_body": r.expect_body})
    scripts = [[{"tx": tx_index[s.transaction] + 1,
                 "think_ms": round(1000 * constant_think(s.think, default_think))}
                for s in script.steps] for script in workload.scripts]
    plan = {"seed": seed, "log": log, "summary": str(summary_path), "requests": requests,
            "scripts": scripts, "mix": [i + 1 for i in mix], "cumulative": cumulative,
            "think": any(step["think_ms"] > 0 for script in scripts for step in script)}
    return f"local PLAN = {_lua(plan)}\n{RUNTIME}"


def _lua(value) -> str:
    """A Lua literal (tables are 1-based: lists become sequences; nil entries are left out)."""
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        # decimal escapes for everything but plain printable ASCII: no Lua string syntax to get wrong
        return '"' + "".join(c if c.isascii() and c.isprintable() and c not in '"\\' else
                             "".join(f"\\{b}" for b in c.encode()) for c in value) + '"'
    if isinstance(value, list):
        return "{" + ", ".join(_lua(v) for v in value) + "}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"[{_lua(k)}] = {_lua(v)}" for k, v in value.items() if v is not None) + "}"
    raise TypeError(f"no Lua literal for {value!r}")


def import_logs(paths: list[Path], workload: Workload, t0: float):
    """The threads' logs -> transactions.parquet rows (already on perflab's clock: minus t0)."""
    tx_names = [t.name for t in workload.transactions]
    classes = sorted({t.tx_class for t in workload.transactions})
    class_of_tx = [classes.index(t.tx_class) for t in workload.transactions]
    builder = TableBuilder([s.name for s in workload.scripts], tx_names, classes)
    rows = []
    for path in paths:
        user = int(path.name.rsplit(".", 1)[-1])
        with open(path) as log:
            for line in log:
                fields = line.rstrip("\n").split(" ", 5)
                if len(fields) < 6:
                    continue  # a line cut short (wrk killed): not a measurement
                start, end = float(fields[0]) - t0, float(fields[1]) - t0
                error = None if fields[5] == "-" else fields[5]
                rows.append((end, user, int(fields[2]), int(fields[3]), start, error))
    for end, user, script, tx, start, error in sorted(rows, key=lambda r: r[0]):
        builder.add(user, script, tx, class_of_tx[tx], start, start, NAN, end, error is None, error)
    return builder.table()


def _summary(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    data["duration_s"] = data.pop("duration_us") / 1e6
    data["requests_per_s"] = data["requests"] / data["duration_s"] if data["duration_s"] > 0 else None
    return data


def _version(program: str) -> str:
    try:
        out = subprocess.run([program, "--version"], capture_output=True, text=True, timeout=10)
        return (out.stdout or out.stderr).splitlines()[0].strip()
    except (OSError, subprocess.SubprocessError, IndexError):
        return "unknown"

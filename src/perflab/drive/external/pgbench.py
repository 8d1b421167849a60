"""pgbench as the driver: the workload's own transactions, pgbench's per-transaction log.

The workload's scripts become pgbench script files (`\\set name random(lo, hi)` for each
random_int parameter, the SQL with its `:name` parameters as written, BEGIN/END around a
multi-statement transaction) weighted as in the workload (`-f file@weight`), so the native
driver and pgbench run exactly the same transactions.

pgbench's log (`-l`) has one line per transaction:

    client_id transaction_no time script_no time_epoch time_us [schedule_lag]

`time` is the latency in microseconds (from the scheduled start under --rate), time_epoch.time_us
the end on the wall clock. perflab converts the end to its own clock (t0_epoch <-> t0_monotonic
at the start of the run): end; intended start = end - latency; actual start = intended + lag.
Failed and skipped transactions are logged with `failed` / `skipped` in place of the latency.

Timeline: pgbench starts every client at once (no stagger). The stagger and stabilization
period is an unlogged warm-up run of pgbench; then the measured run, logged, for the
measurement period (whole seconds: pgbench's -T). The window is the measured run -- its first
transaction's start to its last end on perflab's clock -- so ETR (T) and pgbench's own tps
count the same transactions over (nearly) the same time.

Seeds: each pgbench run gets `--random-seed` (tool_seed: one for the warm-up, one for the
measured run). pgbench derives every generator from it: each client's own (`\\set ...
random()`: the parameters) and each thread's (script choice, -R's schedule). So the same seed
gives each client the same parameters and each thread the same sequence of script choices; with
several clients in a thread (-j below -c) which client draws which choice depends on timing --
`driver.threads` equal to the users makes every client's sequence reproducible.

ETR (the server's xact_commit) reads low on short pgbench windows: PostgreSQL backends
publish their counts about once a second and the last second's only when they exit, just
after the measured run ends; over a 6 s window that can be 10-15%, over minutes it vanishes.
"""

from __future__ import annotations

import gzip
import math
import re
import shutil
import subprocess
import time
from pathlib import Path

from perflab.drive.external import (
    MEASURED,
    WARM_UP,
    ExternalResult,
    TableBuilder,
    gzip_evidence,
    measured_window,
    script_mix,
    tool_seed,
)
from perflab.drive.external.process import run_tool, tool_outcome
from perflab.drive.plan import RunPlan
from perflab.errors import SutFailure
from perflab.workload.model import Constant, RandomInt, Workload

_SUMMARY = {
    "tps": re.compile(r"^tps = ([\d.]+)", re.M),
    "transactions": re.compile(r"^number of transactions actually processed: (\d+)", re.M),
    "failed": re.compile(r"^number of failed transactions: (\d+)", re.M),
    "latency_avg_ms": re.compile(r"^latency average = ([\d.]+) ms", re.M),
    "initial_connection_ms": re.compile(r"^initial connection time = ([\d.]+) ms", re.M),
}


def pgbench_program(dsn_server_bin: Path | None = None) -> str:
    # One pgbench for every configuration (Debian's on PATH), so comparing servers does not
    # also compare clients; else the server's own.
    found = shutil.which("pgbench")
    if found:
        return found
    if dsn_server_bin is not None and (dsn_server_bin / "pgbench").exists():
        return str(dsn_server_bin / "pgbench")
    raise SutFailure("pgbench is not installed (apt-get install postgresql-client-15)")


def script_text(workload: Workload, script_index: int) -> str:
    script = workload.scripts[script_index]
    tx = workload.transaction(script.steps[0].transaction)
    lines = []
    for name, spec in tx.params.items():
        if isinstance(spec, RandomInt):
            lines.append(f"\\set {name} random({spec.random_int[0]}, {spec.random_int[1]})")
        elif isinstance(spec, Constant):
            lines.append(f"\\set {name} {spec.value}")
    statements = [s.strip().rstrip(";") for s in tx.sql_body()]
    if len(statements) > 1:
        lines.append("BEGIN;")
    lines += [f"{s};" for s in statements]
    if len(statements) > 1:
        lines.append("END;")
    return "\n".join(lines) + "\n"


def integer_weights(weights: list[float]) -> list[int]:
    if all(float(w).is_integer() for w in weights):
        return [int(w) for w in weights]
    return [max(1, round(1000 * w / max(weights))) for w in weights]


def run_pgbench(plan: RunPlan, run_dir: Path, t0: float, t0_epoch: float, dsn: str, failure) -> ExternalResult:
    """Run pgbench as the plan says (clients, rate, seed, phases, driver CPUs); import its log."""
    workload, phases, users, rate, seed = plan.workload, plan.phases, plan.users, plan.rate, plan.seed
    n_workers, driver_cpus = plan.workers, plan.placement.driver_cpus
    from urllib.parse import urlsplit

    indices, _ = script_mix(workload)
    weights = integer_weights([workload.scripts[i].weight for i in indices])
    args = []
    for i, weight in zip(indices, weights):
        path = run_dir / f"pgbench-script-{i}.sql"
        path.write_text(script_text(workload, i))
        args += ["-f", f"{path}@{weight}"]
    clients = users if users is not None else n_workers
    driver = workload.driver
    parts = urlsplit(dsn)
    program = pgbench_program()
    common = [program, "-n", "-c", str(clients), "-j", str(driver.threads or 1), "-M", driver.protocol, *args,
              "-h", parts.hostname or "127.0.0.1", "-p", str(parts.port or 5432), "-U", parts.username or "postgres",
              *(["-R", f"{rate:g}"] if rate is not None else [])]
    database = (parts.path or "/").lstrip("/")

    def command(phase: str, seconds: float, *logging: str) -> list[str]:
        # the workload's options after the seed: a --random-seed among them wins (pgbench takes the last)
        return [*common, f"--random-seed={tool_seed(seed, phase)}", *driver.options, "-T", str(math.ceil(seconds)),
                *logging, database]

    summary: dict = {"version": _version(program)}
    if phases.window_start > 0:
        # Stagger + stabilization: an unlogged pgbench run that warms the server up.
        warm = run_tool(command(WARM_UP, phases.window_start), run_dir, "pgbench-warmup", driver_cpus, failure)
        summary["warmup"] = {"returncode": warm.returncode, **_summary(warm.stdout)}
        bad = tool_outcome(warm, failure, "pgbench warm-up")
        if bad is not None:
            return ExternalResult(None, *bad, warm.driver, summary)
        # The warm-up's backends publish their last counts (up to a second's worth each) when
        # they exit; let the monitor sample them before the measured run, or they would land in
        # the window's first interval and inflate ETR.
        time.sleep(1.5 * workload.monitor_interval + 0.2)
    argv = command(MEASURED, phases.measurement, "-l", "--log-prefix", str(run_dir / "pgbench_log"))
    tool = run_tool(argv, run_dir, "pgbench", driver_cpus, failure)
    summary.update({"argv": argv, "returncode": tool.returncode, **_summary(tool.stdout)})
    logs = sorted(run_dir.glob("pgbench_log.*"))
    table = import_logs(logs, workload, indices, t0, t0_epoch)
    for log in logs:
        gzip_evidence(log)  # kept as the evidence behind every row, compressed
    window = measured_window(table)
    bad = tool_outcome(tool, failure, "pgbench")
    if bad is not None:
        return ExternalResult(table, *bad, tool.driver, summary, window)
    return ExternalResult(table, "complete", None, tool.driver, summary, window)


def _summary(stdout: str) -> dict:
    return {k: _number(rx, stdout) for k, rx in _SUMMARY.items()}


def import_logs(paths: list[Path], workload: Workload, indices: list[int], t0: float, t0_epoch: float):
    """pgbench per-transaction logs -> transactions.parquet rows on perflab's clock."""
    tx_names = [t.name for t in workload.transactions]
    classes = sorted({t.tx_class for t in workload.transactions})
    tx_of_script = [tx_names.index(workload.scripts[i].steps[0].transaction) for i in indices]
    class_of_tx = [classes.index(t.tx_class) for t in workload.transactions]
    builder = TableBuilder([s.name for s in workload.scripts], tx_names, classes)
    # seconds since t0 = epoch - t0_epoch (both clocks tick together over a run)
    for path in paths:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt") as log:
            for line in log:
                fields = line.split()
                if len(fields) < 6:
                    continue
                client, latency, script_no = int(fields[0]), fields[2], int(fields[3])
                end = int(fields[4]) - t0_epoch + int(fields[5]) / 1e6
                lag = int(fields[6]) / 1e6 if len(fields) > 6 and fields[6].isdigit() else 0.0
                script = indices[script_no] if script_no < len(indices) else indices[0]
                tx = tx_of_script[min(script_no, len(tx_of_script) - 1)]
                if latency.isdigit():
                    intended = end - int(latency) / 1e6
                    builder.add(client, script, tx, class_of_tx[tx], intended, intended + lag, float("nan"), end,
                                True, None)
                else:  # failed or skipped: pgbench logs no latency
                    builder.add(client, script, tx, class_of_tx[tx], end, end, float("nan"), end, False,
                                f"pgbench: {latency}")
    return builder.table()


def _number(rx: re.Pattern, text: str) -> float | None:
    match = rx.search(text)
    return float(match.group(1)) if match else None


def _version(program: str) -> str:
    try:
        return subprocess.run([program, "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
    except OSError:
        return "unknown"

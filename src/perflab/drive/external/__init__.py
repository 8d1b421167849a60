"""External load generators: pgbench, k6, wrk (docs/real-systems.md says what each can give).

When one driver process cannot produce the load (or a study wants the industry's own tool),
perflab runs an external driver instead of its own and imports the tool's log into the same
run format: transactions.parquet rows (intended, actual start, first response and end times
where the tool gives them), the window on perflab's clock, the tool's own summary in run.json.
Monitors, metrics, statistics and reports then work the same whichever driver ran.

Each tool has one module: a runner (command line from the workload) and an importer (its log
to rows). All share `ExternalResult` and `TableBuilder`.

Seeds: the run's seed (`perflab run --seed`, else the workload's) reaches every tool, so two
runs with the same seed issue the same script choices and parameters, as the native driver
does. A tool runs twice per run (the unlogged warm-up, then the measured run), and each run
gets a seed of its own, `tool_seed(seed, phase)`: with one seed for both, the measured run
would replay the warm-up's parameters -- the very rows the warm-up just brought into the
server's cache. What each tool does with its seed: pgbench.py, k6_script.py, wrk.py.
"""

from __future__ import annotations

import gzip
import hashlib
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from perflab import arrow_arrays
from perflab.drive.load.recorder import SCHEMA
from perflab.records.run import RunStatus
from perflab.workload.thinktime import ConstantThink, ThinkTime

NAN = float("nan")
WARM_UP, MEASURED = "warm-up", "measured"  # the two runs of a tool in one perflab run


@dataclass
class ExternalResult:
    table: pa.Table | None
    status: RunStatus  # complete | failed | interrupted
    reason: str | None
    driver: dict[str, Any] = field(default_factory=dict)  # run.json "driver": the tool's CPU
    summary: dict[str, Any] = field(default_factory=dict)  # run.json "external": the tool's own figures
    window: tuple[float, float] | None = None  # the measured part, when the tool decides it


class TableBuilder:
    """transactions.parquet rows from an imported log (times already in seconds since t0)."""

    def __init__(self, scripts: list[str], transactions: list[str], classes: list[str]):
        self.scripts, self.transactions, self.classes = scripts, transactions, classes
        self.columns: dict[str, list] = {name: [] for name in SCHEMA.names}

    def add(self, user: int, script: int, tx: int, klass: int, intended: float, actual: float, first: float,
            end: float, ok: bool, error: str | None) -> None:
        c = self.columns
        c["user"].append(user)
        c["script"].append(script)
        c["transaction"].append(tx)
        c["class"].append(klass)
        c["intended_start"].append(intended)
        c["actual_start"].append(actual)
        c["first_response"].append(first)
        c["end"].append(end)
        c["ok"].append(ok)
        c["error"].append(error)

    def __len__(self) -> int:
        return len(self.columns["end"])

    def table(self) -> pa.Table:
        n = len(self)
        arrays: list[pa.Array] = []
        names = {"script": self.scripts, "transaction": self.transactions, "class": self.classes}
        for f in SCHEMA:
            values = self.columns[f.name]
            if f.name in names:
                arrays.append(arrow_arrays.dictionary(values, names[f.name]))
            elif f.name == "think":
                arrays.append(arrow_arrays.numbers([NAN] * n, pa.float64()))
            elif f.name in ("cpu", "cpu_user", "cpu_sys", "instructions", "harness_cpu"):
                arrays.append(arrow_arrays.numbers([NAN] * n, pa.float64()))
            elif f.name == "worker":
                arrays.append(arrow_arrays.numbers([-1] * n, pa.int16()))
            else:
                arrays.append(arrow_arrays.of_type(values, f.type))
        return pa.Table.from_arrays(arrays, schema=SCHEMA)


def run_external(plan, run_dir, t0: float, t0_epoch: float, dsn: str | None, failure) -> ExternalResult:
    """Run the workload's external driver with the whole plan (load, seed, phases, driver CPUs)."""
    kind = plan.workload.driver.kind
    if kind == "pgbench":
        from perflab.drive.external.pgbench import run_pgbench

        assert dsn is not None  # pgbench drives a postgres target, whose DSN server_run has made
        return run_pgbench(plan, run_dir, t0, t0_epoch, dsn, failure)
    if kind == "k6":
        from perflab.drive.external.k6 import run_k6

        return run_k6(plan, run_dir, t0_epoch, failure)
    if kind == "wrk":
        from perflab.drive.external.wrk import run_wrk

        return run_wrk(plan, run_dir, t0, failure)
    raise ValueError(f"unknown external driver {kind!r}")


def tool_seed(seed: int, phase: str) -> int:
    """The seed of one run of a tool (phase: WARM_UP or MEASURED), derived from the run's seed.
    32 bits, because perflab's seed is any integer while pgbench takes an unsigned 64-bit one
    and the k6 and wrk scripts hold numbers as doubles (exact up to 2^53); a hash, so that
    nearby seeds and the two phases give unrelated sequences."""
    digest = hashlib.blake2b(f"{seed}:{phase}".encode(), digest_size=4).digest()
    return int.from_bytes(digest, "big")


def constant_think(think: ThinkTime | None, default: float) -> float:
    """A think time's seconds for a tool that sleeps a constant time (k6, wrk): the workload's
    checks let no other kind through for them (workload/checks.py, _check_http_tool)."""
    if think is None:
        return default
    if not isinstance(think, ConstantThink):
        raise ValueError(f"a {think.dist} think time is not constant")
    return think.value


def script_mix(workload) -> tuple[list[int], list[float]]:
    """The scripts a tool picks from (not the logon script, not weight 0) and their cumulative
    weights: what the generated k6 and wrk scripts draw against."""
    mix = [i for i, s in enumerate(workload.scripts) if s.name != workload.init_script and s.weight > 0]
    cumulative, total = [], 0.0
    for i in mix:
        total += workload.scripts[i].weight
        cumulative.append(total)
    return mix, cumulative


def measured_window(table):
    """The tool's measured run is the window: its first transaction's start to its last end, so
    ETR (T) is the tool's own count over the tool's own duration."""
    import pyarrow.compute as pc

    if table is None or table.num_rows == 0:
        return None
    start = pc.min(table.column("intended_start")).as_py()
    end = pc.max(table.column("end")).as_py()
    return (start, end + 1e-6)  # the window is half-open: keep the last transaction in it


def gzip_evidence(path: Path) -> None:
    """Compress a tool's log in place: kept as the evidence behind every imported row."""
    with open(path, "rb") as src, gzip.open(str(path) + ".gz", "wb", compresslevel=1) as dst:
        shutil.copyfileobj(src, dst)
    path.unlink()


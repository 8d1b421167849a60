"""A PostgreSQL server counted from outside: its backends' instructions per transaction.

The counted pass starts a fresh server of the run's kind (its loaded template, its settings),
stops it once loaded, and starts it again with the postmaster under callgrind. PostgreSQL forks
its backends and background processes without exec, so each runs under valgrind too and writes
a file of its own (`cg.PID`). Two options do the attribution:

* `--zero-before=InitPostmasterChild`: every child starts counting at zero where it becomes a
  child (PostgreSQL 13 and later call it in every forked process), so nothing the postmaster did
  before the fork is in a child's count.
* `--dump-before=pg_backend_pid`: a dump (a `part` of the backend's file) each time the backend
  enters pg_backend_pid(), which the driver calls as a marker between transactions (no
  transaction of a workload is expected to call it; one that does splits its own count, and the
  pass sees the wrong number of parts and fails, saying so).

The driver -- perflab's own asyncpg executor, one connection, one transaction at a time -- runs
the marker once (its answer is the backend's pid, so the backend's file is known), the warm-up
transactions, the marker, `NULLS` markers in a row, then each counted transaction followed by a
marker. A part between two markers holds the end of one marker's statement and the start of the
next; a null part holds exactly that, so a transaction's part less the nulls' median is the
transaction's own instructions in the backend: parsing, planning, execution, locking, WAL
insertion, the commit (and its WAL flush when the backend does it), the protocol's messages.

What the backend does not do is not in INSTR/CMD (I): the walwriter's, checkpointer's and
background writer's work, autovacuum, the postmaster. Their instructions over the pass (from
their start to the shutdown, which includes the shutdown checkpoint) are reported apart, in the
record's `other_processes`, by the process type pg_stat_activity gave for their pid.
"""

from __future__ import annotations

import asyncio
import signal
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perflab.drive.pathlength.functions import median_part, profile_of, read_parts, write_profile
from perflab.drive.pathlength.valgrind import Part, callgrind_parts
from perflab.tools import find_tool

#: the function whose entry dumps a part: the driver's marker between transactions
MARKER_FUNCTION = "pg_backend_pid"
MARKER_SQL = "SELECT pg_backend_pid()"
#: where a forked child starts counting
CHILD_START_FUNCTION = "InitPostmasterChild"
#: markers run in a row after the warm-up: their parts measure the marker's own instructions
NULLS = 9
_TRIGGER = f"--dump-before={MARKER_FUNCTION}"


def server_prefix(out_dir: Path) -> list[str]:
    """valgrind before the postmaster's command line: every process of the server counted, each
    into `out_dir/cg.PID`."""
    program = find_tool("valgrind") or "valgrind"
    return [program, "--tool=callgrind", "--combine-dumps=yes", "--dump-line=no", "--dump-instr=no",
            "--compress-strings=no", f"--dump-before={MARKER_FUNCTION}", f"--zero-before={CHILD_START_FUNCTION}",
            f"--callgrind-out-file={out_dir}/cg.%p"]


@dataclass(frozen=True)
class BackendCounts:
    overhead: float                 # the median null part (the marker's own instructions), subtracted
    per_transaction: list[float]    # in the counted order


def backend_counts(parts: list[Part], transactions: int, nulls: int = NULLS) -> BackendCounts:
    """Each counted transaction's instructions from the backend's parts. The marker's dumps, in
    order: the first marker (after the connection's start-up), the one after the warm-up, the
    nulls, one after each counted transaction; the last part (the backend's end) is not used.
    Raises ValueError when the dumps are not that many (a transaction that called the marker's
    function itself, a backend that died)."""
    dumps = [p.ir for p in parts if p.trigger == _TRIGGER]
    expected = 2 + nulls + transactions
    if len(dumps) != expected:
        raise ValueError(f"the backend's file has {len(dumps)} dumps at {MARKER_FUNCTION}(), not {expected} "
                         f"(2 + {nulls} nulls + {transactions} transactions): did a transaction call "
                         f"{MARKER_FUNCTION}() itself?")
    empty = dumps[2:2 + nulls]
    overhead = float(statistics.median(empty))
    return BackendCounts(overhead, [max(0.0, float(ir) - overhead) for ir in dumps[2 + nulls:]])


def write_backend_functions(backend_file: Path, names: list[str | None], run_dir: Path, nulls: int = NULLS) -> int:
    """The per-function tables of the counted transactions from the backend's dumps, in the
    order `backend_counts` reads them (drive/pathlength/functions.py); returns the functions written."""
    dumps = [p for p in read_parts(backend_file) if p.trigger == _TRIGGER]
    if len(dumps) != 2 + nulls + len(names):
        raise ValueError(f"the backend's file has {len(dumps)} dumps at {MARKER_FUNCTION}(), not {2 + nulls + len(names)}")
    profile = profile_of([(n, name, part) for n, (name, part) in enumerate(zip(names, dumps[2 + nulls:]))],
                         median_part(dumps[2:2 + nulls]))
    return write_profile(profile, run_dir)


def process_totals(files: dict[int, Path], kinds: dict[int, str], backend: int) -> dict[str, float]:
    """Instructions of the server's other processes over the pass, summed by kind (pg_stat_activity's
    backend_type; 'postmaster' for the parent, 'other' for what it did not list, e.g. a process
    that started later); the counted backend left out."""
    totals: dict[str, float] = {}
    for pid, path in files.items():
        if pid == backend:
            continue
        kind = kinds.get(pid, "other")
        totals[kind] = totals.get(kind, 0.0) + float(sum(p.ir for p in callgrind_parts(path)))
    return dict(sorted(totals.items()))


@dataclass
class DriverResult:
    backend_pid: int
    kinds: dict[int, str]
    results: list[list[Any]]        # [ok, error, None] per counted transaction
    warmup_errors: int


async def drive(workload: Any, dsn: str, drawn: list[tuple[int, dict | None]], warmup: int,
                postmaster_pid: int, nulls: int = NULLS) -> DriverResult:
    """The counted pass's transactions on one connection, with the markers between them."""
    from perflab.drive.adapters.postgres import PostgresExecutor

    executor = PostgresExecutor(workload, dsn, None, 1)
    executor.per_user = True
    await executor.open(1)
    conn: Any = executor.connections[0]
    try:
        # (pg_backend_pid() is not in this query: each of its calls would be a dump)
        rows = await conn.fetch("SELECT pid, backend_type FROM pg_stat_activity")
        kinds = {int(r["pid"]): str(r["backend_type"]) for r in rows}
        kinds[postmaster_pid] = "postmaster"
        backend = int(await conn.fetchval(MARKER_SQL))
        warmup_errors = 0
        for tx_index, params in drawn[:warmup]:
            reply = await executor.execute(tx_index, params, 0)
            warmup_errors += not reply.ok
        await conn.fetchval(MARKER_SQL)
        for _ in range(nulls):
            await conn.fetchval(MARKER_SQL)
        results: list[list[Any]] = []
        for tx_index, params in drawn[warmup:]:
            reply = await executor.execute(tx_index, params, 0)
            lost = executor.connections.get(0) is not conn  # (a variable: mypy would narrow conn)
            if lost:
                raise RuntimeError(f"the counted connection was lost: {reply.error}")
            await conn.fetchval(MARKER_SQL)
            results.append([reply.ok, reply.error, None])
        return DriverResult(backend, kinds, results, warmup_errors)
    finally:
        await executor.close()


def run_counted_server(server: Any, out_dir: Path, drawn: list[tuple[int, dict | None]], warmup: int,
                       workload: Any, timeout: float) -> tuple[DriverResult, dict[int, Path], float]:
    """Restart the loaded `server` under callgrind, drive the pass, stop it (its processes write
    their files as they exit) -> (the driver's result, the files by pid, seconds under valgrind)."""
    began = time.monotonic()
    server.restart_under(server_prefix(out_dir))
    standby = getattr(server, "standby", None)
    try:
        if standby is not None:
            # Counted only once the standby streams from the restarted server again, whether
            # commits wait for it or not: an asynchronous standby's walsender works beside the
            # backend in the timed run too, and would otherwise come in the pass's middle or not at all.
            standby.wait_streaming()
        result = asyncio.run(asyncio.wait_for(
            drive(workload, server.dsn, drawn, warmup, server.pid), timeout))
    finally:
        # A standby first, as PostgresServer.stop does: the primary's walsender would otherwise
        # wait at shutdown for a reply. Its files are not needed after the pass.
        early = standby.stop() if standby is not None else None
        note = server.process.stop(signal.SIGINT, timeout=120.0)
        note = "; ".join(n for n in (early, note) if n) or None
    if note:
        raise RuntimeError(f"the server under valgrind did not stop cleanly: {note}")
    files = {int(p.name.split(".", 1)[1]): p for p in out_dir.glob("cg.*") if p.name.split(".", 1)[1].isdigit()}
    return result, files, time.monotonic() - began

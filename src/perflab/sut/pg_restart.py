"""Restart time: a PostgreSQL server crashed when the load ends, its recovery timed against the WAL
it has to replay, then a clean restart timed -- the seeds' emergency and normal restart (IMS V8,
002_e28377aadc48f3c4.txt, "Parallel Database Open": normal restart up to 56% and emergency
restart up to 39% faster than V7).

Why after the load: recovery replays the WAL written since the last checkpoint, so the load is
what makes the volume to replay (perflab checkpoints once the database is loaded, just before the
window; a workload that wants all of its WAL replayed sets checkpoint_timeout and max_wal_size
beyond what the load writes). The steps:

1. the WAL made durable up to now (a transaction that commits with synchronous_commit on flushes
   everything before it), then the checkpoint's redo point and the insert position read: WAL
   SINCE CKPT is the bytes between them -- measured before the crash, on the server's own word;
2. the crash: SIGKILL to the postmaster's whole session at once (every backend, the checkpointer,
   the WAL writer), as a machine's processes die; the operating system survives, so what the
   server wrote but did not sync is still in the page cache, as after a process crash;
3. the server started again and timed from its start to its first answered query (RESTART TIME
   (T)); its log says where redo started and ended, its elapsed time and CPU (the startup process's
   rusage), and how long the end-of-recovery checkpoint took, which it waits for before it
   accepts connections;
4. a fast shutdown (a checkpoint; little is left to write after the end-of-recovery one) and a
   start again, timed the same way: START-UP TIME (T), a start with nothing to recover.

The redo range in the log is checked against the positions read before the crash
(tests/net/test_restart_time.py): redo starts at the checkpoint's redo point exactly, and ends at
the start of the last record at or before the crash position.

The whole restart is accounted for, so that its parts sum to RESTART TIME (T) (`restart_parts`):
the server's log stamps each step (its first line, redo starts, redo done, the end-of-recovery
checkpoint complete, ready to accept connections) to the millisecond, and what perflab's clock
saw beyond the log's span -- starting the process before its first line, and the first answered
query after it is ready -- is the launch part. The log's times are differences of its own stamps,
so no clock is compared with another.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perflab.errors import SutFailure
from perflab.extras import require
from perflab.records.run import RestartRecord

_LSN = r"([0-9A-F]+/[0-9A-F]+)"
REDO_STARTS = re.compile(rf"redo starts at {_LSN}")
REDO_DONE = re.compile(rf"redo done at {_LSN} system usage: CPU: user: ([\d.]+) s, system: ([\d.]+) s, "
                       r"elapsed: ([\d.]+) s")
REDO_NOT_REQUIRED = re.compile(r"redo is not required")
RECOVERY_CHECKPOINT = re.compile(r"checkpoint starting: end-of-recovery")
CHECKPOINT_COMPLETE = re.compile(r"checkpoint complete: .*total=([\d.]+) s")
READY = re.compile(r"database system is ready to accept connections")
#: the stamp log_line_prefix's %m puts first on every line (PostgreSQL's default prefix, '%m [%p] ')
STAMP = re.compile(r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)?)", re.M)


def lsn_bytes(lsn: str) -> int:
    """'1/A0000028' -> its byte position (PostgreSQL's %X/%X: high and low 32 bits)."""
    high, low = lsn.split("/")
    return (int(high, 16) << 32) + int(low, 16)


@dataclass(frozen=True)
class RecoveryLog:
    """What the server's log says of one recovery."""

    redo_start: str | None = None
    redo_end: str | None = None
    redo_s: float | None = None
    redo_cpu_s: float | None = None
    checkpoint_s: float | None = None
    not_required: bool = False
    #: seconds from the start's first log line to each step, by the log's own stamps (None: no line)
    at_redo_start: float | None = None
    at_redo_done: float | None = None
    at_checkpoint_done: float | None = None
    at_ready: float | None = None

    @property
    def redo_bytes(self) -> int | None:
        if self.not_required:
            return 0
        if self.redo_start is None or self.redo_end is None:
            return None
        return lsn_bytes(self.redo_end) - lsn_bytes(self.redo_start)


def _stamp(text: str, at: int) -> dt.datetime | None:
    """The stamp of the line holding offset *at*."""
    line_start = text.rfind("\n", 0, at) + 1
    match = STAMP.match(text, line_start)
    return dt.datetime.fromisoformat(match.group(1)) if match else None


def parse_recovery_log(text: str) -> RecoveryLog:
    """The redo and end-of-recovery checkpoint lines of a log written by one start of the server."""
    start = REDO_STARTS.search(text)
    done = REDO_DONE.search(text)
    checkpoint_s = None
    begun = RECOVERY_CHECKPOINT.search(text)
    complete = CHECKPOINT_COMPLETE.search(text, begun.end()) if begun is not None else None
    if complete is not None:
        checkpoint_s = float(complete.group(1))
    last = complete or begun or done or start       # the ready line follows the recovery's lines
    ready = READY.search(text, last.end() if last is not None else 0)
    first = STAMP.search(text)
    origin = dt.datetime.fromisoformat(first.group(1)) if first else None

    def since(match: re.Match[str] | None) -> float | None:
        stamp = _stamp(text, match.start()) if match is not None else None
        return (stamp - origin).total_seconds() if stamp is not None and origin is not None else None

    return RecoveryLog(
        at_redo_start=since(start), at_redo_done=since(done), at_checkpoint_done=since(complete),
        at_ready=since(ready),
        redo_start=start.group(1) if start else None,
        redo_end=done.group(1) if done else None,
        redo_s=float(done.group(4)) if done else (0.0 if REDO_NOT_REQUIRED.search(text) else None),
        redo_cpu_s=float(done.group(2)) + float(done.group(3)) if done else None,
        checkpoint_s=checkpoint_s,
        not_required=done is None and REDO_NOT_REQUIRED.search(text) is not None)


@dataclass(frozen=True)
class RestartParts:
    """RESTART TIME (T) in parts that sum to it (seconds)."""

    launch: float      # perflab's clock beyond the log's span: the process before its first line, the first query after ready
    init: float        # first line to redo starts: the control file, the checkpoint record, the WAL opened
    redo: float        # redo starts to redo done
    checkpoint: float  # redo done to the end-of-recovery checkpoint complete
    ready: float       # checkpoint complete to ready to accept connections


def restart_parts(log: RecoveryLog, restart_s: float | None) -> RestartParts | None:
    """The restart's parts, or None when the log does not say when the server became ready. A step
    the log does not print (no redo needed, no checkpoint line) is a part of 0 s: the parts still
    sum to the whole."""
    if restart_s is None or log.at_ready is None:
        return None
    redo_start = log.at_redo_start if log.at_redo_start is not None else log.at_ready
    redo_done = log.at_redo_done if log.at_redo_done is not None else redo_start
    checkpoint_done = log.at_checkpoint_done if log.at_checkpoint_done is not None else redo_done
    marks = [0.0, redo_start, redo_done, checkpoint_done, log.at_ready]
    if any(b < a for a, b in zip(marks, marks[1:])):
        return None      # lines out of order: not a log of one start
    return RestartParts(launch=restart_s - log.at_ready, init=redo_start, redo=redo_done - redo_start,
                        checkpoint=checkpoint_done - redo_done, ready=log.at_ready - checkpoint_done)


FLUSH_TRIES = 5  # a busy background process can outrun one commit, seldom five in a row


async def _positions(dsn: str) -> tuple[str, str]:
    """(the last checkpoint's redo point, the insert position), every byte up to it flushed."""
    asyncpg = require("asyncpg", extra="net", feature="a postgres target")
    conn = await asyncpg.connect(dsn, timeout=30)
    try:
        # Another process (autovacuum, the background writer) may insert WAL after our commit and
        # before the positions are read; not yet flushed, the crash would lose it and redo would
        # end short of the recorded position. Commit again until nothing was inserted past the
        # flush position: then the insert position is durable, as the record claims.
        for _ in range(FLUSH_TRIES):
            async with conn.transaction():
                await conn.execute("SET LOCAL synchronous_commit = on")
                await conn.fetchval("SELECT txid_current()")  # an xid: its commit record is written and flushed
            insert, flushed = await conn.fetchrow(
                "SELECT pg_current_wal_insert_lsn()::text, pg_current_wal_flush_lsn()::text")
            if lsn_bytes(insert) <= lsn_bytes(flushed):
                break
        redo = await conn.fetchval("SELECT redo_lsn::text FROM pg_control_checkpoint()")
        return redo, max(insert, flushed, key=lsn_bytes)
    finally:
        await conn.close()


async def first_answer(host: str, port: int, user: str, deadline_s: float, alive: Any) -> None:
    """Return once the server answers a query; SutFailure when it exits or the deadline passes."""
    asyncpg = require("asyncpg", extra="net", feature="a postgres target")
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            conn = await asyncpg.connect(host=host, port=port, user=user, database="postgres", timeout=5)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            if not alive():
                raise SutFailure(f"PostgreSQL exited while starting again: {exc}") from None
            if time.monotonic() > deadline:
                raise SutFailure(f"PostgreSQL did not answer within {deadline_s:g} s of starting again: {exc}") \
                    from None
            await asyncio.sleep(0.005)
            continue
        try:
            await conn.fetchval("SELECT 1")
            return
        finally:
            await conn.close()


def measure_restart(server: Any) -> RestartRecord:
    """Crash `server` (a running PostgresServer), time its recovery, then a clean restart."""
    redo_lsn, crash_lsn = asyncio.run(_positions(server.dsn))
    log: Path = server.process.log_path
    offset = log.stat().st_size
    server.crash()
    restart_s = server.start_again()
    recovery = parse_recovery_log(log.read_bytes()[offset:].decode(errors="replace"))
    server.shut_down()
    startup_s = server.start_again()
    parts = restart_parts(recovery, restart_s)
    return RestartRecord(
        restart_launch_s=parts.launch if parts else None, restart_init_s=parts.init if parts else None,
        restart_redo_s=parts.redo if parts else None, restart_checkpoint_s=parts.checkpoint if parts else None,
        restart_ready_s=parts.ready if parts else None,
        wal_since_checkpoint=lsn_bytes(crash_lsn) - lsn_bytes(redo_lsn), checkpoint_redo_lsn=redo_lsn,
        crash_lsn=crash_lsn, restart_s=restart_s, redo_start_lsn=recovery.redo_start,
        redo_end_lsn=recovery.redo_end, redo_bytes=recovery.redo_bytes, redo_s=recovery.redo_s,
        redo_cpu_s=recovery.redo_cpu_s, recovery_checkpoint_s=recovery.checkpoint_s, startup_s=startup_s)

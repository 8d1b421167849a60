"""PostgreSQL users run by perflab's compiled loop (drive/load/loop/proto_pg.c over pg_wire.c),
where the workload allows.

Why: on debit-credit the Python path (asyncpg on uvloop) costs about 1.45x pgbench's CPU per
transaction on the same SQL, at times above the 1.5x goal (issue 28): each of a transaction's
seven round trips wakes the event loop, asyncpg's protocol and a coroutine. In the compiled loop
a round trip is a send, an epoll_wait and a recv. What it keeps of the Python path
(adapters/postgres.py): one connection per user, logged on before the run (`open()`); each
statement prepared once per connection; a transaction of several statements inside BEGIN ..
COMMIT, each statement its own round trip; ROLLBACK after an error, the connection kept;
COMMIT TIME (T) from the COMMIT's round trip; the transaction's deadline, past which the
connection is dropped and the transaction is hung; the parameters drawn from the same per-user
stream in the same order (params.py), so the same seed sends the same values; the server's
error worded as asyncpg words it (its exception class for the SQLSTATE, its text).

What differs, and why it does not matter to what is measured: parameters travel as text for the
server to parse by the type it inferred (asyncpg encodes them in binary after asking the types:
one Describe per statement and connection); a statement's first Parse rides with its first
Bind (asyncpg: a round trip of its own, once per connection); results are asked for in binary,
as asyncpg asks. A value the server cannot take as its parameter's type fails the transaction
either way, with PostgreSQL's words here and asyncpg's there.

Only a server perflab started is logged on to (initdb's trust authentication, no TLS); an
existing server (`target.dsn`) keeps asyncpg, which speaks its authentication.
"""

from __future__ import annotations

import asyncio
import os
import struct
import urllib.parse
from typing import Any

from perflab.drive.load.deadline import deadline_text
from perflab.drive.load.engine import Phases, Share
from perflab.drive.load.native_http import (
    E_AUTH,
    E_CLOSED,
    E_CONNECT_OS,
    E_CONNECT_TIMEOUT,
    E_IO_OS,
    E_KEEPALIVE,
    E_MALFORMED,
    E_RESPONSE_TIMEOUT,
    E_SERVER,
    E_SERVER_CLOSED,
    MALFORMED,
    NativeEngine,
    resolve,
)
from perflab.drive.load.native_params import values_of
from perflab.drive.load.recorder import Recorder
from perflab.errors import SutFailure
from perflab.workload.model import PostgresTarget, Workload

#: How long the users may take to log on before the run (asyncpg.connect's default timeout).
OPEN_TIMEOUT_S = 60.0
#: asyncpg's words for a connection lost in the middle of a transaction.
CLOSED_TEXT = "ConnectionDoesNotExistError: connection was closed in the middle of operation"


def _sendable(value: Any) -> bool:
    """A value the loop sends as the text the server parses: asyncpg encodes a bool or a None by
    the parameter's type, which the loop does not ask, so it sends no guess."""
    return not isinstance(value, bool) and value is not None and isinstance(value, int | float | str) and \
        "\0" not in str(value)


def pg_reason(workload: Workload, executor: Any) -> str | None:
    """Why the compiled loop cannot run this PostgreSQL workload's users (None: it can)."""
    target = workload.target
    assert isinstance(target, PostgresTarget)  # a PostgresExecutor's workload
    if not executor.per_user:
        return "connections: pool (the compiled loop keeps a connection per user)"
    if not executor.prepared:
        return "prepared: false"
    if target.server is None:
        return "an existing server (target.dsn): its authentication is asyncpg's"
    if target.backend_cpu:
        return "backend_cpu: each transaction's backend CPU is read on the Python path"
    if str(target.server.settings.get("ssl", "off")).lower() in ("on", "true", "1", "yes"):
        return "ssl: on (the compiled loop speaks no TLS)"
    for tx, plan in zip(workload.transactions, executor.plans):
        for sql, names in plan:
            if "\0" in sql:
                return f"transaction {tx.name}: a NUL byte in its SQL"
            missing = [n for n in names if n not in tx.params]
            if missing:
                return f"transaction {tx.name}: a statement names parameters it does not give ({', '.join(missing)})"
        for name, spec in tx.params.items():
            values = values_of(spec)
            if values is not None and not all(_sendable(v) for v in values):
                return f"transaction {tx.name}: parameter {name} (the compiled loop sends integers, floats and " \
                       "strings without NUL)"
    return None


def startup_message(user: str, database: str) -> bytes:
    """The protocol 3.0 StartupMessage (asyncpg's application_name and client_encoding)."""
    pairs = [("user", user), ("database", database), ("application_name", "perflab"), ("client_encoding", "UTF8")]
    body = struct.pack("!i", 196608) + b"".join(k.encode() + b"\0" + v.encode() + b"\0" for k, v in pairs) + b"\0"
    return struct.pack("!i", len(body) + 4) + body


def _fields(payload: bytes) -> dict[str, str]:
    """An ErrorResponse's fields by their one-letter codes (C: SQLSTATE, M: message, D: detail...)."""
    return {chr(part[0]): part[1:].decode("utf-8", "replace") for part in payload.split(b"\0") if part}


def server_error_text(fields: bytes, closed: bool = False) -> str:
    """An ErrorResponse's fields worded as the Python path words asyncpg's exception; `closed`:
    the server closed the connection after it (a FATAL error in the middle of a transaction),
    which asyncpg reports as the connection lost, with the server's message."""
    parsed = _fields(fields)
    if closed:
        return f"{CLOSED_TEXT}: {parsed.get('M', '')}"[:500]
    try:
        from asyncpg.exceptions import PostgresError  # type: ignore[import-untyped]

        exc = PostgresError.new(parsed)  # asyncpg's class for the SQLSTATE, and its text
        return f"{type(exc).__name__}: {exc}"[:500]
    except ImportError:  # asyncpg is the 'net' extra; a run without it never gets here
        return f"PostgresError: {parsed.get('M', '')}"[:500]


class NativePgEngine(NativeEngine):
    """A PostgresExecutor's transactions in the compiled loop (see the module's text)."""

    reason = staticmethod(pg_reason)
    #: the users log on before the run (open()): arrivals would log on inside their timed span
    open_loop = False

    def __init__(self, workload: Workload, executor: Any, recorder: Recorder, phases: Phases, t0: float,
                 users: int | None = None, rate: float | None = None, seed: int | None = None,
                 share: Share = Share()):
        from perflab.drive.adapters.postgres import PostgresExecutor

        assert isinstance(executor, PostgresExecutor)  # choose_core admits nothing else
        self.pg: PostgresExecutor = executor
        self._dsn = urllib.parse.urlsplit(executor.dsn)
        self._commits = (0, 0)
        super().__init__(workload, executor, recorder, phases, t0, users=users, rate=rate, seed=seed, share=share)

    def _resolve(self) -> list[tuple[int, str, int]]:
        return resolve(self._dsn.hostname or "localhost", self._dsn.port or 5432)

    def _timeout(self) -> float:
        return float(min(self.deadlines))  # (a PostgreSQL transaction's deadline is its own: params' deadline)

    def _protocol(self) -> tuple[Any, list]:
        statements: dict[str, int] = {}
        txs = []
        for tx, plan in zip(self.workload.transactions, self.pg.plans):
            order = list(tx.params)  # the ParamMaker's drawing order
            txs.append([(statements.setdefault(sql, len(statements)), tuple(order.index(n) for n in names))
                        for sql, names in plan])
        user = urllib.parse.unquote(self._dsn.username or "postgres")
        database = self._dsn.path.lstrip("/") or user
        return ("pg", startup_message(user, database), [sql.encode() for sql in statements]), txs

    def before_run(self, open_executor):
        return self._open  # the users log on in the loop; asyncpg opens nothing

    async def _open(self) -> None:
        """Every user connected and logged on before the run (as PostgresExecutor.open)."""
        self.core = self._make_core()
        failed = await asyncio.get_running_loop().run_in_executor(None, self.core.open, OPEN_TIMEOUT_S)
        if failed is not None:
            err, detail, fields = failed
            why = self._open_text(err, detail, fields)
            raise SutFailure((self.pg.failure and self.pg.failure()) or f"cannot connect to PostgreSQL: {why}")

    @staticmethod
    def _open_text(err: int, detail: int, fields: bytes) -> str:
        if err in (E_SERVER, E_SERVER_CLOSED):
            return server_error_text(fields, closed=err == E_SERVER_CLOSED)
        if err == E_CONNECT_TIMEOUT:
            return f"TimeoutError: not logged on within {OPEN_TIMEOUT_S:g} s"
        if err in (E_CONNECT_OS, E_IO_OS):
            exc = OSError(detail, os.strerror(detail))
            return f"{type(exc).__name__}: {exc}"
        if err == E_AUTH:
            return f"the server asked for authentication method {detail}; perflab's compiled loop speaks trust only"
        return CLOSED_TEXT if err in (E_CLOSED, E_KEEPALIVE) else f"ProtocolError: {MALFORMED.get(detail, 'unreadable')}"

    async def run(self, on_tick=None, tick_s: float = 0.5):
        try:
            return await super().run(on_tick, tick_s)
        finally:
            if self.core is not None:
                self.core.close()  # each session told it ends (Terminate), as asyncpg's close

    def _sync_counts(self) -> None:
        if self.core is None:
            return
        commits, commit_us = self.core.commits
        done, done_us = self._commits
        if commits > done:
            self.pg.commits.add(commits - done, commit_us - done_us)
        self._commits = (commits, commit_us)

    def _error(self, row) -> str:
        """A row's error, worded as postgres.py words it."""
        err, detail, tx = int(row["err"]), int(row["detail"]), int(row["tx"])
        if err in (E_SERVER, E_SERVER_CLOSED):
            words = self._words(row)
            if words is None:
                return "PostgresError: (the server's words were lost: the driver ran out of memory)"
            return server_error_text(words, closed=err == E_SERVER_CLOSED)
        if err in (E_CONNECT_TIMEOUT, E_RESPONSE_TIMEOUT):
            self._hung(tx)  # as postgres.py's deadline: the connection dropped, the transaction hung
            return deadline_text(self.deadlines[tx])
        if err in (E_CONNECT_OS, E_IO_OS, E_CLOSED, E_KEEPALIVE, E_MALFORMED, E_AUTH):
            return self._open_text(err, detail, b"")[:500]
        return f"error {err}"

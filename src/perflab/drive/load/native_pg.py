"""PostgreSQL users run by perflab's compiled loop (http_loop.c with pg_wire.h), where the
workload allows.

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
import itertools
import os
import socket
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
)
from perflab.drive.load.recorder import Recorder
from perflab.errors import SutFailure
from perflab.workload.model import Choice, Constant, PostgresTarget, RandomInt, Sequence, Workload

#: How long the users may take to log on before the run (asyncpg.connect's default timeout).
OPEN_TIMEOUT_S = 60.0
#: http_loop.c's parameter kinds (pgparam_t).
P_RANDOM_INT, P_CHOICE, P_WEIGHTED, P_SEQUENCE, P_CONSTANT = range(5)
#: asyncpg's words for a connection lost in the middle of a transaction.
CLOSED_TEXT = "ConnectionDoesNotExistError: connection was closed in the middle of operation"


def _text(value: Any) -> bytes | None:
    """A parameter value as the text the server parses (None: not one the loop sends)."""
    if isinstance(value, bool) or value is None:
        return None  # asyncpg encodes a bool by the parameter's type; the loop sends no guess
    if isinstance(value, int | float | str):
        text = str(value).encode()
        return None if b"\0" in text else text
    return None


def _param_spec(spec: Any) -> tuple | None:
    """http_loop.c's pgparam_t of a parameter generator, or None if the loop has none of it."""
    if isinstance(spec, RandomInt):
        low, high = spec.random_int
        return (P_RANDOM_INT, low, high, (), ()) if 0 <= high - low < 2 ** 53 else None
    if isinstance(spec, Sequence):
        return (P_SEQUENCE, spec.sequence, spec.step, (), ())
    if isinstance(spec, Constant):
        text = _text(spec.value)
        return None if text is None else (P_CONSTANT, 0, 0, (text,), ())
    if isinstance(spec, Choice):
        texts = [_text(v) for v in spec.choice]
        if any(t is None for t in texts):
            return None
        if spec.weights is None:
            return (P_CHOICE, 0, 0, tuple(texts), ())
        # summed as params.py sums them, so the C pick sees the same cumulative weights
        return (P_WEIGHTED, 0, 0, tuple(texts), tuple(float(c) for c in itertools.accumulate(spec.weights)))
    return None


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
            if _param_spec(spec) is None:
                return f"transaction {tx.name}: parameter {name} (the compiled loop sends integers, floats and " \
                       "strings, random_int ranges below 2^53)"
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

    def __init__(self, workload: Workload, executor: Any, recorder: Recorder, phases: Phases, t0: float,
                 users: int | None = None, seed: int | None = None, share: Share = Share()):
        from perflab.drive.adapters.postgres import PostgresExecutor

        assert isinstance(executor, PostgresExecutor)  # choose_core admits nothing else
        self.pg: PostgresExecutor = executor
        self._dsn = urllib.parse.urlsplit(executor.dsn)
        self._commits = (0, 0)
        super().__init__(workload, executor, recorder, phases, t0, users=users, seed=seed, share=share)

    def _resolve(self) -> tuple[int, str, int]:
        host, port = self._dsn.hostname or "localhost", self._dsn.port or 5432
        family, _, _, _, sockaddr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        return int(family), str(sockaddr[0]), port

    def _exchanges(self) -> list[tuple]:
        return []  # the transactions are the pg spec's (_loop_options)

    def _timeout(self) -> float:
        return float(min(self.deadlines))  # how often the loop sweeps for transactions past their deadline

    def _connected(self, count: int) -> None:
        pass  # the PostgreSQL target counts commits, not connections

    def _loop_options(self) -> tuple:
        statements: dict[str, int] = {}
        txs = []
        for tx, plan, deadline in zip(self.workload.transactions, self.pg.plans, self.deadlines):
            order = list(tx.params)  # the ParamMaker's drawing order
            steps = [(statements.setdefault(sql, len(statements)), tuple(order.index(n) for n in names))
                     for sql, names in plan]
            params = [_param_spec(spec) for spec in tx.params.values()]
            txs.append((steps, params, float(deadline)))
        user = urllib.parse.unquote(self._dsn.username or "postgres")
        database = self._dsn.path.lstrip("/") or user
        return ((startup_message(user, database), [sql.encode() for sql in statements], txs),)

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
            (length,) = struct.unpack_from("=I", self._errors, detail)
            return server_error_text(self._errors[detail + 4:detail + 4 + length], closed=err == E_SERVER_CLOSED)
        if err in (E_CONNECT_TIMEOUT, E_RESPONSE_TIMEOUT):
            self._hung(tx)  # as postgres.py's deadline: the connection dropped, the transaction hung
            return deadline_text(self.deadlines[tx])
        if err in (E_CONNECT_OS, E_IO_OS, E_CLOSED, E_KEEPALIVE, E_MALFORMED, E_AUTH):
            return self._open_text(err, detail, b"")[:500]
        return self._given_up_text(row)

"""PostgreSQL through asyncpg, from the driver's event loop.

Unlike the in-process adapters, the SUT is a server: the driver sends statements over
connections and the server's own processes do the work (they are the SUT the monitors
measure). Each simulated user gets a connection of its own (`connections: per_user`, the
seeds' one terminal per session) or the users share a pool.

A transaction's `sql` is one statement (autocommit: one commit) or several run inside
BEGIN .. COMMIT. Parameters are written `:name` as in the other SQL adapters and bound as
$1, $2, ... ; `prepared: true` prepares each statement once per connection.
first_response is when the first statement's result arrived. The COMMIT of a transaction of
several statements is timed on its own (counts.CommitCounts: COMMIT TIME (T)); a single
statement's commit happens inside its one round trip and cannot be told apart.
"""

from __future__ import annotations

import asyncio
import math
import re
import time
from collections.abc import Callable
from typing import Any

from perflab.drive.adapters.context import NetworkContext
from perflab.drive.adapters.counts import NO_COMMIT_COUNTS
from perflab.drive.load.deadline import deadline_text, deadlines_of
from perflab.drive.workers import Reply
from perflab.errors import SutFailure
from perflab.extras import require
from perflab.workload.model import PostgresTarget, Workload

# `:name` but not the `::type` cast.
_PARAM = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")
# asyncpg (the 'net' extra) is imported by the first PostgresExecutor, not with this module:
# the http and tcp adapters import raise_if_down from here on a plain install.
asyncpg: Any = None
_CONNECTION_ERRORS: tuple[type[BaseException], ...] = (OSError,)


def _import_asyncpg() -> None:
    global asyncpg, _CONNECTION_ERRORS
    if asyncpg is None:
        asyncpg = require("asyncpg", extra="net", feature="a postgres target")
        _CONNECTION_ERRORS = (OSError, asyncpg.exceptions.ConnectionDoesNotExistError,
                              asyncpg.exceptions.InterfaceError, asyncpg.exceptions.AdminShutdownError,
                              asyncpg.exceptions.CannotConnectNowError, asyncpg.exceptions.CrashShutdownError)


async def raise_if_down(failure: Callable[[], str | None] | None, wait_s: float = 0.2) -> None:
    """A lost connection is a failed transaction -- unless the server itself is gone, which
    fails the run. The server's exit may take a moment to be seen (the postmaster first
    stops its children), so look again briefly."""
    if failure is None:  # a server perflab did not start: nothing to watch
        return
    deadline = time.monotonic() + wait_s
    while True:
        reason = failure()
        if reason:
            raise SutFailure(reason)
        if time.monotonic() >= deadline:
            return
        await asyncio.sleep(0.01)


def positional(sql: str) -> tuple[str, list[str]]:
    """'... :aid ... :delta ... :aid' -> ('... $1 ... $2 ... $1', ['aid', 'delta'])."""
    names: list[str] = []

    def number(match: re.Match) -> str:
        name = match.group(1)
        if name not in names:
            names.append(name)
        return f"${names.index(name) + 1}"

    return _PARAM.sub(number, sql), names


#: How often the transactions' deadlines are checked (PostgresExecutor._sweep).
SWEEP_S = 0.1


class _Hung(Exception):
    """A transaction past its deadline (raised inside the pool's acquire, handled outside it)."""


def executor(context: NetworkContext) -> PostgresExecutor:
    """The postgres kind's executor (workload/kinds.py names this factory)."""
    if context.dsn is None:  # prepare_postgres made it (server_run), or the coordinator sent it (ray_driver)
        raise ValueError("a postgres target's executor needs the server's DSN")
    return PostgresExecutor(context.workload, context.dsn, context.failure, context.pool_size,
                            context.counts or NO_COMMIT_COUNTS)


class PostgresExecutor:
    """execute(tx_index, params, user) -> Reply, on asyncpg connections."""

    def __init__(self, workload: Workload, dsn: str, failure: Callable[[], str | None] | None = None,
                 pool_size: int | None = None, commits: Any = NO_COMMIT_COUNTS):
        _import_asyncpg()
        self.commits = commits
        target = workload.target
        assert isinstance(target, PostgresTarget)
        self.dsn = dsn
        self.failure = failure
        self.prepared = target.prepared
        self.per_user = target.connections == "per_user"
        self.pool_size = target.pool_size or pool_size or 8
        self.plans = [[positional(sql) for sql in tx.sql_body()] for tx in workload.transactions]
        self.deadlines = deadlines_of(workload)
        self.connections: dict[int, asyncpg.Connection] = {}
        self.pool: asyncpg.Pool | None = None
        self._statements: dict[tuple[Any, str], Any] = {}
        self._in_flight: dict[asyncio.Task, float] = {}  # a transaction's task -> its deadline (monotonic)
        self._expired: set[asyncio.Task] = set()         # cancelled by the sweep, not yet answered
        self._sweeper: asyncio.TimerHandle | None = None
        self._prepared: dict[tuple[Any, int], list[tuple[Any, list[str]]]] = {}  # (connection, transaction)
        # backend_cpu: each user's backend's CPU clock (ns) after its last transaction
        self.backend_cpu = target.backend_cpu and self.per_user and target.server is not None
        self._backend_ns: dict[Any, int] = {}

    def _connect_kwargs(self) -> dict[str, Any]:
        # statement_cache_size=0 when not prepared: every execution is parsed and planned anew.
        return {"statement_cache_size": 256 if self.prepared else 0,
                "server_settings": {"application_name": "perflab"}}

    async def open(self, users: int | None) -> None:
        try:
            if self.per_user and users:
                # Log every user on before the run starts: connection set-up is not a transaction.
                conns = await asyncio.gather(*(asyncpg.connect(self.dsn, **self._connect_kwargs())
                                               for _ in range(users)))
                self.connections = dict(enumerate(conns))
                for conn in conns:
                    self._backend_clock(conn)
            else:
                self.per_user = False
                self.pool = await asyncpg.create_pool(self.dsn, min_size=self.pool_size, max_size=self.pool_size,
                                                      **self._connect_kwargs())
        except _CONNECTION_ERRORS + (asyncpg.PostgresError,) as exc:
            reason = (self.failure and self.failure()) or f"cannot connect to PostgreSQL: {type(exc).__name__}: {exc}"
            raise SutFailure(reason) from None

    async def _run(self, conn: asyncpg.Connection, tx_index: int, params: dict | None) -> float | None:
        statements = self.plans[tx_index]
        first = None
        if len(statements) == 1:
            await self._statement(conn, statements[0], params)
            return time.monotonic()
        # BEGIN and COMMIT as two simple queries, as pgbench sends them: asyncpg's transaction()
        # block sends the same two, through a state machine and a context manager that cost
        # about 4 us of the driver's CPU per transaction (docs/performance.md, issue 28).
        await conn.execute("BEGIN")
        try:
            if self.prepared and self.pool is None:
                # The user's statements of this transaction, prepared on its connection once: one
                # look-up per transaction, no coroutine per statement (the driver's CPU per
                # transaction against pgbench's, issue 28).
                prepared = self._prepared.get((conn, tx_index))
                if prepared is None:
                    prepared = self._prepared[(conn, tx_index)] = [
                        (await self._prepare(conn, sql), names) for sql, names in statements]
                for stmt, names in prepared:
                    await stmt.fetch(*([params[n] for n in names] if names and params is not None else ()))
                    if first is None:
                        first = time.monotonic()
            else:
                for plan in statements:
                    await self._statement(conn, plan, params)
                    if first is None:
                        first = time.monotonic()
        except asyncio.CancelledError:
            raise  # the deadline (the connection is terminated) or the run's end: no ROLLBACK to wait for
        except BaseException:
            if not conn.is_closed():
                try:
                    await conn.execute("ROLLBACK")  # the connection is reused: out of the failed block
                except Exception:  # noqa: BLE001 - the statement's error is the one reported
                    conn.terminate()
            raise
        sent = time.monotonic()
        await conn.execute("COMMIT")
        self.commits.committed(time.monotonic() - sent)  # COMMIT sent and its reply read
        return first

    async def _statement(self, conn: asyncpg.Connection, plan: tuple[str, list[str]], params: dict | None):
        sql, names = plan
        # A statement naming parameters the transaction does not give is sent without them: the
        # server refuses it, and the transaction fails with that reason.
        args = [params[n] for n in names] if names and params is not None else ()
        if self.prepared and self.pool is None:
            # A user's own connection: its statements prepared once and kept. A pooled
            # connection is a proxy made anew at each acquire, and a statement prepared through
            # one is dead once it is released (keyed by the proxy's id, a later proxy at the same
            # address found it: "the underlying connection has been released back to the pool");
            # there asyncpg's own statement cache (statement_cache_size, per real connection)
            # prepares each statement once per connection instead.
            return await (await self._prepare(conn, sql)).fetch(*args)
        return await conn.fetch(sql, *args)

    async def _prepare(self, conn: asyncpg.Connection, sql: str):
        """The statement prepared on this (user's own) connection, once."""
        # Keyed by the connection itself, not its id: a connection made anew (after a hung
        # transaction) could take a dropped one's id and find statements of a closed connection.
        key = (conn, sql)
        stmt = self._statements.get(key)
        if stmt is None:
            stmt = self._statements[key] = await conn.prepare(sql)
        return stmt

    async def _run_by_deadline(self, conn: asyncpg.Connection, tx_index: int, params: dict | None) -> float | None:
        """The transaction, cancelled at its deadline: a server that never answers (a lock held
        forever, a stopped process) is a hung transaction, and its connection is dropped (a
        cancelled query leaves the connection in no state to reuse).

        The deadline is watched by one periodic sweep (`_sweep`), not a timer per transaction:
        `asyncio.timeout` costs about 4.5 us of the driver's CPU per transaction on uvloop, a
        dictionary entry a tenth of that. A transaction is cancelled at its deadline or up to
        SWEEP_S after it."""
        task = asyncio.current_task()
        assert task is not None  # a transaction runs in its user's (or arrival's) task
        self._in_flight[task] = time.monotonic() + self.deadlines[tx_index]
        if self._sweeper is None:
            self._sweeper = asyncio.get_running_loop().call_later(SWEEP_S, self._sweep)
        try:
            return await self._run(conn, tx_index, params)
        except asyncio.CancelledError:
            if task in self._expired:
                self._expired.discard(task)
                task.uncancel()  # this cancellation was the deadline's, handled here
                conn.terminate()
                raise _Hung() from None
            raise
        finally:
            self._in_flight.pop(task, None)

    def _sweep(self) -> None:
        """Cancel the transactions past their deadline (see _run_by_deadline); re-armed while any is in flight."""
        now = time.monotonic()
        for task, deadline in list(self._in_flight.items()):
            if now >= deadline and task not in self._expired:
                self._expired.add(task)
                task.cancel()
        self._sweeper = asyncio.get_running_loop().call_later(SWEEP_S, self._sweep) if self._in_flight else None

    def _backend_clock(self, conn: Any) -> float:
        """backend_cpu: the CPU the connection's backend used since its last reading, in seconds
        (NaN: not measured). A backend is idle between its user's transactions, so the difference
        across one transaction is that transaction's backend CPU (a backend's own periodic work, a
        statistics flush, falls in whichever transaction it interrupts)."""
        if not self.backend_cpu:
            return math.nan
        try:
            with open(f"/proc/{conn.get_server_pid()}/schedstat", "rb") as stat:
                now = int(stat.read().split()[0])
        except (OSError, ValueError, IndexError):
            return math.nan
        last = self._backend_ns.get(conn)
        self._backend_ns[conn] = now
        return math.nan if last is None else (now - last) / 1e9

    async def execute(self, tx_index: int, params: dict | None, user: int = -1) -> Reply:
        try:
            if self.per_user:
                conn = self.connections.get(user)
                if conn is None or conn.is_closed():
                    conn = self.connections[user] = await asyncpg.connect(self.dsn, **self._connect_kwargs())
                    self._backend_clock(conn)
                first = await self._run_by_deadline(conn, tx_index, params)
                if self.backend_cpu:
                    return Reply(True, None, first, cpu=self._backend_clock(conn))
            else:
                assert self.pool is not None  # made by open() when the users share a pool
                async with self.pool.acquire() as conn:
                    first = await self._run_by_deadline(conn, tx_index, params)
            return Reply(True, None, first)
        except _Hung:
            self.connections.pop(user, None)
            return Reply(False, deadline_text(self.deadlines[tx_index]), None, hung=True)
        except asyncpg.PostgresError as exc:  # the server refused this one: a failed transaction
            if isinstance(exc, _CONNECTION_ERRORS):
                await raise_if_down(self.failure)
            return Reply(False, f"{type(exc).__name__}: {exc}"[:500], None)
        except _CONNECTION_ERRORS as exc:
            await raise_if_down(self.failure)
            return Reply(False, f"{type(exc).__name__}: {exc}"[:500], None)

    async def close(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        for conn in self.connections.values():
            try:
                await asyncio.wait_for(conn.close(), 5)
            except Exception:
                conn.terminate()
        if self.pool is not None:
            try:
                await asyncio.wait_for(self.pool.close(), 10)
            except Exception:
                self.pool.terminate()

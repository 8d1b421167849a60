"""SQLite as the system under test, through the stdlib `sqlite3` module or through `apsw`.

Python's stdlib module links the system's libsqlite3 (3.40.1 on Debian 12); each apsw wheel
bundles one SQLite release (apsw 3.40.1.0 bundles SQLite 3.40.1). A release study compares
two SQLite releases through the same binding: `driver: apsw` with `release: apsw==<version>`
(perflab.sut.releases installs each once and puts it first on the workers' import path).

The SUT's own counts (the seeds' RTM rows, `sut.<name>` samples), through apsw:

* `commits` -- write transactions committed, from SQLite's commit hook: the SUT's own count
  of the work the driver counts (ETR, ETR RATIO), when every transaction writes (the hook is
  not called for a read-only transaction);
* `busy_waits`, `busy_wait_us` -- the waits for a lock another SUT process held (the write
  lock between worker processes), and the time slept in them;
* `checkpoints`, `checkpoint_us` -- WAL checkpoints and the time they took (their fsyncs leave
  the processor idle);
* `total_changes` -- rows changed (SQLite's own row count).

To count waits and checkpoints perflab installs a busy handler and a WAL hook that do exactly
what SQLite's defaults do -- sleep on busy_timeout's schedule; checkpoint (PASSIVE) after a
commit leaves `wal_autocheckpoint` pages or more in the WAL -- and count as they go. The stdlib
module offers neither hook, so through it only `total_changes` is counted (ETR is then na).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from perflab.drive.adapters.base import SutAdapter, WorkerContext
from perflab.workload.model import SqliteTarget, Workload

_READ_ONLY_STARTS = ("select", "with", "values", "explain", "pragma")
#: sqliteDefaultBusyCallback's schedule (SQLite's main.c): the delay of each successive wait, ms;
#: after the last one, every further wait is the last delay again.
BUSY_DELAYS_MS = (1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100)
APSW_COUNTERS = ("commits", "total_changes", "busy_waits", "busy_wait_us", "checkpoints", "checkpoint_us")


def _is_read(sql: str) -> bool:
    return sql.lstrip().lower().startswith(_READ_ONLY_STARTS) and " into " not in sql.lower()


def database_path(target: SqliteTarget, run_dir: Path) -> Path:
    path = Path(target.database)
    return path if path.is_absolute() else run_dir / path


def busy_delay_ms(prior_calls: int, timeout_ms: int) -> int:
    """How long SQLite's default busy handler sleeps on its `prior_calls`-th wait (0 = give up)."""
    last = len(BUSY_DELAYS_MS) - 1
    if prior_calls <= last:
        delay = BUSY_DELAYS_MS[prior_calls]
        prior = sum(BUSY_DELAYS_MS[:prior_calls])
    else:
        delay = BUSY_DELAYS_MS[last]
        prior = sum(BUSY_DELAYS_MS) + delay * (prior_calls - last - 1)
    if prior + delay > timeout_ms:
        delay = timeout_ms - prior
    return max(0, delay)


class _Stdlib:
    name = "stdlib"
    counter_names: tuple[str, ...] = ("total_changes",)

    def __init__(self, path: Path, busy_ms: int):
        import sqlite3

        # isolation_level=None: perflab issues BEGIN/COMMIT itself, as the workload defines.
        self.conn = sqlite3.connect(str(path), timeout=busy_ms / 1000.0, isolation_level=None,
                                    check_same_thread=False)

    def execute(self, sql: str, params: Any):
        return self.conn.execute(sql, params or ())

    def instrument(self) -> None:
        pass

    def counters(self) -> tuple[int, ...]:
        return (self.conn.total_changes,)

    def close(self) -> None:
        self.conn.close()

    @staticmethod
    def facts() -> dict[str, str]:
        import sqlite3

        return {"sut_version": f"SQLite {sqlite3.sqlite_version} (Python sqlite3 module)",
                "sqlite_version": sqlite3.sqlite_version, "sqlite_binding": "stdlib sqlite3"}


class _Apsw:
    name = "apsw"
    counter_names = APSW_COUNTERS

    def __init__(self, path: Path, busy_ms: int):
        import apsw

        self.apsw = apsw
        self.conn = apsw.Connection(str(path))
        self.busy_ms = busy_ms
        self.conn.setbusytimeout(busy_ms)
        self.commits = self.busy_waits = self.busy_wait_us = self.checkpoints = self.checkpoint_us = 0
        self.autocheckpoint = 0

    def execute(self, sql: str, params: Any):
        return self.conn.execute(sql, params or ())

    def instrument(self) -> None:
        """The counting hooks (module doc); after the pragmas, which may set wal_autocheckpoint.
        The old spellings (setcommithook...) are the ones every apsw release since 3.40 has."""
        conn = self.conn
        # Read before the WAL hook replaces SQLite's: the pragma reports 0 for any other hook.
        self.autocheckpoint = int(next(iter(conn.execute("PRAGMA wal_autocheckpoint")))[0])
        conn.setcommithook(self._on_commit)
        conn.setbusyhandler(self._on_busy)
        conn.setwalhook(self._on_wal)

    def _on_commit(self) -> bool:
        self.commits += 1
        return False  # False: the commit goes ahead

    def _on_busy(self, prior_calls: int) -> bool:
        delay = busy_delay_ms(prior_calls, self.busy_ms)
        if delay <= 0:
            return False  # give up: SQLITE_BUSY, as with busy_timeout
        started = time.monotonic()
        time.sleep(delay / 1000.0)
        self.busy_waits += 1
        self.busy_wait_us += round(1e6 * (time.monotonic() - started))
        return True

    def _on_wal(self, conn, database: str, pages: int) -> int:
        if self.autocheckpoint > 0 and pages >= self.autocheckpoint:
            started = time.monotonic()
            try:
                conn.wal_checkpoint(database)  # PASSIVE, as sqlite3_wal_checkpoint in the default hook
            except self.apsw.BusyError:
                # Another process is checkpointing: the default hook ignores this too (an error
                # returned here would make the COMMIT that has just succeeded report a failure).
                return self.apsw.SQLITE_OK
            self.checkpoints += 1
            self.checkpoint_us += round(1e6 * (time.monotonic() - started))
        return self.apsw.SQLITE_OK

    def counters(self) -> tuple[int, ...]:
        return (self.commits, self.conn.totalchanges(), self.busy_waits, self.busy_wait_us, self.checkpoints,
                self.checkpoint_us)

    def close(self) -> None:
        self.conn.close()

    @staticmethod
    def facts() -> dict[str, str]:
        import apsw

        return {"sut_version": f"SQLite {apsw.sqlitelibversion()} (apsw {apsw.apswversion()})",
                "sqlite_version": apsw.sqlitelibversion(), "sqlite_binding": "apsw",
                "binding_version": f"apsw {apsw.apswversion()}"}


_DRIVERS: dict[str, type[_Stdlib] | type[_Apsw]] = {"stdlib": _Stdlib, "apsw": _Apsw}


class SqliteAdapter(SutAdapter):
    counter_names: tuple[str, ...] = APSW_COUNTERS
    tx_counter = "commits"

    @classmethod
    def counters_for(cls, workload: Workload) -> tuple[tuple[str, ...], str | None]:
        target = workload.target
        assert isinstance(target, SqliteTarget)
        driver = _DRIVERS[target.driver]
        # The stdlib module has no commit hook: SQLite's only count there is rows changed, which
        # is not a transaction count, so ETR stays na rather than reading 3.6 for debit-credit.
        return driver.counter_names, ("commits" if "commits" in driver.counter_names else None)

    @classmethod
    def prepare(cls, workload: Workload, workload_dir: Path, run_dir: Path) -> dict[str, Any]:
        target = workload.target
        assert isinstance(target, SqliteTarget)
        path = database_path(target, run_dir)
        path.parent.mkdir(parents=True, exist_ok=True)
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(str(path) + suffix).unlink(missing_ok=True)  # every run starts from a fresh database
        driver = _DRIVERS[target.driver](path, target.busy_timeout_ms)
        try:
            _apply_pragmas(driver, target)
            driver.execute("BEGIN", None)
            for statement in target.setup:
                driver.execute(statement, None)
            driver.execute("COMMIT", None)
        finally:
            driver.close()
        return {**_DRIVERS[target.driver].facts(), "sqlite_driver": target.driver, "database": str(path)}

    def __init__(self, ctx: WorkerContext):
        target = ctx.workload.target
        assert isinstance(target, SqliteTarget)
        self.driver = _DRIVERS[target.driver](database_path(target, ctx.run_dir), target.busy_timeout_ms)
        self.counter_names = self.driver.counter_names
        _apply_pragmas(self.driver, target)
        self.driver.instrument()
        self.plans = []
        for tx in ctx.workload.transactions:
            statements = list(tx.sql_body())
            writes = any(not _is_read(s) for s in statements)
            # A single read needs no explicit transaction; writes take the write lock up front
            # (BEGIN IMMEDIATE) so concurrent users queue on the lock instead of deadlocking.
            wrap = len(statements) > 1 or writes
            self.plans.append((statements, "BEGIN IMMEDIATE" if writes else "BEGIN", wrap))

    def execute(self, tx_index: int, params: dict[str, Any] | None) -> float | None:
        statements, begin, wrap = self.plans[tx_index]
        execute = self.driver.execute
        first = None
        if wrap:
            execute(begin, None)
        commits = getattr(self.driver, "commits", 0)
        try:
            for sql in statements:
                for _row in execute(sql, params):
                    if first is None:
                        first = time.monotonic()
            if wrap:
                execute("COMMIT", None)
        except BaseException:
            if hasattr(self.driver, "commits"):
                # The hook runs just before the commit: a COMMIT that then failed committed nothing.
                self.driver.commits = commits
            if wrap:
                try:
                    execute("ROLLBACK", None)
                except Exception:
                    pass
            raise
        return first

    def counters(self) -> tuple[int, ...]:
        return self.driver.counters()

    def close(self) -> None:
        self.driver.close()


def _apply_pragmas(driver, target: SqliteTarget) -> None:
    for name, value in target.pragmas.items():
        for _ in driver.execute(f"PRAGMA {name} = {value}", None):
            pass

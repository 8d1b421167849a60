"""SQLite as the system under test, through the stdlib `sqlite3` module or through `apsw`.

The two drivers bring two real SQLite releases: Python's stdlib module links the system's
libsqlite3 (3.40.1 on Debian 12), apsw bundles its own, newer one (3.54.x). A release study
compares them on the same workload.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from perflab.drive.adapters.base import SutAdapter, WorkerContext
from perflab.workload.model import SqliteTarget, Workload

_READ_ONLY_STARTS = ("select", "with", "values", "explain", "pragma")


def _is_read(sql: str) -> bool:
    return sql.lstrip().lower().startswith(_READ_ONLY_STARTS) and " into " not in sql.lower()


def database_path(target: SqliteTarget, run_dir: Path) -> Path:
    path = Path(target.database)
    return path if path.is_absolute() else run_dir / path


class _Stdlib:
    name = "stdlib"

    def __init__(self, path: Path, busy_ms: int):
        import sqlite3

        # isolation_level=None: perflab issues BEGIN/COMMIT itself, as the workload defines.
        self.conn = sqlite3.connect(str(path), timeout=busy_ms / 1000.0, isolation_level=None,
                                    check_same_thread=False)

    def execute(self, sql: str, params: Any):
        return self.conn.execute(sql, params or ())

    def total_changes(self) -> int:
        return self.conn.total_changes

    def close(self) -> None:
        self.conn.close()

    @staticmethod
    def version() -> str:
        import sqlite3

        return f"SQLite {sqlite3.sqlite_version} (Python sqlite3 module)"


class _Apsw:
    name = "apsw"

    def __init__(self, path: Path, busy_ms: int):
        import apsw

        self.conn = apsw.Connection(str(path))
        self.conn.set_busy_timeout(busy_ms) if hasattr(self.conn, "set_busy_timeout") else self.conn.setbusytimeout(busy_ms)

    def execute(self, sql: str, params: Any):
        return self.conn.execute(sql, params or ())

    def total_changes(self) -> int:
        return self.conn.total_changes()

    def close(self) -> None:
        self.conn.close()

    @staticmethod
    def version() -> str:
        import apsw

        return f"SQLite {apsw.sqlite_lib_version()} (apsw {apsw.apsw_version()})"


_DRIVERS = {"stdlib": _Stdlib, "apsw": _Apsw}


class SqliteAdapter(SutAdapter):
    counter_names = ("total_changes",)
    # SQLite counts rows changed, not transactions: like RTM's count in the seeds, its rate
    # (ETR) differs from the driver's (ETR (T)) by a ratio that characterizes the workload
    # (about 4 for debit-credit: three updates and an insert).
    tx_counter = "total_changes"

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
        return {"sut_version": _DRIVERS[target.driver].version(), "sqlite_driver": target.driver,
                "database": str(path)}

    def __init__(self, ctx: WorkerContext):
        target = ctx.workload.target
        assert isinstance(target, SqliteTarget)
        self.driver = _DRIVERS[target.driver](database_path(target, ctx.run_dir), target.busy_timeout_ms)
        _apply_pragmas(self.driver, target)
        self.plans = []
        for tx in ctx.workload.transactions:
            statements = list(tx.sql)
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
        try:
            for sql in statements:
                for _row in execute(sql, params):
                    if first is None:
                        first = time.monotonic()
            if wrap:
                execute("COMMIT", None)
        except BaseException:
            if wrap:
                try:
                    execute("ROLLBACK", None)
                except Exception:
                    pass
            raise
        return first

    def counters(self) -> tuple[int, ...]:
        return (self.driver.total_changes(),)

    def close(self) -> None:
        self.driver.close()


def _apply_pragmas(driver, target: SqliteTarget) -> None:
    for name, value in target.pragmas.items():
        for _ in driver.execute(f"PRAGMA {name} = {value}", None):
            pass

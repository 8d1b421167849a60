"""PostgreSQL's own counters (the seeds' RTM rows): `sut.xact_commit`, `sut.blks_read`, ...

The monitor process opens one connection and reads pg_stat_database for the workload's
database with one query per sample, so the measured server sees one extra short transaction
per second (its commit is counted too: ETR is high by one per sample interval, 0.1% at
1,000 tx/s).

PostgreSQL 15+ backends publish their counts to shared statistics at most once a second
while busy, so a sample can lag the truth by up to a second per backend; over a window of
tens of seconds the lags at the two edges largely cancel (ETR RATIO ~ 1 for one-commit
transactions).

asyncpg is the client (the driver uses it too); the monitor is synchronous, so each read runs
the query on a private event loop.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from perflab.extras import MissingExtra, require

from . import SourceUnavailable

FIELDS = ("xact_commit", "xact_rollback", "blks_read", "blks_hit", "tup_returned", "tup_fetched",
          "tup_inserted", "tup_updated", "tup_deleted")
QUERY = ("SELECT " + ", ".join(f"{f}::float8" for f in FIELDS)
         + " FROM pg_stat_database WHERE datname = $1")


@dataclass(frozen=True)
class PgCounterSpec:
    """CounterSpec (picklable): where the server is."""

    host: str
    port: int
    user: str
    database: str

    def open(self) -> PgCounterSource:
        return PgCounterSource(self)


class PgCounterSource:
    name = "pg_counters"

    def __init__(self, spec: PgCounterSpec) -> None:
        try:
            asyncpg = require("asyncpg", extra="net", feature="reading PostgreSQL's counters")
        except MissingExtra as exc:
            raise SourceUnavailable(str(exc)) from None
        self._spec = spec
        self._loop = asyncio.new_event_loop()
        try:
            self._conn = self._loop.run_until_complete(asyncpg.connect(
                host=spec.host, port=spec.port, user=spec.user, database=spec.database, timeout=10,
                statement_cache_size=4, server_settings={"application_name": "perflab monitor"}))
            self._stmt = self._loop.run_until_complete(self._conn.prepare(QUERY))
        except Exception as exc:
            self._loop.close()
            raise SourceUnavailable(f"cannot read pg_stat_database: {type(exc).__name__}: {exc}") from None

    def read(self) -> dict[str, float]:
        if self._conn.is_closed():
            return {}  # the server is gone; the run records why
        try:
            row = self._loop.run_until_complete(self._stmt.fetchrow(self._spec.database, timeout=5))
        except Exception:
            return {}  # absent in this sample rather than a made-up value
        if row is None:
            return {}
        return {f"sut.{name}": float(value) for name, value in zip(FIELDS, row) if value is not None}

    def close(self) -> None:
        try:
            self._loop.run_until_complete(asyncio.wait_for(self._conn.close(), 2))
        except Exception:
            self._conn.terminate()
        finally:
            self._loop.close()

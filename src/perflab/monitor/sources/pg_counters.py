"""PostgreSQL's own counters (the seeds' RTM rows): `sut.xact_commit`, `sut.blks_read`, ...

The monitor process opens one connection and reads pg_stat_database for the workload's
database with one query per sample, so the measured server sees one extra short transaction
per second (its commit is counted too: ETR is high by one per sample interval, 0.1% at
1,000 tx/s).

PostgreSQL 15+ backends publish their counts to shared statistics at most once a second
while busy, so a sample can lag the truth by up to a second per backend; over a window of
tens of seconds the lags at the two edges largely cancel (ETR RATIO ~ 1 for one-commit
transactions).

The write-ahead log (`sut.wal_*`, the seeds' log rows: IMS's OLDS bandwidth and WADS writes):
pg_stat_wal's counters -- records, full-page images, bytes, writes, syncs, and the time spent
writing and syncing when track_wal_io_timing is on (else those two columns are absent, not
zero) -- and `sut.wal_lsn`, the WAL insert position in bytes (pg_current_wal_lsn()): exact at
every sample where pg_stat_wal lags like the other statistics. pg_stat_wal is the whole
cluster's (every database, the background processes too); a server in recovery has no insert
position, and then neither column.

Replication (gauges, a primary's view of its standbys in pg_stat_replication, the largest over
them): `sut.write_lag_s`, `sut.flush_lag_s`, `sut.replay_lag_s` -- how long the standby took to
write, flush and apply recent WAL, as the primary timed it -- and `sut.replay_lag_bytes`, the WAL
the standby has yet to apply. A server with no standby (or one idle long enough that PostgreSQL
stops reporting the lags) has none of them in that sample.

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
# pg_stat_wal's counters (PostgreSQL 14+; 18 moved writes and syncs to pg_stat_io): whichever the
# server has. The times are milliseconds, and only counted with track_wal_io_timing on.
WAL_FIELDS = ("wal_records", "wal_fpi", "wal_bytes", "wal_write", "wal_sync")
WAL_TIMES = ("wal_write_time", "wal_sync_time")
WAL_LSN = "pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')"
REPLICATION = {
    "write_lag_s": "(SELECT max(EXTRACT(epoch FROM write_lag)) FROM pg_stat_replication)",
    "flush_lag_s": "(SELECT max(EXTRACT(epoch FROM flush_lag)) FROM pg_stat_replication)",
    "replay_lag_s": "(SELECT max(EXTRACT(epoch FROM replay_lag)) FROM pg_stat_replication)",
    "replay_lag_bytes": "(SELECT max(pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)) FROM pg_stat_replication)",
}


async def wal_columns(conn) -> tuple[list[str], bool]:
    """(pg_stat_wal columns to read, whether the insert position can be read): what this server has."""
    have = {r[0] for r in await conn.fetch(
        "SELECT attname FROM pg_attribute WHERE attrelid = to_regclass('pg_stat_wal') AND attnum > 0")}
    timing = (await conn.fetchval("SELECT current_setting('track_wal_io_timing', true)")) == "on"
    fields = [f for f in WAL_FIELDS if f in have] + ([f for f in WAL_TIMES if f in have] if timing else [])
    return fields, not await conn.fetchval("SELECT pg_is_in_recovery()")


def counters_query(wal_fields: list[str], lsn: bool) -> tuple[str, list[str]]:
    """One query for every counter of a sample, and the names of its columns in order."""
    primary = ["wal_lsn", *REPLICATION] if lsn else []
    names = list(FIELDS) + wal_fields + primary
    columns = [f"d.{f}::float8" for f in FIELDS] + [f"w.{f}::float8" for f in wal_fields] + \
        ([f"{WAL_LSN}::float8"] + [f"{sql}::float8" for sql in REPLICATION.values()] if lsn else [])
    source = "pg_stat_database d" + (", pg_stat_wal w" if wal_fields else "")
    return f"SELECT {', '.join(columns)} FROM {source} WHERE d.datname = $1", names


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
            wal_fields, lsn = self._loop.run_until_complete(wal_columns(self._conn))
            query, self._names = counters_query(wal_fields, lsn)
            self._stmt = self._loop.run_until_complete(self._conn.prepare(query))
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
        return {f"sut.{name}": float(value) for name, value in zip(self._names, row) if value is not None}

    def close(self) -> None:
        try:
            self._loop.run_until_complete(asyncio.wait_for(self._conn.close(), 2))
        except Exception:
            self._conn.terminate()
        finally:
            self._loop.close()

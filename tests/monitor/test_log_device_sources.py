"""The log's sources, read from known text: one device's /proc/diskstats line (dev.*) and the
query of PostgreSQL's WAL counters, and the rows the registry makes of them."""

from __future__ import annotations

import pytest

from perflab.catalog.registry import REGISTRY
from perflab.monitor.sources.diskstats import device_line
from perflab.monitor.sources.pg_counters import FIELDS, counters_query

# A 6.x kernel's lines: 20 fields after the name (flushes in the last two), and a 4.x kernel's 14.
DISKSTATS = b"""\
 254 0 vda 375101 16192 15928186 1799857 915337 280436 90962032 825622 0 170804 2677583 178476 75 49953216 36069 152236 16033
   7       3 loop3 12 0 96 4 5000 10 80000 900 0 1500 2000 0 0 0 0 4321 250
   7       4 loop4 12 0 96 4 5000 10 80000 900 0 1500 2000
"""


def test_one_device_line_with_its_flushes():
    cols = device_line(DISKSTATS, "loop3")
    assert cols == {"dev.reads": 12.0, "dev.read_ms": 4.0, "dev.writes": 5000.0, "dev.write_ms": 900.0,
                    "dev.busy_ms": 1500.0, "dev.flushes": 4321.0, "dev.flush_ms": 250.0,
                    "dev.read_bytes": 96 * 512.0, "dev.write_bytes": 80000 * 512.0}


def test_an_older_kernels_line_has_no_flush_columns_rather_than_zeros():
    cols = device_line(DISKSTATS, "loop4")
    assert "dev.flushes" not in cols and "dev.flush_ms" not in cols and cols["dev.writes"] == 5000.0
    assert device_line(DISKSTATS, "loop9") == {}


def test_the_counters_query_reads_the_wal_columns_the_server_has():
    sql, names = counters_query(["wal_bytes", "wal_sync", "wal_sync_time"], lsn=True)
    assert names == [*FIELDS, "wal_bytes", "wal_sync", "wal_sync_time", "wal_lsn", "write_lag_s", "flush_lag_s",
                     "replay_lag_s", "replay_lag_bytes"]
    assert "pg_stat_wal w" in sql and "w.wal_sync_time::float8" in sql and "pg_current_wal_lsn()" in sql
    assert "EXTRACT(epoch FROM replay_lag)" in sql  # a primary's view of its standbys
    assert sql.count("::float8") == len(names)
    bare, bare_names = counters_query([], lsn=False)
    assert bare_names == list(FIELDS) and "pg_stat_wal" not in bare and "pg_current_wal_lsn" not in bare
    assert "pg_stat_replication" not in bare  # a server in recovery has no standbys of its own to read


def test_the_log_rows_from_their_window_totals():
    values = REGISTRY.evaluate({"window_s": 10.0, "tx_ok": 2000.0, "wal_lsn_bytes": 5e6, "wal_syncs": 1500.0,
                                "wal_sync_sec": 0.3, "wal_fpi": 400.0, "dev_flushes": 1510.0, "dev_ios": 4000.0,
                                "dev_busy_sec": 2.5, "dev_io_sec": 1.2, "dev_bytes": 8e6, "commits_t": 2000.0,
                                "commit_sec_t": 0.9})
    assert values["wal_bytes_cmd"] == pytest.approx(2500.0)
    assert values["log_mb_sec"] == pytest.approx(0.5)
    assert values["fsync_cmd"] == pytest.approx(0.75) and values["flush_cmd_s"] == pytest.approx(0.755)
    assert values["wal_sync_ms"] == pytest.approx(0.2) and values["fpi_cmd"] == pytest.approx(0.2)
    assert values["dev_rate_s"] == pytest.approx(400.0) and values["dev_busy_pct_s"] == pytest.approx(25.0)
    assert values["dev_resp_s"] == pytest.approx(0.3) and values["dev_bytes_cmd_s"] == pytest.approx(4000.0)
    assert values["commit_ms_t"] == pytest.approx(0.45)
    # unmeasured stays unmeasured
    assert REGISTRY.evaluate({"window_s": 10.0, "tx_ok": 2000.0})["fsync_cmd"] is None

"""The durable write path (examples/postgres/durable-writes.yaml): PostgreSQL with its WAL on a
loop device of the run's own, and the log's rows checked against truths known outside them.

* FSYNC/CMD (the server's count of its WAL syncs, pg_stat_wal.wal_sync) against FLUSH/CMD (S),
  the kernel's count of the cache flushes the device completed (/proc/diskstats): every
  fdatasync of a WAL file on ext4 is one flush of the device, and the device holds nothing but
  pg_wal, so the two counts differ only by the file system's own journal commits (one or two
  flushes each, at most one every 5 s here) and the fsyncs of WAL segments created in the window
  (a few per segment), and by the server's statistics lag: a process publishes its counts at most
  once a second, so each window edge may miss up to one second of syncs (of either sign in the
  difference). The bound: |syncs - flushes| <= rate x 1 s + 4 x segments + 8.
* WAL BYTES/CMD (the advance of the insert position, pg_current_wal_lsn) against pg_stat_wal's
  wal_bytes: the insert position counts every byte the log takes, wal_bytes the records' own
  lengths, so LSN >= bytes, by at most the records' alignment (< 8 bytes a record) and the page
  headers (24 bytes in 8 KB, 40 at a segment's start), plus the same one-second lag.
* COMMITS (T) against COMMANDS (T): each debit-credit transaction commits once.
"""

from __future__ import annotations

import subprocess

import pytest

from perflab.sut.wal_device import MOUNT_ROOT

from .net_helpers import EXAMPLES, needs_pg15, run_workload

WORKLOAD = EXAMPLES / "postgres" / "durable-writes.yaml"
# A 6 s window (it was 10 s): every bound below is one second's lag at the window's rate plus
# constants, so it widens from a tenth of the count to a sixth -- still far inside what it is for: a
# count of another device's flushes, of the syncs twice or of none, a byte count in another unit.
SHORT = {"stagger": 0.0, "stabilization": 1.0, "duration": 6.0}
PG_STATS_FLUSH_S = 1.0  # PostgreSQL 15 and 16 publish a process's statistics at most once a second
SEGMENT = 16 << 20
needs_root = pytest.mark.skipif(subprocess.run(["id", "-u"], capture_output=True, text=True).stdout.strip() != "0",
                                reason="a WAL device needs root (losetup, mkfs, mount)")


def _loop_devices_on(backing_dir: str) -> list[str]:
    listing = subprocess.run(["losetup", "--list", "--noheadings", "-O", "NAME,BACK-FILE"], capture_output=True,
                             text=True).stdout
    return [line for line in listing.splitlines() if f"{backing_dir}/perflab-wal-" in line]


def _lag_allowance(count: float, window_s: float) -> float:
    """One second's worth of a count at the window's rate: what the statistics' lag can move it."""
    return count / window_s * PG_STATS_FLUSH_S


@needs_pg15
@needs_root
def test_forced_commits_sync_the_log_as_often_as_the_kernel_flushes_its_device(tmp_path):
    run, metrics = run_workload(tmp_path, WORKLOAD, {"target.server.wal_device.backing": "memory"}, users=4, **SHORT)
    assert run["status"] == "complete", run["reason"]
    assert "pg_wal on /dev/loop" in run["fingerprint"]["postgres_wal_device"]
    v = metrics.values
    assert v["errors_t"] == 0 and v["tx_ok"] > 200, v["tx_ok"]
    window, tx = v["window_s"], v["tx_ok"]

    # the server's syncs and the kernel's flushes of the device that holds nothing but pg_wal
    syncs, flushes = v["wal_syncs"], v["dev_flushes"]
    segments = v["wal_lsn_bytes"] / SEGMENT + 1
    assert syncs > 0.2 * tx, (syncs, tx)  # commits forced: a sync for every few commits at most
    assert abs(syncs - flushes) <= _lag_allowance(syncs, window) + 4 * segments + 8, (syncs, flushes)
    assert v["fsync_cmd"] == pytest.approx(syncs / tx) and v["flush_cmd_s"] == pytest.approx(flushes / tx)

    # the log's growth, by its insert position and by its records' lengths
    lsn, recorded, records = v["wal_lsn_bytes"], v["wal_bytes"], v["wal_records"]
    lag = _lag_allowance(recorded, window)
    overhead = 8 * records + lsn * 24 / 8192 + 40 * segments
    assert recorded - lag <= lsn <= recorded + overhead + lag, (lsn, recorded, records)
    assert v["wal_bytes_cmd"] == pytest.approx(lsn / tx)
    assert v["log_mb_sec"] == pytest.approx(lsn / window / 1e6)

    # the driver's commits: one per transaction, each part of its transaction's time
    assert abs(v["commits_t"] - tx) <= 4 + 1, (v["commits_t"], tx)  # at most a user's transaction at each edge
    assert 0 < v["commit_ms_t"] < 1000 * v["avg_last_t"]
    # the sync time is the server's own (track_wal_io_timing on), per sync
    assert v["wal_sync_ms"] == pytest.approx(1000 * v["wal_sync_sec"] / syncs)
    assert v["dev_rate_s"] > 0 and 0 <= v["dev_busy_pct_s"] <= 100 and v["dev_resp_s"] > 0

    # the device is gone with the run
    assert not _loop_devices_on("/dev/shm")
    assert not (MOUNT_ROOT.exists() and any(MOUNT_ROOT.iterdir()))


@needs_pg15
@needs_root
def test_unforced_commits_leave_the_syncs_to_the_wal_writer(tmp_path):
    # synchronous_commit off: no commit waits for the log; the WAL writer syncs it a few times a
    # second (wal_writer_delay 200 ms), so syncs and flushes fall to a small fraction of commits.
    run, metrics = run_workload(tmp_path, WORKLOAD, {"target.server.wal_device.backing": "memory",
                                                     "target.server.settings.synchronous_commit": "off"},
                                users=4, **SHORT)
    assert run["status"] == "complete", run["reason"]
    v = metrics.values
    assert v["errors_t"] == 0 and v["tx_ok"] > 200
    assert v["fsync_cmd"] < 0.1 and v["flush_cmd_s"] < 0.1, (v["fsync_cmd"], v["flush_cmd_s"])
    assert abs(v["wal_syncs"] - v["dev_flushes"]) <= _lag_allowance(v["wal_syncs"], v["window_s"]) + \
        4 * (v["wal_lsn_bytes"] / SEGMENT + 1) + 8

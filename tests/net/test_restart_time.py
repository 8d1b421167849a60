"""Restart time (examples/postgres/restart-time.yaml): a PostgreSQL server crashed after a job
stream, its recovery and a clean start timed, and the recovery's own account checked against the
positions the server gave before the crash.

The truth: the WAL to replay is known before the crash -- from the last checkpoint's redo point
to the insert position, every byte of it flushed (pg_control_checkpoint(), pg_current_wal_*_lsn
after a synchronous commit, repeated until no other process has inserted past the flush position).
The server's log must say that redo started at that redo point -- or, when the redo point is the
checkpoint record itself (a checkpoint of an idle server: nothing was written between the two),
at the record after it, one checkpoint record later (PostgreSQL reads past it: under 128 bytes)
-- and ended at the start of the last record at or before the crash position: one record short
of it. That last record may carry full-page images (8,192 bytes and headers for each block it
writes first since the checkpoint -- CI runs saw 8,272, 16,016 and 16,152 bytes: a background
process's record of one or two blocks, flushed after the commit), and a record a background
process might add between the reading and the crash is tens of bytes; the bound allows four
images and 512 bytes either way (33,792 bytes of the 7 MB replayed).
"""

from __future__ import annotations

import pytest

from perflab.sut.pg_restart import lsn_bytes

from .net_helpers import EXAMPLES, needs_pg15, run_workload

WORKLOAD = EXAMPLES / "postgres" / "restart-time.yaml"
# The last record carries a full-page image of each block it touches for the first time since
# the checkpoint: an update two (the old and the new heap page), a visibility-map change two, a
# b-tree split three or four. Two CI runs' last records were 16,016 and 16,152 bytes (two images).
LAST_RECORD_BYTES = 4 * (8192 + 128) + 512
CHECKPOINT_RECORD_BYTES = 128  # an online checkpoint record, aligned (120 bytes in 15 and 16)
# 1,000 jobs (it was 3,000): some 7 MB of WAL to replay (3,000 wrote 21 MB on 15 and 16), far
# above the 1 MB that tells the stream's WAL from an idle server's, in a third of the stream's time.
JOBS = 1000
PG_LOG_RESOLUTION_S = 0.01  # the log prints elapsed and CPU times to the hundredth of a second


def _check_restart(run: dict, metrics) -> dict:
    assert run["status"] == "complete", run["reason"]
    restart = run["sut"]["restart"]
    assert restart["error"] is None
    # redo began at the checkpoint's redo point, and replayed the WAL since it, to the last record
    skipped = lsn_bytes(restart["redo_start_lsn"]) - lsn_bytes(restart["checkpoint_redo_lsn"])
    assert skipped == 0 or 0 < skipped <= CHECKPOINT_RECORD_BYTES, restart
    short = lsn_bytes(restart["crash_lsn"]) - lsn_bytes(restart["redo_end_lsn"])
    assert -LAST_RECORD_BYTES <= short <= LAST_RECORD_BYTES, restart
    assert abs(restart["wal_since_checkpoint"] - restart["redo_bytes"]) <= LAST_RECORD_BYTES
    # the restart holds the redo and the end-of-recovery checkpoint it waits for
    v = metrics.values
    assert v["restart_t"] + 2 * PG_LOG_RESOLUTION_S >= v["redo_s"] + (v["recovery_ckpt_s"] or 0.0), v
    assert v["redo_cpu_s"] <= v["redo_s"] + 2 * PG_LOG_RESOLUTION_S  # one process: no more CPU than time
    # the whole restart in parts that sum to it: the log's stamped steps and perflab's clock beyond them
    parts = [v[k] for k in ("restart_launch_t", "restart_init_s", "restart_redo_s", "restart_ckpt_s", "restart_ready_s")]
    assert None not in parts and min(parts) >= 0 and sum(parts) == pytest.approx(v["restart_t"]), v
    assert abs(v["restart_redo_s"] - v["redo_s"]) <= 2 * PG_LOG_RESOLUTION_S   # stamps (ms) beside the log's elapsed
    assert v["startup_t"] > 0 and v["wal_ckpt_mb"] == pytest.approx(restart["wal_since_checkpoint"] / 1e6)
    if restart["redo_s"] > 0:
        assert v["redo_mb_sec"] == pytest.approx(restart["redo_bytes"] / restart["redo_s"] / 1e6)
    else:   # the log said 0.00 s (7 MB replayed in under 5 ms: a CI run on PostgreSQL 16): no rate
        assert v["redo_mb_sec"] is None
    return v


@needs_pg15
def test_pg15_recovers_the_wal_it_was_given_and_says_so(tmp_path):
    run, metrics = run_workload(tmp_path, WORKLOAD, {"load.jobs": JOBS})
    v = _check_restart(run, metrics)
    assert v["tx_ok"] == JOBS and v["wal_ckpt_mb"] > 1.0   # the stream's WAL, not an idle server's
    assert "PostgreSQL 15." in run["fingerprint"]["sut_version"]


def test_pg16_from_the_wheel_recovers_the_same_way(tmp_path):
    run, metrics = run_workload(tmp_path, WORKLOAD, {"load.jobs": JOBS, "target.server.bin": "pgserver"})
    _check_restart(run, metrics)
    assert "PostgreSQL 16." in run["fingerprint"]["sut_version"]

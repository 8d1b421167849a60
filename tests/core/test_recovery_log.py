"""The recovery lines of a PostgreSQL log, read from known text (15 and 16 print the same)."""

from __future__ import annotations

import pytest

from perflab.sut.pg_restart import lsn_bytes, parse_recovery_log, restart_parts

LOG = "\n".join([
    "2026-11-27 18:40:01.100 UTC [4242] LOG:  database system was interrupted; last known up at 2026-11-27 18:39:50 UTC",
    "2026-11-27 18:40:01.120 UTC [4242] LOG:  database system was not properly shut down; automatic recovery in progress",
    "2026-11-27 18:40:01.125 UTC [4242] LOG:  redo starts at 0/1A2B3C28",
    "2026-11-27 18:40:02.870 UTC [4242] LOG:  invalid record length at 0/2F000110: wanted 24, got 0",
    "2026-11-27 18:40:02.870 UTC [4242] LOG:  redo done at 0/2F0000D8 system usage: CPU: user: 1.21 s, system: 0.30 s, "
    "elapsed: 1.74 s",
    "2026-11-27 18:40:02.900 UTC [4243] LOG:  checkpoint starting: end-of-recovery immediate wait",
    "2026-11-27 18:40:03.310 UTC [4243] LOG:  checkpoint complete: wrote 9000 buffers (54.9%); 0 WAL file(s) added, "
    "0 removed, 0 recycled; write=0.350 s, sync=0.040 s, total=0.412 s; sync files=12, longest=0.010 s",
    "2026-11-27 18:40:03.320 UTC [4241] LOG:  database system is ready to accept connections",
])


def test_lsns_are_bytes():
    assert lsn_bytes("0/2F0000D8") == 0x2F0000D8
    assert lsn_bytes("1/0") == 1 << 32


def test_the_redo_and_the_end_of_recovery_checkpoint():
    log = parse_recovery_log(LOG)
    assert (log.redo_start, log.redo_end) == ("0/1A2B3C28", "0/2F0000D8")
    assert log.redo_bytes == 0x2F0000D8 - 0x1A2B3C28
    assert log.redo_s == 1.74 and abs(log.redo_cpu_s - 1.51) < 1e-9
    assert log.checkpoint_s == 0.412


def test_a_recovery_with_nothing_to_redo_and_no_checkpoint_lines():
    log = parse_recovery_log("LOG:  redo is not required\nLOG:  database system is ready to accept connections\n")
    assert log.redo_bytes == 0 and log.redo_s == 0.0 and log.checkpoint_s is None and log.redo_cpu_s is None
    assert parse_recovery_log("").redo_bytes is None


# -- the whole restart in parts that sum to it ---------------------------------------------------

RESTART_LOG = "\n".join([
    "2026-11-27 18:40:01.050 UTC [4241] LOG:  starting PostgreSQL 15.18 on x86_64-pc-linux-gnu",
    "2026-11-27 18:40:01.060 UTC [4241] LOG:  listening on IPv4 address \"127.0.0.1\", port 5432",
    LOG,
])


def test_the_log_stamps_each_step_from_its_first_line():
    log = parse_recovery_log(RESTART_LOG)
    # first line 18:40:01.050; redo starts .125, done 02.870, checkpoint complete 03.310, ready 03.320
    assert (log.at_redo_start, log.at_redo_done, log.at_checkpoint_done, log.at_ready) == \
        pytest.approx((0.075, 1.820, 2.260, 2.270))


def test_the_parts_of_a_restart_sum_to_it():
    parts = restart_parts(parse_recovery_log(RESTART_LOG), 2.400)
    assert parts is not None
    assert (parts.launch, parts.init, parts.redo, parts.checkpoint, parts.ready) == \
        pytest.approx((0.130, 0.075, 1.745, 0.440, 0.010))
    assert parts.launch + parts.init + parts.redo + parts.checkpoint + parts.ready == pytest.approx(2.400)
    # the stamped redo is the log's own elapsed to its resolution (1.74 s printed, 1.745 s stamped)
    assert abs(parts.redo - 1.74) <= 0.01


def test_a_restart_without_redo_or_ready_line():
    quick = "\n".join(["2026-11-27 18:40:01.000 UTC [1] LOG:  starting PostgreSQL 16.2",
                       "2026-11-27 18:40:01.020 UTC [2] LOG:  redo is not required",
                       "2026-11-27 18:40:01.090 UTC [1] LOG:  database system is ready to accept connections"])
    parts = restart_parts(parse_recovery_log(quick), 0.200)
    assert parts is not None and parts.redo == 0 and parts.checkpoint == 0
    assert (parts.launch, parts.init, parts.ready) == pytest.approx((0.110, 0.090, 0.0))
    # no ready line: the log does not account for the restart, so no parts (never guessed)
    assert restart_parts(parse_recovery_log(LOG.rsplit("\n", 1)[0]), 2.0) is None
    assert restart_parts(parse_recovery_log(RESTART_LOG), None) is None

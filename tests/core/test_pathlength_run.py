"""The counted pass against the truth: a loop of known length (perflab.sut.known_loop), SQLite
through apsw, and a command; the timed rows untouched by it."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from cli_helpers import in_window, load_run, perflab, run_dir_of, write_workload

from perflab.sut.known_loop import loop_instructions

SHORT, LONG = 100_000, 1_100_000

KNOWN = f"""
name: known-loop
target: {{kind: python}}
transactions:
  - {{name: short, class: short, call: "perflab.sut.known_loop:spin", kwargs: {{n: {SHORT}}}}}
  - {{name: long, class: long, call: "perflab.sut.known_loop:spin", kwargs: {{n: {LONG}}}}}
scripts: [{{name: s, steps: [short, long]}}]
load: {{users: 1}}
think: 0.01
timing: {{stagger: 0s, stabilization: 0s, measurement: 1s}}
placement: {{workers: 1}}
pathlength: {{transactions: 20, warmup: 2, timeout: 3m}}
"""


def _run(tmp_path, store, text):
    result = perflab("run", write_workload(tmp_path, text), "-q", store=store)
    assert result.returncode == 0, result.stderr
    run_id = result.stdout.strip().splitlines()[-1]
    return run_id, run_dir_of(store, run_id)


def test_the_known_loop_is_counted_to_the_instruction(tmp_path, store):
    run_id, run_dir = _run(tmp_path, store, KNOWN)
    run, tx = load_run(run_dir)
    record = run["pathlength"]
    assert record["status"] == "counted", record
    assert record["method"] == "client_requests" and record["transactions"] == 20 and record["errors"] == 0
    counted = pq.read_table(run_dir / "pathlength.parquet").to_pandas()
    short = counted[counted.transaction == "short"].instructions
    long = counted[counted.transaction == "long"].instructions
    assert len(short) == 10 and len(long) == 10  # the script's two steps, alternately
    # The loop's own instructions are exact; the call around it (ctypes, the adapter) adds a
    # few thousand that do not depend on n. So no count is below the loop's, the typical one
    # (the median: a garbage collection may fall into one call) is the loop's plus under 100,000...
    for values, n in ((short, SHORT), (long, LONG)):
        assert (values >= loop_instructions(n)).all(), values
        assert values.median() < loop_instructions(n) + 100_000, values
    # ... and the two differ by exactly the loop's difference, 2,000,000 (to 0.1%: 2,000).
    difference = long.median() - short.median()
    assert difference == pytest.approx(loop_instructions(LONG) - loop_instructions(SHORT), rel=1e-3)
    # The timed rows are native: no instruction count in them (valgrind never touched them).
    assert tx.instructions.isna().all()
    # INSTR/CMD (I) is the window's own mix at the counted means.
    values = json.loads(perflab("show", run_id, "--json", store=store).stdout)["values"]
    inside = in_window(run, tx[tx.ok])
    expected = sum(counted[counted.transaction == name].instructions.mean() * (inside.transaction == name).sum()
                   for name in ("short", "long")) / len(inside)
    assert values["instr_cmd_i"] == pytest.approx(expected, rel=1e-9)


SQLITE = """
name: sqlite-pathlength
target:
  kind: sqlite
  driver: apsw
  release: apsw==3.40.1.0
  database: t.db
  setup:
    - CREATE TABLE t (x INTEGER PRIMARY KEY, y INTEGER)
    - WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 20000) INSERT INTO t SELECT x, x FROM n
transactions:
  - {name: one, sql: "SELECT y FROM t WHERE x = :x", params: {x: {random_int: [1, 20000]}}}
  - {name: scan, sql: "SELECT sum(y) FROM t WHERE y % 7 = :r", params: {r: {random_int: [0, 6]}}}
scripts: [{name: s, steps: [one, scan]}]
load: {users: 1}
think: 0.01
timing: {stagger: 0s, stabilization: 0s, measurement: 1s}
placement: {workers: 1}
pathlength: {transactions: 10, warmup: 2, timeout: 3m}
"""


def test_sqlite_through_apsw_is_counted_per_transaction(tmp_path, store):
    _run_id, run_dir = _run(tmp_path, store, SQLITE)
    run, _tx = load_run(run_dir)
    assert run["pathlength"]["status"] == "counted", run["pathlength"]
    counted = pq.read_table(run_dir / "pathlength.parquet").to_pandas()
    one = counted[counted.transaction == "one"].instructions
    scan = counted[counted.transaction == "scan"].instructions
    assert counted.ok.all() and len(one) == 5 and len(scan) == 5
    # A lookup by key costs thousands of instructions; a scan of 20,000 rows, millions: every
    # row read, its y tested (at least 20 instructions a row).
    assert (one > 1_000).all() and (one < 1_000_000).all()
    assert (scan > 20 * 20_000).all() and scan.min() > 5 * one.max()
    # The pass ran on a fresh database of its own, in its own directory.
    assert (run_dir / "pathlength" / "t.db").exists()


COMMAND = """
name: command-pathlength
target: {kind: command}
transactions:
  - {name: nothing, command: ["/bin/true"]}
scripts: [{name: s, steps: [nothing]}]
load: {users: 1}
think: 0.05
timing: {stagger: 0s, stabilization: 0s, measurement: 1s}
placement: {workers: 1}
pathlength: {transactions: 3, warmup: 1, timeout: 3m}
"""


def test_a_command_is_counted_whole_and_the_same_every_time(tmp_path, store):
    _run_id, run_dir = _run(tmp_path, store, COMMAND)
    run, tx = load_run(run_dir)
    assert run["pathlength"]["status"] == "counted" and run["pathlength"]["method"] == "per_command"
    counted = pq.read_table(run_dir / "pathlength.parquet").to_pandas()
    assert len(counted) == 3 and counted.ok.all()
    # /bin/true: the dynamic loader and libc's start-up, tens of thousands of instructions, the same each time
    assert counted.instructions.nunique() == 1 and 10_000 < counted.instructions.iloc[0] < 10_000_000
    assert tx.instructions.isna().all()

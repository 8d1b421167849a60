"""The counted pass's per-function tables against the truth, on real runs under valgrind: the
known loop (perflab.sut.known_loop) read back as a function of its own to the instruction, and
every SUT's functions summing to its counted transactions (SQLite through apsw, a command).
Instruction counts do not depend on the machine's load."""

from __future__ import annotations

import json

import programs
import pyarrow.parquet as pq
import pytest
from cli_helpers import perflab, run_dir_of, write_workload

from perflab.drive.pathlength.functions import CALLS_FILE, FUNCTIONS_FILE, PERFLAB_CODE
from perflab.sut.known_loop import NAME, loop_instructions

SHORT, LONG = 100_000, 1_100_000
KNOWN = f"""
name: known-loop-functions
target: {{kind: python}}
transactions:
  - {{name: short, class: short, call: "perflab.sut.known_loop:spin", kwargs: {{n: {SHORT}}}}}
  - {{name: long, class: long, call: "perflab.sut.known_loop:spin", kwargs: {{n: {LONG}}}}}
scripts: [{{name: s, steps: [short, long]}}]
load: {{users: 1}}
think: 0.01
timing: {{stagger: 0s, stabilization: 0s, measurement: 1s}}
placement: {{workers: 1}}
pathlength: {{transactions: 8, warmup: 2, timeout: 3m}}
"""
SQLITE = """
name: sqlite-functions
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
pathlength: {transactions: 6, warmup: 2, timeout: 3m}
"""
COMMAND = """
name: command-functions
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


def _run(tmp_path, store, text):
    result = perflab("run", write_workload(tmp_path, text), "-q", store=store)
    assert result.returncode == 0, result.stderr
    run_dir = run_dir_of(store, result.stdout.strip().splitlines()[-1])
    record = json.loads((run_dir / "run.json").read_text())["pathlength"]
    assert record["status"] == "counted", record
    assert record["functions"] and record["functions_reason"] is None, record
    counts = pq.read_table(run_dir / "pathlength.parquet").to_pandas()
    functions = pq.read_table(run_dir / FUNCTIONS_FILE).to_pandas()
    # a transaction's functions sum to its count: per name, over the counted transactions
    summed = functions.groupby("transaction").exclusive.sum()
    for name, values in counts[counts.ok].groupby("transaction").instructions:
        assert summed[name] == pytest.approx(values.sum(), abs=1), name
        assert functions[functions.transaction == name]["index"].nunique() == len(values)
    # and each one's, by its number in the pass
    each = functions.groupby("index").exclusive.sum()
    assert each.to_numpy() == pytest.approx(counts.instructions[counts.ok].to_numpy(), abs=1)
    return record, functions, pq.read_table(run_dir / CALLS_FILE).to_pandas()


@programs.needs("valgrind")
def test_the_known_loop_is_a_function_of_its_own_counted_to_the_instruction(tmp_path, store):
    record, functions, calls = _run(tmp_path, store, KNOWN)
    loop = functions[(functions.object == PERFLAB_CODE) & (functions.function == NAME)]
    # every counted transaction's own, to the instruction
    assert sorted(loop.groupby("transaction").exclusive.unique().map(list).items()) == \
        [("long", [loop_instructions(LONG)]), ("short", [loop_instructions(SHORT)])]
    assert (loop.groupby("transaction").size() == 4).all()
    per_name = loop.groupby("transaction").exclusive.sum().to_dict()
    assert (loop.inclusive == loop.exclusive).all()     # it calls nothing
    # it is the largest function by far, and ctypes' call into it carries its count
    for name in ("short", "long"):
        mine = functions[functions.transaction == name].groupby("function").exclusive.sum()
        assert mine.sort_values().index[-1] == NAME
        into = calls[(calls.transaction == name) & (calls.callee == NAME)]
        assert into.inclusive.sum() == per_name[name]
    # the requests' own code is taken out with the empty calls
    assert functions[functions.function == "perflab_client_request"].exclusive.abs().sum() < 100
    assert record["functions_seconds"] < record["seconds"]


@programs.needs("valgrind")
def test_sqlite_through_apsw_is_counted_per_function(tmp_path, store):
    _record, functions, _calls = _run(tmp_path, store, SQLITE)
    apsw = functions[functions.object.str.startswith("apsw/")]
    scan = functions[functions.transaction == "scan"].groupby("function")[["exclusive", "inclusive"]].sum()
    # the interpreter of SQLite's bytecode does the scan: every row goes through it
    assert scan.loc["sqlite3VdbeExec"].exclusive > 20 * 20_000 / 3
    assert scan.loc["sqlite3_step"].inclusive > 0.8 * scan.exclusive.sum()
    assert (apsw[apsw.function.str.startswith("sqlite3")].file.str.endswith("sqlite3.c")).all()


@programs.needs("valgrind")
def test_a_command_is_counted_per_function_under_callgrind(tmp_path, store):
    record, functions, _calls = _run(tmp_path, store, COMMAND)
    assert record["tool"].endswith("callgrind") and record["method"] == "per_command"
    # the dynamic loader starts every process
    assert functions.object.str.startswith("ld-linux").any()

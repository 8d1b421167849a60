"""The per-function reading of callgrind's dumps (drive/pathlength/functions.py), on files written
here: each function's own instructions and its calls, part by part; names made comparable across
builds; perflab's own machine code named from the worker's map; the empty call subtracted
function by function so that a transaction's functions sum to its count."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from perflab.drive.pathlength.functions import (
    CALLS_FILE,
    FUNCTIONS_FILE,
    PERFLAB_CODE,
    CodeRange,
    function_name,
    median_part,
    object_name,
    profile_of,
    read_parts,
    write_profile,
)
from perflab.drive.pathlength.inprocess import write_functions

HEAD = "# callgrind format\nversion: 1\ncreator: callgrind-3.19.0\npid: 7\ncmd: python -m w\n\n"


def _part(n: int, label: str, body: str, total: int) -> str:
    return (f"part: {n}\n\ndesc: I1 cache:\ndesc: Trigger: Client Request: {label}\n\n"
            f"positions: line\nevents: Ir\nsummary: {total}\n\n{body}\ntotals: {total}\n\n")


# A transaction: main (in the python binary) runs 10 of its own, calls step twice (each 100
# inclusive); step (in apsw's module, a GCC clone and a recursion level) runs 40 of its own and
# calls memcpy in libc (60). The second part uses callgrind's name compression.
TX = """ob=/usr/bin/python3.11
fl=/src/main.c
fn=main
0 10
cob=/cache/releases/apsw-3.40.1.0/apsw/__init__.cpython-311-x86_64-linux-gnu.so
cfi=/project/sqlite3/sqlite3.c
cfn=step.constprop.0
calls=2 0
0 200

ob=/cache/releases/apsw-3.40.1.0/apsw/__init__.cpython-311-x86_64-linux-gnu.so
fl=/project/sqlite3/sqlite3.c
fn=step.constprop.0
0 50
cob=/usr/lib/x86_64-linux-gnu/libc.so.6
cfi=memcpy.S
cfn=memcpy
calls=2 0
+3 120
fn=step.constprop.0'2
* 30

ob=/usr/lib/x86_64-linux-gnu/libc.so.6
fl=memcpy.S
fn=memcpy
0 120
"""
COMPRESSED = """ob=(1) /usr/bin/python3.11
fl=(1) /src/main.c
fn=(1) main
0 10
cob=(2) /cache/releases/apsw-3.54.1.0/apsw/__init__.cpython-311-x86_64-linux-gnu.so
cfi=(2) /project/sqlite3/sqlite3.c
cfn=(2) step
calls=1 0
0 80

ob=(2)
fl=(2)
fn=(2)
0 80
"""
EMPTY = """ob=???
fl=???
fn=0x0000000004dfd010
0 3
cob=/usr/bin/python3.11
cfn=main
calls=1 0
0 4

ob=/usr/bin/python3.11
fl=/src/main.c
fn=main
0 4
"""


def _file(tmp_path, parts):
    path = tmp_path / "callgrind.out"
    path.write_text(HEAD + "".join(_part(i + 1, label, body, total) for i, (label, body, total) in enumerate(parts)))
    return path


def test_names_are_those_two_builds_share():
    assert object_name("/root/.cache/perflab/releases/apsw-3.40.1.0/apsw/__init__.cpython-311-x86_64-linux-gnu.so") \
        == "apsw/__init__.cpython-311-x86_64-linux-gnu.so"
    assert object_name("/usr/lib/postgresql/15/bin/postgres") == "postgres"
    assert object_name("???") == "(no object)"
    assert function_name("sqlite3BtreeNext.constprop.0") == "sqlite3BtreeNext"
    assert function_name("btreeNext.isra.0.part.0") == "btreeNext"
    assert function_name("_PyEval_EvalFrameDefault'2") == "_PyEval_EvalFrameDefault"
    assert function_name("heap_insert.cold") == "heap_insert"
    assert function_name("0x0000000000006250") == "0x0000000000006250"


def test_each_part_gives_its_functions_own_instructions_and_calls(tmp_path):
    path = _file(tmp_path, [("tx-0", TX, 210), ("tx-1", COMPRESSED, 90)])
    first, second = read_parts(path)
    main = ("python3.11", "main")
    step = ("apsw/__init__.cpython-311-x86_64-linux-gnu.so", "step")
    memcpy = ("libc.so.6", "memcpy")
    assert first.trigger == "Client Request: tx-0" and first.total == 210
    # the clone and its recursion level are one function; its own: 50 + 30, 30 of it inner
    assert dict(first.own) == {main: 10, step: 80, memcpy: 120}
    assert dict(first.inner) == {step: 30}
    assert sum(first.own.values()) == first.total
    ctx = {k: (*k, False) for k in (main, step, memcpy)}
    assert first.calls == {(ctx[main], ctx[step]): [2, 200], (ctx[step], ctx[memcpy]): [2, 120]}
    assert first.files[step] == "/project/sqlite3/sqlite3.c"
    # callgrind's compressed names, and the other release's path: the same function
    assert dict(second.own) == {main: 10, step: 80} and second.calls == {(ctx[main], ctx[step]): [1, 80]}
    # inclusive: the first activation's own and its calls' (step'2's own is inside nothing here)
    assert dict(first.inclusive) == {main: 210, step: 50 + 120, memcpy: 120}


def test_perflab_machine_code_is_named_from_the_map(tmp_path):
    path = _file(tmp_path, [("null-0", EMPTY, 7)])
    (part,) = read_parts(path, [CodeRange(0x4dfd000, 0x20, "perflab_known_loop")])
    assert (PERFLAB_CODE, "perflab_known_loop") in part.own
    (unnamed,) = read_parts(path)
    assert ("(no object)", "0x0000000004dfd010") in unnamed.own


def test_the_empty_call_is_subtracted_function_by_function(tmp_path):
    nulls = [("null-0", EMPTY.replace("0 3\n", "0 900\n"), 904), ("null-1", EMPTY, 7), ("null-2", EMPTY, 7)]
    path = _file(tmp_path, nulls + [("tx-0", TX + EMPTY, 217), ("tx-1", TX + EMPTY, 217)])
    written = write_functions(path, ["a", None], [], tmp_path)
    table = pq.read_table(tmp_path / FUNCTIONS_FILE).to_pandas()
    assert written == 3 and set(table.transaction) == {"a"}      # tx-1 is not counted
    assert (table["index"] == 0).all()
    own = dict(zip(table.function, table.exclusive))
    assert own["main"] == 10 and own["step"] == 80 and own["memcpy"] == 120
    assert own.get("0x0000000004dfd010", 0) == 0                 # the requests' own, taken out
    assert sum(own.values()) == 217 - 7                          # the transaction's count
    calls = pq.read_table(tmp_path / CALLS_FILE).to_pandas()
    assert set(zip(calls.caller, calls.callee, calls.inclusive)) == {("main", "step", 200.0),
                                                                   ("step", "memcpy", 120.0)}


def test_the_median_empty_call_is_the_one_subtracted(tmp_path):
    path = _file(tmp_path, [("null-0", EMPTY, 900), ("null-1", EMPTY, 7), ("null-2", EMPTY, 9)])
    assert median_part(read_parts(path)).total == 9
    assert median_part([]) is None


def test_a_profile_adds_transactions_by_name(tmp_path):
    path = _file(tmp_path, [("tx-0", TX, 210), ("tx-1", COMPRESSED, 90), ("tx-2", TX, 210)])
    profile = profile_of([(n, name, part) for n, (name, part) in enumerate(zip(["x", "y", "x"], read_parts(path)))],
                         None)
    assert profile.names == {0: "x", 1: "y", 2: "x"}
    assert profile.own[2][("libc.so.6", "memcpy")] == 120
    assert profile.calls["x"][(("python3.11", "main", False),
                               ("apsw/__init__.cpython-311-x86_64-linux-gnu.so", "step", False))] == [4, 400]
    write_profile(profile, tmp_path)
    table = pq.read_table(tmp_path / FUNCTIONS_FILE).to_pandas()
    assert table.groupby("transaction").exclusive.sum().to_dict() == {"x": 420, "y": 90}
    assert table.groupby("index").exclusive.sum().to_dict() == {0: 210, 1: 90, 2: 210}
    main = table[(table["index"] == 0) & (table.function == "main")]
    assert main.inclusive.item() == pytest.approx(210)
    assert table[(table["index"] == 2) & (table.function == "step")].exclusive_inner.item() == 30


# f re-enters itself through g (Python's interpreter through its call machinery): f -> g -> f'2.
# Summing f and f'2's calls would count the inner f twice; the first activation's do not.
RECURSIVE = """ob=/lib/libpython3.11.so
fl=ceval.c
fn=f
0 10
cfn=g
calls=1 0
0 100

fn=g
0 20
cfn=f'2
calls=1 0
0 80

fn=f'2
0 50
cob=/lib/libc.so.6
cfn=memcpy
calls=1 0
0 30

ob=/lib/libc.so.6
fn=memcpy
0 30
"""


def test_a_function_that_re_enters_itself_is_counted_once_in_its_inclusive(tmp_path):
    (part,) = read_parts(_file(tmp_path, [("tx-0", RECURSIVE, 110)]))
    f, g, memcpy = ("libpython3.11.so", "f"), ("libpython3.11.so", "g"), ("libc.so.6", "memcpy")
    assert dict(part.own) == {f: 60, g: 20, memcpy: 30} and part.inner[f] == 50
    assert dict(part.inclusive) == {f: 110, g: 100, memcpy: 30}   # never above the total
    assert ((*g, False), (*f, True)) in part.calls

"""PostgreSQL users in the compiled loop (native_pg.py) against a real PostgreSQL 15: the same
seed sends the same parameter values as the Python path, in the same order; a server that
refuses a logon fails the run with the server's words on either path."""

from __future__ import annotations

import programs
import pyarrow.parquet as pq
import pytest

from .net_helpers import needs_pg15, run_workload

pytestmark = programs.needs_compiled_loop()
PYTHON = {"driver.core": "python"}


def _users(steps: str, think: float, users: int, measurement: float) -> str:
    """A workload's one script and its users (the part every workload here shares)."""
    return f"""scripts:
  - {{name: s, steps: [{steps}]}}
think: {think}
load: {{users: {users}}}
timing: {{stagger: 0s, stabilization: 0s, measurement: {measurement}s}}
"""


def _run(tmp_path, text: str, changes: dict | None):
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "w.yaml"
    path.write_text(text)
    run, _ = run_workload(tmp_path, path, changes)
    return run

# echo() refuses every call with its arguments in the error: each transaction's row carries the
# values it was sent, as the server read them. One user, so the shared sequence is drawn in one
# order; `two` sends them inside BEGIN .. ROLLBACK after a statement that succeeds.
ECHO_WORKLOAD = """
name: pg-echo
target:
  kind: postgres
  server: {bin: /usr/lib/postgresql/15/bin, settings: {shared_buffers: 32MB}}
  setup:
    - |
      CREATE FUNCTION echo(a bigint, b text, c bigint, d text, e text) RETURNS int LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'drew % % % % %', a, b, c, d, e; END $$
transactions:
  - name: one
    sql: ["SELECT echo(:a, :b, :c, :d, :e)"]
    params:
      a: {random_int: [1, 1000000]}
      b: {choice: [x, y, z]}
      c: {sequence: 100, step: 7}
      d: {choice: [p, q, r], weights: [1, 3, 0.5]}
      e: {value: same}
  - name: two
    sql: ["SELECT :a::int + 1", "SELECT echo(:a, :b, :c, :d, :e)"]
    params:
      a: {random_int: [-50, 50]}
      b: {choice: [u, v]}
      c: {sequence: -3, step: -1}
      d: {choice: [s], weights: [2]}
      e: {choice: [k, l, m]}
seed: 7
""" + _users("one, two", think=0.01, users=1, measurement=1.5)


@needs_pg15
def test_the_compiled_loop_sends_the_python_paths_parameter_values(tmp_path):
    errors = {}
    for core, changes in (("native", None), ("python", PYTHON)):
        run = _run(tmp_path / core, ECHO_WORKLOAD, changes)
        assert run["fingerprint"]["driver_core"].split(" ")[0] == core, run["fingerprint"]["driver_core"]
        rows = pq.read_table(tmp_path / core / "store" / "runs" / run["run_id"] / "transactions.parquet").to_pandas()
        rows = rows.sort_values("intended_start")
        assert not rows["ok"].any()
        errors[core] = list(zip(rows["transaction"], rows["error"]))
    native, python = errors["native"], errors["python"]
    n = min(len(native), len(python))
    assert n >= 20, (len(native), len(python))
    assert native[:n] == python[:n]
    assert native[0][1].startswith("RaiseError: drew ")
    first_one = [e for t, e in native if t == "one"][:2]
    assert [e.split()[4] for e in first_one] == ["100", "107"]  # the sequence, step 7
    first_two = [e for t, e in native if t == "two"][:2]
    assert [e.split()[4] for e in first_two] == ["-3", "-4"]


TOO_MANY = """
name: pg-too-many
target:
  kind: postgres
  server: {bin: /usr/lib/postgresql/15/bin,
           settings: {shared_buffers: 32MB, max_connections: 6, superuser_reserved_connections: 0}}
  setup: ["CREATE TABLE t (k int PRIMARY KEY, v int)", "INSERT INTO t VALUES (1, 0)"]
transactions:
  - {name: fine, sql: ["SELECT v FROM t WHERE k = 1"]}
seed: 1
""" + _users("fine", think=0.05, users=12, measurement=1)


@needs_pg15
@pytest.mark.parametrize("changes", [None, PYTHON], ids=["native", "python"])
def test_a_refused_logon_fails_the_run_with_the_servers_words(tmp_path, changes):
    run = _run(tmp_path, TOO_MANY, changes)
    assert run["status"] == "failed"
    assert run["reason"] == "cannot connect to PostgreSQL: TooManyConnectionsError: sorry, too many clients already"


# Each user's backend ends itself in `gone` (alone, and inside BEGIN after an UPDATE): the server
# sends a FATAL ErrorResponse and closes (asyncpg's words: the connection lost, and the server's
# message); the user's next transaction logs on anew and runs.
SELF_KILL = """
name: pg-self-kill
target:
  kind: postgres
  server: {bin: /usr/lib/postgresql/15/bin, settings: {shared_buffers: 32MB}}
  setup: ["CREATE TABLE t (k int PRIMARY KEY, v int)", "INSERT INTO t VALUES (1, 0)"]
transactions:
  - {name: gone, sql: ["SELECT pg_terminate_backend(pg_backend_pid())"]}
  - {name: gone_inside, sql: ["UPDATE t SET v = v + 1 WHERE k = 1", "SELECT pg_terminate_backend(pg_backend_pid())"]}
  - {name: fine, sql: ["UPDATE t SET v = v + 1 WHERE k = 1", "SELECT v FROM t WHERE k = 1"]}
seed: 1
""" + _users("gone, fine, gone_inside, fine", think=0.02, users=2, measurement=2)


@needs_pg15
@pytest.mark.parametrize("changes", [None, PYTHON], ids=["native", "python"])
def test_a_connection_the_server_ends_fails_its_transaction_with_the_servers_words_and_the_next_logs_on_anew(
        tmp_path, changes):
    run = _run(tmp_path, SELF_KILL, changes)
    assert run["status"] == "complete", run["reason"]
    rows = pq.read_table(tmp_path / "store" / "runs" / run["run_id"] / "transactions.parquet").to_pandas()
    by_name = {name: group for name, group in rows.groupby("transaction")}
    for name in ("gone", "gone_inside"):
        gone = by_name[name]
        assert len(gone) >= 4 and not gone["ok"].any()
        assert set(gone["error"]) == {"ConnectionDoesNotExistError: connection was closed in the middle of operation: "
                                      "terminating connection due to administrator command"}, set(gone["error"])
    fine = by_name["fine"]
    assert len(fine) >= 8 and fine["ok"].all(), fine[~fine["ok"]]["error"].unique()

"""PostgreSQL as the SUT: fresh servers per run, the native driver, pgbench, the server's own
counters, per-component CPU, and a server that dies mid-run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from perflab.drive.load import native_http

from .net_helpers import EXAMPLES, REPO, needs_pg15, needs_pgbench, run_workload

WORKLOAD = EXAMPLES / "postgres" / "debit-credit.yaml"
PGBENCH_WORKLOAD = EXAMPLES / "postgres" / "debit-credit-pgbench.yaml"
# 1 s of stabilization: nothing asserted here needs a warm-up longer than opening the connections
# and preparing the statements (tens of ms); the window stays 6 s, which ETR RATIO's bound below
# is made of.
SHORT = {"stagger": 0.0, "stabilization": 1.0, "duration": 6.0}

# ETR RATIO's law: the server's commit count (pg_stat_database.xact_commit) agrees with the
# driver's count. PostgreSQL's backends publish their counts at most once a second
# (PGSTAT_MIN_INTERVAL, 15 and 16; these users never think, so no backend sits idle on unflushed
# counts), so the counter seen at each window edge lags by up to a second of commits and the difference of the two lags is within one second's worth: the ratio
# is 1 within 1 s / window, plus 2% for the monitor's interpolation between samples (0.19 over
# SHORT's 6 s window).
PG_STATS_FLUSH_S = 1.0


def _commits_match(values) -> bool:
    return abs(values["etr_ratio"] - 1.0) <= PG_STATS_FLUSH_S / values["window_s"] + 0.02


@pytest.fixture(scope="module")
def first_and_second(tmp_path_factory):
    """Two native runs of debit-credit with a cache of templates of their own: the first builds
    the loaded template (initdb, pgbench -i), the second starts from its copy. The native test's
    assertions read the first, the template test's read both (one run fewer than a run each)."""
    root = tmp_path_factory.mktemp("pg-native")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("PERFLAB_CACHE", str(root / "cache"))
        first = run_workload(root / "first", WORKLOAD, users=8, **SHORT)
        second = run_workload(root / "second", WORKLOAD, users=4, **SHORT)
    return root, first, second


@needs_pg15
def test_native_run_on_pg15_counts_commits_like_the_driver(first_and_second):
    root, (run, metrics), _ = first_and_second
    assert run["status"] == "complete", run["reason"]
    assert run["fingerprint"]["sut_version"].startswith("PostgreSQL 15.")
    v = metrics.values
    assert v["errors_t"] == 0 and v["tx_ok"] > 100
    # one commit per debit-credit transaction: the server's count matches the driver's
    assert _commits_match(v), (v["etr"], v["etr_t"])
    # ... and the COMMITs the driver timed (COMMIT TIME (T)) are its transactions: the counts are
    # read at the window's edges, where each of the 8 users may have one in flight
    assert abs(v["commits_t"] - v["tx_ok"]) <= 8, (v["commits_t"], v["tx_ok"])
    assert 0 < v["commit_ms_t"] < v["avg_last_t"] * 1000
    assert v["itr_s"] > v["etr_t"]  # the SUT was not 100% busy: capacity above the rate
    # the backends do the work; the background processes are components of their own
    components = metrics.per_component
    assert {"backends", "checkpointer", "walwriter", "postmaster"} <= set(components)
    cpu = {name: (row.get("srv_cp_sec_v") or 0) + (row.get("srv_virt_sec_v") or 0) for name, row in components.items()}
    assert max(cpu, key=cpu.get) == "backends", cpu
    run_dir = root / "first" / "store" / "runs" / run["run_id"]
    assert not (run_dir / "pgdata").exists()  # data removed, log kept
    assert (run_dir / "postgres.log").exists()


def test_pgserver_wheel_runs_postgresql_16(tmp_path):
    run, metrics = run_workload(tmp_path, WORKLOAD, {"target.server.bin": "pgserver"}, users=4, **SHORT)
    assert run["status"] == "complete", run["reason"]
    assert run["fingerprint"]["sut_version"].startswith("PostgreSQL 16.")
    assert metrics.values["errors_t"] == 0
    assert _commits_match(metrics.values), metrics.values["etr_ratio"]


@needs_pg15
@needs_pgbench
def test_pgbench_run_reports_pgbench_own_rate(tmp_path):
    # pgbench's own count, rate and mean latency against the rows imported from its log: the same
    # transactions over the same time (measured: the rates agree to 1e-5), so a window of 2 s
    # without pgbench's warm-up run (stabilization 0) checks it as well as a long one.
    run, metrics = run_workload(tmp_path, PGBENCH_WORKLOAD, users=4, stagger=0.0, stabilization=0.0, duration=2.0)
    assert run["status"] == "complete", run["reason"]
    tps = run["external"]["tps"]
    assert run["external"]["transactions"] == metrics.values["tx_ok"]
    assert metrics.values["etr_t"] == pytest.approx(tps, rel=0.01)
    # (no ETR RATIO check here: pgbench's backends publish their last second of commits when
    # they exit, just after a window this short ends; see drive/external/pgbench.py)
    assert metrics.values["avg_last_t"] * 1000 == pytest.approx(run["external"]["latency_avg_ms"], rel=0.05)
    assert metrics.values["util_proc_s"] is not None and metrics.values["pbt_cmd_s"] > 0


@needs_pg15
def test_server_killed_mid_run_fails_the_run_with_the_reason(tmp_path):
    store = tmp_path / "store"
    env = {**os.environ, "PERFLAB_HOME": str(store)}
    proc = subprocess.Popen([sys.executable, "-m", "perflab.cli", "run", str(WORKLOAD), "-q", "-d", "30s"],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        pid = None
        deadline = time.monotonic() + 120
        while pid is None and time.monotonic() < deadline:
            for path in (store / "runs").glob("*/run.json") if (store / "runs").exists() else []:
                run = json.loads(path.read_text())
                if (run.get("sut") or {}).get("pids"):
                    pid = run["sut"]["pids"][0]
            time.sleep(0.2)
        assert pid is not None, "the server never started"
        time.sleep(4)  # in the middle of the run
        os.kill(pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, err
    run = json.loads(next((store / "runs").glob("*/run.json")).read_text())
    assert run["status"] == "failed"
    assert "PostgreSQL server" in run["reason"] and "SIGKILL" in run["reason"], run["reason"]
    assert run["valid"] is False
    assert run["window"]["end"] < run["window"]["planned_end"]  # measured up to the failure


@needs_pg15
def test_runs_after_the_first_start_from_its_loaded_template(first_and_second, monkeypatch):
    root, (first, _), (second, metrics) = first_and_second
    monkeypatch.setenv("PERFLAB_CACHE", str(root / "cache"))
    assert (first["status"], second["status"]) == ("complete", "complete"), (first["reason"], second["reason"])
    assert first["fingerprint"]["postgres_data"] == "initdb"
    assert second["fingerprint"]["postgres_data"] == "template copy"
    # the copy is the loaded database: every transaction finds its rows, and commits match
    assert metrics.values["errors_t"] == 0 and _commits_match(metrics.values), metrics.values["etr_ratio"]
    # a different load is a different template (only its start is asserted: a window of 1 s)
    scaled, _ = run_workload(root / "scaled", WORKLOAD, {"target.pgbench_init.scale": 2}, users=4,
                             stagger=0.0, stabilization=0.0, duration=1.0)
    assert scaled["fingerprint"]["postgres_data"] == "initdb"
    assert len(list((root / "cache" / "pg-templates").iterdir())) == 3   # two templates and the lock


PROC_WORKLOAD = EXAMPLES / "postgres" / "debit-credit-proc.yaml"


@needs_pg15
def test_the_one_call_transaction_commits_once_and_its_knob_adds_backend_cpu(tmp_path):
    # debit-credit as one PL/pgSQL call: one commit per transaction (ETR RATIO's law, as above).
    # The knob's 200,000 empty iterations cost the backend about 1.2 ms (6.2 ns each, bench/knob.py),
    # some 14x the transaction's own 0.085 ms: a CPU per command more than 5x the plain one's is
    # the knob working, whatever the machine's speed within a factor of 2.5. The knob's run is
    # 0.5 + 3 s: its CPU per command is a mean over thousands of calls, and its commits are held to
    # the same law over its own window (1 s / 3 s + 2%); the plain run keeps SHORT's 6 s.
    _, plain = run_workload(tmp_path / "plain", PROC_WORKLOAD, users=2, **SHORT)
    _, knob = run_workload(tmp_path / "knob", PROC_WORKLOAD, {"transactions.tpcb_like.params.knob.value": 200_000},
                           users=2, stagger=0.0, stabilization=0.5, duration=3.0)
    for values in (plain.values, knob.values):
        assert values["errors_t"] == 0 and values["tx_ok"] > 100
        assert _commits_match(values), values["etr_ratio"]
    assert knob.values["pbt_cmd_s"] > 5 * plain.values["pbt_cmd_s"]


HUNG_WORKLOAD = """
name: pg-hung
target:
  kind: postgres
  server: {bin: /usr/lib/postgresql/15/bin, settings: {shared_buffers: 32MB}}
  setup: ["CREATE TABLE t (k int PRIMARY KEY, v int)", "INSERT INTO t VALUES (1, 0)"]
  connections: per_user
  prepared: true
transactions:
  - {name: sleepy, sql: ["SELECT v FROM t WHERE k = 1", "SELECT pg_sleep(30)"]}   # no lock held while it sleeps
  - {name: bad, sql: ["UPDATE t SET v = v + 1 WHERE k = 1", "SELECT 1 / 0"]}
  - {name: fine, sql: ["UPDATE t SET v = v + 1 WHERE k = 1", "SELECT v FROM t WHERE k = 1"]}
scripts:
  - {name: s, steps: [fine, bad, fine, sleepy, fine, fine]}
think: 0.05
load: {users: 2}
timing: {stagger: 0s, stabilization: 0s, measurement: 3s, deadline: 0.5s}
seed: 1
"""


@needs_pg15
@pytest.mark.parametrize("core", ["native", "python"])
def test_a_hung_or_failed_transaction_leaves_the_user_a_working_connection(tmp_path, core):
    """The PostgreSQL users' deadline (one sweep, not a timer per transaction) and their
    BEGIN/COMMIT, in the compiled loop and on the Python path: a transaction past its deadline is
    hung, its connection dropped and the user's next one runs on a new one; a statement that fails
    rolls its transaction back, and the same connection serves the next one (no "current
    transaction is aborted")."""
    import pyarrow.parquet as pq

    path = tmp_path / "w.yaml"
    path.write_text(HUNG_WORKLOAD)
    run, metrics = run_workload(tmp_path, path, {"driver.core": "python"} if core == "python" else None)
    if native_http.NOT_BUILT is None:
        assert run["fingerprint"]["driver_core"].split(" ")[0] == core
    tx = pq.read_table(tmp_path / "store" / "runs" / run["run_id"] / "transactions.parquet").to_pandas()
    by_name = {name: group for name, group in tx.groupby("transaction")}
    sleepy, bad, fine = by_name["sleepy"], by_name["bad"], by_name["fine"]
    assert len(sleepy) >= 2 and not sleepy["ok"].any()
    assert set(sleepy["error"]) == {"deadline 0.5 s exceeded"}, set(sleepy["error"])
    took = sleepy["end"] - sleepy["actual_start"]
    assert (took >= 0.5).all() and (took < 0.5 + 0.1 + 0.3).all(), took  # the deadline, a sweep, the loop
    assert len(bad) >= 2 and set(bad["error"]) == {"DivisionByZeroError: division by zero"}
    assert len(fine) >= 6 and fine["ok"].all(), fine[~fine["ok"]]["error"].unique()
    # a hung transaction makes the run invalid, as on every other target
    assert run["status"] == "complete", run["reason"]
    assert {c["code"] for c in run["invalid"]} >= {"hung_transactions"}, run["invalid"]

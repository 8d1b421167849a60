"""Faults where users meet them (issue 40), in a study of real servers: the SUT's server killed in
the middle of a measurement window (nginx, PostgreSQL), and a PostgreSQL the study does not start
restarted between two blocks. In each, no traceback; the run that met the fault kept, with its
transactions, and marked failed with the reason; the study going on with its next runs, judging
what it has, and its study.json, report.md and exit code saying what happened.

(SIGKILL at six points of perflab's own process, a hung SUT and a lost agent are in
tests/reliability/; a server killed in a single run in test_postgres.py and
test_external_http_drivers.py.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow.parquet as pq

from perflab.errors import EXIT_INCONCLUSIVE, EXIT_NO_COMPARISON

from .net_helpers import EXAMPLES, PG15_BIN, REPO, needs_nginx, needs_pg15

#: Which run of the schedule meets the fault: the first of block 1 (blocks 0 and 2 stay whole).
KILLED_ORDER = 2


def nginx_workload(directory: Path) -> Path:
    """nginx on a port of its own per run ({service_port}): the examples' static pages."""
    conf = (EXAMPLES / "http" / "nginx-nolog.conf").read_text()
    conf = conf.replace("listen 127.0.0.1:18080;", "listen 127.0.0.1:{service_port};")
    (directory / "nginx.conf").write_text(conf.replace("{workload_dir}/html", str(EXAMPLES / "http" / "html")))
    path = directory / "w.yaml"
    path.write_text("""
name: nginx-killed
service:
  command: [nginx, -c, "{run_dir}/nginx_conf", -e, "{run_dir}/nginx-error.log", -g, "daemon off;"]
  files: {nginx_conf: nginx.conf}
  ready: {http: "http://127.0.0.1:{service_port}/index.html"}
  stop_signal: SIGQUIT
target: {kind: http, base_url: "http://127.0.0.1:{service_port}", client: httptools}
transactions: [{name: page, http: [{path: /index.html, expect_body: Welcome}]}]
scripts: [{name: s, steps: [page]}]
think: 0.002
load: {users: 2}
timing: {stagger: 0s, stabilization: 0.5s, measurement: 4s}
""")
    return path


def pg_workload(directory: Path, target: str) -> Path:
    path = directory / "w.yaml"
    path.write_text(f"""
name: pg-fault
target:
  kind: postgres
{target}
  setup: ["CREATE TABLE IF NOT EXISTS t (k int PRIMARY KEY, v int)",
          "INSERT INTO t SELECT g, 0 FROM generate_series(1, 100) g ON CONFLICT DO NOTHING"]
  connections: per_user
transactions:
  - {{name: up, sql: ["UPDATE t SET v = v + 1 WHERE k = :k"], params: {{k: {{random_int: [1, 100]}}}}}}
scripts: [{{name: s, steps: [up]}}]
think: 0.002
load: {{users: 2}}
timing: {{stagger: 0s, stabilization: 0.5s, measurement: 4s}}
""")
    return path


def study_file(directory: Path, primary: str = "etr_t") -> Path:
    path = directory / "s.yaml"
    path.write_text(f"name: fault-study\nworkload: w.yaml\nconfigurations:\n  - {{name: a, set: {{seed: 1}}}}\n"
                    f"  - {{name: b, set: {{seed: 2}}}}\nblocks: 3\ngate_metrics: [{primary}]\n")
    return path


def kill_server_mid_window(store: Path, order: int, found: dict) -> None:
    """SIGKILL the SUT's server of the run at `order` of the schedule, a second into its window
    (its live file exists once the window is near: no assertion on when)."""
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        for path in store.glob("runs/*/run.json"):
            try:
                run = json.loads(path.read_text())
            except ValueError:   # being replaced
                continue
            pids = (run.get("sut") or {}).get("pids")
            if (run.get("config") or {}).get("order") == order and pids and (path.parent / "live.json").exists():
                time.sleep(1.5)
                os.kill(pids[0], signal.SIGKILL)
                found["run_id"] = run["run_id"]
                return
        time.sleep(0.05)


def study_with_a_kill(tmp_path: Path) -> tuple[subprocess.CompletedProcess, Path, str]:
    store = tmp_path / "store"
    found: dict = {}
    killer = threading.Thread(target=kill_server_mid_window, args=(store, KILLED_ORDER, found), daemon=True)
    killer.start()
    done = subprocess.run([sys.executable, "-m", "perflab.cli", "study", str(tmp_path / "s.yaml"), "--gate"],
                          cwd=REPO, env={**os.environ, "PERFLAB_HOME": str(store)}, capture_output=True, text=True,
                          timeout=900)
    killer.join(timeout=5)
    assert "run_id" in found, done.stderr
    return done, store, found["run_id"]


def assert_the_study_says_what_happened(done, store: Path, killed: str, says: str) -> None:
    assert "Traceback" not in done.stderr, done.stderr
    study_dir = Path(done.stdout.strip().splitlines()[-1])
    doc = json.loads((study_dir / "study.json").read_text())
    assert doc["status"] == "complete", doc["reason"]
    runs = {r["run_id"]: r for r in doc["runs"]}
    assert len(runs) == 6
    # the killed run: kept, failed with the reason, excluded for it, its transactions up to the kill stored
    run = runs[killed]
    assert run["status"] == "failed" and says in run["reason"] and "SIGKILL" in run["reason"], run["reason"]
    assert run["exclusions"][0]["code"] == "run_not_complete", run["exclusions"]   # (and errors, where it had some)
    record = json.loads((store / "runs" / killed / "run.json").read_text())
    assert record["status"] == "failed" and record["valid"] is False
    assert record["window"]["end"] < record["window"]["planned_end"]
    assert pq.read_table(store / "runs" / killed / "transactions.parquet").num_rows > 0
    # the study went on: the runs after it started servers of their own and completed
    assert [r["status"] for r in doc["runs"]].count("failed") == 1
    assert all(r["status"] == "complete" for r in doc["runs"] if r["order"] > KILLED_ORDER)
    # block 1 lost its pair: 2 of 3 blocks cannot decide, and --gate says so in its exit code
    assert done.returncode == doc["verdict"]["exit_code"] in (EXIT_INCONCLUSIVE, EXIT_NO_COMPARISON), done.stderr
    assert doc["verdict"]["primary"][0]["verdict"] in ("INCONCLUSIVE", None)
    report = (study_dir / "report.md").read_text()
    assert f"run {killed} (a, block 1) excluded: run failed: {run['reason']}" in report
    listed = subprocess.run([sys.executable, "-m", "perflab.cli", "runs", "--json"], cwd=REPO, capture_output=True,
                            text=True, env={**os.environ, "PERFLAB_HOME": str(store)}, timeout=120)
    assert {r["run_id"]: r["status"] for r in json.loads(listed.stdout)}[killed] == "failed"


@needs_nginx
def test_nginx_killed_in_a_window_of_a_study(tmp_path):
    nginx_workload(tmp_path)
    study_file(tmp_path)
    done, store, killed = study_with_a_kill(tmp_path)
    assert_the_study_says_what_happened(done, store, killed, "service nginx")


@needs_pg15
def test_postgresql_killed_in_a_window_of_a_study(tmp_path):
    pg_workload(tmp_path, f"  server: {{bin: {PG15_BIN}, settings: {{shared_buffers: 32MB}}, template: false}}")
    study_file(tmp_path)
    done, store, killed = study_with_a_kill(tmp_path)
    assert_the_study_says_what_happened(done, store, killed, "PostgreSQL server")


@needs_pg15
def test_postgresql_restarted_between_two_blocks(tmp_path):
    """A server the study does not start (target.dsn) restarted after block 0's last run, before
    block 1's first: every run complete, none losing a transaction to it, and the study says the
    server restarted between those two runs, and that the runs after began on a cold server."""
    from perflab.store.catalog import Store
    from perflab.study.events import RunEnded
    from perflab.study.runner import StudyRunner
    from perflab.sut.postgres_server import PostgresServer
    from perflab.workload.model import PostgresServer as ServerSpec

    (tmp_path / "server").mkdir()
    server = PostgresServer(ServerSpec(bin=str(PG15_BIN), settings={"shared_buffers": "32MB"}, template=False),
                            "perflab", tmp_path / "server", "external", None, None)
    server.start()
    ended: list[RunEnded] = []

    def restart_after_block_0(event) -> None:
        # called by the study between its runs: the restart falls between two runs, by construction
        if isinstance(event, RunEnded):
            ended.append(event)
            if len(ended) == 2:
                server.shut_down()
                server.start_again()

    try:
        pg_workload(tmp_path, f'  dsn: "postgresql://postgres@127.0.0.1:{server.port}/perflab"')
        runner = StudyRunner(study_file(tmp_path), Store(tmp_path / "store"), on_event=restart_after_block_0)
        doc = runner.run()
    finally:
        server.stop()
    assert doc.status == "complete" and len(doc.runs) == 6
    # none of them failed or lost transactions to the restart (the steadiness gate judges the
    # host's pace as it always does)
    assert all(r.status == "complete" for r in doc.runs), [r.reason for r in doc.runs]
    lost = {"run_not_complete", "error_rate", "stalled", "no_transactions", "hung_transactions"}
    assert not [c.code for r in doc.runs for c in r.exclusions if c.code in lost], [r.exclusions for r in doc.runs]
    before, after = doc.runs[1], doc.runs[2]
    assert (before.block, after.block) == (0, 1)
    restarts = [w for w in doc.warnings if "restarted" in w.text]
    assert len(restarts) == 1, [w.text for w in doc.warnings]
    assert restarts[0].values["before"] == before.run_id and restarts[0].values["after"] == after.run_id
    assert "cold server" in restarts[0].text
    from perflab.report.write import write_reports

    paths = write_reports(doc, runner.dir)
    assert f"restarted between run {before.run_id} and run {after.run_id}" in Path(paths["markdown"]).read_text()

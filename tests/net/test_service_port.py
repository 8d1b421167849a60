"""`{service_port}` (perflab.workload.service_port): each run of a service workload takes a port
nobody listens on, so two runs of one workload can run at once (a duet's pair). Real servers:
the known-cost HTTP server, started by the service block."""

from __future__ import annotations

import json
import os
import re
import subprocess
import textwrap
from pathlib import Path

from cli_helpers import PERFLAB

from perflab.workload.model import Workload
from perflab.workload.service_port import replace_in_text

WORKLOAD = """
name: port-token
service:
  command: ["{python}", -m, perflab.sut.known_cost_http, --port, "{service_port}", --cost-us, "50"]
  files: {port.txt: port.template}
  ready: {http: "http://127.0.0.1:{service_port}/?cost_us=0"}
  stop_signal: SIGINT
target: {kind: http, base_url: "http://127.0.0.1:{service_port}", client: httptools}
transactions: [{name: get, http: [{path: /, expect_status: 200}]}]
scripts: [{name: s, steps: [get]}]
load: {users: 2}
timing: {stagger: 0s, stabilization: 0.5s, measurement: 2s}
"""


def test_replace_in_text_reaches_every_string_and_keeps_what_it_does_not_change():
    workload = Workload.model_validate(__import__("yaml").safe_load(WORKLOAD))
    filled = replace_in_text(workload, "{service_port}", "41234")
    assert filled.service.command[4] == "41234"
    assert filled.service.ready.http == "http://127.0.0.1:41234/?cost_us=0"
    assert filled.target.base_url == "http://127.0.0.1:41234"
    assert workload.target.base_url == "http://127.0.0.1:{service_port}"   # the original is untouched
    assert filled.transactions is workload.transactions                    # nothing to change: the same object


def test_two_runs_of_one_workload_at_once_each_listen_on_their_own_port(tmp_path):
    (tmp_path / "port.template").write_text("listen {service_port}\n")
    path = tmp_path / "w.yaml"
    path.write_text(textwrap.dedent(WORKLOAD).lstrip())
    # two perflab processes, each with a store of its own (one store would call them concurrent)
    procs = [subprocess.Popen([*PERFLAB, "run", str(path), "--quiet", "--no-monitor"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "PERFLAB_HOME": str(tmp_path / f"store{i}")}) for i in (0, 1)]
    outputs = [p.communicate(timeout=120) for p in procs]
    ports = set()
    for i, (p, (_out, err)) in enumerate(zip(procs, outputs)):
        assert p.returncode == 0, err
        run_json = next((tmp_path / f"store{i}").rglob("run.json"))
        run = json.loads(run_json.read_text())
        assert run["status"] == "complete", run["reason"]
        url = run["workload"]["target"]["base_url"]
        port = int(re.fullmatch(r"http://127\.0\.0\.1:(\d+)", url).group(1))
        assert run["workload"]["service"]["command"][4] == str(port)
        assert (run_json.parent / "port.txt").read_text() == f"listen {port}\n"
        ports.add(port)
    assert len(ports) == 2


def test_run_dir_given_to_the_service_is_absolute_with_the_default_relative_store(tmp_path):
    """The default store is ./perflab-runs; the service runs in its run directory (nginx even
    from its own prefix), so `{run_dir}` must not be relative (it named
    /usr/share/nginx/perflab-runs/... once)."""
    (tmp_path / "port.template").write_text("listen {service_port}\n")
    text = textwrap.dedent(WORKLOAD).lstrip().replace(
        "  stop_signal: SIGINT\n", '  stop_signal: SIGINT\n  setup: [[test, -f, "{run_dir}/port.txt"]]\n')
    (tmp_path / "w.yaml").write_text(text)
    env = {k: v for k, v in os.environ.items() if k != "PERFLAB_HOME"}
    done = subprocess.run([*PERFLAB, "run", "w.yaml", "--quiet", "--no-monitor"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    run = json.loads(next((tmp_path / "perflab-runs").rglob("run.json")).read_text())
    assert run["status"] == "complete", run["reason"]


def test_a_duet_of_a_service_on_a_fixed_port_runs_each_server_in_a_namespace_of_its_own(tmp_path):
    """Two servers of one workload on one fixed port: each run of the pair in a network namespace
    of its own (sut/private_net.py), its server and its driver on that namespace's loopback.
    What is asserted is where each run ran and that it completed, not what it measured: the
    fewest blocks a study allows (3) of 1 s windows."""
    fixed = textwrap.dedent(WORKLOAD).lstrip().replace("{service_port}", "18093")
    (tmp_path / "port.template").write_text("listen 18093\n")
    (tmp_path / "w.yaml").write_text(fixed)
    (tmp_path / "fixed.yaml").write_text(textwrap.dedent("""
        name: fixed
        workload: w.yaml
        duet: true
        blocks: 3
        timing: {stagger: 0s, stabilization: 0.5s, measurement: 1s}
        metrics: [itr_s, pbt_cmd_s]
        configurations:
          - name: base
          - name: dearer
            set: {service.command: ["{python}", -m, perflab.sut.known_cost_http, --port, "18093", --cost-us, "150"]}
        """).lstrip())
    done = subprocess.run([*PERFLAB, "study", str(tmp_path / "fixed.yaml")], capture_output=True,
                          text=True, timeout=600, env={**os.environ, "PERFLAB_HOME": str(tmp_path / "store")})
    assert done.returncode in (0, 1), done.stderr[-3000:]
    doc = json.loads((Path(done.stdout.strip().splitlines()[-1]) / "study.json").read_text())
    assert len(doc["runs"]) == 6, [w["text"] for w in doc["warnings"]]  # a run not stored says why there
    for run in doc["runs"]:
        record = json.loads((tmp_path / "store" / "runs" / run["run_id"] / "run.json").read_text())
        assert record["status"] == "complete", record["reason"]
        assert record["workload"]["target"]["base_url"] == "http://127.0.0.1:18093"
    assert any("network namespace of its own" in w["text"] for w in doc["warnings"])


def test_a_duet_of_a_service_with_a_veth_network_on_a_fixed_port_is_one_located_error(tmp_path):
    fixed = textwrap.dedent(WORKLOAD).lstrip().replace("{service_port}", "18093").replace(
        "  stop_signal: SIGINT\n", "  stop_signal: SIGINT\n  network: {}\n").replace("127.0.0.1", "{service_address}")
    (tmp_path / "port.template").write_text("listen 18093\n")
    (tmp_path / "w.yaml").write_text(fixed)
    (tmp_path / "fixed.yaml").write_text("name: fixed\nworkload: w.yaml\nduet: true\nblocks: 3\n"
                                         "configurations: [{name: a}, {name: b, set: {load.users: 3}}]\n")
    done = subprocess.run([*PERFLAB, "validate", str(tmp_path / "fixed.yaml")], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "fixed.yaml:3" in line and "{service_port}" in line, line

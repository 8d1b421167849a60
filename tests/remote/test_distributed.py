"""Drivers on several hosts, on Ray: a real two-node cluster, each node in a network namespace of
its own (a head and a worker), driving nginx in a third; the coordinator (this process) in the
root namespace, connected as a Ray Client."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import secrets
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from perflab import caveats as cav
from perflab.drive.run import RunRequest, execute_run
from perflab.reduce.reduce import reduce_run
from perflab.store.catalog import Store
from perflab.workload.loader import load_workload

from .conftest import python_env
from .netlab import wait_for

# Not imported here: Ray reads RAY_AUTH_MODE when it is imported, after the fixture sets it.
pytestmark = pytest.mark.skipif(importlib.util.find_spec("ray") is None,
                                reason="Ray is not installed (pip install 'perflab[ray]')")
RAY = Path(sys.executable).parent / "ray"
HEAD_PORT, CLIENT_PORT = 6379, 10001


@pytest.fixture(scope="module")
def cluster(sut_host):
    """A Ray head in namespace `ra` and a worker node in `rb`, one CPU each, token auth."""
    temp = Path(tempfile.mkdtemp(prefix="plr"))  # short: Ray's socket paths must fit 107 bytes
    token_path = temp / "token"
    token_path.write_text(secrets.token_hex(32))
    auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token_path), "RAY_USAGE_STATS_ENABLED": "0"}
    # No drain on SIGTERM: Ray's graceful drain (for Serve proxies) waits up to 30 s, longer than
    # the lab's 20 s stop, so every teardown used to wait the full 20 s and then SIGKILL.
    env = {**python_env(), **auth, "RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0",
           "PATH": f"{RAY.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    saved = {k: os.environ.get(k) for k in auth}
    os.environ.update(auth)  # this process is the Ray Client: the same token
    assert "ray" not in sys.modules, "Ray was imported before its authentication settings were made"
    lab = sut_host.lab
    head, node = lab.host("ra"), lab.host("rb")
    try:
        head.start([str(RAY), "start", "--head", "--block", f"--node-ip-address={head.address}",
                    f"--port={HEAD_PORT}", f"--ray-client-server-port={CLIENT_PORT}", "--num-cpus=1",
                    "--include-dashboard=false", f"--temp-dir={temp}", "--disable-usage-stats"],
                   log=temp / "head.log", env=env)

        def head_up() -> bool:
            socket.create_connection((head.address, CLIENT_PORT), timeout=0.5).close()
            return True

        wait_for(head_up, 90, "the Ray head")
        node.start([str(RAY), "start", "--block", f"--address={head.address}:{HEAD_PORT}",
                    f"--node-ip-address={node.address}", "--num-cpus=1", "--disable-usage-stats"],
                   log=temp / "node.log", env=env)

        def both_nodes_up() -> bool:
            # The worker node counts once the head's view of the cluster holds its CPU: `ray start`
            # returns before the node has registered, and a run started then saw "1 free CPU over
            # 1 alive node" (seen in CI, 2026-11-27).
            status = head.run([str(RAY), "status", f"--address={head.address}:{HEAD_PORT}"], timeout=30, env=env)
            return "/2.0 CPU" in status.stdout

        wait_for(both_nodes_up, 90, "the Ray worker node")
        yield {"address": f"ray://{head.address}:{CLIENT_PORT}", "head": head, "node": node}
    finally:
        for host in (node, head):
            for proc in reversed(host.processes):
                host.stop(proc, timeout=20)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(temp, ignore_errors=True)


def driver_pids_in(host) -> list[int]:
    """The Ray worker processes running a DriverProcess in `host`'s network namespace."""
    netns = os.stat(f"/run/netns/{host.ns}").st_ino
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if "DriverProcess" not in (entry / "cmdline").read_bytes().decode(errors="replace"):
                continue
            if os.stat(entry / "ns" / "net").st_ino == netns:
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_two_ray_drivers_reach_the_sum_of_their_rates_in_one_table(sut_host, cluster, tmp_path):
    rate, seconds = 200.0, 2.0   # 400 arrivals offered in the window: the bounds below are for any count
    workload = sut_host.workload(tmp_path / "w.yaml", None, measurement=f"{seconds:g}s",
                                 extra="drivers: {ray: '%s', count: 2, cpus: [0, 1]}" % cluster["address"])
    text = workload.read_text().replace("load: {users: 4}", f"load: {{rate: {rate:g}}}")
    workload.write_text(text)
    result = execute_run(RunRequest(load_workload(workload), workload), Store(tmp_path / "store"))
    run = json.loads((result.run_dir / "run.json").read_text())
    assert run["status"] == "complete", run["reason"]
    drivers = run["drivers"]
    assert [d["index"] for d in drivers] == [0, 1]
    assert {d["node"] for d in drivers} == {cluster["head"].address, cluster["node"].address}  # one per node
    assert [d["cpus"] for d in drivers] == [[0], [1]] and drivers[0]["pid"] != drivers[1]["pid"]
    assert all(d["rate"] == rate / 2 and not d["saturated"] and d["util_pct"] > 0 for d in drivers)
    # One machine under the namespaces: the measured clock offsets are zero within their bounds.
    assert all(abs(d["clock_offset_s"]) <= d["clock_error_s"] + 1e-3 for d in drivers)
    tx = pq.read_table(result.run_dir / "transactions.parquet").to_pandas()
    assert len(tx) == sum(d["transactions"] for d in drivers)
    assert set(tx.driver) == {0, 1} and tx.user.is_unique  # arrival numbers unique across the drivers
    assert (tx.user % 2 == tx.driver).all()  # driver i numbers its arrivals i, i + 2, ...
    metrics = reduce_run(result.run_dir)
    v = metrics.values
    # Offered arrivals in the window: Poisson with mean rate x seconds. A bound of 4.5 standard
    # deviations fails a correct run with probability at most 9.9e-6 per count (the exact Poisson
    # tails at a 2 s window's means, 400 and 200 a driver); three counts: < 2.7e-5.
    window = run["window"]["end"] - run["window"]["start"]
    in_window = tx[(tx.intended_start >= run["window"]["start"]) & (tx.intended_start < run["window"]["end"])]
    for offered, mean in [(v["tx_offered"], rate * window)] + [
            (int((in_window.driver == i).sum()), rate / 2 * window) for i in (0, 1)]:
        assert abs(offered - mean) <= 4.5 * math.sqrt(mean), (offered, mean)
    assert v["errors_t"] == 0 and v["etr_t"] == pytest.approx(v["tx_ok"] / window)
    assert v["driver_cpu"] == pytest.approx(max(d["util_pct"] for d in drivers))
    print(f"two drivers: offered {v['tx_offered']:.0f} in {window:g} s (expected {rate * window:.0f}), ETR (T) "
          f"{v['etr_t']:.1f}/s; driver CPU {[round(d['util_pct'], 1) for d in drivers]} %; clock offsets "
          f"{[round(d['clock_offset_s'] * 1e3, 3) for d in drivers]} ms ± {[round(d['clock_error_s'] * 1e3, 3) for d in drivers]}")


def test_a_driver_lost_mid_run_fails_the_run_and_keeps_what_was_reported(sut_host, cluster, tmp_path):
    workload = sut_host.workload(tmp_path / "w.yaml", None, users=4, measurement="6s",
                                 extra="drivers: {ray: '%s', count: 2}\nthink: {dist: constant, value: 0.01}" % cluster["address"])
    killed: list[int] = []
    run_over = threading.Event()

    def kill_driver_on_worker_node() -> None:
        # Once the run is stored (its drivers placed), about three seconds into it (no assertion
        # on when), the worker node's driver dies. Its process is looked for until it is found or
        # the run is over: a Ray actor's process may show its name a moment after the run starts
        # (one CI run found none at one look 4 s in).
        deadline = time.monotonic() + 60
        while not list((tmp_path / "store").glob("runs/*/run.json")) and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(4.0)
        while not killed and not run_over.is_set() and time.monotonic() < deadline:
            for pid in driver_pids_in(cluster["node"]):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            time.sleep(0.05)

    killer = threading.Thread(target=kill_driver_on_worker_node)
    killer.start()
    try:
        result = execute_run(RunRequest(load_workload(workload), workload), Store(tmp_path / "store"))
    finally:
        run_over.set()
        killer.join()
    assert killed, "no driver process found in the worker node's namespace"
    run = json.loads((result.run_dir / "run.json").read_text())
    lost = [d for d in run["drivers"] if d["lost"]]
    assert len(lost) == 1 and lost[0]["node"] == cluster["node"].address and lost[0]["transactions"] > 0
    dead, alive = lost[0]["index"], 1 - lost[0]["index"]
    assert run["status"] == "failed" and f"driver {dead} on" in run["reason"] and "lost" in run["reason"]
    assert cav.Code.DRIVER_LOST in {c["code"] for c in run["invalid"]}
    tx = pq.read_table(result.run_dir / "transactions.parquet").to_pandas()
    # Nothing reported is lost: both drivers' transactions, up to the failure.
    per_driver = tx.groupby("driver").size().to_dict()
    assert per_driver == {d["index"]: d["transactions"] for d in run["drivers"]} and set(per_driver) == {0, 1}
    assert tx[tx.driver == alive].end.max() >= tx[tx.driver == dead].end.max()  # the other ran on until stopped

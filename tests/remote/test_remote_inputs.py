"""What needs no second host: the Prometheus text mapped to perflab's columns, the workload's
`monitor:` and `drivers:` blocks and the agent's options as bad input (file:line, exit 2),
`--drivers` without Ray, and the window coverage that turns a lost monitor into na."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from perflab.errors import InputError
from perflab.monitor.sources.prometheus import cpus_in, node_exporter_columns, process_exporter_columns
from perflab.reduce.samples import Samples
from perflab.reduce.window import Window
from perflab.workload.loader import load_workload

from .conftest import python_env

NODE_TEXT = textwrap.dedent("""\
    # HELP node_cpu_seconds_total Seconds the CPUs spent in each mode.
    # TYPE node_cpu_seconds_total counter
    node_cpu_seconds_total{cpu="0",mode="idle"} 100.5
    node_cpu_seconds_total{cpu="0",mode="user"} 20.25
    node_cpu_seconds_total{cpu="0",mode="system"} 3
    node_cpu_seconds_total{cpu="1",mode="user"} 7
    node_cpu_seconds_total{cpu="1",mode="guest_weird"} 9
    # TYPE node_disk_reads_completed_total counter
    node_disk_reads_completed_total{device="vda"} 11
    node_disk_reads_completed_total{device="dm-0"} 99
    node_disk_reads_completed_total{device="zram0"} 5
    # TYPE node_disk_io_time_seconds_total counter
    node_disk_io_time_seconds_total{device="vda"} 1.5
    # TYPE node_network_receive_bytes_total counter
    node_network_receive_bytes_total{device="eth0.100"} 1e6
    # TYPE node_vmstat_pgmajfault untyped
    node_vmstat_pgmajfault 42
    # TYPE node_memory_MemTotal_bytes gauge
    node_memory_MemTotal_bytes 2.5e+10
    # TYPE node_time_seconds gauge
    node_time_seconds 1.7e9
    # TYPE go_goroutines gauge
    go_goroutines 8
    """)

PROCESS_TEXT = textwrap.dedent("""\
    # TYPE namedprocess_namegroup_cpu_seconds_total counter
    namedprocess_namegroup_cpu_seconds_total{groupname="nginx",mode="system"} 0.5
    namedprocess_namegroup_cpu_seconds_total{groupname="nginx",mode="user"} 1.5
    namedprocess_namegroup_cpu_seconds_total{groupname="sshd",mode="user"} 4
    # TYPE namedprocess_namegroup_memory_bytes gauge
    namedprocess_namegroup_memory_bytes{groupname="nginx",memtype="resident"} 1000
    namedprocess_namegroup_memory_bytes{groupname="nginx",memtype="virtual"} 99999
    # TYPE namedprocess_namegroup_num_procs gauge
    namedprocess_namegroup_num_procs{groupname="nginx"} 2
    """)


def test_node_exporter_text_becomes_perflabs_machine_columns():
    cols = node_exporter_columns(NODE_TEXT)
    assert cols["h.cpu0.user"] == 20.25 and cols["h.cpu0.idle"] == 100.5 and cols["h.cpu0.system"] == 3.0
    assert "h.cpu1.guest_weird" not in cols and cpus_in(cols) == [0, 1]
    # whole disks only: a device-mapper volume and zram would count I/O twice or count memory
    assert cols["h.disk.vda.reads"] == 11 and cols["h.disk.vda.busy_ms"] == 1500.0
    assert not any("dm-0" in k or "zram" in k for k in cols)
    assert cols["h.net.eth0_100.rx_bytes"] == 1e6  # a dot in a name would split the column name
    assert cols["h.vm.pgmajfault"] == 42 and cols["h.mem.total_bytes"] == 2.5e10
    assert cols["remote.wall_time"] == 1.7e9 and not any(k.startswith("go_") for k in cols)


def test_process_exporter_groups_are_components_and_their_sum_the_sut():
    cols = process_exporter_columns(PROCESS_TEXT, ["nginx"])
    assert cols["v.nginx.cpu_user"] == 1.5 and cols["v.nginx.cpu_sys"] == 0.5 and cols["v.nginx.rss_bytes"] == 1000
    assert cols["s.cpu_user"] == 1.5 and cols["s.nprocs"] == 2 and "v.sshd.cpu_user" not in cols
    every = process_exporter_columns(PROCESS_TEXT)
    assert every["s.cpu_user"] == 5.5  # nginx and sshd
    # a named group that is not there: no s.* at all (the sum would be another SUT), never zeros
    assert not any(k.startswith("s.") for k in process_exporter_columns(PROCESS_TEXT, ["nginx", "postgres"]))


BASE = """\
name: w
target: {kind: http, base_url: "http://127.0.0.1:9"}
transactions: [{name: t, http: [{path: /}]}]
scripts: [{name: s, steps: [t]}]
load: {users: 1}
"""


@pytest.mark.parametrize("extra, line, field, words", [
    ("monitor: {agent: http://h:1, node_exporter: http://h:2}", 6, "monitor", "one of them"),
    ("monitor: {agent: 'ftp://h:1'}", 6, "monitor.agent", "URL"),
    ("monitor: {node_exporter: http://h:2, token: abc}", 6, "monitor", "belong to agent"),
    ("monitor: {agent: http://h:1, groups: [x]}", 6, "monitor", "belong to node_exporter"),
    ("drivers: {ray: 'h:10001'}", 6, "drivers.ray", "ray://HOST:PORT"),
    ("drivers: {ray: auto, count: 0}", 6, "drivers.count", "greater than or equal to 1"),
    ("service: {command: [x], ready: {tcp: 9}}\nmonitor: {agent: http://h:1}", 7, "monitor", "monitors it itself"),
    ("driver: {kind: wrk}\ndrivers: {ray: auto}", 7, "drivers", "not wrk"),
])
def test_monitor_and_drivers_blocks_are_checked_with_their_line(tmp_path, extra, line, field, words):
    path = tmp_path / "w.yaml"
    path.write_text(BASE + extra + "\n")
    with pytest.raises(InputError) as info:
        load_workload(path)
    assert info.value.line == line and info.value.field == field and words in info.value.message, info.value


def test_drivers_without_ray_say_how_to_get_it(monkeypatch):
    from perflab.drive.remote import distributed

    monkeypatch.setitem(sys.modules, "ray", None)  # as if it were not installed
    with pytest.raises(InputError) as info:
        distributed.import_ray()
    assert "pip install 'perflab[ray]'" in info.value.message


def test_token_env_must_be_set(tmp_path, monkeypatch):
    from perflab.drive.plan import RunRequest, resolve_plan

    monkeypatch.delenv("PLX_NO_SUCH_TOKEN", raising=False)
    path = tmp_path / "w.yaml"
    path.write_text(BASE + "monitor: {agent: 'http://127.0.0.1:9', token_env: PLX_NO_SUCH_TOKEN}\n")
    with pytest.raises(InputError) as info:
        resolve_plan(RunRequest(load_workload(path), path))
    assert info.value.line == 6 and "PLX_NO_SUCH_TOKEN" in info.value.message


@pytest.mark.parametrize("args, words", [
    (["--listen", "0.0.0.0:0", "--pid-match", "x"], "give --token"),
    (["--pid-match", "x", "--token", "short"], "at least 16"),
    (["--cgroup", "/sys/fs/cgroup/no/such/group"], "no cgroup"),
    (["--pid-match", "("], "--pid-match"),
    ([], "--cgroup PATH or --pid-match"),
])
@pytest.mark.fast   # refused before any run starts (tests/tiers.py)
def test_agent_options_are_checked(args, words):
    done = subprocess.run([sys.executable, "-m", "perflab.cli", "agent", *args], capture_output=True, text=True,
                          env=python_env(), timeout=60)
    assert done.returncode == 2 and words in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_a_counter_whose_samples_stop_is_na_at_the_window_end_not_flat():
    t = np.arange(0.0, 11.0)
    alive = np.where(t <= 4, t * 0.5, np.nan)  # a remote column: lost after t = 4 s
    local = t * 0.25
    samples = Samples(t, {"s.cpu_user": alive, "driver.cpu_user": local}, interval=1.0)
    assert samples.delta(["driver.cpu_user"], Window(1.0, 9.0), "DRIVER SEC") == pytest.approx(2.0)
    assert samples.delta(["s.cpu_user"], Window(1.0, 9.0), "EMUL SEC (S)") is None
    assert samples.uncovered == ["EMUL SEC (S)"]
    assert samples.delta(["s.cpu_user"], Window(1.0, 4.0), "EMUL SEC (S)") == pytest.approx(1.5)  # before: measured
    # a gap much longer than the interval inside the window's edge is na too; a short one is not
    gap = np.where((t > 2) & (t < 9), np.nan, t)
    samples = Samples(t, {"c": gap}, interval=1.0)
    assert samples.delta(["c"], Window(0.0, 5.0), "C") is None
    assert samples.delta(["c"], Window(0.0, 10.0), "C") == pytest.approx(10.0)


def test_drivers_option_overrides_the_block_and_needs_a_network_target(tmp_path):
    from perflab.drive.plan import RunRequest, resolve_plan

    path = tmp_path / "w.yaml"
    path.write_text(BASE + "drivers: {ray: auto, count: 2, cpus: [1]}\n")
    workload = load_workload(path)
    plan = resolve_plan(RunRequest(workload, path, drivers="ray://10.0.0.2:10001", driver_count=3))
    assert (plan.drivers.ray, plan.drivers.count, plan.drivers.cpus) == ("ray://10.0.0.2:10001", 3, [1])
    assert resolve_plan(RunRequest(workload, path)).drivers.count == 2
    with pytest.raises(InputError) as info:
        resolve_plan(RunRequest(workload, path, drivers="head:10001"))
    assert info.value.field == "--drivers" and "ray://HOST:PORT" in info.value.message
    local = tmp_path / "local.yaml"
    local.write_text("name: l\ntarget: {kind: python}\ntransactions: [{name: t, call: 'os:getpid'}]\n"
                     "scripts: [{name: s, steps: [t]}]\nload: {users: 1}\n")
    with pytest.raises(InputError) as info:
        resolve_plan(RunRequest(load_workload(local), local, drivers="auto"))
    assert "network target" in info.value.message

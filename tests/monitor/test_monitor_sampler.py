"""The sampler: the samples.parquet contract, the sampling grid, and the monitor's lifecycle."""

from __future__ import annotations

import json
import math
import os
import pickle
import re
import signal
import subprocess
import sys
import time
import uuid

import pyarrow.parquet as pq
import pytest

from perflab.monitor.sampler import MonitorSpec, Sampler
from perflab.monitor.sources.counters import SharedCounters
from perflab.monitor.sources.perf_counters import probe
from perflab.sut.cgroup import SutCgroup

from .helpers import TICK

GAUGES = ("rss_bytes", "pss_bytes", "threads", "nprocs", "cgroup_mem_bytes",
          "cgroup_anon_bytes", "cgroup_file_bytes")
COLUMN_RX = re.compile(r"^(t|(h|s|v|i|sut|driver|monitor)(\.[A-Za-z0-9_-]+){1,3})$")


def is_counter(name: str) -> bool:
    return name != "t" and not name.endswith(GAUGES)


def read_samples(path) -> tuple[dict[str, list], dict]:
    table = pq.read_table(path)
    meta = json.loads(table.schema.metadata[b"perflab.samples"])
    return table.to_pydict(), meta


def test_sampler_writes_the_samples_contract(spawn, tmp_path):
    counters = SharedCounters(["tx"], slots=1)
    child = spawn("wait_line(); burn_user(0.6); report(); wait_line()")
    out = tmp_path / "run" / "samples.parquet"
    driver_cpus = [min(os.sched_getaffinity(0))]
    spec = MonitorSpec(
        out_path=out, interval_s=0.1, sut_pids=[child.pid], driver_pid=os.getpid(),
        counters=counters.handle, components={"py": r"python"}, cpus=driver_cpus,
    )
    sampler = Sampler(spec)
    sampler.start()
    try:
        assert os.sched_getaffinity(sampler.pid) == set(driver_cpus)
        assert not out.exists()  # written at the end, in one piece
        child.send()
        writer = counters.writer(0)
        for _ in range(5):
            writer.add("tx")
        r = child.report()
        time.sleep(0.3)
        summary = sampler.stop()
    finally:
        counters.close()
        counters.unlink()

    cols, meta = read_samples(out)
    assert os.listdir(out.parent) == ["samples.parquet"]  # no temporary file left behind
    names = list(cols)
    assert names[0] == "t" and all(COLUMN_RX.match(n) for n in names), names
    online = os.sched_getaffinity(0)
    expected = {"s.cpu_user", "s.cpu_sys", "s.minflt", "s.majflt", "s.syscr", "s.syscw",
                "s.read_bytes", "s.write_bytes", "s.rchar", "s.wchar", "s.ctx_vol", "s.ctx_invol",
                "s.rss_bytes", "s.pss_bytes", "s.threads", "s.nprocs", "v.py.cpu_user",
                "v.other.nprocs", "h.vm.pgfault", "h.vm.pgmajfault", "h.vm.pswpin",
                "h.vm.pswpout", "driver.cpu_user", "driver.cpu_sys", "monitor.cpu_user",
                "monitor.cpu_sys", "sut.tx"}
    expected |= {f"h.cpu{c}.{f}" for c in online for f in ("user", "nice", "system", "irq",
                 "softirq", "iowait", "steal", "idle")}
    assert expected <= set(names), expected - set(names)
    perf_ok, why = probe()
    assert summary["sources"]["perf_counters"] == {"available": perf_ok, "reason": why}
    assert any(n.startswith("i.") for n in names) == perf_ok  # absent, never zero-filled

    t = cols["t"]
    assert summary["samples"] == len(t) and meta["end"] == "stopped"
    assert all(b > a for a, b in zip(t, t[1:]))
    # The grid: never two samples in one interval (between the first and the final sample),
    # hence at most one per grid slot the span touches, plus the first and the final one.
    slots = [math.floor(x / spec.interval_s) for x in t[1:-1]]
    assert len(set(slots)) == len(slots)
    assert len(t) <= (t[-1] - t[0]) / spec.interval_s + 3
    assert len(t) >= 0.5 * (t[-1] - t[0]) / spec.interval_s  # ~N samples for N intervals

    for n in names:
        if is_counter(n):
            series = [x for x in cols[n] if x is not None]
            assert all(b >= a for a, b in zip(series, series[1:])), n
    assert cols["sut.tx"][-1] == 5
    assert cols["s.cpu_user"][-1] >= r["user"] - 2 * TICK >= 0.6 - 3 * TICK
    assert cols["v.py.cpu_user"][-1] == cols["s.cpu_user"][-1]
    assert summary["sampling_cpu_s"] >= 0 and summary["monitor_cpu_s"] > 0
    # asked to stop, the monitor handed its rows over and the driver wrote the file
    assert summary["monitor_write_cpu_s"] == 0.0 and summary["driver_write_cpu_s"] >= 0


DRIVER = r"""
import os, sys, time
from perflab.monitor.sampler import MonitorSpec, Sampler
s = Sampler(MonitorSpec(out_path=sys.argv[1], interval_s=0.1))
s.start()
holder = os.fork()
if holder == 0:  # a child of the driver still holds the control pipe, like a forked worker
    time.sleep(600)
    os._exit(0)
print(s.pid, holder, flush=True)
time.sleep(600)
"""


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")  # exited, unreaped
    except FileNotFoundError:
        return True


def test_monitor_writes_and_exits_when_the_driver_is_killed(tmp_path):
    out = tmp_path / "samples.parquet"
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, str(out)], stdout=subprocess.PIPE,
                              text=True)
    monitor_pid, holder_pid = map(int, driver.stdout.readline().split())
    try:
        time.sleep(0.5)
        driver.kill()  # SIGKILL: no chance to stop the sampler
        driver.wait()
        deadline = time.monotonic() + 30
        while not _gone(monitor_pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _gone(monitor_pid), "monitor lingers after its driver died"
        cols, meta = read_samples(out)
        assert meta["end"].startswith("driver exited")
        assert len(cols["t"]) >= 2
    finally:
        for pid in (holder_pid, monitor_pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


DRIVER_DIES_STOPPING = r"""
import os, sys
from perflab.monitor.sampler import MonitorSpec, Sampler
s = Sampler(MonitorSpec(out_path=sys.argv[1], interval_s=0.1))
s.start()
s.end_sampling()  # "stop" sent and the final sample taken: the rows are on their way
print(s.pid, flush=True)
os._exit(0)  # gone before it reads them or writes the file
"""


def test_a_driver_gone_before_writing_the_handed_rows_leaves_the_file_to_the_monitor(tmp_path):
    out = tmp_path / "samples.parquet"
    driver = subprocess.run([sys.executable, "-c", DRIVER_DIES_STOPPING, str(out)], capture_output=True,
                            text=True, timeout=60)
    monitor_pid = int(driver.stdout.split()[0])
    deadline = time.monotonic() + 30
    while not _gone(monitor_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(monitor_pid), "monitor lingers after its driver died"
    cols, meta = read_samples(out)
    assert meta["end"] == "stopped" and len(cols["t"]) >= 2


def test_sigterm_writes_and_stop_still_returns_the_summary(tmp_path):
    out = tmp_path / "samples.parquet"
    sampler = Sampler(MonitorSpec(out_path=out, interval_s=0.1))
    sampler.start()
    os.kill(sampler.pid, signal.SIGTERM)
    summary = sampler.stop()
    assert summary["end"].startswith("terminated")
    assert read_samples(out)[1]["end"] == summary["end"]


def test_ctrl_c_does_not_stop_the_monitor(tmp_path):
    out = tmp_path / "samples.parquet"
    sampler = Sampler(MonitorSpec(out_path=out, interval_s=0.05, machine_sources=()))
    sampler.start()
    os.kill(sampler.pid, signal.SIGINT)  # what the terminal sends the whole process group
    time.sleep(0.3)
    assert not _gone(sampler.pid)
    assert sampler.stop()["end"] == "stopped"


def test_sut_pids_added_later(spawn, tmp_path):
    out = tmp_path / "samples.parquet"
    sampler = Sampler(MonitorSpec(out_path=out, interval_s=0.1))
    sampler.start()
    assert sampler.sources["process_tree"]["available"] is False
    time.sleep(0.25)
    child = spawn("wait_line(); burn_user(0.3); report(); wait_line()")
    sampler.add_sut_pids([child.pid])
    child.send()
    r = child.report()
    time.sleep(0.25)
    sampler.stop()
    cols, _ = read_samples(out)
    cpu = cols["s.cpu_user"]
    assert cpu[0] is None  # before the SUT existed: no value, not zero
    assert cpu[-1] >= r["user"] - 2 * TICK


def test_cgroup_gives_exact_sut_cpu(spawn, tmp_path):
    cg, why = SutCgroup.try_create(f"test-{uuid.uuid4().hex[:8]}")
    if cg is None:
        pytest.skip(why)
    try:
        child = spawn("wait_line(); burn_user(0.3); report(); wait_line()", preexec_fn=cg.add_self)
        out = tmp_path / "samples.parquet"
        sampler = Sampler(MonitorSpec(out_path=out, interval_s=0.1, sut_cgroup=cg.path_for_monitor))
        sampler.start()
        child.send()
        r = child.report()
        summary = sampler.stop()
    finally:
        cg.remove()
    cols, _ = read_samples(out)
    assert summary["sources"]["cgroup"]["available"]
    total = cols["s.cpu_user"][-1] + cols["s.cpu_sys"][-1]
    tree_total = cols["s.tree.cpu_user"][-1] + cols["s.tree.cpu_sys"][-1]
    assert abs(total - r["cpu"]) <= TICK  # members found from the cgroup, no pids given
    assert abs(tree_total - total) <= 2 * TICK
    assert cols["s.cgroup_mem_bytes"][-1] > 0


def test_monitor_spec_is_picklable(tmp_path):
    counters = SharedCounters(["tx"], slots=2)
    try:
        spec = MonitorSpec(out_path=tmp_path / "s.parquet", sut_pids=[1], counters=counters,
                           components={"a": "x"}, sut_cgroup={"cpuacct": "/x"})
        again = pickle.loads(pickle.dumps(spec))
        assert again.counters.handle == counters.handle
        assert (again.out_path, again.sut_pids, again.components) == (
            spec.out_path, spec.sut_pids, spec.components)
        again.counters.close()
    finally:
        counters.close()
        counters.unlink()
    with pytest.raises(ValueError):
        MonitorSpec(out_path="x", interval_s=0)
    with pytest.raises(ValueError):
        MonitorSpec(out_path="x", machine_sources=("nope",))

"""Whole-machine sources (H) against laws and known loads."""

from __future__ import annotations

import mmap
import os
import socket
import time

import pytest

from perflab.monitor.sources.diskstats import DiskstatsSource, physical_disks
from perflab.monitor.sources.netdev import NetdevSource
from perflab.monitor.sources.proc_stat import ProcStatSource
from perflab.monitor.sources.vmstat import VmstatSource
from perflab.sut.cgroup import parse_cpu_list

from .helpers import TICK

FIELDS = ("user", "nice", "system", "irq", "softirq", "iowait", "steal", "idle")


def test_every_cpu_accounts_for_all_elapsed_time():
    # Each CPU's fields together cover the elapsed time (idle included): a field read from the
    # wrong position, or the wrong unit, breaks this. Measured over an interval this test sees,
    # not since boot: a virtual machine that was paused (snapshot, migration) has uptime that
    # no CPU accounted for -- seen here as 104 s missing on cpu0 after 80 minutes.
    src = ProcStatSource()
    # Each reading is bracketed by clock reads: however long the test is descheduled around a
    # reading (a loaded host), the time the CPUs accounted lies between the brackets' spans.
    a0 = time.monotonic()
    before = src.read()
    a1 = time.monotonic()
    time.sleep(2.0)
    b0 = time.monotonic()
    after = src.read()
    b1 = time.monotonic()
    cpus = sorted({k.split(".")[1] for k in after})
    assert cpus == sorted(f"cpu{c}" for c in parse_cpu_list(open("/sys/devices/system/cpu/online").read().strip()))
    for cpu in cpus:
        grew = sum(after[f"h.{cpu}.{f}"] - before[f"h.{cpu}.{f}"] for f in FIELDS)
        # the counters advance in ticks: one tick of slack each side, and 10% for the kernel's
        # accounting of a tickless idle CPU and of steal on this KVM guest (a loaded host once
        # gave 2.09 s over 2.00: +4.5%). A field read from the wrong position or in the wrong unit
        # is off by far more (a missing idle field: -50% or worse; USER_HZ for ns: 1e7).
        assert 0.90 * (b0 - a1) - 2 * TICK <= grew <= 1.10 * (b1 - a0) + 2 * TICK, (cpu, grew, b0 - a1, b1 - a0)


def test_user_time_lands_on_the_cpu_that_ran_it(spawn):
    cpu = max(os.sched_getaffinity(0))
    src = ProcStatSource()
    child = spawn(
        f"os.sched_setaffinity(0, [{cpu}]); wait_line()\n"
        "burn_user(0.4); report(); wait_line()"
    )
    child.send()  # the child is pinned before the first reading
    before = src.read()
    r = child.report()
    after = src.read()
    grew = lambda f: after[f"h.cpu{cpu}.{f}"] - before[f"h.cpu{cpu}.{f}"]
    # At least the child's user time (ticks of other tasks only add to it).
    assert grew("user") + grew("nice") >= 0.4 - 2 * TICK
    assert all(grew(f) >= 0 for f in FIELDS)


def test_page_faults_are_counted():
    src = VmstatSource()
    before = src.read()
    pages = 2000
    m = mmap.mmap(-1, pages * mmap.PAGESIZE)
    for i in range(pages):
        m[i * mmap.PAGESIZE] = 1  # first touch of each page: one minor fault
    after = src.read()
    m.close()
    assert after["h.vm.pgfault"] - before["h.vm.pgfault"] >= pages
    # the refault counters are columns exactly where this kernel has them (absent, never zero-filled)
    kernel = {line.split()[0] for line in open("/proc/vmstat")}
    refaults = {f"h.vm.{k}" for k in ("workingset_refault_file", "workingset_refault_anon", "workingset_refault")
                if k in kernel}
    assert set(after) == {"h.vm.pgfault", "h.vm.pgmajfault", "h.vm.pswpin", "h.vm.pswpout"} | refaults


def test_loopback_traffic_is_counted():
    src = NetdevSource()
    if "h.net.lo.rx_bytes" not in src.read():
        pytest.skip("no loopback interface")
    before = src.read()
    n, payload = 50, b"x" * 1000
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", 0))
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for _ in range(n):
        tx.sendto(payload, rx.getsockname())
    for _ in range(n):
        rx.recv(2000)
    after = src.read()
    tx.close()
    rx.close()
    for d in ("rx", "tx"):
        assert after[f"h.net.lo.{d}_bytes"] - before[f"h.net.lo.{d}_bytes"] >= n * len(payload)
        assert after[f"h.net.lo.{d}_packets"] - before[f"h.net.lo.{d}_packets"] >= n


def test_diskstats_keeps_whole_physical_disks_only():
    disks = physical_disks()
    if not disks:
        pytest.skip("no physical block device")
    v = DiskstatsSource().read()
    devices = {k.split(".")[2] for k in v}
    assert devices == set(disks)
    assert not any(d.startswith(("loop", "ram", "zram", "dm-", "md")) for d in devices)
    for d in devices:
        assert set(k for k in v if k.startswith(f"h.disk.{d}.")) == {
            f"h.disk.{d}.{f}" for f in ("reads", "writes", "read_bytes", "write_bytes", "busy_ms")
        }

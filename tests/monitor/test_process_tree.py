"""The process tree source (S, V) against children of known cost."""

from __future__ import annotations

import os
import time

from perflab.monitor.sources.diskstats import DiskstatsSource, physical_disks
from perflab.monitor.sources.process_tree import COUNTERS, ProcessTreeSource
from perflab.monitor.sources.procfs import parse_pid_stat

from .helpers import BURN_USER_CHILD, TICK


def cpu(v: dict, prefix: str = "s") -> float:
    return v[f"{prefix}.cpu_user"] + v[f"{prefix}.cpu_sys"]


def test_parse_pid_stat_with_awkward_name():
    # A comm may contain spaces and ')' -- fields are counted from the last ')'.
    line = (b"4242 (we ird) name) S 17 4242 4242 0 -1 4194304 101 202 3 4 55 66 77 88 20 0 "
            b"3 0 999 3133440 385 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0")
    st = parse_pid_stat(line)
    assert st.comm == "we ird) name"
    assert (st.state, st.ppid) == ("S", 17)
    assert (st.minflt, st.cminflt, st.majflt, st.cmajflt) == (101, 202, 3, 4)
    assert (st.utime, st.stime, st.cutime, st.cstime) == (55, 66, 77, 88)
    assert (st.num_threads, st.starttime, st.rss_pages) == (3, 999, 385)


def test_user_time_of_a_busy_child(spawn):
    child = spawn("burn_user(0.5); report(); wait_line()")
    tree = ProcessTreeSource([child.pid])
    r = child.report()
    v = tree.read()
    assert v["s.cpu_user"] >= 0.5 - TICK  # the known cost
    assert abs(v["s.cpu_user"] - r["user"]) <= 2 * TICK
    assert abs(v["s.cpu_sys"] - r["system"]) <= 2 * TICK
    # utime + stime (each rounded down to a tick) against the exact CPU clock of the process
    assert r["cpu"] - 2 * TICK <= cpu(v) <= r["cpu"] + 2 * TICK
    assert v["s.nprocs"] == 1 and v["s.threads"] == 1


def test_system_time_of_a_syscall_child(spawn):
    child = spawn("burn_sys(0.5); report(); wait_line()")
    tree = ProcessTreeSource([child.pid])
    r = child.report()
    v = tree.read()
    assert v["s.cpu_sys"] >= 0.5 - TICK
    assert abs(v["s.cpu_sys"] - r["system"]) <= 2 * TICK
    assert r["cpu"] - 2 * TICK <= cpu(v) <= r["cpu"] + 2 * TICK
    assert v["s.syscr"] >= 100  # at least 100 readv calls for 0.5 s of 1 MiB reads


def test_short_lived_children_reaped_by_a_root_are_counted(spawn):
    # Three children each burn 0.2 s of user time and are reaped by the root between two
    # samples: the monitor never sees them alive, only the root's children times.
    root = spawn(
        "wait_line()\nimport subprocess\n"
        "for i in range(3):\n"
        "    subprocess.run([sys.executable, '-c', sys.argv[1]], check=True)\n"
        "report(); wait_line()",
        BURN_USER_CHILD,
    )
    tree = ProcessTreeSource([root.pid])
    before = tree.read()
    root.send()
    r = root.report()
    after = tree.read()
    assert after["s.cpu_user"] - before["s.cpu_user"] >= 3 * 0.2 - 3 * TICK
    total = r["user"] + r["system"] + r["cuser"] + r["csys"]
    assert abs(cpu(after) - total) <= 2 * TICK
    assert after["s.minflt"] > before["s.minflt"]
    assert after["s.nprocs"] == 1


def test_counters_never_decrease_and_exits_are_neither_lost_nor_double_counted(spawn):
    # Root A starts three children that are sampled while alive, then reaped by A (a tracked
    # parent: their time moves into A's children times); then A exits and is reaped by the test
    # (outside the tree: its total must be carried). Root B keeps burning afterwards, so a lost
    # carry or a double count would show in the final total, not just as a dip.
    a = spawn(
        "import subprocess\n"
        "kids = [subprocess.Popen([sys.executable, '-c', sys.argv[1]], env=dict(os.environ, BURN=b))"
        " for b in ('0.2', '0.3', '0.4')]\n"
        "[k.wait() for k in kids]\nreport(); wait_line()",
        BURN_USER_CHILD,
    )
    b = spawn("wait_line(); burn_user(0.3); report(); wait_line()")
    tree = ProcessTreeSource([a.pid, b.pid])
    rows = []

    def sample_until(child):
        while not child.has_report():
            rows.append(tree.read())
            time.sleep(0.02)
        report = child.report()
        rows.append(tree.read())
        return report

    ra = sample_until(a)
    assert max(r["s.nprocs"] for r in rows) >= 4  # the children were seen alive
    a.send("exit")
    assert a.finish() == 0
    rows.append(tree.read())
    b.send()
    rb = sample_until(b)

    for name in COUNTERS:
        series = [r[f"s.{name}"] for r in rows]
        assert all(y >= x for x, y in zip(series, series[1:])), name
    expected = ra["user"] + ra["system"] + ra["cuser"] + ra["csys"] + rb["user"] + rb["system"]
    # Tick rounding of A, its children's sum and B; plus A's exit after its report, which the
    # monitor cannot see (documented loss: well under a tick for a process that only exits).
    assert expected - 4 * TICK <= cpu(rows[-1]) <= expected + 4 * TICK
    assert rows[-1]["s.nprocs"] == 1


def test_write_bytes_and_disk_writes(spawn, tmp_path):
    n = 64
    path = tmp_path / "blocks"
    child = spawn(
        "wait_line()\n"
        "fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)\n"
        f"for i in range({n}):\n"
        "    os.write(fd, os.urandom(4096)); os.fsync(fd)\n"
        "os.close(fd); report(); wait_line()",
        str(path),
    )
    tree = ProcessTreeSource([child.pid])
    disks = DiskstatsSource()
    t0, d0 = tree.read(), disks.read()
    child.send()
    child.report()
    t1, d1 = tree.read(), disks.read()
    assert t1["s.write_bytes"] - t0["s.write_bytes"] >= n * 4096
    assert t1["s.wchar"] - t0["s.wchar"] >= n * 4096
    assert t1["s.syscw"] - t0["s.syscw"] >= n
    dev = _disk_of(tmp_path)
    if dev is not None:  # tmp on a physical disk: the device saw at least the data
        assert d1[f"h.disk.{dev}.writes"] - d0[f"h.disk.{dev}.writes"] >= 1
        assert d1[f"h.disk.{dev}.write_bytes"] - d0[f"h.disk.{dev}.write_bytes"] >= n * 4096


def _disk_of(path) -> str | None:
    st = os.stat(path)
    link = f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    if not os.path.exists(link):
        return None
    real = os.path.realpath(link)
    name = os.path.basename(real)
    if os.path.exists(os.path.join(real, "partition")):
        name = os.path.basename(os.path.dirname(real))
    return name if name in physical_disks() else None


def test_components_split_the_total(spawn):
    # Two roots told apart by a marker in their command line.
    alpha = spawn("burn_user(0.3); report(); wait_line()", "marker-alpha")
    beta = spawn("burn_sys(0.3); report(); wait_line()", "marker-beta")
    tree = ProcessTreeSource(
        [alpha.pid, beta.pid], {"alpha": r"marker-alpha", "beta": r"marker-beta"}
    )
    ra, rb = alpha.report(), beta.report()
    v = tree.read()
    assert abs(cpu(v, "v.alpha") - (ra["user"] + ra["system"])) <= 2 * TICK
    assert abs(cpu(v, "v.beta") - (rb["user"] + rb["system"])) <= 2 * TICK
    assert v["v.alpha.nprocs"] == 1 and v["v.beta.nprocs"] == 1 and v["v.other.nprocs"] == 0
    for field in COUNTERS + ("rss_bytes", "threads", "nprocs"):
        parts = v[f"v.alpha.{field}"] + v[f"v.beta.{field}"] + v[f"v.other.{field}"]
        assert abs(parts - v[f"s.{field}"]) <= 1e-9 * max(1.0, abs(v[f"s.{field}"])), field


def test_rss_and_pss_of_a_known_allocation(spawn):
    size = 64 << 20
    child = spawn(f"buf = bytearray({size}); buf[::4096] = b'x' * ({size} // 4096); report(); wait_line()")
    tree = ProcessTreeSource([child.pid])
    child.report()
    v = tree.read()
    assert v["s.rss_bytes"] >= size
    assert v["s.pss_bytes"] >= size  # private anonymous memory counts fully in PSS


def test_context_switches_of_an_exited_thread_are_kept(spawn):
    child = spawn(
        "import threading\n"
        "go = threading.Event()\n"
        "def work():\n"
        "    for i in range(100): time.sleep(0.001)\n"
        "    go.wait()\n"
        "t = threading.Thread(target=work); t.start()\n"
        "time.sleep(0.5); report(); wait_line()\n"
        "go.set(); t.join()\n"
        "for i in range(50): time.sleep(0.001)\n"
        "report(); wait_line()"
    )
    tree = ProcessTreeSource([child.pid])
    child.report()
    first = tree.read()
    assert first["s.threads"] == 2
    assert first["s.ctx_vol"] >= 100
    child.send()
    child.report()
    after = tree.read()
    assert after["s.threads"] == 1
    # The thread's >= 100 switches are carried after it exits, and the main thread added 50.
    assert after["s.ctx_vol"] >= 150

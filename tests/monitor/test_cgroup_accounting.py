"""SutCgroup and the cgroup source (S): exact CPU, memory, limits, CPU sets."""

from __future__ import annotations

import os
import uuid

import pytest

from perflab.monitor.sources.cgroup import CgroupSource, split_exact_total
from perflab.monitor.sources.process_tree import ProcessTreeSource
from perflab.sut.cgroup import SutCgroup

from .helpers import BURN_USER_CHILD, TICK


@pytest.fixture
def make_cgroup():
    made: list[SutCgroup] = []

    def make(**kw) -> SutCgroup:
        cg, why = SutCgroup.try_create(f"test-{uuid.uuid4().hex[:8]}", **kw)
        if cg is None:
            pytest.skip(f"no cgroup on this machine: {why}")
        made.append(cg)
        return cg

    yield make
    for cg in made:
        cg.remove()


def test_split_exact_total_is_proportional_and_monotone():
    assert split_exact_total(1.0, 3.0, 1.0, 0.0, 0.0) == (0.75, 0.25)
    assert split_exact_total(1.0, 0.0, 0.0, 0.0, 0.0) == (1.0, 0.0)  # no ticks: all user
    # A later ratio that would move time from user to system keeps user where it was.
    user, sys = split_exact_total(1.1, 1.0, 1.0, 0.75, 0.25)
    assert user >= 0.75 and sys >= 0.25 and abs(user + sys - 1.1) < 1e-12


def test_cgroup_cpu_of_a_busy_child_is_exact(spawn, make_cgroup):
    cg = make_cgroup()
    child = spawn("burn_user(0.5); report(); wait_line()", preexec_fn=cg.add_self)
    r = child.report()
    assert cg.pids() == [child.pid]
    v = CgroupSource(cg.path_for_monitor).read()
    # cpuacct.usage is exact: the cgroup total equals the child's exact CPU clock, less the
    # moments between fork and joining the cgroup; well within one tick.
    assert abs(v["s.cpu_user"] + v["s.cpu_sys"] - r["cpu"]) <= TICK
    # The split follows the same tick samples as the process's own utime/stime.
    assert v["s.cpu_user"] >= 0.5 - 2 * TICK
    assert abs(v["s.cpu_user"] - r["user"]) <= 3 * TICK


def test_cgroup_counts_reaped_children_exactly(spawn, make_cgroup):
    cg = make_cgroup()
    root = spawn(
        "import subprocess\n"
        "for i in range(3):\n"
        "    subprocess.run([sys.executable, '-c', sys.argv[1]], check=True)\n"
        "report(); wait_line()",
        BURN_USER_CHILD,
        preexec_fn=cg.add_self,
    )
    r = root.report()
    v = CgroupSource(cg.path_for_monitor).read()
    total = r["user"] + r["system"] + r["cuser"] + r["csys"]  # four values, each tick-rounded
    assert abs(v["s.cpu_user"] + v["s.cpu_sys"] - total) <= 4 * TICK
    assert v["s.cpu_user"] >= 3 * 0.2 - 2 * TICK


def test_cgroup_and_process_tree_agree(spawn, make_cgroup):
    cg = make_cgroup()
    child = spawn("burn_sys(0.3); burn_user(0.3); report(); wait_line()", preexec_fn=cg.add_self)
    child.report()
    cg_v = CgroupSource(cg.path_for_monitor).read()
    tree_v = ProcessTreeSource(cg.pids(), cpu_entity="tree").read()
    assert "s.cpu_user" not in tree_v  # the tree leaves s.cpu_* to the cgroup
    cg_total = cg_v["s.cpu_user"] + cg_v["s.cpu_sys"]
    tree_total = tree_v["s.tree.cpu_user"] + tree_v["s.tree.cpu_sys"]
    assert abs(cg_total - tree_total) <= 2 * TICK


def test_cgroup_v2_cpu_of_a_busy_child(spawn, make_cgroup):
    # On a v2-only machine this is the default path; on a hybrid one the v2 hierarchy has no
    # controllers but still accounts CPU (cpu.stat), which exercises the same code.
    cg = make_cgroup(version=2)
    assert isinstance(cg.path_for_monitor, str)
    child = spawn("burn_sys(0.2); burn_user(0.3); report(); wait_line()", preexec_fn=cg.add_self)
    r = child.report()
    assert cg.pids() == [child.pid]
    v = CgroupSource(cg.path_for_monitor).read()
    # cpu.stat is in microseconds, split by the kernel like the process's own utime/stime.
    assert abs(v["s.cpu_user"] + v["s.cpu_sys"] - r["cpu"]) <= TICK
    assert abs(v["s.cpu_user"] - r["user"]) <= 3 * TICK
    assert abs(v["s.cpu_sys"] - r["system"]) <= 3 * TICK


def test_cgroup_memory_of_a_known_allocation(spawn, make_cgroup):
    cg = make_cgroup()
    size = 64 << 20
    child = spawn(
        f"buf = bytearray({size}); buf[::4096] = b'x' * ({size} // 4096); report(); wait_line()",
        preexec_fn=cg.add_self,
    )
    child.report()
    v = CgroupSource(cg.path_for_monitor).read()
    assert v["s.cgroup_mem_bytes"] >= size
    assert v["s.cgroup_anon_bytes"] >= size


def test_memory_limit_constrains_the_sut(spawn, make_cgroup):
    limit = 64 << 20
    cg = make_cgroup(memory_limit_bytes=limit)
    assert cg.memory_limit_bytes == limit
    if any(line.strip() for line in open("/proc/swaps").read().splitlines()[1:]):
        pytest.skip("swap is configured: an over-limit SUT pages instead of being stopped")
    # 256 MiB of touched anonymous memory cannot fit under a 64 MiB limit without swap.
    child = spawn(
        "buf = bytearray(256 << 20); buf[::4096] = b'x' * ((256 << 20) // 4096); report(); wait_line()",
        preexec_fn=cg.add_self,
    )
    rc = child.proc.wait(timeout=60)
    assert rc != 0  # killed by the cgroup's OOM killer (or MemoryError), never completed


def test_cpuset_pins_the_sut(spawn, make_cgroup):
    cpu = max(os.sched_getaffinity(0))
    cg = make_cgroup(cpus=[cpu])
    child = spawn("report(cpus=sorted(os.sched_getaffinity(0))); wait_line()", preexec_fn=cg.add_self)
    assert child.report()["cpus"] == [cpu]


def test_remove_deletes_the_group_and_releases_processes(spawn):
    cg, why = SutCgroup.try_create(f"test-{uuid.uuid4().hex[:8]}")
    if cg is None:
        pytest.skip(why)
    child = spawn("report(); wait_line()", preexec_fn=cg.add_self)
    child.report()
    cg.remove()
    assert not any(d.exists() for d in cg.dirs.values())
    assert "/perflab/" not in open(f"/proc/{child.pid}/cgroup").read()


def test_unavailable_reason_for_bad_requests():
    cg, why = SutCgroup.try_create("bad/name")
    assert cg is None and "name" in why
    cg, why = SutCgroup.try_create(f"test-{uuid.uuid4().hex[:8]}", cpus=[10_000])
    if cg is not None:
        cg.remove()
        pytest.fail("a cpuset with a CPU that does not exist was created")
    assert why

"""The system under test as a cgroup (S): exact CPU time and memory.

Columns (cumulative unless noted):
    s.cpu_user, s.cpu_sys            seconds
    s.cgroup_mem_bytes               gauge: memory charged to the cgroup (anon + page cache + kernel)
    s.cgroup_anon_bytes              gauge: anonymous memory (v1 total_rss, v2 anon)
    s.cgroup_file_bytes              gauge: page cache (v1 total_cache, v2 file)
    s.cgroup_pgmajfault              major faults of the cgroup's processes
    s.cgroup_refault_file            page-cache pages read back in after the cgroup's memory limit (or
    s.cgroup_refault_anon            global pressure) evicted them: memory.stat workingset_refault_*;
                                     kernels before 5.9 have one `workingset_refault` (-> s.cgroup_refault)

Why prefer it for s.cpu_*: the kernel charges the cgroup with every nanosecond its tasks run,
including processes that started and were reaped between two samples, so nothing is lost
(process-tree accounting cannot see what a process did after the last sample that saw it).

cgroup v1: `cpuacct.usage` is the exact total in ns; `cpuacct.usage_user`/`usage_sys` (or
cpuacct.stat) are sampled at timer ticks. The exact total is split in the sampled user:system
proportion, never letting either part go backwards -- what the kernel does for a process's own
utime/stime. cgroup v2: cpu.stat user_usec/system_usec are already split that way by the kernel.
"""

from __future__ import annotations

import os

from . import SourceUnavailable
from .procfs import CLK_TCK, parse_key_values, read_bytes


def _normalize(paths: str | os.PathLike | dict[str, str]) -> tuple[str | None, str | None, str | None]:
    """-> (v2 dir, v1 cpuacct dir, v1 memory dir)."""
    if isinstance(paths, dict):
        if "unified" in paths:
            return str(paths["unified"]), None, None
        return None, paths.get("cpuacct"), paths.get("memory")
    p = os.fspath(paths)
    if os.path.exists(os.path.join(p, "cgroup.controllers")):
        return p, None, None
    cpu = p if os.path.exists(os.path.join(p, "cpuacct.usage")) else None
    mem = p if os.path.exists(os.path.join(p, "memory.usage_in_bytes")) else None
    return None, cpu, mem


def split_exact_total(
    total: float, user_weight: float, sys_weight: float, prev_user: float, prev_sys: float
) -> tuple[float, float]:
    """Split an exact CPU total by a sampled user:system ratio, keeping both parts monotone."""
    if sys_weight <= 0:
        sys = 0.0
    elif user_weight <= 0:
        sys = total
    else:
        sys = total * sys_weight / (user_weight + sys_weight)
    sys = max(sys, prev_sys)
    user = total - sys
    if user < prev_user:
        user = prev_user
        sys = total - user
    return user, sys


class CgroupSource:
    name = "cgroup"

    def __init__(self, paths: str | os.PathLike | dict[str, str]) -> None:
        self._v2, self._cpuacct, self._memory = _normalize(paths)
        if not (self._v2 or self._cpuacct or self._memory):
            raise SourceUnavailable(f"no readable cgroup accounting files in {paths!r}")
        self._prev = (0.0, 0.0)
        self._cpu_from = self._probe_cpu()
        self.provides_cpu = self._cpu_from is not None

    def _probe_cpu(self) -> str | None:
        if self._v2:
            data = read_bytes(os.path.join(self._v2, "cpu.stat")) or b""
            return "cpu.stat" if b"user_usec" in data else None
        if self._cpuacct:
            for f in ("cpuacct.usage_user", "cpuacct.stat"):
                if os.path.exists(os.path.join(self._cpuacct, f)):
                    return f
        return None

    @property
    def describe(self) -> str:
        if self._v2:
            return f"cgroup v2 {self._v2}"
        return f"cgroup v1 cpuacct={self._cpuacct} memory={self._memory} (cpu from {self._cpu_from})"

    def procs(self) -> list[int]:
        """Pids currently in the cgroup (lets the process tree find SUT processes by membership)."""
        d = self._v2 or self._cpuacct or self._memory
        assert d is not None  # __init__ refuses a cgroup with none of them
        data = read_bytes(os.path.join(d, "cgroup.procs")) or b""
        return [int(p) for p in data.split()]

    def read(self) -> dict[str, float]:
        out: dict[str, float] = {}
        cpu = self._read_cpu()
        if cpu is not None:
            out["s.cpu_user"], out["s.cpu_sys"] = cpu
        out.update(self._read_memory())
        return out

    def _read_cpu(self) -> tuple[float, float] | None:
        if self._cpu_from == "cpu.stat" and self._v2 is not None:  # (cpu.stat is v2's: _probe_cpu)
            v = parse_key_values(read_bytes(os.path.join(self._v2, "cpu.stat")) or b"")
            if b"user_usec" not in v or b"system_usec" not in v:
                return None
            return v[b"user_usec"] / 1e6, v[b"system_usec"] / 1e6
        if self._cpuacct is None:
            return None
        total_raw = read_bytes(os.path.join(self._cpuacct, "cpuacct.usage"))
        if not total_raw:
            return None
        total = int(total_raw) / 1e9
        if self._cpu_from == "cpuacct.usage_user":
            u = read_bytes(os.path.join(self._cpuacct, "cpuacct.usage_user"))
            s = read_bytes(os.path.join(self._cpuacct, "cpuacct.usage_sys"))
            uw, sw = float(int(u or 0)), float(int(s or 0))
        else:
            v = parse_key_values(read_bytes(os.path.join(self._cpuacct, "cpuacct.stat")) or b"")
            uw, sw = v.get(b"user", 0) / CLK_TCK, v.get(b"system", 0) / CLK_TCK
        user, sys = split_exact_total(total, uw, sw, *self._prev)
        self._prev = (user, sys)
        return user, sys

    def _read_memory(self) -> dict[str, float]:
        out: dict[str, float] = {}
        if self._v2:
            cur = read_bytes(os.path.join(self._v2, "memory.current"))
            if cur:
                out["s.cgroup_mem_bytes"] = float(int(cur))
                st = parse_key_values(read_bytes(os.path.join(self._v2, "memory.stat")) or b"")
                keys = {b"anon": "anon_bytes", b"file": "file_bytes", b"pgmajfault": "pgmajfault",
                        b"workingset_refault_file": "refault_file", b"workingset_refault_anon": "refault_anon",
                        b"workingset_refault": "refault"}
                out.update({f"s.cgroup_{col}": float(st[k]) for k, col in keys.items() if k in st})
            return out
        if self._memory:
            usage = read_bytes(os.path.join(self._memory, "memory.usage_in_bytes"))
            if usage:
                out["s.cgroup_mem_bytes"] = float(int(usage))
            # total_* include sub-cgroups (hierarchical); the plain names do not.
            st = parse_key_values(read_bytes(os.path.join(self._memory, "memory.stat")) or b"")
            keys = {b"total_rss": "anon_bytes", b"total_cache": "file_bytes",
                    b"total_pgmajfault": "pgmajfault", b"total_workingset_refault_file": "refault_file",
                    b"total_workingset_refault_anon": "refault_anon", b"total_workingset_refault": "refault"}
            out.update({f"s.cgroup_{col}": float(st[k]) for k, col in keys.items() if k in st})
        return out

    def close(self) -> None:
        pass

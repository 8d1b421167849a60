"""The machine a measurement ran on, recorded with every run.

Results are only comparable on the same machine (or on machines known to differ in a stated
way), so every run carries this fingerprint and comparisons can refuse -- or at least flag --
runs from different machines. The adapters add the SUT's own version. What each key is -- its
name in a report, its order, how it is printed, which identities it belongs to -- is the one
table of perflab.records.fingerprint.
"""

from __future__ import annotations

import os
import platform
import socket
from pathlib import Path


def machine_fingerprint() -> dict:
    from ..monitor.sources.perf_counters import probe  # the (I) source decides availability

    perf_ok, perf_reason = probe()
    online = _online_cpus()
    return {
        "cpu_model": _cpu_model(),
        "cores": len(online) if online else os.cpu_count(),
        "online_cpus": online,
        "memory_bytes": _meminfo_bytes("MemTotal"),
        "memory_limit_bytes": _own_memory_limit(),
        "kernel": platform.release(),
        "kernel_version": platform.version(),
        "arch": platform.machine(),
        "os": _os_pretty_name(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "cgroup_version": _cgroup_version(),
        "perf_counters": {"available": perf_ok, "reason": perf_reason},
        "virtualized": _hypervisor_flag(),
        "clock_ticks_per_s": os.sysconf("SC_CLK_TCK"),
        "page_size": os.sysconf("SC_PAGE_SIZE"),
        "hostname": socket.gethostname(),
        "boot_id": _read("/proc/sys/kernel/random/boot_id"),
    }


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _cpu_model() -> str | None:
    text = _read("/proc/cpuinfo") or ""
    for key in ("model name", "Model", "cpu model", "Processor"):  # x86, arm, mips, older arm
        for line in text.splitlines():
            name, _, value = line.partition(":")
            if name.strip() == key and value.strip():
                return value.strip()
    return platform.processor() or None


def _online_cpus() -> list[int]:
    from .cgroup import parse_cpu_list

    text = _read("/sys/devices/system/cpu/online")
    return sorted(parse_cpu_list(text)) if text else []


def _meminfo_bytes(key: str) -> int | None:
    for line in (_read("/proc/meminfo") or "").splitlines():
        name, _, value = line.partition(":")
        if name == key:
            parts = value.split()
            return int(parts[0]) * (1024 if parts[1:] == ["kB"] else 1)
    return None


def _own_memory_limit() -> int | None:
    """The memory limit of the cgroup perflab runs in, when there is one below physical memory."""
    from .cgroup import cgroup_dirs_of_pid

    dirs = cgroup_dirs_of_pid("self")
    candidates = []
    if "memory" in dirs:
        candidates.append(Path(dirs["memory"]) / "memory.limit_in_bytes")
    if "unified" in dirs:
        candidates.append(Path(dirs["unified"]) / "memory.max")
    total = _meminfo_bytes("MemTotal") or 0
    for path in candidates:
        raw = _read(str(path))
        if raw and raw != "max" and 0 < int(raw) < total:
            return int(raw)
    return None


def _os_pretty_name() -> str | None:
    for path in ("/etc/os-release", "/usr/lib/os-release"):
        for line in (_read(path) or "").splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip().strip('"')
    return None


def _cgroup_version() -> str | None:
    """"v1", "v2", "hybrid" (v1 controllers plus a v2 hierarchy without them), or None."""
    from .cgroup import hierarchies

    hs = hierarchies()
    v1 = any(h.version == 1 for h in hs)
    v2 = [h for h in hs if h.version == 2]
    if v1 and v2:
        return "hybrid"
    if v1:
        return "v1"
    if v2:
        return "v2"
    return None


def _hypervisor_flag() -> bool | None:
    text = _read("/proc/cpuinfo")
    if text is None:
        return None
    for line in text.splitlines():
        if line.startswith("flags"):
            return "hypervisor" in line.split()
    return None

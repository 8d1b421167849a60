"""CPU performance counters for the system under test (I): `i.instructions`, `i.cycles`.

INSTR/CMD (I) is the seeds' pathlength and CPI (I) = cycles / instructions. Both need hardware
counters, which many virtual machines do not expose: then `probe()` says why, the source is
unavailable, no `i.*` column is written and reports print `na` (the valgrind mode of the command
adapter is the other way to get instruction counts).

The counters are opened with perf_event_open(2) through ctypes, one per SUT process, with
`inherit` so that children forked later are counted too (their counts are folded into the
parent's counter when they exit). Reading needs no perf binary. Values are scaled by
time_enabled / time_running when the kernel multiplexes counters.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct
from functools import lru_cache

from . import SourceUnavailable

PERF_TYPE_HARDWARE = 0
PERF_TYPE_SOFTWARE = 1
PERF_COUNT_SW_TASK_CLOCK = 1
PERF_COUNT_HW_CPU_CYCLES = 0
PERF_COUNT_HW_INSTRUCTIONS = 1
PERF_FORMAT_TOTAL_TIME_ENABLED = 1 << 0
PERF_FORMAT_TOTAL_TIME_RUNNING = 1 << 1
_FLAG_INHERIT = 1 << 1
_FLAG_EXCLUDE_HV = 1 << 6
PERF_FLAG_FD_CLOEXEC = 1 << 3

_SYSCALL_NR = {"x86_64": 298, "aarch64": 241, "ppc64le": 319, "s390x": 331, "riscv64": 241}

EVENTS = {"instructions": PERF_COUNT_HW_INSTRUCTIONS, "cycles": PERF_COUNT_HW_CPU_CYCLES}


class _PerfEventAttr(ctypes.Structure):
    # The first 64 bytes of struct perf_event_attr (PERF_ATTR_SIZE_VER0), enough for counting.
    _fields_ = [
        ("type", ctypes.c_uint32),
        ("size", ctypes.c_uint32),
        ("config", ctypes.c_uint64),
        ("sample_period", ctypes.c_uint64),
        ("sample_type", ctypes.c_uint64),
        ("read_format", ctypes.c_uint64),
        ("flags", ctypes.c_uint64),
        ("wakeup_events", ctypes.c_uint32),
        ("bp_type", ctypes.c_uint32),
        ("config1", ctypes.c_uint64),
    ]


def _open_counter(
    pid: int, config: int, inherit: bool = True, type_: int = PERF_TYPE_HARDWARE
) -> int:
    """An fd counting event (type_, config) for process `pid` (0 = the caller) on any CPU.

    Raises OSError with the kernel's errno when the event cannot be counted.
    """
    nr = _SYSCALL_NR.get(platform.machine())
    if nr is None:
        raise OSError(errno.ENOSYS, f"perf_event_open syscall number unknown for {platform.machine()}")
    attr = _PerfEventAttr()
    attr.type = type_
    attr.size = ctypes.sizeof(_PerfEventAttr)
    attr.config = config
    attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING
    attr.flags = _FLAG_EXCLUDE_HV | (_FLAG_INHERIT if inherit else 0)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    fd = libc.syscall(
        ctypes.c_long(nr), ctypes.byref(attr), ctypes.c_int(pid), ctypes.c_int(-1),
        ctypes.c_int(-1), ctypes.c_ulong(PERF_FLAG_FD_CLOEXEC),
    )
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return int(fd)


def _read_counter(fd: int) -> float:
    value, enabled, running = struct.unpack("QQQ", os.read(fd, 24))
    if running == 0:
        return 0.0
    return value * (enabled / running) if running < enabled else float(value)


_REASONS = {
    errno.ENOENT: "the CPU exposes no hardware counters (typical of virtual machines without a vPMU)",
    errno.EOPNOTSUPP: "hardware counters not supported here",
    errno.ENODEV: "no PMU for hardware counters",
    errno.EACCES: "not permitted (kernel.perf_event_paranoid={paranoid}; run as root or lower it)",
    errno.EPERM: "not permitted (kernel.perf_event_paranoid={paranoid}; run as root or lower it)",
    errno.ENOSYS: "perf_event_open is not available in this kernel",
}


@lru_cache(maxsize=1)
def probe() -> tuple[bool, str | None]:
    """(True, None) when instructions and cycles can be counted for a process, else (False, why)."""
    for name, config in EVENTS.items():
        try:
            fd = _open_counter(0, config, inherit=False)
        except OSError as e:
            try:
                paranoid = open("/proc/sys/kernel/perf_event_paranoid").read().strip()
            except OSError:
                paranoid = "?"
            code = e.errno or 0  # perf_event_open's OSError has its errno
            why = _REASONS.get(code, e.strerror or str(e)).format(paranoid=paranoid)
            return False, f"perf_event_open({name}) failed: {errno.errorcode.get(code, code)}: {why}"
        os.close(fd)
    return True, None


class PerfCounterSource:
    """Instructions and cycles of the SUT processes, cumulative (counters of exited processes keep
    their final value, so totals never go backwards)."""

    name = "perf_counters"

    def __init__(self, pids: list[int]) -> None:
        ok, why = probe()
        if not ok:
            raise SourceUnavailable(why)
        self._fds: dict[tuple[int, str], int] = {}
        self.add_pids(pids)

    def add_pids(self, pids: list[int]) -> None:
        for pid in pids:
            for name, config in EVENTS.items():
                if (pid, name) in self._fds:
                    continue
                try:
                    self._fds[(pid, name)] = _open_counter(pid, config)
                except OSError:
                    pass  # exited already

    def read(self) -> dict[str, float]:
        totals = {name: 0.0 for name in EVENTS}
        for (_, name), fd in self._fds.items():
            try:
                totals[name] += _read_counter(fd)
            except OSError:
                pass
        return {f"i.{name}": value for name, value in totals.items()}

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()

"""Cheap reads of /proc and /sys files, shared by the sources.

The monitor reads four small files per SUT process per sample, so it uses os.open/os.read
(and os.pread on kept descriptors) instead of open() or psutil: the io layers and psutil's
object model cost more than the kernel's work for these files. Measured on the 2-core
development VM: psutil.oneshot() cpu_times + io_counters + num_ctx_switches + memory_info
~115 us per process; stat + io + status + children here ~36 us with open/read/close and
~15 us with pread on kept descriptors. The sampling cost is itself a measurement error.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

CLK_TCK: int = os.sysconf("SC_CLK_TCK")
"""Units of utime/stime in /proc/<pid>/stat and of /proc/stat (USER_HZ, almost always 100)."""

PAGE_SIZE: int = os.sysconf("SC_PAGE_SIZE")

_CHUNK = 65536


def read_bytes(path: str) -> bytes | None:
    """The whole content of a /proc or /sys file, or None when it is gone or unreadable.

    A process that exits between listing and reading is normal, so the usual failures
    (gone, reaped, permission) return None instead of raising.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except (FileNotFoundError, ProcessLookupError, PermissionError, NotADirectoryError):
        return None
    try:
        data = os.read(fd, _CHUNK)
        if len(data) == _CHUNK:  # seq_file content larger than one read: keep reading
            parts = [data]
            while True:
                more = os.read(fd, _CHUNK)
                if not more:
                    break
                parts.append(more)
            data = b"".join(parts)
        return data
    except (ProcessLookupError, PermissionError, OSError):
        return None
    finally:
        os.close(fd)


def pread_all(fd: int) -> bytes | None:
    """Re-read an open /proc file from the start (the kernel regenerates it), or None when its
    process is gone. An fd opened on /proc/<pid>/... stays bound to that process, so a reused
    pid can never be read by mistake through it."""
    try:
        data = os.pread(fd, _CHUNK, 0)
        if len(data) == _CHUNK:
            parts, offset = [data], _CHUNK
            while more := os.pread(fd, _CHUNK, offset):
                parts.append(more)
                offset += len(more)
            data = b"".join(parts)
        return data
    except OSError:  # ESRCH once the process has been reaped
        return None


def parse_io(data: bytes) -> tuple[int, int, int, int, int, int] | None:
    """(rchar, wchar, syscr, syscw, read_bytes, write_bytes) from /proc/<pid>/io."""
    f = data.split()
    # The kernel prints these keys in this order; check it rather than trust it.
    if len(f) >= 12 and f[0] == b"rchar:" and f[10] == b"write_bytes:":
        return int(f[1]), int(f[3]), int(f[5]), int(f[7]), int(f[9]), int(f[11])
    kv = parse_key_values(data)
    try:
        return (kv[b"rchar"], kv[b"wchar"], kv[b"syscr"], kv[b"syscw"], kv[b"read_bytes"],
                kv[b"write_bytes"])
    except KeyError:
        return None


@dataclass(slots=True)
class PidStat:
    """The fields of /proc/<pid>/stat the monitor uses (see proc(5))."""

    comm: str
    state: str
    ppid: int
    minflt: int
    cminflt: int
    majflt: int
    cmajflt: int
    utime: int  # clock ticks, own threads (including exited threads)
    stime: int
    cutime: int  # clock ticks of reaped (waited-for) children, recursively
    cstime: int
    num_threads: int
    starttime: int  # clock ticks after boot: (pid, starttime) identifies a process
    rss_pages: int


def parse_pid_stat(data: bytes) -> PidStat | None:
    # comm is in parentheses and may itself contain spaces and ')': split at the last ')'.
    close = data.rfind(b")")
    if close < 0:
        return None
    comm = data[data.find(b"(") + 1 : close].decode("utf-8", "replace")
    f = data[close + 2 :].split()
    try:
        return PidStat(
            comm=comm,
            state=f[0].decode(),
            ppid=int(f[1]),
            minflt=int(f[7]),
            cminflt=int(f[8]),
            majflt=int(f[9]),
            cmajflt=int(f[10]),
            utime=int(f[11]),
            stime=int(f[12]),
            cutime=int(f[13]),
            cstime=int(f[14]),
            num_threads=int(f[17]),
            starttime=int(f[19]),
            rss_pages=int(f[21]),
        )
    except (IndexError, ValueError):
        return None


def read_pid_stat(pid: int) -> PidStat | None:
    data = read_bytes(f"/proc/{pid}/stat")
    return parse_pid_stat(data) if data else None


def parse_key_values(data: bytes, wanted: dict[bytes, int] | None = None) -> dict[bytes, int]:
    """Parse `key value` / `key: value` lines (vmstat, io, cgroup stat files) into ints."""
    out: dict[bytes, int] = {}
    for line in data.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        key = parts[0].rstrip(b":")
        if wanted is not None and key not in wanted:
            continue
        try:
            out[key] = int(parts[1])
        except ValueError:
            continue
    return out


def status_ctx_switches(data: bytes) -> tuple[int, int] | None:
    """(voluntary, nonvoluntary) context switches from a /proc/<pid>/task/<tid>/status file."""
    try:
        return (
            _int_after(data, b"\nvoluntary_ctxt_switches:"),
            _int_after(data, b"\nnonvoluntary_ctxt_switches:"),
        )
    except ValueError:
        return None


def _int_after(data: bytes, key: bytes) -> int:
    start = data.find(key)
    if start < 0:
        raise ValueError(key)
    start += len(key)
    end = data.find(b"\n", start)
    return int(data[start:] if end < 0 else data[start:end])

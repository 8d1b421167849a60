"""A system under test whose cost per transaction is known: the ruler for perflab's monitors.

`work(cpu_ms, sys_ms, fsync_writes)` burns `cpu_ms` of user CPU, `sys_ms` of system CPU and
does `fsync_writes` synchronous (O_DSYNC) 4 KiB writes. Metrics such as PBT/CMD (S), EMUL/CMD (S),
CP/CMD (S) and VIO/CMD measured by perflab are checked against these numbers
(docs/accuracy.md, `perflab accuracy`).

How the amounts are made exact: both burns loop until this thread's CPU clock
(CLOCK_THREAD_CPUTIME_ID, the kernel's exact per-thread runtime) has advanced by the target,
so a slower or busier CPU makes the loop run longer, not the cost differ; the last chunk is
sized to the time left, so a burn ends within microseconds of its target. The user burn is
pure arithmetic; it reads the clock once per ~50 us chunk, and that one system call per chunk
is the only system time it adds (about 1 %). The system burn reads /dev/zero into a buffer:
the kernel clears up to 1 MiB per call, so nearly all of its time is system time.
The writes overwrite preallocated blocks through an O_DSYNC descriptor: each puts exactly 4 KiB
on the device with no file-system metadata to journal (on a disk with a write-back cache the
block layer also issues a cache flush per write; docs/accuracy.md shows how it is counted).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

_BLOCK = b"\x5a" * 4096
_SLOTS = 16

_ZERO_CHUNK = 1 << 20  # bytes per /dev/zero read: ~50-100 us of kernel time per call
_zero_fd: int | None = None
_zero_buf = bytearray(_ZERO_CHUNK)
_data_fd: int | None = None
_data_slot = 0
# Measured speeds (work per second of thread CPU), so the last chunk of a burn can be sized to
# the time left: the burn then ends within a few microseconds of its target instead of
# overshooting by up to a whole chunk.
_spin_per_s: float | None = None
_zero_bytes_per_s: float | None = None


def _spin(iterations: int) -> int:
    x = 0
    for i in range(iterations):
        x = (x * 31 + i) & 0xFFFF
    return x


def burn_user(seconds: float) -> None:
    """Arithmetic until this thread has used `seconds` more CPU, nearly all of it user time."""
    global _spin_per_s
    if seconds <= 0:
        return
    now = time.thread_time()
    deadline = now + seconds
    while now < deadline:
        if _spin_per_s is None:
            iterations = 2000
        else:
            # At most ~50 us per chunk, one clock read (a system call) each. Near the deadline a
            # chunk covers half of what is left, so a misjudged speed (a cold cache after a
            # preemption runs the loop slower) overshoots by a microsecond or two, not by the
            # whole last chunk: under load the target was otherwise exceeded by ~0.7%.
            left = deadline - now
            iterations = max(20, int(min(50e-6, max(2e-6, 0.5 * left) if left < 100e-6 else left) * _spin_per_s))
        _spin(iterations)
        later = time.thread_time()
        if later > now:
            speed = iterations / (later - now)
            _spin_per_s = speed if _spin_per_s is None else 0.9 * _spin_per_s + 0.1 * speed
        now = later


def burn_system(seconds: float) -> None:
    """Kernel work until this thread has used `seconds` more CPU: the kernel clears the buffer
    on each /dev/zero read, so nearly all of it is system time."""
    global _zero_fd, _zero_bytes_per_s
    if seconds <= 0:
        return
    if _zero_fd is None:
        _zero_fd = os.open("/dev/zero", os.O_RDONLY)
    view = memoryview(_zero_buf)
    now = time.thread_time()
    deadline = now + seconds
    while now < deadline:
        if _zero_bytes_per_s is None:
            size = 1 << 16
        else:
            size = max(4096, min(_ZERO_CHUNK, int((deadline - now) * _zero_bytes_per_s)))
        os.readv(_zero_fd, [view[:size]])
        later = time.thread_time()
        if later > now:
            speed = size / (later - now)
            _zero_bytes_per_s = speed if _zero_bytes_per_s is None else 0.9 * _zero_bytes_per_s + 0.1 * speed
        now = later


def _data_file() -> int:
    global _data_fd
    if _data_fd is None:
        directory = Path(os.environ.get("PERFLAB_RUN_DIR") or ".")
        path = directory / f"synthetic-{os.getpid()}.dat"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        for slot in range(_SLOTS):  # allocate the blocks once: later writes change no metadata
            os.pwrite(fd, _BLOCK, slot * 4096)
        os.fsync(fd)
        os.close(fd)
        # O_DSYNC: each write returns once its data is on the device, with no file-system
        # journal commit (an overwrite of allocated blocks changes no metadata the data needs).
        _data_fd = os.open(path, os.O_RDWR | os.O_DSYNC)
    return _data_fd


def fsync_write(count: int) -> None:
    global _data_slot
    if count <= 0:
        return
    fd = _data_file()
    for _ in range(count):
        os.pwrite(fd, _BLOCK, _data_slot * 4096)
        _data_slot = (_data_slot + 1) % _SLOTS


def prepare() -> None:
    """A worker's setup (target.setup): allocate the data file before the first transaction, so
    its one-time cost (16 blocks and an fsync) stays out of the measurement."""
    _data_file()


def loops(iterations: int = 0, knob: int = 0) -> int:
    """A transaction of known *work* rather than known CPU time: `iterations + knob` turns of the
    arithmetic loop. `work` burns to a CPU-time target, so sharing a CPU cannot make it cost
    more and it cannot show what an arrangement does to a real cost; a fixed number of
    instructions can (a loop that loses its caches to a neighbour takes longer), which is what
    the accuracy studies measure (`perflab accuracy --studies`, docs/accuracy.md). `knob` is the
    added cost a study dials."""
    return _spin(int(iterations) + int(knob))


def work(cpu_ms: float = 0.0, sys_ms: float = 0.0, fsync_writes: int = 0) -> None:
    """One transaction of known cost."""
    burn_user(cpu_ms / 1000.0)
    burn_system(sys_ms / 1000.0)
    fsync_write(int(fsync_writes))


_records_fd: int | None = None
_records_offset = 0


def write_records(records: int = 64, size: int = 4096, sync: bool = True) -> None:
    """A batch job of known I/O: `records` writes of `size` bytes each, appended to this worker's
    spool file through O_DSYNC (each write is on the device when it returns) -- the JES3plus
    spool writers. A job writes exactly records x size bytes; the file wraps at 64 MiB so a long
    stream does not fill the disk (an overwrite of allocated blocks changes no metadata)."""
    global _records_fd, _records_offset
    if _records_fd is None:
        directory = Path(os.environ.get("PERFLAB_RUN_DIR") or ".")
        flags = os.O_RDWR | os.O_CREAT | (os.O_DSYNC if sync else 0)
        _records_fd = os.open(directory / f"spool-{os.getpid()}.dat", flags, 0o644)
    block = b"\x5a" * int(size)
    for _ in range(int(records)):
        if _records_offset + len(block) > 64 << 20:
            _records_offset = 0
        os.pwrite(_records_fd, block, _records_offset)
        _records_offset += len(block)


def spin(iterations: int = 100_000) -> None:
    """A transaction of fixed *work*, not fixed CPU time: its CPU time is whatever the processor
    takes to do it, so it shows the host's speed (which `work` hides by burning to a CPU-time
    target). The noise experiments (docs/noise.md) use it to tell the SUT's variance from the host's."""
    _spin(int(iterations))


def stall(seconds: float = 1.0) -> None:
    """A transaction that waits without using CPU (a SUT that stalls)."""
    time.sleep(seconds)


def fail(message: str = "synthetic failure") -> None:
    raise RuntimeError(message)


def crash(code: int = 3) -> None:
    """Kill the worker process: a SUT that fails mid-run."""
    os._exit(code)


_calls = 0


def crash_after(calls: int = 50, code: int = 3) -> None:
    """Work normally, then kill this worker process on its `calls`-th transaction."""
    global _calls
    _calls += 1
    if _calls >= calls:
        os._exit(code)


_first_call: float | None = None


def freeze(start_epoch: float | None = None, end_epoch: float | None = None, after_s: float | None = None,
           for_s: float = 1.0) -> None:
    """A SUT that stalls: any transaction arriving in [start, end) waits until end. The window is
    wall-clock epochs (`start_epoch`, `end_epoch`), or `after_s` seconds after this worker's first
    transaction for `for_s` seconds -- which does not depend on how long the run took to start."""
    global _first_call
    now = time.time()
    if after_s is not None:
        if _first_call is None:
            _first_call = now
        start_epoch, end_epoch = _first_call + after_s, _first_call + after_s + for_s
    if start_epoch is not None and end_epoch is not None and start_epoch <= now < end_epoch:
        time.sleep(end_epoch - now)


def noop() -> None:
    """The null transaction: what it costs is the framework's own overhead."""

"""One wake-up at a time of the monotonic clock, to the microsecond: the engine's timer for its
parked users (engine.py, `_arm`).

Why not the event loop's own timer: uvloop's timers count whole milliseconds (a delay is rounded
to the nearest one and may fire up to a millisecond early) and its poll waits whole milliseconds,
so the engine rounded every delay up to whole ticks, never below one, and a think ending between
two ticks started up to a tick and a loop turn late -- p99 start lateness 1.7-3.4 ms at 10k users
(bench/findings.md), against issue 28's 1 ms. A Linux timerfd armed at the absolute time
(TFD_TIMER_ABSTIME) on CLOCK_MONOTONIC -- time.monotonic()'s clock -- and watched by the loop as a
readable descriptor wakes the loop at that time, late by the kernel's wake-up latency and the
thread's timer slack (50 us by default), and never early.

`os.timerfd_create` where Python has it (3.13 and later), libc's through ctypes before; where
neither works (not Linux), `wake_timer` gives the loop's own timer with the delay rounded up to
whole ticks, as the engine did before -- and where the workload asks for it (timing.wake: tick).

The cost: each wake-up of the driver's thread from idle costs about 20 us of its CPU on this KVM
guest, and exact wake-ups merge fewer due users and replies into one: at 10k users and 1,000
transactions/s the driver used 6.2 % of a core instead of 4.6 % (about 16 us more per
transaction), for a p99 start lateness of 0.1 ms instead of 1.2 ms (docs/performance.md).
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import functools
import math
import os
import time
from collections.abc import Callable
from typing import Protocol

TIMER_TICK_S = 0.001  # uvloop's timers count whole milliseconds of CLOCK_MONOTONIC
CLOCK_MONOTONIC = 1
TFD_TIMER_ABSTIME = 1
TFD_NONBLOCK = os.O_NONBLOCK
TFD_CLOEXEC = os.O_CLOEXEC


class WakeTimer(Protocol):
    """A single wake-up: `arm` replaces the one armed before; `callback` runs on the loop."""

    precise: bool

    def arm(self, when: float) -> None:
        """Call back at time.monotonic() >= when (never before)."""

    def cancel(self) -> None:
        """No call back until armed again."""

    def close(self) -> None:
        """Cancel and give back what it holds; it is not armed again."""


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


class _LibcTimerfd:
    """timerfd_create and timerfd_settime from libc (Python before 3.13 has no binding)."""

    def __init__(self) -> None:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        self._create = libc.timerfd_create
        self._create.argtypes = [ctypes.c_int, ctypes.c_int]
        self._create.restype = ctypes.c_int
        self._settime = libc.timerfd_settime
        self._settime.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.POINTER(_Itimerspec), ctypes.c_void_p]
        self._settime.restype = ctypes.c_int
        self._spec = _Itimerspec()   # reused: one timer per engine, armed from the loop's thread only

    def create(self) -> int:
        fd = self._create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC)
        if fd < 0:
            raise OSError(ctypes.get_errno(), "timerfd_create")
        return fd

    def set_ns(self, fd: int, when_ns: int) -> None:
        """Arm at the absolute time `when_ns` (0 disarms)."""
        value = self._spec.it_value
        value.tv_sec, value.tv_nsec = divmod(when_ns, 1_000_000_000)
        if self._settime(fd, TFD_TIMER_ABSTIME, ctypes.byref(self._spec), None) < 0:
            raise OSError(ctypes.get_errno(), "timerfd_settime")


class _OsTimerfd:
    """Python's own binding (3.13 and later)."""

    def create(self) -> int:
        return os.timerfd_create(os.CLOCK_MONOTONIC, flags=os.TFD_NONBLOCK | os.TFD_CLOEXEC)  # type: ignore[attr-defined]

    def set_ns(self, fd: int, when_ns: int) -> None:
        os.timerfd_settime_ns(fd, flags=os.TFD_TIMER_ABSTIME, initial=when_ns)  # type: ignore[attr-defined]


class TimerfdWake:
    """The wake-up on a timerfd the loop watches."""

    precise = True

    def __init__(self, loop: asyncio.AbstractEventLoop, callback: Callable[[], None],
                 binding: _LibcTimerfd | _OsTimerfd) -> None:
        self._loop, self._callback, self._binding = loop, callback, binding
        self._fd = binding.create()
        try:
            loop.add_reader(self._fd, self._fired)
        except BaseException:
            os.close(self._fd)
            raise

    def arm(self, when: float) -> None:
        # Rounded up to the nanosecond: the kernel fires at or after it, so never before `when`.
        self._binding.set_ns(self._fd, max(1, math.ceil(when * 1e9)))

    def cancel(self) -> None:
        if self._fd >= 0:
            self._binding.set_ns(self._fd, 0)

    def close(self) -> None:
        if self._fd < 0:
            return
        self._loop.remove_reader(self._fd)
        os.close(self._fd)
        self._fd = -1

    def _fired(self) -> None:
        try:
            os.read(self._fd, 8)   # the expiry count; reading it clears the descriptor's readiness
        except BlockingIOError:
            return   # re-armed or cancelled after it fired and before the loop called back
        self._callback()


class LoopTickWake:
    """The loop's own timer, the delay rounded up to whole ticks, never below one (uvloop's timers
    may fire up to a tick early, more when its loop turn stalled before the arming: it counts from
    the time cached when the turn began; the caller checks the clock and arms again for what is
    not yet due)."""

    precise = False

    def __init__(self, loop: asyncio.AbstractEventLoop, callback: Callable[[], None]) -> None:
        self._loop, self._callback = loop, callback
        self._handle: asyncio.TimerHandle | None = None

    def arm(self, when: float) -> None:
        self.cancel()
        delay = max(0.0, when - time.monotonic())
        self._handle = self._loop.call_later(math.ceil(delay / TIMER_TICK_S) * TIMER_TICK_S or TIMER_TICK_S,
                                             self._callback)

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def close(self) -> None:
        self.cancel()


@functools.lru_cache(maxsize=1)
def _binding() -> _LibcTimerfd | _OsTimerfd | None:
    if hasattr(os, "timerfd_create"):
        return _OsTimerfd()
    try:
        return _LibcTimerfd()
    except (OSError, AttributeError):   # no libc, or one without timerfd (not Linux)
        return None


def wake_timer(loop: asyncio.AbstractEventLoop, callback: Callable[[], None], exact: bool = True) -> WakeTimer:
    """A timerfd wake-up where the system has one and `exact` is asked for (the workload's
    timing.wake), else the loop's tick timer."""
    binding = _binding() if exact else None
    if binding is not None:
        try:
            return TimerfdWake(loop, callback, binding)
        except (OSError, NotImplementedError):   # out of descriptors, or a loop that cannot watch them
            pass
    return LoopTickWake(loop, callback)

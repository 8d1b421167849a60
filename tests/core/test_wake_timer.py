"""The engine's wake-up for parked users (perflab.drive.load.wake_timer): a timerfd on the loop,
at the time asked to the nanosecond, never before it; cancelled, re-armed and closed as the
engine uses it. Timing of how late it fires is a benchmark's (bench/schedule.py), not a test's:
what is asserted here holds on a loaded host (the kernel never fires an absolute timer early)."""

from __future__ import annotations

import asyncio
import os
import sys
import time

import pytest
import uvloop
import yaml

from perflab.drive.load import wake_timer as module
from perflab.drive.load.wake_timer import LoopTickWake, TimerfdWake, wake_timer
from perflab.workload.model import Workload

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="timerfd is Linux's")


async def _fire_times(timer_factory, offsets: list[float]) -> list[tuple[float, float]]:
    """(asked for, called back at) for each offset, one wake-up at a time."""
    loop = asyncio.get_running_loop()
    fired: asyncio.Future | None = None

    def callback() -> None:
        if fired is not None and not fired.done():   # a second call resolves the next arming early: caught
            fired.set_result(time.monotonic())

    timer = timer_factory(loop, callback)
    pairs = []
    try:
        for offset in offsets:
            fired = loop.create_future()
            when = time.monotonic() + offset
            timer.arm(when)
            pairs.append((when, await asyncio.wait_for(fired, 5.0)))
    finally:
        timer.close()
    return pairs


@linux_only
@pytest.mark.parametrize("run", [uvloop.run, asyncio.run], ids=["uvloop", "asyncio"])
def test_a_timerfd_wakes_the_loop_at_the_time_and_never_before(run):
    offsets = [0.00005 * k for k in range(1, 41)] * 3   # 50 us to 2 ms: between and across ticks
    pairs = run(_fire_times(wake_timer, offsets))
    assert len(pairs) == len(offsets)
    early = [(when, at) for when, at in pairs if at < when]
    assert early == []


@linux_only
def test_the_engine_gets_the_timerfd_on_linux_unless_the_workload_asks_for_ticks():
    async def kind(exact: bool):
        timer = wake_timer(asyncio.get_running_loop(), lambda: None, exact=exact)
        try:
            return type(timer), timer.precise
        finally:
            timer.close()
    assert uvloop.run(kind(True)) == (TimerfdWake, True)
    assert uvloop.run(kind(False)) == (LoopTickWake, False)
    text = ("name: w\ntarget: {kind: python}\ntransactions: [{name: a, call: 'm:f'}]\n"
            "scripts: [{name: s, steps: [a]}]\nload: {users: 1}\n")
    assert Workload.model_validate(yaml.safe_load(text)).timing.wake == "auto"   # the default: think ends exact, arrivals on the grid
    assert Workload.model_validate(yaml.safe_load(text + "timing: {wake: tick}\n")).timing.wake == "tick"


@linux_only
def test_re_arming_replaces_the_wake_up_and_cancel_and_close_stop_it():
    calls: list[float] = []
    called = asyncio.Event

    async def main():
        loop = asyncio.get_running_loop()
        event = called()

        def callback() -> None:
            calls.append(time.monotonic())
            event.set()

        timer = wake_timer(loop, callback)
        now = time.monotonic()
        timer.arm(now + 0.002)
        timer.arm(now + 0.020)          # replaces the first: one call, at the second time
        await asyncio.wait_for(event.wait(), 5.0)
        await asyncio.sleep(0.03)       # no second call (a stall can only delay one, never add it)
        once = list(calls)
        timer.arm(time.monotonic() + 0.002)
        timer.cancel()                  # nothing more
        await asyncio.sleep(0.03)
        after_cancel = list(calls)
        fd = timer._fd
        timer.arm(time.monotonic() + 0.002)
        timer.close()                   # closed while armed: no call, the descriptor given back
        await asyncio.sleep(0.03)
        return now, once, after_cancel, fd

    now, once, after_cancel, fd = uvloop.run(main())
    assert len(once) == 1 and once[0] >= now + 0.020
    assert after_cancel == once
    assert calls == once
    with pytest.raises(OSError):
        os.fstat(fd)


def test_without_a_timerfd_the_loop_s_tick_timer_stands_in(monkeypatch):
    """Where there is no timerfd (not Linux) the engine keeps the loop's timer, rounded up to
    whole ticks: it may fire early (uvloop) -- the engine re-arms then."""
    monkeypatch.setattr(module, "_binding", lambda: None)
    offsets = [0.0003 * k for k in range(1, 11)]

    async def main():
        timer = wake_timer(asyncio.get_running_loop(), lambda: None)
        kind = type(timer)
        timer.close()
        return kind, await _fire_times(wake_timer, offsets)

    kind, pairs = uvloop.run(main())
    assert kind is LoopTickWake
    # Each arming called back once (_fire_times waits for every one). How early is not asserted:
    # uvloop counts from the time cached when its loop turn began, so a stall between that and
    # the arming makes it early by the stall -- what the engine's re-arming is for.
    assert len(pairs) == len(offsets)


@linux_only
def test_the_libc_binding_arms_at_an_absolute_time():
    """The ctypes binding itself (Python before 3.13 has no os.timerfd_*): armed a minute ahead
    the descriptor has nothing to read; armed at a time past, one expiry at once; disarmed, none."""
    binding = module._LibcTimerfd()
    fd = binding.create()
    try:
        binding.set_ns(fd, int((time.monotonic() + 60.0) * 1e9))   # a minute ahead: not expired
        with pytest.raises(BlockingIOError):
            os.read(fd, 8)
        binding.set_ns(fd, int((time.monotonic() - 1.0) * 1e9))    # a second ago: expired at once
        assert int.from_bytes(os.read(fd, 8), sys.byteorder) == 1
        binding.set_ns(fd, 0)                                       # disarmed: nothing to read
        with pytest.raises(BlockingIOError):
            os.read(fd, 8)
    finally:
        os.close(fd)

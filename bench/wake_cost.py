"""The CPU a wake-up of the event loop costs, on the engine's two timers (bench/findings.md,
*Issue 28, item 3*): a uvloop loop armed for exponential gaps of mean 1 ms for 5 s, pinned by the
caller (`taskset -c 0 python bench/wake_cost.py exact|tick`); prints wake-ups, process CPU per
wake-up and how late they came."""

from __future__ import annotations

import asyncio
import random
import sys
import time

import uvloop

from perflab.drive.load import wake_timer


async def measure(exact: bool, seconds: float = 5.0) -> str:
    loop = asyncio.get_running_loop()
    rnd = random.Random(1)
    late: list[float] = []
    end = time.monotonic() + seconds
    due = time.monotonic() + 0.001
    done = loop.create_future()

    def woken() -> None:
        nonlocal due
        now = time.monotonic()
        late.append(now - due)
        if now > end:
            done.set_result(None)
            return
        due = now + rnd.expovariate(1000.0)
        timer.arm(due)

    timer = wake_timer.wake_timer(loop, woken, exact=exact)
    timer.arm(due)
    cpu0 = time.process_time()
    await done
    cpu = time.process_time() - cpu0
    timer.close()
    late.sort()
    return (f"{type(timer).__name__}: {len(late)} wake-ups, {cpu / len(late) * 1e6:.1f} us of CPU each, "
            f"late p50 {late[len(late) // 2] * 1e3:.3f} ms, p99 {late[int(len(late) * 0.99)] * 1e3:.3f} ms")


if __name__ == "__main__":
    print(uvloop.run(measure(exact=sys.argv[1:] != ["tick"])))

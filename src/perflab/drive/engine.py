"""The driver: perflab's TPNS. Simulated users (closed loop) or arrivals (open loop).

Closed loop: each user logs on (staggered over the stagger period), runs the init script once,
then repeatedly picks a script by weight; before every step it thinks (the step's think time,
or the workload's), then issues the transaction and waits for it. Think time + response time
is the user's cycle, so USERS / (AVG THINK + AVG LAST) = ETR (Little's law).

Open loop: scripts start on a schedule (Poisson or constant arrivals) whether or not earlier
ones finished. Response time is measured from the *intended* start, so a stalled SUT shows up
in the response times instead of silently lowering the offered load (coordinated omission);
service time, from the actual start, is kept too. Arrivals beyond `max_in_flight` are
dropped and recorded as errors rather than queued without bound.

Every simulated user or arrival draws from its own seeded stream (workload/rng.py): the same
seed gives the same script choices and think times however the event loop interleaves them.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import time
from dataclasses import dataclass, field
from typing import Awaitable, Callable, Protocol

from perflab.drive.params import ParamMaker
from perflab.drive.recorder import Recorder
from perflab.errors import SutFailure
from perflab.workload.model import ClosedLoad, OpenLoad, Workload
from perflab.workload.rng import UserRandom
from perflab.workload.thinktime import NO_THINK

NAN = math.nan
STOP_GRACE_S = 30.0


async def sleep_until(deadline: float) -> None:
    """Sleep until time.monotonic() >= deadline.

    uvloop's timers have millisecond resolution and can fire up to a millisecond early; a
    transaction must never start before its intended time, so re-check and sleep again.
    """
    while (delay := deadline - time.monotonic()) > 0:
        await asyncio.sleep(delay)


class Executor(Protocol):
    """What the engine hands transactions to: the SUT worker pool, or a network client.

    `user` is the simulated user (or arrival) issuing it, for adapters that keep a connection
    per user. The awaitable resolves to a `perflab.drive.workers.Reply`.
    """

    def execute(self, tx_index: int, params: dict | None, user: int = -1) -> Awaitable: ...


@dataclass
class Phases:
    """The run's time line, in seconds after t0."""

    stagger: float
    stabilization: float
    measurement: float

    @property
    def window_start(self) -> float:
        return self.stagger + self.stabilization

    @property
    def window_end(self) -> float:
        return self.window_start + self.measurement

    def name_at(self, t: float) -> str:
        if t < self.stagger:
            return "stagger"
        if t < self.window_start:
            return "stabilization"
        if t < self.window_end:
            return "measurement"
        return "stopping"


@dataclass
class _Step:
    tx_index: int
    think: object
    params: ParamMaker
    klass: int


@dataclass
class _Script:
    index: int
    steps: list[_Step]


@dataclass
class Outcome:
    status: str = "complete"  # complete | failed | interrupted
    reason: str | None = None
    driver_cpu_window_s: float = NAN
    window_wall_s: float = NAN
    dropped: int = 0
    started_at: float = 0.0


class Engine:
    def __init__(self, workload: Workload, executor: Executor, recorder: Recorder, phases: Phases, t0: float,
                 users: int | None = None, rate: float | None = None, seed: int | None = None):
        self.workload = workload
        self.executor = executor
        self.recorder = recorder
        self.phases = phases
        self.t0 = t0
        self.seed = workload.seed if seed is None else seed
        load = workload.load
        self.users = users if users is not None else (load.users if isinstance(load, ClosedLoad) else None)
        self.rate = rate if rate is not None else (load.rate if isinstance(load, OpenLoad) else None)
        if users is not None and rate is None:
            self.rate = None
        if rate is not None:
            self.users = None
        self.arrival = load.arrival if isinstance(load, OpenLoad) else "poisson"
        self.max_in_flight = load.max_in_flight if isinstance(load, OpenLoad) else 1000
        self.outcome = Outcome()
        self.stopping = False
        self.in_flight = 0
        self._thinking: dict[int, asyncio.Task] = {}
        self._compile()

    # --- preparation --------------------------------------------------------------------

    def _compile(self) -> None:
        w = self.workload
        tx_index = {t.name: i for i, t in enumerate(w.transactions)}
        self.class_names = sorted({t.tx_class for t in w.transactions})
        class_index = {c: i for i, c in enumerate(self.class_names)}
        default_think = w.think or NO_THINK
        makers = [ParamMaker(t.params) for t in w.transactions]
        self.scripts: list[_Script] = []
        for si, script in enumerate(w.scripts):
            steps = []
            for step in script.steps:
                ti = tx_index[step.transaction]
                steps.append(_Step(ti, step.think or default_think, makers[ti], class_index[w.transactions[ti].tx_class]))
            self.scripts.append(_Script(si, steps))
        self.init = next((s for s, m in zip(self.scripts, w.scripts) if m.name == w.init_script), None)
        choosable = [(s, m.weight) for s, m in zip(self.scripts, w.scripts) if m.name != w.init_script and m.weight > 0]
        self.mix = [s for s, _ in choosable]
        self.mix_cumulative = list(itertools.accumulate(wt for _, wt in choosable))

    # --- the run ------------------------------------------------------------------------

    async def run(self, on_tick: Callable[["Engine", float], None] | None = None, tick_s: float = 0.5) -> Outcome:
        loop = asyncio.get_running_loop()
        phases = self.phases
        self.outcome.started_at = time.monotonic()
        window = asyncio.ensure_future(self._measure_driver(loop))
        if self.users is not None:
            tasks = [asyncio.ensure_future(self._user(uid)) for uid in range(self.users)]
        else:
            tasks = [asyncio.ensure_future(self._arrivals())]
        self._tasks = tasks
        stop_at = self.t0 + phases.window_end
        while not self.stopping:
            now = time.monotonic()
            if now >= stop_at:
                break
            await asyncio.sleep(min(tick_s, stop_at - now))
            if on_tick is not None:
                on_tick(self, time.monotonic() - self.t0)
        self._stop()
        await self._drain(tasks)
        window.cancel()
        await asyncio.gather(window, return_exceptions=True)
        if on_tick is not None:
            on_tick(self, time.monotonic() - self.t0)
        return self.outcome

    def interrupt(self, reason: str) -> None:
        if self.outcome.status == "complete":
            self.outcome.status, self.outcome.reason = "interrupted", reason
        self._stop()

    def fail(self, reason: str) -> None:
        if self.outcome.status != "failed":
            self.outcome.status, self.outcome.reason = "failed", reason
        self._stop()

    def _stop(self) -> None:
        if self.stopping:
            return
        self.stopping = True
        # Users waiting in think time will not issue another transaction: wake them now.
        for task in list(self._thinking.values()):
            task.cancel()

    async def _drain(self, tasks: list[asyncio.Task]) -> None:
        _, pending = await asyncio.wait(tasks, timeout=STOP_GRACE_S) if tasks else (None, [])
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        for task in tasks:
            if task.done() and not task.cancelled() and task.exception() is not None:
                exc = task.exception()
                if not isinstance(exc, SutFailure):
                    self.fail(f"driver error: {type(exc).__name__}: {exc}")

    async def _measure_driver(self, loop) -> None:
        """The driver's own CPU over the measurement window: a saturated driver measures itself."""
        import resource

        start = self.t0 + self.phases.window_start
        await asyncio.sleep(max(0.0, start - time.monotonic()))
        u0 = resource.getrusage(resource.RUSAGE_SELF)
        w0 = time.monotonic()
        try:
            await asyncio.sleep(max(0.0, self.t0 + self.phases.window_end - time.monotonic()))
        finally:
            u1 = resource.getrusage(resource.RUSAGE_SELF)
            w1 = time.monotonic()
            self.outcome.driver_cpu_window_s = (u1.ru_utime - u0.ru_utime) + (u1.ru_stime - u0.ru_stime)
            self.outcome.window_wall_s = w1 - w0

    async def _think(self, uid: int, until: float) -> None:
        delay = until - time.monotonic()
        if delay <= 0:
            return
        task = asyncio.current_task()
        self._thinking[uid] = task
        try:
            await sleep_until(until)
        finally:
            self._thinking.pop(uid, None)

    async def _transaction(self, uid: int, script: _Script, step: _Step, intended: float, think: float,
                           prng: UserRandom) -> float:
        params = step.params(prng)
        actual = time.monotonic()
        self.in_flight += 1
        try:
            reply = await self.executor.execute(step.tx_index, params, uid)
        except SutFailure as exc:
            end = time.monotonic()
            self.recorder.add(uid, script.index, step.tx_index, step.klass, intended, actual, None, end, False,
                              f"SUT failure: {exc}", think)
            self.fail(str(exc))
            raise
        finally:
            self.in_flight -= 1
        end = time.monotonic()
        self.recorder.add(uid, script.index, step.tx_index, step.klass, intended, actual, reply.first, end,
                          reply.ok, reply.error, think, reply.cpu, reply.cpu_user, reply.cpu_sys, reply.worker,
                          reply.instructions)
        return end

    async def _run_script(self, uid: int, script: _Script, rng: UserRandom, prng: UserRandom,
                          prev_end: float, first_intended: float | None = None) -> float:
        for i, step in enumerate(script.steps):
            if first_intended is not None and i == 0:
                intended, think = first_intended, NAN  # an open-loop arrival: no think before it
            else:
                think = step.think.sample(rng)
                intended = prev_end + think
                try:
                    await self._think(uid, intended)
                except asyncio.CancelledError:
                    if self.stopping:
                        return prev_end
                    raise
            if self.stopping:
                return prev_end
            prev_end = await self._transaction(uid, script, step, intended, think, prng)
        return prev_end

    async def _user(self, uid: int) -> None:
        rng = UserRandom(self.seed, uid, 0)
        prng = UserRandom(self.seed, uid, 1)
        logon = self.t0 + self.phases.stagger * uid / max(1, self.users)
        try:
            await self._think(uid, logon)
        except asyncio.CancelledError:
            if self.stopping:
                return
            raise
        prev_end = max(logon, time.monotonic()) if self.phases.stagger == 0 else logon
        try:
            if self.init is not None and not self.stopping:
                prev_end = await self._run_script(uid, self.init, rng, prng, prev_end)
            mix, cumulative = self.mix, self.mix_cumulative
            while not self.stopping:
                script = mix[rng.pick(cumulative)]
                prev_end = await self._run_script(uid, script, rng, prng, prev_end)
        except SutFailure:
            return

    async def _arrivals(self) -> None:
        rng = UserRandom(self.seed, 0, 2)
        mean_gap = 1.0 / self.rate
        poisson = self.arrival == "poisson"
        stop_at = self.t0 + self.phases.window_end
        t = self.t0
        running: set[asyncio.Task] = set()
        for n in itertools.count():
            t += rng.exponential(mean_gap) if poisson else mean_gap
            if t >= stop_at or self.stopping:
                break
            if t > time.monotonic():
                try:
                    await sleep_until(t)
                except asyncio.CancelledError:
                    break
                if self.stopping:
                    break
            if self.in_flight >= self.max_in_flight:
                script = self.mix[rng.pick(self.mix_cumulative)]
                step = script.steps[0]
                now = time.monotonic()
                self.recorder.add(n, script.index, step.tx_index, step.klass, t, now, None, now, False,
                                  f"dropped: {self.max_in_flight} transactions already in flight", NAN)
                self.outcome.dropped += 1
                continue
            task = asyncio.ensure_future(self._arrival(n, t))
            running.add(task)
            task.add_done_callback(running.discard)
        if running:
            await asyncio.gather(*running, return_exceptions=True)

    async def _arrival(self, n: int, intended: float) -> None:
        rng = UserRandom(self.seed, n, 0)
        prng = UserRandom(self.seed, n, 1)
        script = self.mix[rng.pick(self.mix_cumulative)]
        try:
            await self._run_script(n, script, rng, prng, intended, first_intended=intended)
        except SutFailure:
            return

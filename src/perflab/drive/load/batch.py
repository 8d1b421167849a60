"""Job streams: N jobs run by K initiators, as the seeds' batch benchmarks ran them (CB84's job
stream, JES3plus's spool writers with 50 initiators).

A job is one run of a script chosen by the workload's mix, drawn from the job's own seeded
stream (job n gets the same script and parameters whichever initiator runs it). Initiators take
the next job as soon as they finish one: there is no think time between jobs and no arrival
schedule. The measurement is the stream itself: its window runs from the first job's start to
the last job's end, so ETR (T) is jobs per elapsed second and every per-command row is per job.
A stream that outlasts its timeout fails the run, with the jobs it finished kept.

`engine_for(plan, ...)` is what both run paths call: a job stream's engine for a batch load,
the interactive engine otherwise.
"""

from __future__ import annotations

import asyncio
import resource
import time
from collections.abc import Callable

from perflab.drive.load.engine import Engine, Outcome
from perflab.drive.load.mixed import MixedEngine
from perflab.drive.plan import RunPlan
from perflab.errors import SutFailure
from perflab.workload.model import ClosedLoad, Workload
from perflab.workload.rng import UserRandom


class BatchEngine(Engine):
    """The interactive engine's scripts, transactions and recording; a job queue instead of users."""

    def __init__(self, *args, jobs: int, initiators: int, **kwargs):
        super().__init__(*args, **kwargs)
        self.jobs, self.initiators = jobs, initiators
        self.next_job = 0
        self.first_start: float | None = None
        self.last_end: float | None = None
        #: Called at the stream's start and end: the lifecycle has the monitor take a sample there
        #: and returns its time (seconds since t0); the window then runs from one sample to the
        #: other, so no counter is interpolated (the marks add a millisecond or so to ELAPSED).
        self.on_mark: Callable[[], float | None] | None = None
        self.marks: list[float | None] = []

    async def run(self, on_tick: Callable[[Engine, float], None] | None = None, tick_s: float = 0.5) -> Outcome:
        self.outcome.started_at = time.monotonic()
        if self.on_mark is not None:
            self.marks.append(self.on_mark())  # a sample right before the first job (nothing runs yet)
        u0 = resource.getrusage(resource.RUSAGE_SELF)
        tasks = [asyncio.ensure_future(self._initiator(i)) for i in range(self.initiators)]
        self._tasks = tasks
        waiting = set(tasks)
        while waiting and not self.stopping:
            done, waiting = await asyncio.wait(waiting, timeout=tick_s)
            if on_tick is not None:
                on_tick(self, time.monotonic() - self.t0)
            if time.monotonic() >= self.stop_at and waiting:
                self.fail(f"the job stream did not finish within its timeout ({self.phases.measurement:g} s): "
                          f"{self.next_job} of {self.jobs} jobs started")
        self._stop()
        await self._drain(tasks)
        if self.on_mark is not None:
            self.marks.append(self.on_mark())  # ... and one right after the last job's end
        u1 = resource.getrusage(resource.RUSAGE_SELF)
        if self.first_start is not None and self.last_end is not None:
            # The driver's CPU over the stream, as the window is the stream.
            self.outcome.window_wall_s = max(self.last_end - self.first_start, 1e-9)
            self.outcome.driver_cpu_window_s = (u1.ru_utime - u0.ru_utime) + (u1.ru_stime - u0.ru_stime)
        if on_tick is not None:
            on_tick(self, time.monotonic() - self.t0)
        return self.outcome

    @property
    def window(self) -> tuple[float, float] | None:
        """The stream's span in seconds since t0: between the monitor's two marks when it took
        them, else from the first job's start to the last one's end (half-open: the last end is in)."""
        if self.first_start is None or self.last_end is None:
            return None
        start, end = self.first_start - self.t0, self.last_end - self.t0 + 1e-6
        if len(self.marks) == 2:
            first, last = self.marks
            if first is not None and last is not None:
                start, end = min(start, first), max(end, last)
        return start, end

    async def _initiator(self, initiator: int) -> None:
        while not self.cut_short and self.next_job < self.jobs:
            n = self.next_job
            self.next_job += 1
            rng, prng = UserRandom(self.seed, n, 0), UserRandom(self.seed, n, 1)
            script = self.mix[rng.pick(self.mix_cumulative)]
            start = time.monotonic()
            if self.first_start is None:
                self.first_start = start
            try:
                end = await self._run_script(initiator, script, rng, prng, start, first_intended=start)
            except SutFailure:
                return
            if end is not None:
                self.last_end = max(self.last_end or end, end)


def mixed_work(workload: Workload) -> bool:
    """Users with a job stream beside them (load.batch)."""
    load = workload.load
    return isinstance(load, ClosedLoad) and load.batch is not None


def engine_for(plan: RunPlan, executor, recorder, t0: float) -> Engine:
    """The engine a run's load calls for: a job stream, simulated users / arrivals, or users with a
    job stream beside them (mixed work, drive/load/mixed.py)."""
    if plan.jobs is not None:  # plan.batch
        assert plan.initiators is not None  # a job stream's, with its jobs (resolve_plan)
        return BatchEngine(plan.workload, executor, recorder, plan.phases, t0, seed=plan.seed, jobs=plan.jobs,
                           initiators=plan.initiators)
    load = plan.workload.load
    if plan.users is not None and isinstance(load, ClosedLoad) and load.batch is not None:  # mixed_work
        return MixedEngine(plan.workload, executor, recorder, plan.phases, t0, users=plan.users, seed=plan.seed,
                           batch=load.batch)
    from perflab.drive.load.native_http import choose_core, say_core

    choice = choose_core(plan.workload, executor, plan.users if plan.rate is None else None, plan.rate)
    say_core(choice)
    engine: Engine
    if choice.native:  # the kind's own engine (its registry line, workload/kinds.py)
        engine = choice.engine(plan.workload, executor, recorder, plan.phases, t0, users=plan.users, rate=plan.rate,
                               seed=plan.seed)
    else:
        engine = Engine(plan.workload, executor, recorder, plan.phases, t0, users=plan.users, rate=plan.rate,
                        seed=plan.seed)
    engine.core_choice = choice
    return engine

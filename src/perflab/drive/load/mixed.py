"""Mixed work: online users and a job stream in one run (the seeds' MIDI/LODI and JES3 runs).

The users are the interactive engine's, drawing from the scripts the job stream does not run;
beside them `initiators` initiators run job after job from the run's start -- each job one run
of a script drawn by weight from `load.batch.scripts`, from the job's own seeded streams -- until
the window ends (a job due after it is not started; one running then is drained like any
transaction in flight) or `jobs` jobs have started. Both record into one table: each
transaction carries its class, so the report's per-class rows give the online response time and
the jobs' elapsed time side by side, the answer to both of the seeds' questions (what the batch
does to the users, what the users do to the batch) when the run is set beside one without the
other.

A job's transactions are recorded under user numbers after the users' (users + initiator), so
the two never share a number.
"""

from __future__ import annotations

import asyncio
import time

from perflab.drive.load.engine import Engine
from perflab.drive.load.mix import sub_mix
from perflab.errors import SutFailure
from perflab.workload.model import BatchBeside
from perflab.workload.rng import UserRandom

#: The jobs' random streams: job n draws its script from substream 3 and its parameters from 4
#: (users use 0 and 1 of their number, arrivals 2), so a job's draws never repeat a user's.
JOB_SCRIPT_STREAM = 3
JOB_PARAMS_STREAM = 4


class MixedEngine(Engine):
    """Simulated users plus a job stream, from t0 to the window's end."""

    def __init__(self, *args, batch: BatchBeside, **kwargs):
        super().__init__(*args, **kwargs)
        self.batch = batch
        chosen = set(batch.scripts)
        self.mix, self.mix_cumulative = sub_mix(self.workload, self.scripts, chosen, inside=False)
        self.job_mix, self.job_cumulative = sub_mix(self.workload, self.scripts, chosen, inside=True)
        self.next_job = 0

    async def _start_users(self, tasks: list[asyncio.Task], users: int) -> None:
        tasks.extend(asyncio.ensure_future(self._initiator(i)) for i in range(self.batch.initiators))
        await super()._start_users(tasks, users)

    async def _initiator(self, initiator: int) -> None:
        uid = (self.users or 0) + initiator
        try:
            await self._think(uid, self.t0)  # the stream starts with the run (woken if it is cut short)
        except asyncio.CancelledError:
            if self.stopping:
                return
            raise
        limit = self.batch.jobs
        while limit is None or self.next_job < limit:
            start = time.monotonic()
            if self._stopped_for(start):
                return
            n = self.next_job
            self.next_job += 1
            rng, prng = UserRandom(self.seed, n, JOB_SCRIPT_STREAM), UserRandom(self.seed, n, JOB_PARAMS_STREAM)
            script = self.job_mix[rng.pick(self.job_cumulative)]
            try:
                end = await self._run_script(uid, script, rng, prng, start, first_intended=start)
            except SutFailure:
                return
            if end is None:
                return

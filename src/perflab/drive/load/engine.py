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

A closed-loop user costs memory only for its state while it thinks (or waits to log on): a
`_User` of a few slots in one heap of wake-up times, which a single timer serves. It gets an
asyncio Task only from a wake-up to its next think (its transactions, which may await the
network), so a million idle users are a million small objects, not a million Tasks, coroutine
frames, Futures and timers (about 3.4 KB each before; bench/memory.py).
"""

from __future__ import annotations

import asyncio
import heapq
import math
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from perflab.drive.load.deadline import DEFAULT_DEADLINE_S, deadline_text, deadlines_of
from perflab.drive.load.mix import Script, Step, compile_scripts
from perflab.drive.load.recorder import Recorder
from perflab.drive.load.wake_timer import TIMER_TICK_S, WakeTimer, wake_timer
from perflab.errors import SutFailure
from perflab.workload.model import ClosedLoad, OpenLoad, Workload
from perflab.workload.rng import UserRandom

if TYPE_CHECKING:
    from perflab.drive.load.native_http import CoreChoice

NAN = math.nan
#: A run cut short (failed, interrupted) waits at most this long for its transactions in flight.
STOP_GRACE_S = 30.0
#: After the window, a transaction still in flight is waited for until its deadline (plus the
#: executor's own grace) and this much more, for the executor to kill and answer it; whatever is
#: still in flight then is given up and counted as hung (see `stop_wait_s`).
DRAIN_SLACK_S = 1.0
USER_START_BATCH = 1000  # users created per event-loop iteration
USER_WAKE_BATCH = 1000  # users woken per timer callback; more due ones wait for the loop's next turn


def stop_wait_s(deadlines: list[float], grace: float = 0.0) -> float:
    """How long after the window's end a run waits for its transactions still in flight.

    A transaction issued before the window's end may run until its deadline; the executor kills
    and answers it there (a SUT worker's process group, a network transaction cancelled), `grace`
    later for an executor that lets its worker enforce the deadline first (a command). So every
    transaction has ended, answered or hung, one deadline after the window at most; one that has
    not -- it waited for a free worker behind a hung one, or its executor never answers -- is
    given up then and counted as hung. The run thus ends a deadline after its window at most,
    whatever the SUT does (before, a fixed 30 s: a transaction hung past it was dropped uncounted,
    and a run that measured nothing was complete and valid)."""
    return max(deadlines, default=DEFAULT_DEADLINE_S) + grace + DRAIN_SLACK_S


async def sleep_until(deadline: float) -> None:
    """Sleep until time.monotonic() >= deadline, without spinning.

    uvloop's timers count whole milliseconds: it rounds a delay to the nearest millisecond and
    counts from the current millisecond truncated, so a timer can fire up to a millisecond
    early, and a delay under half a millisecond becomes no sleep at all. Re-checking the clock
    after such a "sleep" spins the CPU until the deadline: 100 % driver CPU at 5,000 arrivals/s,
    and a spin after most think times in closed loop. So the delay asked for is rounded *up* to
    whole ticks, never below one. The sleep then ends about a tick after the deadline at most
    (the event loop's poll also waits whole milliseconds), and when the timer fires early one
    more tick follows. A transaction never starts before its time.
    """
    while (delay := deadline - time.monotonic()) > 0:
        await asyncio.sleep(math.ceil(delay / TIMER_TICK_S) * TIMER_TICK_S)


class _User:
    """A closed-loop user's state between its transactions: what its coroutine frame and Task
    held before, in a few slots (about 0.3 KB with its two random streams).

    `step` is the index in `script` of the step whose think is running (the transaction that
    follows it is the user's next), -1 before logon, when `prev_end` is the logon time. `think`
    is the think drawn for that step; the transaction is intended at prev_end + think.
    `partial`: that think is the rest of one begun before logon (timing.first_think: residual).
    """

    __slots__ = ("uid", "rng", "prng", "script", "step", "prev_end", "think", "partial")

    def __init__(self, uid: int, rng: UserRandom, prng: UserRandom, logon: float):
        self.uid = uid
        self.rng = rng
        self.prng = prng
        self.script: Script | None = None
        self.step = -1
        self.prev_end = logon
        self.think = 0.0
        self.partial = False


class Executor(Protocol):
    """What the engine hands transactions to: the SUT worker pool, or a network client.

    `user` is the simulated user (or arrival) issuing it, for adapters that keep a connection
    per user. The awaitable resolves to a `perflab.drive.workers.Reply`.
    """

    def execute(self, tx_index: int, params: dict | None, user: int = -1) -> Awaitable: ...


@dataclass(frozen=True)
class Share:
    """This engine's part of a load driven from several processes (drive/remote/distributed.py).

    Closed loop: users `first_user` .. `first_user + users - 1` of `all_users`, each with the
    random streams and the logon time it has in a single driver's run. Open loop: arrival
    stream `index` of `count` (each at rate / count; independent Poisson streams add up to a
    Poisson stream at the full rate), numbered index, index + count, ... so that numbers, and
    the streams drawn from them, are unique across the drivers.
    """

    index: int = 0
    count: int = 1
    first_user: int = 0
    all_users: int | None = None


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
class Outcome:
    status: str = "complete"  # complete | failed | interrupted
    reason: str | None = None
    driver_cpu_window_s: float = NAN
    window_wall_s: float = NAN
    dropped: int = 0
    started_at: float = 0.0
    hung: int = 0                       # transactions past their deadline (their worker was killed)
    deadline_s: float | None = None
    window_counts: dict[str, int] | None = None  # the driver's own counts over the window (count_reader)


class Engine:
    #: Which loop runs the users, when engine_for chose (drive/load/native_http.py); the run's record says.
    core_choice: CoreChoice | None = None

    def __init__(self, workload: Workload, executor: Executor, recorder: Recorder, phases: Phases, t0: float,
                 users: int | None = None, rate: float | None = None, seed: int | None = None,
                 share: Share = Share()):
        self.workload = workload
        self.share = share
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
        self.stop_at = t0 + phases.window_end
        self.stopping = False
        self.in_flight = 0
        self._giving_up = False  # the drain's wait is over: a transaction still in flight is recorded as given up
        self._thinking: dict[int, asyncio.Task] = {}  # arrival schedule, initiators: waiting for their time
        # Closed-loop users waiting for their logon or the end of a think: (wake-up time, uid, user),
        # served by one timer (_arm, _wake_due). Users between a wake-up and their next think run as Tasks.
        self._parked: list[tuple[float, int, _User]] = []
        self._timer: WakeTimer | None = None   # made on the loop, with the first user (_start_users)
        self._soon: asyncio.Handle | None = None  # a wake-up for users already due
        self._timer_at = math.inf
        self._waking = False  # in _wake_due, which arms the timer once at its end
        self._active: set[asyncio.Task] = set()
        self._user_errors: list[BaseException] = []
        self._residual_start = workload.timing.first_think == "residual"
        # The driver's own counts (connections, TLS handshakes), read at the window's edges: a
        # monitor sample a second apart, interpolated, would cut the users' logon burst of full
        # handshakes into fractions -- and a full and a resumed count rounded apart.
        self.count_reader: Callable[[], dict[str, int]] | None = None
        # Asks the monitor for a sample now, without waiting (Sampler.sample_edge): called at the
        # window's start and end, so the SUT's and the host's counters at the edges are read
        # there, not interpolated across a second of the grid (the workers' start-up, a logon
        # burst or the drain would be smeared into the window).
        self.on_window_edge: Callable[[], None] | None = None
        self._compile()

    # --- preparation --------------------------------------------------------------------

    def _compile(self) -> None:
        compiled = compile_scripts(self.workload)
        self.class_names = compiled.class_names
        self.scripts = compiled.scripts
        self.init = compiled.init
        self.mix = compiled.mix
        self.mix_cumulative = compiled.cumulative
        self.deadlines = deadlines_of(self.workload)

    # --- the run ------------------------------------------------------------------------

    async def run(self, on_tick: Callable[[Engine, float], None] | None = None, tick_s: float = 0.5) -> Outcome:
        loop = asyncio.get_running_loop()
        self.outcome.started_at = time.monotonic()
        window = asyncio.ensure_future(self._measure_driver(loop))
        tasks: list[asyncio.Task] = []
        self._tasks = tasks
        if self.users is not None:
            await self._start_users(tasks, self.users)
        else:
            tasks.append(asyncio.ensure_future(self._arrivals()))
        while not self.stopping:
            now = time.monotonic()
            if now >= self.stop_at:
                break
            await sleep_until(min(now + tick_s, self.stop_at))
            if on_tick is not None:
                on_tick(self, time.monotonic() - self.t0)
        # Users and arrivals stop by themselves at the window end (_stopped_for); the last
        # transactions due before it may still be waiting for their timer tick.
        self._stop()
        await self._drain(tasks)
        window.cancel()
        await asyncio.gather(window, return_exceptions=True)
        if on_tick is not None:
            on_tick(self, time.monotonic() - self.t0)
        return self.outcome

    async def _start_users(self, tasks: list[asyncio.Task], users: int) -> None:
        """Create the users USER_START_BATCH at a time, letting the loop run in between, each
        parked until its logon.

        A user's random streams cost microseconds: 50,000 users started in one loop iteration
        made it last over a second, and whatever fell due meanwhile started late. Logon times
        are fixed by the user number (t0 + stagger * uid / users), not by when the user is
        created, so batching moves no logon.
        """
        self._loop = asyncio.get_running_loop()
        self._timer = wake_timer(self._loop, self._wake_due, exact=self.workload.timing.wake != "tick")
        base = self.share.first_user
        all_users = self.share.all_users or users
        seed, t0, stagger = self.seed, self.t0, self.phases.stagger
        for first in range(base, base + users, USER_START_BATCH):
            if self.stopping:
                return
            last = min(base + users, first + USER_START_BATCH)
            for uid in range(first, last):
                user = _User(uid, UserRandom(seed, uid, 0), UserRandom(seed, uid, 1),
                             t0 + stagger * uid / max(1, all_users))
                if not self._stopped_for(user.prev_end):
                    self._park(user, user.prev_end)
            await asyncio.sleep(0)

    def before_run(self, open_executor: Callable[[], Awaitable[None]]) -> Callable[[], Awaitable[None]]:
        """What runs before the run's time line starts: the executor's connections opened
        (`open_executor`), unless the users make their own (native_pg.py's compiled loop)."""
        return open_executor

    def interrupt(self, reason: str) -> None:
        if self.outcome.status == "complete":
            self.outcome.status, self.outcome.reason = "interrupted", reason
        self._stop()

    def fail(self, reason: str) -> None:
        if self.outcome.status != "failed":
            self.outcome.status, self.outcome.reason = "failed", reason
        self._stop()

    @property
    def cut_short(self) -> bool:
        """Interrupted or failed: no further transaction is issued."""
        return self.outcome.status != "complete"

    def _stopped_for(self, intended: float) -> bool:
        """Whether a transaction due at `intended` is not issued: the run was cut short, or it
        falls at or after the window end. One due before the end is issued even when the timer
        tick that wakes it comes after the end (sleep_until wakes up to a tick or two late)."""
        return intended >= self.stop_at or self.cut_short

    def _stop(self) -> None:
        self.stopping = True
        if self.cut_short:
            # Users (and the arrival schedule) waiting for their next time will not issue
            # anything: wake them now. At the window end nobody waits for a time past it.
            for task in list(self._thinking.values()):
                task.cancel()
            self._unpark_all()

    @property
    def drain_wait_s(self) -> float:
        """How long the drain waits for the transactions in flight (module `stop_wait_s`; a run
        cut short waits STOP_GRACE_S at most)."""
        wait = stop_wait_s(self.deadlines, float(getattr(self.executor, "grace", 0.0) or 0.0))
        return min(wait, STOP_GRACE_S) if self.cut_short else wait

    async def _drain(self, tasks: list[asyncio.Task]) -> None:
        started = time.monotonic()
        # In steps, so a run cut short meanwhile (Ctrl-C during a long wait) waits its shorter time.
        # Users still parked are due before the window end (the others have stopped): they wake
        # within a tick and join the tasks waited for.
        while (left := started + self.drain_wait_s - time.monotonic()) > 0:
            pending = {task for task in tasks if not task.done()} | self._active
            if pending:
                await asyncio.wait(pending, timeout=min(left, 0.5))
            elif self._parked:
                await asyncio.sleep(min(left, TIMER_TICK_S))
            else:
                break
        self._unpark_all()  # given up while still thinking: as a think cut short
        pending = {task for task in tasks if not task.done()} | self._active
        if pending:
            # Still in flight a deadline after the window: recorded (as hung, past its deadline)
            # by `_transaction` as its task is cancelled, never dropped uncounted.
            self._giving_up = True
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        errors = [task.exception() for task in tasks if task.done() and not task.cancelled()]
        for exc in [*errors, *self._user_errors]:
            if exc is not None and not isinstance(exc, SutFailure):
                self.fail(f"driver error: {type(exc).__name__}: {exc}")

    async def _measure_driver(self, loop) -> None:
        """The driver's own CPU over the measurement window: a saturated driver measures itself."""
        import resource

        # sleep_until, not asyncio.sleep: uvloop's timer may fire up to a tick early, and an edge
        # read before the window began put its sample outside it (a CI run: 0.4995 s for 0.5).
        await sleep_until(self.t0 + self.phases.window_start)
        if self.on_window_edge is not None:
            self.on_window_edge()
        u0 = resource.getrusage(resource.RUSAGE_SELF)
        w0 = time.monotonic()
        count_reader = self.count_reader
        counts0 = count_reader() if count_reader is not None else None
        try:
            await sleep_until(self.t0 + self.phases.window_end)
        finally:
            u1 = resource.getrusage(resource.RUSAGE_SELF)
            w1 = time.monotonic()
            if self.on_window_edge is not None and not self.cut_short:
                self.on_window_edge()
            self.outcome.driver_cpu_window_s = (u1.ru_utime - u0.ru_utime) + (u1.ru_stime - u0.ru_stime)
            self.outcome.window_wall_s = w1 - w0
            if count_reader is not None and counts0 is not None and not self.cut_short:  # cut short: the window ends elsewhere
                counts1 = count_reader()
                self.outcome.window_counts = {name: counts1[name] - counts0[name] for name in counts0}

    async def _think(self, uid: int, until: float) -> None:
        delay = until - time.monotonic()
        if delay <= 0:
            return
        task = asyncio.current_task()
        assert task is not None  # a user thinks in its own task
        self._thinking[uid] = task
        try:
            await sleep_until(until)
        finally:
            self._thinking.pop(uid, None)

    async def _transaction(self, uid: int, script: Script, step: Step, intended: float, think: float,
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
        except asyncio.CancelledError:
            if self._giving_up:
                self._given_up(uid, script, step, intended, actual, think)
            raise
        finally:
            self.in_flight -= 1
        end = time.monotonic()
        if reply.hung:
            self._hung(step.tx_index)
        self.recorder.add(uid, script.index, step.tx_index, step.klass, intended, actual, reply.first, end,
                          reply.ok, reply.error, think, reply.cpu, reply.cpu_user, reply.cpu_sys, reply.worker,
                          reply.instructions, reply.harness_cpu)
        return end

    def _given_up(self, uid: int, script: Script, step: Step, intended: float, actual: float,
                  think: float) -> None:
        """A transaction still in flight when the drain stopped waiting: an error, and hung when it
        has been out longer than its deadline (always, at the end of a whole window's wait; a run
        cut short waits less and may give up on one that is not)."""
        end = time.monotonic()
        deadline = self.deadlines[step.tx_index]
        after = max(0.0, end - self.stop_at)
        if end - actual >= deadline:
            self._hung(step.tx_index)
            error = f"{deadline_text(deadline)}: still in flight {after:.1f} s after the window's end; given up"
        else:
            error = f"still in flight when the run ended ({self.outcome.status}); given up"
        self.recorder.add(uid, script.index, step.tx_index, step.klass, intended, actual, None, end, False, error,
                          think)

    def _hung(self, tx_index: int) -> None:
        """A transaction past its deadline (its worker or command was killed): the run is invalid."""
        deadline = self.deadlines[tx_index]
        outcome = self.outcome
        outcome.hung += 1
        outcome.deadline_s = deadline if outcome.deadline_s is None else max(outcome.deadline_s, deadline)

    async def _run_script(self, uid: int, script: Script, rng: UserRandom, prng: UserRandom,
                          prev_end: float, first_intended: float | None = None,
                          residual: bool = False) -> float | None:
        """Run the script's steps; the end of its last transaction, or None once the user is to
        stop (its next transaction falls after the window end, or the run was cut short).
        `residual`: the user starts mid-think (timing.first_think), its first think drawn from
        the stationary residual of the step's think time."""
        for i, step in enumerate(script.steps):
            if first_intended is not None and i == 0:
                intended, think = first_intended, NAN  # an open-loop arrival: no think before it
            else:
                partial = residual and i == 0
                think = step.think.sample_residual(rng) if partial else step.think.sample(rng)
                intended = prev_end + think
                # A think still running when the user stops is recorded apart (thinks.parquet):
                # AVG THINK (T) counts every think that started in the window, long ones included.
                if self._stopped_for(intended):
                    if not partial:
                        self.recorder.add_pending_think(uid, step.tx_index, step.klass, prev_end, think)
                    return None
                try:
                    await self._think(uid, intended)
                except asyncio.CancelledError:
                    if self.stopping:
                        if not partial:
                            self.recorder.add_pending_think(uid, step.tx_index, step.klass, prev_end, think)
                        return None
                    raise
                if partial:
                    think = NAN  # the rest of a think begun before logon: no whole think before it
            if self._stopped_for(intended):
                return None
            prev_end = await self._transaction(uid, script, step, intended, think, prng)
        return prev_end

    # --- closed-loop users: parked while they think, a Task while they transact ------------

    def _park(self, user: _User, when: float) -> None:
        """The user waits (for its logon, or the end of its think) until `when`."""
        heapq.heappush(self._parked, (when, user.uid, user))
        if when < self._timer_at and not self._waking:
            self._arm(when)

    def _arm(self, when: float) -> None:
        """One timer for the earliest parked user: a timerfd at its time to the microsecond
        (wake_timer.py; the loop's tick timer where there is none, which may fire a tick early:
        _wake_due re-arms for a user not yet due), so nobody wakes before its time."""
        if self._timer is None:
            return   # closed (_close_timer): the run is over and nobody wakes
        if self._soon is not None:
            self._soon.cancel()
            self._soon = None
        if when <= time.monotonic():
            self._timer.cancel()
            self._soon = self._loop.call_soon(self._wake_due)
        else:
            self._timer.arm(when)
        self._timer_at = when

    def _wake_due(self) -> None:
        """Wake the parked users whose time has come (USER_WAKE_BATCH at most, the rest on the
        loop's next turn), then re-arm for the earliest left."""
        self._soon, self._timer_at = None, math.inf
        parked = self._parked
        now = time.monotonic()
        woken = 0
        self._waking = True
        try:
            while parked and parked[0][0] <= now and woken < USER_WAKE_BATCH:
                user = heapq.heappop(parked)[2]
                woken += 1
                if user.step < 0:
                    try:
                        if not self._logon(user, now):
                            continue  # parked until its first think ends, or stopped
                    except Exception as exc:  # noqa: BLE001 - as a user's Task would: the run fails in _drain
                        self._user_errors.append(exc)
                        continue
                self._start(user)
        finally:
            self._waking = False
        if parked:
            self._arm(parked[0][0])  # at once when the batch left some due

    def _start(self, user: _User) -> None:
        """The user's transactions, from the one now due to its next think, in a Task."""
        task = self._loop.create_task(self._active_user(user))
        self._active.add(task)
        task.add_done_callback(self._ended)

    def _ended(self, task: asyncio.Task) -> None:
        self._active.discard(task)
        if not task.cancelled() and (exc := task.exception()) is not None:
            self._user_errors.append(exc)  # failed in _drain (a SUT failure has failed the run already)

    def _close_timer(self) -> None:
        """Nobody is woken any more: the wake-up and its descriptor are given back."""
        if self._soon is not None:
            self._soon.cancel()
            self._soon = None
        if self._timer is not None:
            self._timer.close()
            self._timer = None
        self._timer_at = math.inf

    def _unpark_all(self) -> None:
        """Nobody parked wakes: the run was cut short (or the drain gave up). A think running is
        recorded as still running (thinks.parquet), as when the user stops at the window end."""
        self._close_timer()
        parked, self._parked = sorted(self._parked), []
        for _, uid, user in parked:
            if user.step >= 0 and not user.partial:
                assert user.script is not None
                step = user.script.steps[user.step]
                self.recorder.add_pending_think(uid, step.tx_index, step.klass, user.prev_end, user.think)

    def _logon(self, user: _User, now: float) -> bool:
        """The user logs on: its first script (the init script, or one drawn from the mix) and
        its first think. True when the first transaction is due now."""
        logon = user.prev_end
        user.prev_end = max(logon, now) if self.phases.stagger == 0 else logon
        user.step = 0
        user.partial = self._residual_start
        if self.init is not None:
            user.script = self.init
        else:
            user.script = self.mix[user.rng.pick(self.mix_cumulative)]
        return self._next_think(user)

    def _next_think(self, user: _User) -> bool:
        """Draw the think before the user's next transaction. True: the transaction is due now
        (no think left); False: the user is parked until it is, or stops (its transaction would
        fall after the window end, or the run was cut short)."""
        script = user.script
        assert script is not None
        while user.step >= len(script.steps):  # the script is done: the next, drawn from the mix
            script = user.script = self.mix[user.rng.pick(self.mix_cumulative)]
            user.step = 0
            user.partial = False
        step = script.steps[user.step]
        partial = user.partial
        think = step.think.sample_residual(user.rng) if partial else step.think.sample(user.rng)
        user.think = think
        intended = user.prev_end + think
        # A think still running when the user stops is recorded apart (thinks.parquet):
        # AVG THINK (T) counts every think that started in the window, long ones included.
        if self._stopped_for(intended):
            if not partial:
                self.recorder.add_pending_think(user.uid, step.tx_index, step.klass, user.prev_end, think)
            return False
        if intended - time.monotonic() > 0:
            self._park(user, intended)
            return False
        return True

    async def _active_user(self, user: _User) -> None:
        """Issue the user's transaction now due, and the following ones while no think parks it."""
        uid, prng = user.uid, user.prng
        while True:
            script = user.script
            assert script is not None
            step = script.steps[user.step]
            intended = user.prev_end + user.think
            think = NAN if user.partial else user.think  # the rest of a think begun before logon: no whole think
            user.partial = False
            if self._stopped_for(intended):
                return
            try:
                user.prev_end = await self._transaction(uid, script, step, intended, think, prng)
            except SutFailure:
                return
            user.step += 1
            if not self._next_think(user):
                return

    def _arrival_times(self) -> Iterator[float]:
        """Intended start of every arrival, from the schedule's own seeded stream (nothing else
        draws from it, so the same seed gives the same times whatever is dropped)."""
        rng = UserRandom(self.seed, self.share.index, 2)
        assert self.rate is not None  # arrivals are an open loop's, which has its rate
        mean_gap = 1.0 / self.rate
        poisson = self.arrival == "poisson"
        t = self.t0
        while True:
            t += rng.exponential(mean_gap) if poisson else mean_gap
            yield t

    async def _arrivals(self) -> None:
        """Start every arrival intended before the window end, in batches: sleep_until wakes
        on a timer tick (1 ms), so at higher rates several are due at once. Each still starts
        at or after its intended time, and its lateness is recorded."""
        running: set[asyncio.Task] = set()
        index, count = self.share.index, self.share.count
        schedule = ((i * count + index, t) for i, t in enumerate(self._arrival_times()))
        n, t = next(schedule)
        while not self._stopped_for(t):
            try:
                await self._think(-1, t)  # as a user thinks: woken if the run is cut short
            except asyncio.CancelledError:
                break
            if self.cut_short:
                break
            now = time.monotonic()
            started = 0
            while t <= now and not self._stopped_for(t):
                started += self._start_arrival(n, t, running, started)
                n, t = next(schedule)
        if running:
            await asyncio.gather(*running, return_exceptions=True)

    def _start_arrival(self, n: int, intended: float, running: set[asyncio.Task], starting: int) -> bool:
        """Start arrival n, or drop it when max_in_flight transactions are in flight. The
        `starting` arrivals of this batch count too: their first transaction is issued only
        when the loop next runs their tasks."""
        if self.in_flight + starting >= self.max_in_flight:
            self._drop(n, intended)
            return False
        task = asyncio.ensure_future(self._arrival(n, intended))
        running.add(task)
        task.add_done_callback(running.discard)
        return True

    def _drop(self, n: int, intended: float) -> None:
        # The script the arrival would have run, drawn from the arrival's own stream.
        script = self.mix[UserRandom(self.seed, n, 0).pick(self.mix_cumulative)]
        step = script.steps[0]
        now = time.monotonic()
        self.recorder.add(n, script.index, step.tx_index, step.klass, intended, now, None, now, False,
                          f"dropped: {self.max_in_flight} transactions already in flight", NAN)
        self.outcome.dropped += 1

    async def _arrival(self, n: int, intended: float) -> None:
        rng = UserRandom(self.seed, n, 0)
        prng = UserRandom(self.seed, n, 1)
        script = self.mix[rng.pick(self.mix_cumulative)]
        try:
            await self._run_script(n, script, rng, prng, intended, first_intended=intended)
        except SutFailure:
            return

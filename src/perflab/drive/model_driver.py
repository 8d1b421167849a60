"""The model driver: a stand-in for `execute_run` that writes a complete, typed run directory
from a queueing model whose every number is known, in milliseconds and without a system under
test. The fast tier of the tests drives studies, comparisons, capacity and the serve store
through it (docs/architecture.md, "Model driver"); the lab tier keeps the real runs.

    model = Model(noise=0.01)                                    # 1% run-to-run noise
    options = StudyOptions(executor=model.executor())            # the study runner's seam
    doc = StudyRunner(study_path, store, options).run()

What a run is, in the model:

* the workload file is read as perflab reads it (`resolve_plan`: users or rate, phases,
  placement, workers, seed), so a study's configurations, sweeps and calibration change the
  model as they would change a real run;
* each transaction costs the CPU its workload names: `cpu_ms` (user) and `sys_ms` (system) in
  its `kwargs` or drawn from its `params` -- the arguments of `perflab.sut.synthetic:work`, so
  one workload file runs real (lab tier) and modelled (fast tier) -- else `Model.cpu_ms`;
* that cost is multiplied by the run's factor: a log-normal noise per run (`noise`) and per
  block (`block_noise`, shared by a block's runs), a drift between runs (`run_drift`, by the
  run's place in the schedule) and within the window (`drift`, linear from its start to its
  end). The factor is a pure function of the model and the run's place in the study (seeded,
  never the clock), written to run.json (`fingerprint.model`), so a test knows the truth of
  every run;
* the SUT is a first-come first-served station of min(workers, SUT CPUs) servers, each a
  CPU: a transaction holds a server for its CPU time. Closed loop: users think (the workload's
  think-time distributions, its seeded per-user streams) and issue their scripts' steps; open
  loop: Poisson (or constant) arrivals at the rate, each running one script, dropped beyond
  `max_in_flight`. The time line is simulated (event by event, synthetic timestamps), so
  Little's law and the utilization law hold as they do in a real closed system;
* errors (`errors`: the SUT answers with an error at once, no CPU; a transaction that calls
  `perflab.sut.synthetic:fail` always does, with its message) and hangs (`hangs`: the
  transaction holds its server until its deadline, then is an error, and the run is invalid
  as a real run with a hung transaction is);
* the monitor's samples: s.cpu_user / s.cpu_sys (the SUT's CPU, accrued while each transaction
  is served), h.cpu<N>.* for the run's CPUs (the SUT's busy time spread over its CPUs, the
  driver's and the monitor's on the driver's CPUs, `background` of what is left to others),
  driver.* and monitor.* -- sampled every `monitor_interval` on a grid through the window's
  start;
* `interrupt_at` / `fail_at`: the run at that place in the schedule (its `order`) ends half-way
  through its window, interrupted (Ctrl-C) or failed (a SUT failure), stored as perflab stores
  such runs.

Every executor argument is picklable (a frozen dataclass in a functools.partial of a module
function), so a duet's child processes run the model as they run `execute_run`.
"""

from __future__ import annotations

import functools
import hashlib
import heapq
import itertools
import math
import os
import threading
import time
from collections.abc import Callable, Generator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from perflab import arrow_arrays, caveats
from perflab.drive.lifecycle import RunObserver, RunResult, now_iso, opening_record, run_fingerprint
from perflab.drive.load.deadline import deadline_text, deadlines_of
from perflab.drive.load.params import ParamMaker
from perflab.drive.load.recorder import SCHEMA, THINKS_SCHEMA
from perflab.drive.plan import RunPlan, RunRequest, resolve_plan
from perflab.errors import InputError
from perflab.records.run import (
    Clock,
    DriverRecord,
    MonitorRecord,
    RestartRecord,
    RunStatus,
    SutRecord,
    WindowRecord,
)
from perflab.store.atomic import write_atomic, write_json_atomic
from perflab.store.catalog import Store, new_run_id
from perflab.sut.knob import KNOB_PARAM
from perflab.workload.model import OpenLoad
from perflab.workload.rng import UserRandom
from perflab.workload.thinktime import NO_THINK

#: The CPU each sample of the monitor costs it (seconds per second): a small, constant share.
MONITOR_SHARE = 0.002
#: How long a duet's model run waits for its partner at the start barrier.
DUET_WAIT_S = 120.0


@dataclass(frozen=True)
class Model:
    """The known truth a model run is drawn from (see the module doc). All defaults: a noiseless
    SUT whose transactions cost what the workload says."""

    cpu_ms: float = 1.0          # CPU per transaction (user) where the workload names no cpu_ms
    noise: float = 0.0           # SD of ln(cost) between runs (log-normal, independent per run)
    block_noise: float = 0.0     # SD of ln(cost) shared by the runs of one block (the host's slow spells)
    drift: float = 0.0           # relative change of the cost from the window's start to its end
    run_drift: float = 0.0       # relative change of the cost per place in the schedule (order)
    errors: float = 0.0          # fraction of transactions that end in an error (at once, no CPU)
    hangs: float = 0.0           # fraction that hold their server until their deadline, then fail
    driver_us: float = 20.0      # the driver's CPU per transaction issued (microseconds)
    background: float = 0.0      # share of the run's CPUs' idle time other processes use ((H) rows)
    seed: int = 0                # mixed into every run's noise (the workload's seed drives the users)
    interrupt_at: int | None = None   # the run at this schedule position is interrupted half-way
    fail_at: int | None = None        # ... fails half-way (a SUT failure)
    restart_share: float = 0.0   # > 0: a server crashed after the window, its restart timed (`_restart`)
    knob_us: float = 0.0         # user CPU per unit of a study's calibration knob (sut/knob.py's parameter)
    #: A pair's magnification of a cost: in a duet or split duet every transaction's cost c
    #: becomes cpu_ms x (c / cpu_ms) ** (1 + pair_k), so a ratio r of costs is measured as
    #: r ** (1 + pair_k) -- ln r_design = (1 + k) ln r_true, the bias a duet is known to have.
    pair_k: float = 0.0

    def executor(self) -> Callable[..., RunResult]:
        """`execute_run`'s stand-in for this model (picklable: a duet's children call it)."""
        return functools.partial(execute_model_run, model=self)

    def factor(self, plan: RunPlan) -> float:
        """The run's cost factor (noise and drift between runs; not the drift within it)."""
        position = plan.position
        z_run = _normal(self.seed, "run", position.configuration or plan.label, position.block, position.order,
                        position.purpose, plan.users, plan.rate)
        z_block = _normal(self.seed, "block", position.block) if position.block is not None else 0.0
        ln = self.noise * z_run + self.block_noise * z_block
        return math.exp(ln) * (1.0 + self.run_drift * (position.order or 0))


def _normal(*key: Any) -> float:
    """A standard normal drawn from a stable hash of `key` (the same run, the same number)."""
    digest = hashlib.blake2b(repr(key).encode(), digest_size=8).digest()
    rng = UserRandom(int.from_bytes(digest, "little"), 0)
    return rng.normal()


def execute_model_run(request: RunRequest | RunPlan, store: Store, observer: RunObserver | None = None, *,
                      model: Model = Model()) -> RunResult:
    """One run of `model` for `request`, stored as `execute_run` stores a run (run.json through
    RunRecord, transactions.parquet, thinks.parquet, samples.parquet, the catalog row)."""
    plan = request if isinstance(request, RunPlan) else resolve_plan(request)
    if plan.batch:
        raise InputError("the model driver runs closed and open loops, not job streams", field="load")
    run_id, run_dir = _new_run_dir(store, plan.workload.name)
    if observer is not None:
        observer.started(run_id, run_dir)
    if plan.duet is not None:
        try:
            plan.duet.barrier.wait(timeout=DUET_WAIT_S)
        except threading.BrokenBarrierError:
            pass   # the partner ended first: this run goes on alone, as its record shows
    try:
        sim = _simulate(plan, model)
    finally:
        if plan.duet is not None:
            plan.duet.barrier.abort()
    return _store(plan, model, store, run_id, run_dir, sim)


def _new_run_dir(store: Store, name: str) -> tuple[str, Path]:
    # Model runs come many to a second: a run id's random suffix may repeat, so try again.
    for _ in range(100):
        run_id = new_run_id(name)
        try:
            return run_id, store.create_run_dir(run_id)
        except FileExistsError:
            continue
    raise RuntimeError("no free run id")


# -- the simulation ---------------------------------------------------------------------------

@dataclass
class _Simulated:
    rows: dict[str, list]
    thinks: dict[str, list]
    classes: list[str]
    factor: float
    stop: float                  # when the run stopped issuing transactions (the window end, or earlier)
    status: RunStatus
    reason: str | None
    hung: int
    deadline: float | None
    busy: list[tuple[float, float, float, float]]   # (start, end, user CPU, system CPU) per served transaction
    issued: list[float]          # when the driver issued each transaction
    dropped: int = 0             # arrivals dropped (open loop: max_in_flight already in flight)


NAN = float("nan")
#: A simulated user's (or arrival's) script as the event loop runs it: a generator that yields
#: (intended start, the transaction to do then), is sent that transaction's end, and returns
#: the last end (None: the user stops). It is started with next(), as a generator is.
_Process = Generator[tuple[float, Callable[..., float]], float, float | None]
#: The columns of a simulated transaction's row, in order.
_ROW = ("user", "script", "transaction", "class", "intended_start", "actual_start", "end", "ok", "error", "think", "cpu",
        "worker")


class _Station:
    """The SUT: `servers` CPUs serving first come, first served."""

    def __init__(self, servers: int):
        self.free = [(0.0, i) for i in range(servers)]

    def serve(self, arrive: float, seconds: float) -> tuple[float, float, int]:
        free_at, server = heapq.heappop(self.free)
        start = max(arrive, free_at)
        end = start + seconds
        heapq.heappush(self.free, (end, server))
        return start, end, server


def _simulate(plan: RunPlan, model: Model) -> _Simulated:
    """The run as the model plays it: users (closed loop) or arrivals (open loop) through the
    modelled SUT, in the order of their intended starts."""
    sim = _Simulation(plan, model)
    if plan.users is not None:
        sim.closed_loop(plan.users)
    else:
        sim.open_loop()
    return sim.result()


def _ending(plan: RunPlan, model: Model) -> tuple[RunStatus, str] | None:
    """How the model ends this run early, if it does (Model.interrupt_at, Model.fail_at)."""
    if model.interrupt_at is not None and plan.position.order == model.interrupt_at:
        return "interrupted", "interrupted by SIGINT (Ctrl-C)"
    if model.fail_at is not None and plan.position.order == model.fail_at:
        return "failed", "the model's SUT failed half-way through the window (Model.fail_at)"
    return None


class _Scripts:
    """The workload as the model runs it, compiled once: each transaction's class, parameters,
    deadline, cost and failure; each script's steps; the weighted choice among them."""

    def __init__(self, plan: RunPlan, model: Model):
        w = plan.workload
        tx_index = {t.name: i for i, t in enumerate(w.transactions)}
        self.classes = sorted({t.tx_class for t in w.transactions})
        self.class_of = [self.classes.index(t.tx_class) for t in w.transactions]
        self.makers = [ParamMaker(t.params) for t in w.transactions]
        self.deadlines = deadlines_of(w)
        self.base_cost = [(_number((t.kwargs or {}).get("cpu_ms"), model.cpu_ms),
                           _number((t.kwargs or {}).get("sys_ms"), 0.0)) for t in w.transactions]
        # perflab.sut.synthetic:fail raises RuntimeError(message): the model answers with that error
        self.failing = [f"RuntimeError: {(t.kwargs or {}).get('message', 'synthetic failure')}"
                        if t.call == "perflab.sut.synthetic:fail" else None for t in w.transactions]
        default_think = w.think or NO_THINK
        self.steps = [[(tx_index[s.transaction], s.think or default_think) for s in script.steps]
                      for script in w.scripts]
        self.init = next((i for i, s in enumerate(w.scripts) if s.name == w.init_script), None)
        self.choosable = [i for i, s in enumerate(w.scripts) if s.name != w.init_script and s.weight > 0]
        self.cumulative = list(itertools.accumulate(w.scripts[i].weight for i in self.choosable))
        self.residual = w.timing.first_think == "residual"

    def pick(self, rng: UserRandom) -> int:
        return self.choosable[rng.pick(self.cumulative)]


class _Simulation:
    """One model run's event loop and what it records: every pending request by its intended
    start, first come, first served, on the modelled SUT (`_Station`)."""

    def __init__(self, plan: RunPlan, model: Model):
        self.plan, self.model = plan, model
        phases = plan.phases
        self.window_start, self.measurement = phases.window_start, phases.measurement
        self.ending = _ending(plan, model)
        self.stop = phases.window_start + phases.measurement / 2 if self.ending else phases.window_end
        self.factor = model.factor(plan)
        self.paired = plan.duet is not None
        self.scripts = _Scripts(plan, model)
        self.station = _Station(max(1, min(plan.workers, len(plan.placement.sut_cpus))))
        self.fate = UserRandom(plan.seed ^ 0x5EED, model.seed, 3)   # errors and hangs: the model's own stream
        self.faults = model.errors + model.hangs
        self.thinks: dict[str, list] = {k: [] for k in ("user", "transaction", "class", "start", "think")}
        self.busy: list[tuple[float, float, float, float]] = []
        self.issued: list[float] = []
        self.hung = 0
        self.longest_deadline: float | None = None  # the longest deadline a hung transaction passed
        self.records: list[tuple] = []   # one row per transaction, in _ROW order
        self.dropped: list[float] = []   # when each arrival was dropped (open loop, too many in flight)
        self.heap: list[tuple[float, int, _Process, Callable[[], float]]] = []
        self.order = itertools.count()

    # -- one transaction -----------------------------------------------------------------------

    def drift_at(self, t: float) -> float:
        if not self.model.drift:
            return 1.0
        return 1.0 + self.model.drift * min(1.0, max(0.0, (t - self.window_start) / self.measurement))

    def cost_ms(self, ti: int, prng: UserRandom) -> tuple[float, float]:
        """A transaction's user and system CPU (ms) before the host's factor: its own, or its
        parameters' (the knob's units added), magnified in a pair by the model's pair_k."""
        model = self.model
        user_ms, sys_ms = self.scripts.base_cost[ti]
        params = self.scripts.makers[ti](prng)
        if params:
            user_ms, sys_ms = _number(params.get("cpu_ms"), user_ms), _number(params.get("sys_ms"), sys_ms)
            user_ms += _number(params.get(KNOB_PARAM), 0.0) * model.knob_us / 1000.0
        if self.paired and model.pair_k and user_ms + sys_ms > 0:
            magnified = model.cpu_ms * ((user_ms + sys_ms) / model.cpu_ms) ** (1.0 + model.pair_k)
            user_ms, sys_ms = (magnified * user_ms / (user_ms + sys_ms), magnified * sys_ms / (user_ms + sys_ms))
        return user_ms, sys_ms

    def transact(self, uid: int, script: int, ti: int, intended: float, think: float, prng: UserRandom) -> float:
        """Do one transaction: record its row and return its end."""
        scripts, model = self.scripts, self.model
        user_ms, sys_ms = self.cost_ms(ti, prng)
        self.issued.append(intended)
        draw = self.fate.random() if self.faults else 1.0
        row = (uid, script, ti, scripts.class_of[ti], intended, intended)
        if scripts.failing[ti] is not None:
            self.records.append((*row, intended + 1e-4, False, scripts.failing[ti], think, NAN, -1))
            return intended + 1e-4
        if draw < model.errors:
            self.records.append((*row, intended + 1e-4, False, "model: the SUT answered with an error", think, NAN, -1))
            return intended + 1e-4
        if draw < self.faults:
            deadline = scripts.deadlines[ti]
            _, end, worker = self.station.serve(intended, deadline)
            self.hung += 1
            self.longest_deadline = max(self.longest_deadline or 0.0, deadline)
            self.records.append((*row, end, False, deadline_text(deadline), think, NAN, worker))
            return end
        scale = self.factor * self.drift_at(intended) / 1000.0
        u, s = user_ms * scale, sys_ms * scale
        start, end, worker = self.station.serve(intended, u + s)
        if u + s > 0:
            self.busy.append((start, end, u, s))
        self.records.append((*row, end, True, None, think, u + s, worker))
        return end

    def pending(self, uid: int, ti: int, start: float, think: float) -> None:
        """A user still thinking when the run stopped (thinks.parquet)."""
        for key, value in (("user", uid), ("transaction", ti), ("class", self.scripts.class_of[ti]),
                           ("start", start), ("think", think)):
            self.thinks[key].append(value)

    # -- users and arrivals --------------------------------------------------------------------

    def run_script(self, uid: int, script: int, rng: UserRandom, prev_end: float, first_intended: float | None,
                   residual: bool) -> _Process:
        """A user's (or an arrival's) script as the engine runs it: yields (intended start, the
        transaction to do then) and is sent its end; returns the last end, or None to stop."""
        stop = self.stop
        for i, (ti, think_dist) in enumerate(self.scripts.steps[script]):
            if first_intended is not None and i == 0:
                intended, think = first_intended, float("nan")
            else:
                partial = residual and i == 0
                think = think_dist.sample_residual(rng) if partial else think_dist.sample(rng)
                intended = prev_end + think
                if intended >= stop:
                    if not partial:
                        self.pending(uid, ti, prev_end, think)
                    return None
                if partial:
                    think = float("nan")
            if intended >= stop:
                return None
            prev_end = yield intended, functools.partial(self.transact, uid, script, ti, intended, think)
        return prev_end

    def user(self, uid: int, users: int) -> _Process:
        plan, scripts = self.plan, self.scripts
        rng, prng = UserRandom(plan.seed, uid, 0), UserRandom(plan.seed, uid, 1)
        logon = plan.phases.stagger * uid / max(1, users)
        if logon >= self.stop:
            return None
        residual = scripts.residual
        prev_end: float | None = logon
        if scripts.init is not None:
            prev_end = yield from _with_prng(self.run_script(uid, scripts.init, rng, logon, None, residual), prng)
            residual = False
        while prev_end is not None:
            script = scripts.pick(rng)
            prev_end = yield from _with_prng(self.run_script(uid, script, rng, prev_end, None, residual), prng)
            residual = False
        return None

    def advance(self, process: _Process, value: float | None) -> None:
        """Start the process (value None), or send it the end of the transaction it yielded."""
        try:
            intended, work = next(process) if value is None else process.send(value)
        except StopIteration:
            return
        heapq.heappush(self.heap, (intended, next(self.order), process, work))

    def next_request(self) -> None:
        """Serve the pending request that was meant to start first."""
        _, _, process, work = heapq.heappop(self.heap)
        self.advance(process, work())

    def closed_loop(self, users: int) -> None:
        for uid in range(users):
            self.advance(self.user(uid, users), None)
        while self.heap:
            self.next_request()

    def open_loop(self) -> None:
        """Arrivals at the plan's rate, each running one script; one beyond max_in_flight is
        dropped (a row of its own, as the driver records it)."""
        plan, scripts, stop, heap = self.plan, self.scripts, self.stop, self.heap
        load = plan.workload.load
        arrival = load.arrival if isinstance(load, OpenLoad) else "poisson"
        cap = load.max_in_flight if isinstance(load, OpenLoad) else 1000
        times = UserRandom(plan.seed, 0, 2)
        assert plan.rate is not None  # no users: an open loop, which has its rate
        gap = 1.0 / plan.rate
        in_flight: list[float] = []
        t, n = 0.0, 0
        t += times.exponential(gap) if arrival == "poisson" else gap
        while heap or t < stop:
            if t < stop and (not heap or t <= heap[0][0]):
                rng, prng = UserRandom(plan.seed, n, 0), UserRandom(plan.seed, n, 1)
                script = scripts.pick(rng)
                while in_flight and in_flight[0] <= t:
                    heapq.heappop(in_flight)
                if len(in_flight) >= cap:
                    ti = scripts.steps[script][0][0]
                    self.records.append((n, script, ti, scripts.class_of[ti], t, t, t, False,
                                         f"dropped: {cap} transactions already in flight", NAN, NAN, -1))
                    self.dropped.append(t)
                else:
                    self.advance(_with_prng(_tracked(self.run_script(n, script, rng, t, t, False), in_flight), prng),
                                 None)
                n += 1
                t += times.exponential(gap) if arrival == "poisson" else gap
                continue
            self.next_request()

    def result(self) -> _Simulated:
        records, dropped, busy, thinks, stop = self.records, self.dropped, self.busy, self.thinks, self.stop
        if self.ending is not None:
            # Cut short: what had ended by the stop is recorded; the rest was lost with the run.
            records = [r for r in records if r[6] <= stop]
            dropped = [t for t in dropped if t <= stop]
            busy = [b for b in busy if b[0] < stop]
            thinks = {k: [] for k in thinks}
        rows = {key: list(column) for key, column in zip(_ROW, zip(*records))} if records else {k: [] for k in _ROW}
        return _Simulated(rows, thinks, self.scripts.classes, self.factor, stop,
                          self.ending[0] if self.ending else "complete", self.ending[1] if self.ending else None,
                          self.hung, self.longest_deadline, busy, self.issued, len(dropped))


def _with_prng(script: _Process, prng: UserRandom) -> _Process:
    """Pass the user's parameter stream to each transaction as it is done."""
    value: float | None = None
    try:
        while True:
            intended, work = next(script) if value is None else script.send(value)
            value = yield intended, functools.partial(work, prng)
    except StopIteration as stop:
        return stop.value


def _tracked(script: _Process, in_flight: list[float]) -> _Process:
    """An arrival's script whose transactions count as in flight until they end."""
    value: float | None = None
    try:
        while True:
            intended, work = next(script) if value is None else script.send(value)

            def done(*args: Any, _work=work) -> float:
                end = _work(*args)
                heapq.heappush(in_flight, end)
                return end

            value = yield intended, done
    except StopIteration as stop:
        return stop.value


def _number(value: Any, default: float) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return default
    return number if math.isfinite(number) else default


# -- the run directory ------------------------------------------------------------------------

def _store(plan: RunPlan, model: Model, store: Store, run_id: str, run_dir: Path, sim: _Simulated) -> RunResult:
    phases = plan.phases
    table = _transactions(plan, sim)
    write_atomic(run_dir / "transactions.parquet", lambda tmp: pq.write_table(table, tmp))
    thinks = _thinks(plan, sim)
    write_atomic(run_dir / "thinks.parquet", lambda tmp: pq.write_table(thinks, tmp))
    window_end = phases.window_end
    if sim.status != "complete":
        ends = [e for e in sim.rows["end"] if e == e]
        window_end = min(window_end, max(phases.window_start, max(ends, default=0.0)))
    window = WindowRecord(start=phases.window_start, end=window_end, planned_end=phases.window_end)
    interval = plan.workload.monitor_interval
    driver_cpu = model.driver_us * 1e-6 * sum(1 for t in sim.issued if window.start <= t < window.end)
    wall = window.end - window.start
    util = 100.0 * driver_cpu / wall if wall > 0 else float("nan")
    if plan.monitor:
        samples = _samples(plan, model, sim, interval)
        write_atomic(run_dir / "samples.parquet", lambda tmp: pq.write_table(samples, tmp))
        # samples, source: the sampler's own summary keys (MonitorRecord keeps extra keys)
        monitor = MonitorRecord.model_validate({"interval_s": interval, "samples": samples.num_rows, "source": "model"})
    else:
        monitor = MonitorRecord(interval_s=interval, note="monitor disabled (--no-monitor)")
    invalid: list[caveats.Caveat] = []
    saturated = util >= caveats.DRIVER_SATURATION_PCT
    if saturated:
        invalid.append(caveats.driver_saturated(util))
    if sim.hung:
        invalid.append(caveats.hung_transactions(sim.hung, sim.deadline))
    if sim.status != "complete":
        invalid.append(caveats.run_not_complete(sim.status, sim.reason))
    fingerprint = run_fingerprint(plan, _machine())
    fingerprint["model"] = {**asdict(model), "factor": sim.factor,
                            "servers": max(1, min(plan.workers, len(plan.placement.sut_cpus)))}
    record = opening_record(plan, run_id, fingerprint).model_copy(update=dict(
        clock=Clock(t0_monotonic=0.0, t0_epoch=time.time()),
        window=window,
        driver=DriverRecord(pid=os.getpid(), cpu_s=driver_cpu, window_wall_s=wall, util_pct=util, saturated=saturated,
                            dropped=sim.dropped or None),
        monitor=monitor,
        sut=SutRecord(pids=[], cgroup_note="a model run (perflab.drive.model_driver): no SUT process, its CPU is "
                      "the model's", memory_limit=plan.memory_limit, restart=_restart(model, sim)),
        status=sim.status, reason=sim.reason, valid=not invalid, invalid=invalid, finished=now_iso()))
    write_json_atomic(run_dir / "run.json", record.dump())
    store.index(record)
    return RunResult(run_id, run_dir, record.status, record.reason, bool(record.valid), table.num_rows, record)


#: A modelled server's start-up with nothing to recover (seconds).
MODEL_STARTUP_S = 0.05


def _restart(model: Model, sim: _Simulated) -> RestartRecord | None:
    """A server crashed when the load ended (`measure_restart`'s analog, measured after the
    window): its recovery replays the work of every transaction it served, at `restart_share`
    of their CPU -- so its time depends on how much work was done, not on how fast it was
    driven -- on top of a start-up of MODEL_STARTUP_S; a clean start takes the start-up alone."""
    if model.restart_share <= 0:
        return None
    redo = model.restart_share * sum(user + system for _, _, user, system in sim.busy)
    return RestartRecord(restart_s=MODEL_STARTUP_S + redo, redo_s=redo, startup_s=MODEL_STARTUP_S)


@functools.lru_cache(maxsize=1)
def _machine() -> dict[str, Any]:
    from perflab.sut.fingerprint import machine_fingerprint

    return machine_fingerprint()


def _dictionary(indices: list[int], names: list[str]) -> pa.DictionaryArray:
    return arrow_arrays.dictionary(indices, names)


def _transactions(plan: RunPlan, sim: _Simulated) -> pa.Table:
    w = plan.workload
    r = sim.rows
    n = len(r["end"])
    nan = np.full(n, np.nan)
    columns: dict[str, Any] = {   # pyarrow arrays and numpy ones, made pyarrow's below
        "user": arrow_arrays.numbers(r["user"], pa.int32()),
        "script": _dictionary(r["script"], [s.name for s in w.scripts]),
        "transaction": _dictionary(r["transaction"], [t.name for t in w.transactions]),
        "class": _dictionary(r["class"], sim.classes),
        "intended_start": np.asarray(r["intended_start"], np.float64),
        "actual_start": np.asarray(r["actual_start"], np.float64),
        "first_response": nan,
        "end": np.asarray(r["end"], np.float64),
        "ok": arrow_arrays.booleans(r["ok"]),
        "error": arrow_arrays.strings(r["error"]),
        "think": np.asarray(r["think"], np.float64),
        "cpu": np.asarray(r["cpu"], np.float64),
        "cpu_user": nan, "cpu_sys": nan, "instructions": nan,
        "worker": arrow_arrays.numbers(r["worker"], pa.int16()),
        "harness_cpu": nan,
    }
    return pa.Table.from_arrays([arrow_arrays.of_type(columns[f.name], f.type) if not isinstance(columns[f.name], pa.Array)
                                 else columns[f.name] for f in SCHEMA], schema=SCHEMA)


def _thinks(plan: RunPlan, sim: _Simulated) -> pa.Table:
    w = plan.workload
    t = sim.thinks
    return pa.Table.from_arrays([
        arrow_arrays.numbers(t["user"], pa.int32()),
        _dictionary(t["transaction"], [x.name for x in w.transactions]),
        _dictionary(t["class"], sim.classes),
        arrow_arrays.numbers(t["start"], pa.float64()),
        arrow_arrays.numbers(t["think"], pa.float64())], schema=THINKS_SCHEMA)


def _accrued(grid: np.ndarray, starts: np.ndarray, ends: np.ndarray, amounts: np.ndarray) -> np.ndarray:
    """Cumulative amount at each grid time, each item's amount accrued evenly over [start, end]:
    a piecewise-linear integral of the summed rates, exact at every grid time."""
    if len(starts) == 0:
        return np.zeros_like(grid)
    rates = amounts / np.maximum(ends - starts, 1e-12)
    times = np.concatenate([starts, ends])
    deltas = np.concatenate([rates, -rates])
    order = np.argsort(times, kind="stable")
    times, deltas = times[order], deltas[order]
    rate_after = np.cumsum(deltas)
    integral = np.concatenate([[0.0], np.cumsum(rate_after[:-1] * np.diff(times))])
    # between event times the rate is constant: interpolate linearly, flat before the first
    at = np.interp(grid, times, integral, left=0.0)
    beyond = grid > times[-1]
    at[beyond] = integral[-1]
    return at


def _samples(plan: RunPlan, model: Model, sim: _Simulated, interval: float) -> pa.Table:
    phases = plan.phases
    start = phases.window_start
    last = sim.stop + interval
    first_k = -math.floor(start / interval + 1e-9)
    last_k = math.ceil((last - start) / interval - 1e-9) + 1
    grid = start + interval * np.arange(first_k, last_k + 1, dtype=np.float64)
    grid = grid[grid >= 0.0]
    busy = np.asarray(sim.busy, dtype=np.float64).reshape(-1, 4)
    user = _accrued(grid, busy[:, 0], busy[:, 1], busy[:, 2])
    system = _accrued(grid, busy[:, 0], busy[:, 1], busy[:, 3])
    issued = np.sort(np.asarray(sim.issued, np.float64))
    driver = model.driver_us * 1e-6 * np.searchsorted(issued, grid, side="right")
    monitor = MONITOR_SHARE * grid
    columns: dict[str, np.ndarray] = {"t": grid, "s.cpu_user": user, "s.cpu_sys": system,
                                      "driver.cpu_user": 0.8 * driver, "driver.cpu_sys": 0.2 * driver,
                                      "monitor.cpu_user": monitor, "monitor.cpu_sys": 0.0 * grid}
    sut_cpus, driver_cpus = plan.placement.sut_cpus, plan.placement.driver_cpus
    for cpu in sorted(set(sut_cpus) | set(driver_cpus)):
        u = np.zeros_like(grid)
        s = np.zeros_like(grid)
        if cpu in sut_cpus:
            u += user / len(sut_cpus)
            s += system / len(sut_cpus)
        if cpu in driver_cpus:
            u += (0.8 * driver + monitor) / len(driver_cpus)
            s += 0.2 * driver / len(driver_cpus)
        others = model.background * np.maximum(grid - u - s, 0.0)
        u += others
        columns[f"h.cpu{cpu}.user"] = u
        columns[f"h.cpu{cpu}.system"] = s
        for field in ("nice", "irq", "softirq", "iowait", "steal"):
            columns[f"h.cpu{cpu}.{field}"] = np.zeros_like(grid)
        columns[f"h.cpu{cpu}.idle"] = np.maximum(grid - u - s, 0.0)
    return pa.Table.from_arrays([arrow_arrays.numbers(v, pa.float64()) for v in columns.values()], names=list(columns))

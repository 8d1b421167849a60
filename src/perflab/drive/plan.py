"""The run plan: everything a run will do, resolved once from the workload and what the command
line (or a study) asked for, then handed whole to the engine, the SUT and the external tools.

Resolution rules (each decided here and nowhere else):

* load: `--users` makes a closed loop and `--rate` an open one, whatever the workload says;
  otherwise the workload's own load block decides. Both at once is bad input. A job stream
  (`load: {jobs, initiators}`) has neither: its window is the stream itself, and its timeout
  stands in for the measurement period.
* seed: the request's, else the workload's. Every driver uses it: perflab's engine, pgbench
  (`--random-seed`), the generated k6 script and wrk's Lua.
* phases: the request's stagger / stabilization / measurement, else the workload's timing.
* placement: requested CPUs, else the workload's, else driver on the first CPU, SUT on the rest.
* workers: requested, else the workload's, else one per user up to `MAX_DEFAULT_WORKERS`.
* the SUT host's monitor: the workload's `monitor:` (its token read from `token_env` now).
* drivers: `--drivers` (and `--driver-count`) over the workload's `drivers:` block.
* duet: a study's duet design (study/duet.py) runs two runs at once on the same CPUs; each gets
  the pair's key and a barrier, so both clocks start together and neither counts the other as
  a concurrent run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perflab import limits
from perflab.drive.load.engine import Phases
from perflab.drive.remote.sut_host import remote_spec
from perflab.errors import InputError
from perflab.monitor.sources.remote import RemoteSpec
from perflab.sut.placement import Placement, resolve_placement
from perflab.workload.kinds import KINDS, words
from perflab.workload.model import BatchLoad, ClosedLoad, Drivers, OpenLoad, Workload
from perflab.workload.service_port import TOKEN as SERVICE_PORT
from perflab.workload.service_port import free_port, replace_in_text

MAX_DEFAULT_WORKERS = 8


@dataclass(frozen=True)
class DuetSlot:
    """One of the two runs of a duet: the pair's key (the same for both) and the barrier both
    wait at before starting their clocks (a multiprocessing.Barrier of 2)."""

    key: str
    barrier: Any
    arrangement: str = "duet"   # duet or split-duet: recorded with the run, so a comparison of pair runs
                                # across studies keeps the pair's rules (study/groups.py)


@dataclass
class RunRequest:
    """What a user (CLI) or a study asks of one run; None means "as the workload says"."""

    workload: Workload
    workload_path: Path
    users: int | None = None
    rate: float | None = None
    duration: float | None = None
    stagger: float | None = None
    stabilization: float | None = None
    seed: int | None = None
    label: str | None = None
    study: str | None = None
    workers: int | None = None
    driver_cpus: list[int] | None = None
    sut_cpus: list[int] | None = None
    monitor: bool = True
    memory_limit: int | None = None  # bytes available to the SUT (cgroup): the seeds' storage-constrained runs
    block: int | None = None
    order: int | None = None
    purpose: str | None = None
    configuration: str | None = None
    drivers: str | None = None  # --drivers: ray://HEAD:PORT or auto
    driver_count: int | None = None  # --driver-count
    duet: DuetSlot | None = None  # a study's duet design: this run's partner starts with it


@dataclass(frozen=True)
class StudyPosition:
    """Where a run sits in a study (all None for a run of its own)."""

    study: str | None = None
    block: int | None = None
    order: int | None = None
    purpose: str | None = None
    configuration: str | None = None


@dataclass(frozen=True)
class RunPlan:
    workload: Workload
    workload_path: Path
    workload_dir: Path
    users: int | None
    rate: float | None
    seed: int
    phases: Phases
    placement: Placement
    workers: int
    memory_limit: int | None
    label: str | None
    monitor: bool
    position: StudyPosition = field(default_factory=StudyPosition)
    jobs: int | None = None          # a job stream: how many jobs ...
    initiators: int | None = None    # ... run by how many initiators at once
    remote: RemoteSpec | None = None  # the SUT host's monitor (workload `monitor:`)
    drivers: Drivers | None = None  # drivers on several hosts (workload `drivers:`, --drivers)
    duet: DuetSlot | None = None  # run at the same time as its partner (study/duet.py)
    service_port: int | None = None  # `{service_port}`, filled in the workload (workload/service_port.py)

    @property
    def closed(self) -> bool:
        return self.users is not None

    @property
    def batch(self) -> bool:
        return self.jobs is not None


def resolve_plan(request: RunRequest) -> RunPlan:
    """The one place a run's parameters are decided (see the module doc for the rules)."""
    workload = request.workload
    _check_overrides(request)
    if request.users is not None and request.rate is not None:
        raise InputError("give --users (closed loop) or --rate (open loop), not both", field="--users/--rate")
    users, rate = request.users, request.rate
    load = workload.load
    if rate is not None and isinstance(load, ClosedLoad) and load.batch is not None:
        raise InputError("mixed work (load.batch) runs a job stream beside users: give --users, not --rate",
                         field="--rate")
    jobs = initiators = None
    if users is None and rate is None:
        users = load.users if isinstance(load, ClosedLoad) else None
        rate = load.rate if isinstance(load, OpenLoad) else None
        if isinstance(load, BatchLoad):
            jobs, initiators = load.jobs, load.initiators
    timing = workload.timing
    phases = Phases(
        stagger=timing.stagger if request.stagger is None else request.stagger,
        stabilization=timing.stabilization if request.stabilization is None else request.stabilization,
        measurement=timing.measurement if request.duration is None else request.duration,
    )
    if isinstance(load, BatchLoad) and jobs is not None:
        phases = Phases(0.0, 0.0, load.timeout if request.duration is None else request.duration)
    placement = resolve_placement(request.driver_cpus or workload.placement.driver_cpus,
                                  request.sut_cpus or workload.placement.sut_cpus)
    # Mixed work's initiators need workers of their own beside the users' (or a job waits for one).
    beside = load.batch.initiators if isinstance(load, ClosedLoad) and load.batch is not None and users else 0
    workers = request.workers or workload.placement.workers or min(
        (users + beside if users else None) or initiators or MAX_DEFAULT_WORKERS, MAX_DEFAULT_WORKERS)
    drivers = _drivers(request)
    service_port = None
    if workload.service is not None:
        # chosen per run, so that two runs of one workload (a duet's pair) can listen at once
        service_port = free_port()
        workload = replace_in_text(workload, SERVICE_PORT, str(service_port))
    return RunPlan(
        workload=workload, workload_path=Path(request.workload_path),
        workload_dir=Path(request.workload_path).resolve().parent,
        users=users, rate=rate, seed=workload.seed if request.seed is None else request.seed,
        phases=phases, placement=placement, workers=workers, memory_limit=request.memory_limit,
        label=request.label, monitor=request.monitor,
        position=StudyPosition(request.study, request.block, request.order, request.purpose, request.configuration),
        jobs=jobs, initiators=initiators,
        remote=remote_spec(workload, Path(request.workload_path)), drivers=drivers, duet=request.duet,
        service_port=service_port,
    )


def _check_overrides(request: RunRequest) -> None:
    """What the command line (or a study) overrides meets the workload file's limits
    (perflab.limits): finite, and not beyond the bounds -- checked before the run exists."""
    for check, value, option in ((limits.check_users, request.users, "--users"),
                                 (limits.check_rate, request.rate, "--rate"),
                                 (limits.check_workers, request.workers, "--workers"),
                                 (limits.check_duration, request.duration, "--duration"),
                                 (limits.check_duration, request.stagger, "--stagger"),
                                 (limits.check_duration, request.stabilization, "--stabilization")):
        limits.check_option(check, value, option)
    for value, option in ((request.users, "--users"), (request.workers, "--workers"),
                          (request.driver_count, "--driver-count")):
        if value is not None and value < 1:
            raise InputError(f"expected 1 or more, got {value!r}", field=option)
    for value, option in ((request.rate, "--rate"), (request.duration, "--duration")):
        if value is not None and not value > 0:
            raise InputError(f"expected a number above 0, got {value!r}", field=option)
    for value, option in ((request.stagger, "--stagger"), (request.stabilization, "--stabilization")):
        if value is not None and value < 0:
            raise InputError(f"cannot be negative, got {value!r}", field=option)


def _drivers(request: RunRequest) -> Drivers | None:
    """The workload's drivers block with the command line's address and count over it."""
    block = request.workload.drivers
    if request.drivers is None:
        if request.driver_count is not None and block is None:
            raise InputError("--driver-count needs --drivers (or a drivers: block)", field="--driver-count")
        if request.driver_count is None or block is None:  # (no block with a count: refused above)
            return block
        return block.model_copy(update={"count": request.driver_count})
    data = {**(block.model_dump() if block is not None else {}), "ray": request.drivers}
    if request.driver_count is not None:
        data["count"] = request.driver_count
    try:
        drivers = Drivers.model_validate(data)
    except ValueError as exc:
        first = exc.errors()[0]["msg"] if hasattr(exc, "errors") else str(exc)
        raise InputError(first.removeprefix("Value error, "), field="--drivers") from None
    workload = request.workload
    if not KINDS.of(workload.target).network or workload.driver.kind != "native":
        raise InputError(f"--drivers runs perflab's own driver against a network target "
                         f"({words(KINDS.names(network=True))})", field="--drivers")
    return drivers

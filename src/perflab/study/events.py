"""What a study tells whoever watches it as it runs (the terminal's progress lines): typed events,
one class each, so a reader of an event finds its fields by name and a primary metric is named
as itself (a job stream's run ends with its elapsed time, not with something called ITR (S))."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Progress:
    """Where the schedule is: `index` of `total` places done, `elapsed` seconds since it began."""

    index: int
    total: int
    elapsed: float


@dataclass(frozen=True)
class RunStarted:
    config: str
    purpose: str                # "measure" or "calibrate"
    block: int | None = None
    order: int | None = None    # the run's place in the schedule
    users: int | None = None
    rate: float | None = None


@dataclass(frozen=True)
class CalibrationStepDone:
    users: int | None
    rate: float | None
    util_proc_s: float | None
    etr_t: float | None
    valid: bool = True


@dataclass(frozen=True)
class RunEnded:
    """A measured run, judged: its status, its exclusions, and the values the progress line
    shows -- ETR (T), UTIL/PROC (S) and the study's first primary metric, by its key."""

    config: str
    block: int | None
    run_id: str
    status: str
    excluded: bool
    reasons: list[str] = field(default_factory=list)
    etr_t: float | None = None
    util_proc_s: float | None = None
    primary_key: str = "itr_s"
    primary: float | None = None


@dataclass(frozen=True)
class Notice:
    """One line the user should see before the runs: what the study will do that they may not
    expect (its arrangement's bias is not measured on this host, it calibrates itself...)."""

    text: str


StudyEvent = Progress | RunStarted | CalibrationStepDone | RunEnded | Notice
Listener = Callable[[StudyEvent], None]


def ignore(event: StudyEvent) -> None:
    """The listener of a study nobody watches."""

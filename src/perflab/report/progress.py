"""Progress on the terminal: a run's phase, time left, transactions, ETR, errors; a study's
runs one line each. Both are run observers (perflab.drive.lifecycle.RunObserver), handed to
the run explicitly."""

from __future__ import annotations

import time
from collections import deque
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeRemainingColumn

from perflab.catalog.registry import REGISTRY
from perflab.safe_text import terminal as escape
from perflab.safe_text import visible
from perflab.study.events import CalibrationStepDone, Notice, RunEnded, RunStarted, StudyEvent
from perflab.study.events import Progress as ScheduleProgress
from perflab.values import formatted

#: A study's runs say the memory their users need from this many users on (its small runs, one
#: line each, do not).
STUDY_MEMORY_NOTE_USERS = 100_000


def _gb(n: int) -> str:
    return f"{n / 1e9:.2f} GB" if n < 10e9 else f"{n / 1e9:.1f} GB"


def _mem_available() -> int | None:
    """MemAvailable of /proc/meminfo, in bytes (None where there is none)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


class RunProgress:
    """Called from the event loop about twice a second; keeps its own cost small."""

    def __init__(self, console: Console, announce: bool = True):
        self.console = console
        self.announce = announce
        self.progress = Progress(
            TextColumn("{task.fields[phase]:<13}", style="bold", markup=False),
            BarColumn(bar_width=30),
            TextColumn("{task.completed:>6.1f}/{task.total:.0f} s"),
            TextColumn("tx {task.fields[tx]:>8}  ETR {task.fields[etr]:>9}  err {task.fields[errors]}", markup=False),
            TimeRemainingColumn(),
            console=console,
            transient=False,
            refresh_per_second=2,
        )
        self.task: TaskID | None = None
        self.history: deque = deque(maxlen=12)

    def started(self, run_id: str, run_dir: Path) -> None:
        if self.announce:
            self.console.print(f"run [bold]{escape(run_id)}[/bold] -> {escape(run_dir)}")

    def memory_needed(self, users: int, memory: int) -> None:
        """Said before the run starts: the driver's memory its users will need (an estimate,
        perflab.limits.driver_memory_bytes), against what the machine has available now."""
        available = _mem_available()
        line = f"{users:,} users: the driver will need about {_gb(memory)} of memory"
        if available is None:
            self.console.print(line)
        elif memory > available:
            self.console.print(f"[yellow]{escape(line)}, more than the {_gb(available)} available now[/yellow]")
        else:
            self.console.print(f"{escape(line)} ({_gb(available)} available)")

    def tick(self, engine, elapsed: float) -> None:
        phases = engine.phases
        recorder = engine.recorder
        done = recorder.completed + recorder.errors
        now = time.monotonic()
        self.history.append((now, recorder.completed))
        etr = "-"
        if len(self.history) >= 2 and self.history[-1][0] > self.history[0][0]:
            (t_a, n_a), (t_b, n_b) = self.history[0], self.history[-1]
            etr = f"{(n_b - n_a) / (t_b - t_a):,.1f}/s"
        # The columns holding values are plain text (markup=False: no markup, no emoji codes).
        phase, tx, etr, errors = (visible(v) for v in (phases.name_at(elapsed), f"{done:,}", etr,
                                                        f"{recorder.errors:,}"))
        if self.task is None:
            self.progress.start()
            self.task = self.progress.add_task("run", total=phases.window_end, phase=phase, tx=tx, etr=etr,
                                               errors=errors)
        self.progress.update(self.task, completed=min(elapsed, phases.window_end), phase=phase, tx=tx, etr=etr,
                             errors=errors)

    def close(self) -> None:
        if self.task is not None:
            self.progress.stop()
            self.task = None


class StudyProgress:
    """A line per calibration step and per run, a bar for the run in progress, time left."""

    def __init__(self, console: Console):
        self.console = console
        self.run_progress: RunProgress | None = None
        self.total = 0
        self.index = 0
        self.elapsed = 0.0

    # RunObserver: the run in progress
    def started(self, run_id: str, run_dir: Path) -> None:
        if self.run_progress is not None:
            self.run_progress.started(run_id, run_dir)

    def memory_needed(self, users: int, memory: int) -> None:
        if self.run_progress is not None and users >= STUDY_MEMORY_NOTE_USERS:
            self.run_progress.memory_needed(users, memory)

    def tick(self, engine, elapsed: float) -> None:
        if self.run_progress is not None:
            self.run_progress.tick(engine, elapsed)

    # the study's events (perflab.study.events)
    def event(self, event: StudyEvent) -> None:
        if isinstance(event, ScheduleProgress):
            self.total, self.index, self.elapsed = event.total, event.index, event.elapsed
        elif isinstance(event, Notice):
            self.console.print(f"[yellow]{escape(event.text)}[/yellow]")
        elif isinstance(event, RunStarted):
            load = f"{event.users:,} users" if event.users is not None else f"{event.rate or 0:,.1f}/s"
            if event.purpose == "calibrate":
                header = f"calibrating [bold]{escape(event.config)}[/bold] at {load}"
            elif event.purpose == "knob":
                header = f"  mixed run of [bold]{escape(event.config)}[/bold] at {load}"
            else:
                left = ""
                if self.index:
                    remaining = self.elapsed / self.index * (self.total - self.index)
                    left = f", about {remaining / 60:.1f} min left"
                # the run's own place in the schedule (a pair's runs are two places), and its
                # block numbered as the report numbers it
                place = event.order if event.order is not None else self.index
                header = (f"run {place + 1}/{self.total}: [bold]{escape(event.config)}[/bold] "
                          f"(block {event.block}){left}")
            self.console.print(header)
            self.run_progress = RunProgress(self.console, announce=False)
        elif isinstance(event, (RunEnded, CalibrationStepDone)):
            if self.run_progress is not None:
                self.run_progress.close()
                self.run_progress = None
            if isinstance(event, CalibrationStepDone):
                self.console.print(f"  UTIL/PROC (S) {formatted(event.util_proc_s, '.1f')}%  "
                                   f"ETR (T) {formatted(event.etr_t, ',.1f')}/s")
            else:
                note = ("  [yellow]excluded: " + escape("; ".join(event.reasons)) + "[/yellow]"
                        if event.excluded else "")
                primary = escape(REGISTRY.label_of(event.primary_key))
                self.console.print(f"  ETR (T) {formatted(event.etr_t, ',.1f')}/s  UTIL/PROC (S) "
                                   f"{formatted(event.util_proc_s, '.1f')}%  {primary} {formatted(event.primary, ',.3g')}"
                                   f"{note}")

    def close(self) -> None:
        if self.run_progress is not None:
            self.run_progress.close()
            self.run_progress = None


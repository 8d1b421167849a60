"""Progress of a run on the terminal: phase, time left, transactions, ETR, errors."""

from __future__ import annotations

import time
from collections import deque

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn


class RunProgress:
    """Called from the event loop about twice a second; keeps its own cost small."""

    def __init__(self, console: Console):
        self.console = console
        self.progress = Progress(
            TextColumn("[bold]{task.fields[phase]:<13}"),
            BarColumn(bar_width=30),
            TextColumn("{task.completed:>6.1f}/{task.total:.0f} s"),
            TextColumn("tx {task.fields[tx]:>8}  ETR {task.fields[etr]:>9}  err {task.fields[errors]}"),
            TimeRemainingColumn(),
            console=console,
            transient=False,
            refresh_per_second=2,
        )
        self.task = None
        self.history: deque = deque(maxlen=12)

    def started(self, run_id: str, run_dir) -> None:
        self.console.print(f"run [bold]{run_id}[/bold] -> {run_dir}")

    def tick(self, engine, elapsed: float) -> None:
        phases = engine.phases
        recorder = engine.recorder
        done = recorder.completed + recorder.errors
        now = time.monotonic()
        self.history.append((now, recorder.completed))
        etr = "-"
        if len(self.history) >= 2 and self.history[-1][0] > self.history[0][0]:
            (t_a, n_a), (t_b, n_b) = self.history[0], self.history[-1]
            etr = f"{(n_b - n_a) / (t_b - t_a):.1f}/s"
        fields = dict(phase=phases.name_at(elapsed), tx=done, etr=etr, errors=recorder.errors)
        if self.task is None:
            self.progress.start()
            self.task = self.progress.add_task("run", total=phases.window_end, **fields)
        self.progress.update(self.task, completed=min(elapsed, phases.window_end), **fields)

    def close(self) -> None:
        if self.task is not None:
            self.progress.stop()

"""The SUT side of an in-process adapter: what runs inside a SUT worker process.

The driver never executes a transaction itself: it sends (transaction index, parameters) to a
worker process, which runs it with one of these adapters. That keeps the SUT's CPU in
processes of its own, so the monitors can measure it apart from the driver's.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perflab.workload.model import Workload


@dataclass
class WorkerContext:
    workload: Workload
    workload_dir: Path
    run_dir: Path
    index: int


class SutAdapter(ABC):
    """One instance per worker process."""

    #: names of the SUT's own counters this adapter reports (SQLite: total_changes)
    counter_names: tuple[str, ...] = ()
    #: the counter that is the SUT's own count of work (ETR, ETR RATIO), the seeds' RTM count
    tx_counter: str | None = None

    @classmethod
    def counters_for(cls, workload: Workload) -> tuple[tuple[str, ...], str | None]:
        """The SUT's own counters for this workload, and which of them is its transaction count
        (an adapter whose counters depend on the workload -- SQLite's on the binding -- overrides)."""
        return cls.counter_names, cls.tx_counter

    @classmethod
    def prepare(cls, workload: Workload, workload_dir: Path, run_dir: Path) -> dict[str, Any]:
        """One-time set-up in the parent before workers start (create a database...).

        Returns facts for the fingerprint (e.g. {"sut_version": "SQLite 3.40.1"}).
        """
        return {}

    @abstractmethod
    def __init__(self, ctx: WorkerContext): ...

    @abstractmethod
    def execute(self, tx_index: int, params: dict[str, Any] | None) -> float | None:
        """Run one transaction; raise on failure. Returns the monotonic time of the first
        response (first row) where the adapter can see it, else None."""

    def counters(self) -> tuple[int, ...]:
        return ()

    def close(self) -> None:  # noqa: B027 -- optional: most adapters hold nothing to close
        pass


def adapter_class(kind: str) -> type[SutAdapter]:
    """The adapter of a kind run in the workers, as the registry names it (workload/kinds.py)."""
    from perflab.drive.adapters.registry import adapter_class as registered

    return registered(kind)


def prepare_sut(kind: str, workload: dict, workload_dir: str, run_dir: str) -> dict[str, Any]:
    """An adapter's one-time set-up, run by perflab.sut.releases.call_with_path in a process that
    imports the release under test (the driver's process may hold another release of the same
    package). It lives here, not beside the run, so that process imports only the adapters."""
    return adapter_class(kind).prepare(Workload.model_validate(workload), Path(workload_dir), Path(run_dir))

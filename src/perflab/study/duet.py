"""Duet benchmarking: a block's two runs at the same time, on the same CPUs.

Interleaved blocks cancel a host's slow drift between blocks, but not what changes within one:
on this VM the CPU time a fixed piece of work costs wanders 2-3.5% between windows tens of
seconds apart (docs/noise.md §1), so two runs of a block, one after the other, differ by that
much before the SUT has changed at all. A duet (Bulej et al., "Duet Benchmarking: Improving
Measurement Accuracy in the Cloud", ICPE 2020) runs both at once: both SUTs on the SUT's CPUs,
both drivers on the driver's, their clocks started together (a barrier, once both SUTs are set
up), so a slow spell of the host slows both and cancels from their ratio. CPU per transaction
and ITR come from each SUT's own cgroup, whatever share of the CPU it got.

What a duet changes, and the report says (caveats.duet_design): the two SUTs share caches and
take turns on the CPU, so levels (ITR, UTIL/PROC, response times) are those of a shared CPU --
compare ratios, not levels, with solo studies; (H) rows include the partner's load; each
driver gets part of the driver's CPU, so their saturation is judged on the two together.

Each run is its own process (multiprocessing, spawn): perflab's driver, pinned, with its own
event loop, monitor, cgroup and run directory; the study process waits for both.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import queue as queue_module
from collections.abc import Callable
from pathlib import Path
from typing import Any

from perflab.drive.plan import DuetSlot, RunRequest

#: How long the study waits past a pair's planned length before it stops waiting (a SUT's
#: set-up, a template copy, the reduction at the end).
SLACK_S = 900.0


@dataclasses.dataclass
class DuetOutcome:
    """One run of a pair: its directory, or why there is none."""

    run_dir: Path | None
    error: str | None = None


def _child(index: int, request: RunRequest, home: str, results, private_network: bool,
           executor: Callable[..., Any] | None) -> None:
    """One run of the pair, in a process of its own (and, for a service on a fixed port, in a
    network namespace of its own: sut/private_net.py). `executor`: what drives it (default
    perflab's `execute_run`; a model driver in the fast tests)."""
    from perflab.drive.run import execute_run
    from perflab.store.catalog import Store

    try:
        if private_network:
            from perflab.sut.private_net import enter_private_loopback

            enter_private_loopback()
        result = (executor or execute_run)(request, Store(Path(home)))
        results.put((index, str(result.run_dir), None))
    except BaseException as exc:  # noqa: BLE001 - the study hears of every ending, the partner too
        if request.duet is not None:  # (a duet's run has its slot)
            request.duet.barrier.abort()
        results.put((index, None, f"{type(exc).__name__}: {exc}"))


def run_pair(requests: list[RunRequest], key: str, home: Path, planned_s: float,
             private_network: bool = False, executor: Callable[..., Any] | None = None,
             arrangement: str = "duet") -> tuple[list[DuetOutcome], bool]:
    """Run `requests` at the same time (each told its duet key and the shared barrier); -> each
    run's outcome, in order, and whether the study was interrupted (Ctrl-C reaches the runs too:
    each is stored interrupted, and this waits for them). `private_network`: each run in a network
    namespace of its own."""
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(len(requests))
    results = context.Queue()
    processes = []
    for index, request in enumerate(requests):
        paired = dataclasses.replace(request, duet=DuetSlot(key, barrier, arrangement))
        process = context.Process(target=_child, args=(index, paired, str(home), results, private_network, executor),
                                  name=f"perflab-duet-{index}")
        process.start()
        processes.append(process)
    outcomes: dict[int, DuetOutcome] = {}
    interrupted = False
    waited, step, terminated = 0.0, 1.0, False
    while len(outcomes) < len(requests):
        try:
            index, run_dir, error = results.get(timeout=step)
            outcomes[index] = DuetOutcome(Path(run_dir) if run_dir else None, error)
            continue
        except queue_module.Empty:
            waited += step
        except KeyboardInterrupt:
            # Ctrl-C at a terminal reaches the runs too; a SIGTERM sent to the study alone does
            # not: pass it on, so each run is stored interrupted, and wait for them.
            if not interrupted:
                for index, process in enumerate(processes):
                    if index not in outcomes and process.is_alive():
                        process.terminate()
            interrupted = True
            continue
        # A process that ended has put its outcome before it exited (the queue is flushed at
        # exit): one that ended without one died (SIGKILL, the OOM killer).
        dead = [i for i, p in enumerate(processes) if i not in outcomes and not p.is_alive()]
        if dead:
            try:
                while True:
                    index, run_dir, error = results.get(timeout=1.0)
                    outcomes[index] = DuetOutcome(Path(run_dir) if run_dir else None, error)
            except queue_module.Empty:
                pass
            for index in dead:
                outcomes.setdefault(index, DuetOutcome(None, f"the run's process ended with exit code "
                                                             f"{processes[index].exitcode} before it was stored"))
        if waited > planned_s + SLACK_S and not terminated:
            terminated = True
            barrier.abort()
            for index, process in enumerate(processes):
                if index not in outcomes:
                    process.terminate()  # SIGTERM: the run is stored, interrupted
        elif terminated and waited > planned_s + SLACK_S + 120:
            for index, process in enumerate(processes):
                if index not in outcomes:
                    process.kill()
                    outcomes[index] = DuetOutcome(None, "the run did not end within its time and was killed")
    for process in processes:
        process.join(timeout=60)
    return [outcomes[i] for i in range(len(requests))], interrupted

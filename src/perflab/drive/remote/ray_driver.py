"""One driver of several: perflab's engine in a process Ray placed on a node of the cluster
(the coordinator's side, and why: distributed.py).

Ray is not imported here: the coordinator turns `DriverProcess` into an actor class with
`ray.remote(...)`, and a node needs only perflab and its dependencies installed to run it.
Every method is a coroutine, so Ray runs them on the actor's event loop: the coordinator's
`drain` and `interrupt` calls arrive while `run` drives.

Clock: the driver records every transaction on its own CLOCK_MONOTONIC, relative to the run's
t0 translated into that clock by the coordinator (t0 + the offset it measured with `clock`),
so the times it reports are already seconds since the run's t0.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any

from perflab import __version__
from perflab.drive.load.engine import Engine, Phases, Share
from perflab.drive.load.recorder import Recorder
from perflab.workload.model import Workload


class LocalUsers:
    """The executor seen through this driver's own user numbers: adapters that log users on
    before the run (a connection per user) number them 0..users-1, the engine by their number
    in the whole run (first_user + i), which keeps each user's random streams what they are in
    a single driver's run."""

    def __init__(self, executor: Any, first_user: int) -> None:
        self._executor = executor
        self._first = first_user

    def execute(self, tx_index: int, params: dict | None, user: int = -1):
        return self._executor.execute(tx_index, params, user - self._first if user >= self._first else user)


def pin_process(cpus: list[int]) -> None:
    """Every thread of this process on `cpus` (sched_setaffinity(0) pins the calling thread
    only, and Ray's worker has several)."""
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cpus)
        except OSError:
            pass  # a thread that just ended


class DriverProcess:
    def __init__(self, index: int, workload: dict[str, Any], cpus: list[int] | None = None) -> None:
        self.index = index
        self.workload = Workload.model_validate(workload)
        self.cpus = cpus
        self.engine: Engine | None = None
        self.recorder: Recorder | None = None
        self.reported = 0
        self.outcome: dict[str, Any] | None = None

    async def clock(self) -> float:
        return time.monotonic()

    async def info(self) -> dict[str, Any]:
        try:
            import ray

            node = ray.util.get_node_ip_address()
        except Exception:
            node = None
        try:
            with open("/proc/sys/kernel/random/boot_id") as f:
                boot_id = f.read().strip()
        except OSError:
            boot_id = None
        return {"pid": os.getpid(), "node": node, "hostname": socket.gethostname(), "perflab": __version__,
                "boot_id": boot_id}

    async def run(self, t0: float, phases: dict[str, float], share: dict[str, Any], users: int | None,
                  rate: float | None, seed: int, pool_size: int, dsn: str | None = None) -> dict[str, Any]:
        """Drive this driver's share from `t0` (on this host's clock) to the window's end."""
        try:
            return await self._run(t0, phases, share, users, rate, seed, pool_size, dsn)
        except BaseException as exc:  # whatever it was, the coordinator hears of it in a drain
            if self.outcome is None:
                self.outcome = {"status": "failed", "reason": f"{type(exc).__name__}: {exc}",
                                "transactions": len(self.recorder) if self.recorder is not None else 0}
            raise

    async def _run(self, t0, phases, share, users, rate, seed, pool_size, dsn) -> dict[str, Any]:
        from perflab.drive.server_run import make_executor

        if self.cpus:
            pin_process(self.cpus)
        workload = self.workload
        recorder = Recorder([s.name for s in workload.scripts], [t.name for t in workload.transactions], [], t0)
        share_ = Share(**share)
        executor = make_executor(workload, dsn, None, pool_size)
        engine = Engine(workload, LocalUsers(executor, share_.first_user), recorder, Phases(**phases), t0,
                        users=users, rate=rate, seed=seed, share=share_)
        recorder.class_names = engine.class_names
        self.engine, self.recorder = engine, recorder
        try:
            await executor.open(users)
            outcome = await engine.run()
        except Exception as exc:  # the SUT refused the connections: a failed share, reported
            engine.fail(f"{type(exc).__name__}: {exc}")
            outcome = engine.outcome
        finally:
            await executor.close()
        self.outcome = {"status": outcome.status, "reason": outcome.reason, "cpu_s": outcome.driver_cpu_window_s,
                        "window_wall_s": outcome.window_wall_s, "dropped": outcome.dropped, "hung": outcome.hung,
                        "deadline_s": outcome.deadline_s, "transactions": len(recorder)}
        return self.outcome

    async def drain(self) -> tuple[Any, dict[str, Any] | None]:
        """(the transactions recorded since the last drain, a pyarrow Table or None; the outcome
        once the run has ended, else None). The outcome comes with the last rows, so the
        coordinator learns that a driver is done from its drains alone."""
        recorder, outcome = self.recorder, self.outcome
        if recorder is None or len(recorder) == self.reported:
            return None, outcome
        table = recorder.hand_over()  # the driver keeps no rows: a long run's memory stays flat
        self.reported = len(recorder)
        return table, outcome

    async def interrupt(self, reason: str) -> None:
        if self.engine is not None:
            self.engine.interrupt(reason)

    async def fail(self, reason: str) -> None:
        if self.engine is not None:
            self.engine.fail(reason)

"""SUT worker processes and the driver-side pool that dispatches transactions to them.

The in-process adapters (python, sqlite, command) run the SUT's side of every transaction in
worker processes of their own, pinned to the SUT's CPUs, so the monitors can measure the
SUT's CPU apart from the driver's -- the seeds' TPNS ran on a separate processor for the same
reason. A worker is the SUT's "server process": with fewer workers than users, transactions
queue for a free worker, and that wait is part of the response time.

Wire format: one request or reply per pipe message, encoded with `marshal` (fast for the
plain tuples exchanged; both ends run the same interpreter).
"""

from __future__ import annotations

import asyncio
import marshal
import multiprocessing
import os
import signal
import sys
import time
import traceback
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perflab.errors import SutFailure

READY_TIMEOUT_S = 120.0


@dataclass
class WorkerSpec:
    workload: dict  # Workload.model_dump(by_alias=True)
    workload_dir: str
    run_dir: str
    index: int
    cpus: list[int] | None = None
    counters: Any = None  # SharedCounters (pickles as its handle), or None


@dataclass(slots=True)
class Reply:
    ok: bool
    error: str | None
    first: float | None
    cpu: float = float("nan")
    cpu_user: float = float("nan")
    cpu_sys: float = float("nan")
    worker: int = -1
    counters: tuple = ()
    instructions: float = float("nan")


def worker_main(conn, spec: WorkerSpec) -> None:
    """Entry point of a SUT worker process."""
    # Ctrl-C goes to the whole process group; the driver decides when workers stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ["PERFLAB_RUN_DIR"] = spec.run_dir
    if spec.cpus:
        os.sched_setaffinity(0, spec.cpus)
    try:
        from perflab.drive.adapters.base import WorkerContext, adapter_class
        from perflab.workload.model import Workload

        workload = Workload.model_validate(spec.workload)
        adapter = adapter_class(workload.target.kind)(
            WorkerContext(workload, Path(spec.workload_dir), Path(spec.run_dir), spec.index)
        )
        writer = spec.counters.writer(spec.index) if spec.counters is not None else None
    except BaseException as exc:  # report why the SUT could not start, then exit
        conn.send_bytes(marshal.dumps(("error", f"{type(exc).__name__}: {exc}", traceback.format_exc())))
        return
    conn.send_bytes(marshal.dumps(("ready", os.getpid())))
    take_cpu = getattr(adapter, "take_cpu", None)
    take_instructions = getattr(adapter, "take_instructions", None)
    # CLOCK_THREAD_CPUTIME_ID is the kernel's exact runtime of this thread. getrusage's
    # user/system split is tick-sampled and useless for sub-millisecond transactions, so an
    # in-process transaction records its exact total only; a command records wait4's split.
    thread_time = time.thread_time
    nan = float("nan")
    while True:
        try:
            message = conn.recv_bytes()
        except (EOFError, OSError):
            break
        if not message:
            break
        tx_index, params = marshal.loads(message)
        before = thread_time()
        try:
            first = adapter.execute(tx_index, params)
            ok, error = True, None
        except Exception as exc:  # a failed transaction is a result, not a crash
            first, ok, error = None, False, f"{type(exc).__name__}: {exc}"[:500]
        cpu = thread_time() - before
        usage = take_cpu() if take_cpu is not None else None
        instructions = take_instructions() if take_instructions is not None else nan
        if usage is None:
            user, system = nan, nan
        else:
            user, system = usage
            cpu = user + system
        values = adapter.counters()
        if writer is not None:
            for name, value in zip(adapter.counter_names, values):
                writer.set(name, value)
        conn.send_bytes(marshal.dumps((ok, error, first, cpu, user, system, values, instructions)))
    adapter.close()


class _Worker:
    __slots__ = ("index", "process", "conn", "pending", "pid", "counters")

    def __init__(self, index: int, process, conn):
        self.index, self.process, self.conn = index, process, conn
        self.pending: deque[asyncio.Future] = deque()  # replies come back in request order
        self.pid = 0
        self.counters: tuple = ()


class WorkerPool:
    """Starts N SUT worker processes and hands each transaction to a free one.

    Each worker holds up to `depth` requests: while it runs one, the next already waits in its
    pipe, so the driver's round trip (reply read, next request sent) never leaves the SUT idle.
    Requests beyond that wait in the driver for a worker slot, like connections waiting for a
    server process.
    """

    def __init__(self, specs: list[WorkerSpec], depth: int = 2):
        self.depth = depth
        # spawn, not fork: a worker must not inherit the driver's event loop or threads.
        ctx = multiprocessing.get_context("spawn")
        self.workers: list[_Worker] = []
        self.failure: str | None = None
        self._idle: list[_Worker] = []
        self._waiters: deque[asyncio.Future] = deque()
        for spec in specs:
            parent, child = ctx.Pipe(duplex=True)
            process = ctx.Process(target=worker_main, args=(child, spec), name=f"perflab-sut-{spec.index}", daemon=True)
            process.start()
            child.close()
            self.workers.append(_Worker(spec.index, process, parent))
        self._wait_ready()
        # one entry per free request slot: `depth` per worker, interleaved so load spreads
        self._idle = [w for _ in range(depth) for w in reversed(self.workers)]

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        for worker in self.workers:
            if not worker.conn.poll(max(0.0, deadline - time.monotonic())):
                self.close()
                raise SutFailure(f"SUT worker {worker.index} did not start within {READY_TIMEOUT_S:.0f} s")
            try:
                message = marshal.loads(worker.conn.recv_bytes())
            except (EOFError, OSError):
                code = worker.process.exitcode
                self.close()
                raise SutFailure(f"SUT worker {worker.index} exited while starting (exit code {code})") from None
            if message[0] == "error":
                self.close()
                raise SutFailure(f"SUT worker {worker.index} could not start: {message[1]}")
            worker.pid = message[1]

    @property
    def pids(self) -> list[int]:
        return [w.pid for w in self.workers]

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        for worker in self.workers:
            loop.add_reader(worker.conn.fileno(), self._on_reply, worker)

    def detach(self, loop: asyncio.AbstractEventLoop) -> None:
        for worker in self.workers:
            try:
                loop.remove_reader(worker.conn.fileno())
            except (ValueError, OSError):
                pass

    def _on_reply(self, worker: _Worker) -> None:
        try:
            values = marshal.loads(worker.conn.recv_bytes())
        except (EOFError, OSError, ValueError):
            self._fail(worker)
            return
        worker.counters = values[6]
        future = worker.pending.popleft() if worker.pending else None
        if future is not None and not future.done():
            future.set_result(Reply(values[0], values[1], values[2], values[3], values[4], values[5], worker.index,
                                    values[6], values[7]))
        self._release(worker)

    def _fail(self, worker: _Worker) -> None:
        try:
            asyncio.get_running_loop().remove_reader(worker.conn.fileno())
        except (RuntimeError, ValueError, OSError):
            pass
        worker.process.join(timeout=1.0)
        code = worker.process.exitcode
        how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        reason = f"SUT worker {worker.index} (pid {worker.pid}) died ({how})"
        if self.failure is None:
            self.failure = reason
        while worker.pending:
            future = worker.pending.popleft()
            if not future.done():
                future.set_exception(SutFailure(reason))
        # The dead worker is not returned to the idle list; anyone waiting for a worker when
        # none are left learns of the failure instead of waiting forever.
        if all(not w.process.is_alive() for w in self.workers):
            while self._waiters:
                waiter = self._waiters.popleft()
                if not waiter.done():
                    waiter.set_exception(SutFailure(reason))

    def _release(self, worker: _Worker) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(worker)
                return
        self._idle.append(worker)

    async def execute(self, tx_index: int, params: dict | None, user: int = -1) -> Reply:
        if self.failure is not None:
            raise SutFailure(self.failure)
        if self._idle:
            worker = self._idle.pop()
        else:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            worker = await waiter
        future = asyncio.get_running_loop().create_future()
        worker.pending.append(future)
        try:
            worker.conn.send_bytes(marshal.dumps((tx_index, params)))
        except (OSError, ValueError):
            self._fail(worker)
            raise SutFailure(self.failure or "SUT worker pipe closed") from None
        return await future

    def counters(self) -> tuple:
        """The SUT's own counters summed over workers (e.g. SQLite total_changes)."""
        totals: list[int] = []
        for worker in self.workers:
            for i, value in enumerate(worker.counters):
                if i < len(totals):
                    totals[i] += value
                else:
                    totals.append(value)
        return tuple(totals)

    def close(self, timeout: float = 5.0) -> None:
        for worker in self.workers:
            try:
                worker.conn.send_bytes(b"")
            except (OSError, ValueError):
                pass
        deadline = time.monotonic() + timeout
        for worker in self.workers:
            worker.process.join(timeout=max(0.0, deadline - time.monotonic()))
            if worker.process.is_alive():
                worker.process.terminate()
                worker.process.join(timeout=1.0)
            try:
                worker.conn.close()
            except OSError:
                pass

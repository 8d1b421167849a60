"""The driver-side pool of SUT worker processes: it starts them, hands each transaction to a free
one, kills one whose transaction hangs, and replaces one that died. A worker is the SUT's
"server process": with fewer workers than users, transactions queue for a free worker, and that
wait is part of the response time.
"""

from __future__ import annotations

import asyncio
import marshal
import os
import signal
import time
from collections import deque
from collections.abc import Callable

from perflab.drive.workers.launch import start_worker
from perflab.drive.workers.wire import READ_CHUNK, FrameReader, Reply, WorkerSpec, frame, write_all
from perflab.errors import SutFailure

READY_TIMEOUT_S = 120.0

class _Worker:
    __slots__ = ("index", "process", "conn", "fd", "pending", "pid", "counters", "frames", "outbox", "spec",
                 "since", "ready")

    def __init__(self, index: int, process, conn, spec: WorkerSpec):
        self.index, self.process, self.conn = index, process, conn
        self.fd = conn.fileno()
        # what the worker holds, in request order (replies come back in that order):
        # (the reply's future, the request's bytes, its transaction index)
        self.pending: deque[tuple[asyncio.Future, bytes, int]] = deque()
        self.pid = 0
        self.counters: tuple = ()
        self.frames = FrameReader()
        self.outbox: list[bytes] = []  # requests not yet written (see WorkerPool._flush)
        self.spec = spec
        self.since = 0.0  # when the oldest pending request started running (its deadline counts from here)
        self.ready = False


def kill_group(pid: int) -> None:
    """SIGKILL a process and everything in its process group (a worker is a group leader)."""
    if pid <= 0:
        return
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


class WorkerPool:
    """Starts N SUT worker processes and hands each transaction to a free one.

    Each worker holds up to `depth` requests: while it runs one, the next already waits in its
    pipe, so the driver's round trip (reply read, next request sent) never leaves the SUT idle.
    Requests beyond that wait in the driver for a worker slot, like connections waiting for a
    server process; a reply that frees a slot sends the oldest waiting request at once.

    Deadlines (perflab.drive.load.deadline): `deadlines[tx_index]` is how long a transaction may run.
    A worker whose current transaction is `grace` seconds past it is hung: its process group is
    killed, the transaction answered as an error ("deadline 2 s exceeded", Reply.hung), the
    requests queued behind it go to other workers, and a new worker takes its place (announced
    to `on_worker` with its pid, for the SUT's cgroup). `grace` is for adapters that enforce the
    deadline themselves (a command's process group, killed in the worker): the pool steps in
    only when the worker stops answering.
    """

    def __init__(self, specs: list[WorkerSpec], depth: int = 2, deadlines: list[float] | None = None,
                 grace: float = 0.0, on_worker: Callable[[int], None] | None = None):
        self.depth = depth
        self.workers: list[_Worker] = []
        self.failure: str | None = None
        self.deadlines: list[float] = deadlines or []  # none: no transaction has a deadline
        self.grace = grace
        self.on_worker = on_worker
        self.killed = 0  # hung workers killed (and replaced)
        self._timer: asyncio.TimerHandle | None = None
        self._period = 0.25 if not deadlines else max(0.01, min(0.25, min(deadlines) / 10))
        self._idle: list[_Worker] = []
        # requests waiting for a free slot: (request bytes, the reply's future, transaction index), oldest first
        self._queue: deque[tuple[bytes, asyncio.Future, int]] = deque()
        self._loop: asyncio.AbstractEventLoop | None = None  # from `attach` on
        self._unflushed: list[_Worker] = []
        self._plain_requests: dict[int, bytes] = {}
        for spec in specs:
            self.workers.append(self._spawn(spec))
        self._wait_ready()
        # one entry per free request slot: `depth` per worker, interleaved so load spreads
        self._idle = [w for _ in range(depth) for w in reversed(self.workers)]

    def _spawn(self, spec: WorkerSpec) -> _Worker:
        process, conn = start_worker(spec)
        return _Worker(spec.index, process, conn, spec)

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
            worker.ready = True

    def _attached(self) -> asyncio.AbstractEventLoop:
        """The event loop `attach` gave; transactions are sent and workers watched only from then on."""
        if self._loop is None:
            raise RuntimeError("the worker pool is used before WorkerPool.attach")
        return self._loop

    @property
    def pids(self) -> list[int]:
        return [w.pid for w in self.workers]

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        for worker in self.workers:
            loop.add_reader(worker.fd, self._on_readable, worker)
        if self.deadlines:
            self._timer = loop.call_later(self._period, self._check_deadlines)

    def detach(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for worker in self.workers:
            try:
                loop.remove_reader(worker.fd)
            except (ValueError, OSError):
                pass

    # --- sending ----------------------------------------------------------------------------

    def execute(self, tx_index: int, params: dict | None, user: int = -1) -> asyncio.Future:
        """The future of one transaction's Reply: sent now when a worker slot is free, else
        when a reply frees one."""
        if self.failure is not None:
            raise SutFailure(self.failure)
        future = self._attached().create_future()
        request = self._request(tx_index, params)
        if self._idle:
            self._send(self._idle.pop(), request, future, tx_index)
        else:
            self._queue.append((request, future, tx_index))
        return future

    def _request(self, tx_index: int, params: dict | None) -> bytes:
        if params is not None:
            return frame(marshal.dumps((tx_index, params)))
        request = self._plain_requests.get(tx_index)  # a transaction without parameters: always the same bytes
        if request is None:
            request = self._plain_requests[tx_index] = frame(marshal.dumps((tx_index, None)))
        return request

    def _send(self, worker: _Worker, request: bytes, future: asyncio.Future, tx_index: int) -> None:
        """Queue the request for the worker's next write (see _flush)."""
        if not worker.pending:
            worker.since = time.monotonic()
        worker.pending.append((future, request, tx_index))
        if not worker.outbox:
            self._unflushed.append(worker)
            if len(self._unflushed) == 1:
                self._attached().call_soon(self._flush)
        worker.outbox.append(request)

    def _flush(self) -> None:
        """Write each worker's queued requests in one system call. The requests one loop
        iteration sends (users woken by a read of several replies) wait at most until the
        loop's next iteration; with `depth` requests per worker, the worker has another to
        run meanwhile."""
        workers, self._unflushed = self._unflushed, []
        for worker in workers:
            self._write(worker)

    def _write(self, worker: _Worker) -> None:
        outbox = worker.outbox
        if not outbox:  # written already, or the worker failed
            return
        data = outbox[0] if len(outbox) == 1 else b"".join(outbox)
        outbox.clear()
        try:
            write_all(worker.fd, data)
        except OSError:  # EPIPE: the worker has exited; its requests fail with the reason
            self._fail(worker)

    # --- receiving --------------------------------------------------------------------------

    def _on_readable(self, worker: _Worker) -> None:
        """Every reply that has arrived from this worker, with one read. The pipe is readable,
        so the read does not block although the descriptor is blocking."""
        try:
            data = os.read(worker.fd, READ_CHUNK)
        except OSError:  # e.g. ECONNRESET: the worker died with requests unread
            data = b""
        if not data:  # end of file: the worker has exited
            self._fail(worker)
            return
        for message in worker.frames.feed(data):
            try:
                values = marshal.loads(message)
            except (EOFError, ValueError, TypeError):
                self._fail(worker)
                return
            self._on_reply(worker, values)
        # The requests that took the freed slots go out now, in one write, not an iteration later.
        self._write(worker)

    def _on_reply(self, worker: _Worker, values: tuple) -> None:
        worker.counters = values[6]
        pending = worker.pending
        entry = pending.popleft() if pending else None
        if pending:
            worker.since = time.monotonic()  # the next request is running now
        if entry is not None and not entry[0].done():
            entry[0].set_result(Reply(values[0], values[1], values[2], values[3], values[4], values[5], worker.index,
                                      values[6], values[7], values[8], values[9]))
        self._release(worker)

    def _release(self, worker: _Worker) -> None:
        """A slot of `worker` is free: the oldest waiting request takes it."""
        while self._queue:
            request, future, tx_index = self._queue.popleft()
            if not future.done():  # a cancelled transaction gives up its place
                self._send(worker, request, future, tx_index)
                return
        self._idle.append(worker)

    def _fail(self, worker: _Worker) -> None:
        worker.process.join(timeout=1.0)
        code = worker.process.exitcode
        how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        self._lost(worker, f"SUT worker {worker.index} (pid {worker.pid}) died ({how})")

    def _lost(self, worker: _Worker, reason: str) -> None:
        """A worker is gone for good: its requests, and when no worker is left every waiting
        request, fail with the reason (the run fails with it)."""
        if self._loop is not None:  # a worker lost before the pool was attached has no reader yet
            try:
                self._loop.remove_reader(worker.fd)
            except (ValueError, OSError):
                pass
        if self.failure is None:
            self.failure = reason
        worker.outbox.clear()
        while worker.pending:
            future = worker.pending.popleft()[0]
            if not future.done():
                future.set_exception(SutFailure(reason))
        # The dead worker's slots are never freed; when no worker is left, the requests
        # waiting for one learn of the failure instead of waiting forever.
        if all(not w.process.is_alive() for w in self.workers):
            while self._queue:
                future = self._queue.popleft()[1]
                if not future.done():
                    future.set_exception(SutFailure(reason))

    # --- deadlines --------------------------------------------------------------------------

    def _check_deadlines(self) -> None:
        """Every `_period` seconds: kill each worker whose current transaction is past its deadline."""
        self._timer = None
        now = time.monotonic()
        for worker in list(self.workers):
            if worker.ready and worker.pending:
                tx_index = worker.pending[0][2]
                if now - worker.since > self.deadlines[tx_index] + self.grace:
                    self._kill_hung(worker, tx_index)
        if self._loop is not None and not self._loop.is_closed():
            self._timer = self._loop.call_later(self._period, self._check_deadlines)

    def _kill_hung(self, worker: _Worker, tx_index: int) -> None:
        from perflab.drive.load.deadline import deadline_text

        try:
            self._attached().remove_reader(worker.fd)
        except (ValueError, OSError):
            pass
        # SIGTERM first: a command worker then kills its command's process group (a session of
        # its own); then SIGKILL to the worker's group, whatever it was doing.
        try:
            os.kill(worker.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        worker.process.join(timeout=1.0)
        kill_group(worker.pid)
        worker.process.join(timeout=1.0)
        try:
            worker.conn.close()
        except OSError:
            pass
        self.killed += 1
        future = worker.pending.popleft()[0]
        reason = f"{deadline_text(self.deadlines[tx_index])}: SUT worker {worker.index} (pid {worker.pid}) was killed"
        if not future.done():
            future.set_result(Reply(False, reason, None, worker=worker.index, hung=True))
        # The requests behind it never started: they go first to the next free worker.
        for future, request, index in reversed(worker.pending):
            if not future.done():
                self._queue.appendleft((request, future, index))
        worker.pending.clear()
        worker.outbox.clear()
        self._idle = [w for w in self._idle if w is not worker]
        self._replace(worker)
        # ... and any free slot of another worker takes them now.
        while self._idle and self._queue:
            request, future, index = self._queue.popleft()
            if not future.done():
                self._send(self._idle.pop(), request, future, index)

    def _replace(self, old: _Worker) -> None:
        """Start a worker in `old`'s place; it takes requests once it has said it is ready."""
        try:
            new = self._spawn(old.spec)
        except OSError as exc:
            self._lost(old, f"SUT worker {old.index} was killed past its deadline and could not be restarted: {exc}")
            return
        self.workers[self.workers.index(old)] = new
        self._attached().add_reader(new.fd, self._on_ready, new)

    def _on_ready(self, worker: _Worker) -> None:
        loop = self._attached()
        loop.remove_reader(worker.fd)
        try:
            message = marshal.loads(worker.conn.recv_bytes())
        except (EOFError, OSError, ValueError):
            worker.process.join(timeout=1.0)
            message = ("error", f"exited while starting (exit code {worker.process.exitcode})")
        if message[0] == "error":
            self._lost(worker, f"SUT worker {worker.index} could not be restarted after a hung transaction: "
                               f"{message[1]}")
            return
        worker.pid, worker.ready = message[1], True
        if self.on_worker is not None:
            self.on_worker(worker.pid)
        loop.add_reader(worker.fd, self._on_readable, worker)
        for _ in range(self.depth):
            self._release(worker)
        self._write(worker)

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
        """Stop every worker: asked first (an empty message), then SIGTERM (a command worker
        kills its command's process group), then SIGKILL to the worker's whole process group.
        A worker still running a transaction (the engine gave up on it at the run's end: hung)
        is not asked and waited for: SIGTERM at once, then SIGKILL to what is left of its group."""
        busy: list[_Worker] = []
        for worker in self.workers:
            if not worker.ready:  # a replacement still starting: it has nothing to finish
                kill_group(worker.process.pid)
                continue
            if worker.pending:
                busy.append(worker)
                try:
                    os.kill(worker.pid, signal.SIGTERM)
                except (ProcessLookupError, PermissionError):
                    pass
                continue
            try:
                write_all(worker.fd, frame(b""))  # an empty message: stop
            except (OSError, ValueError):
                pass
        deadline = time.monotonic() + timeout
        for worker in self.workers:
            worker.process.join(timeout=max(0.0, deadline - time.monotonic()))
            if worker.process.is_alive():
                worker.process.terminate()
                worker.process.join(timeout=1.0)
            if worker.process.is_alive():
                kill_group(worker.process.pid)
                worker.process.join(timeout=1.0)
            elif worker in busy:  # what its transaction started, in its process group
                try:
                    os.killpg(worker.process.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            try:
                worker.conn.close()
            except OSError:
                pass

"""A SUT worker process: the SUT's side of every transaction of the in-process adapters
(python, sqlite, command), pinned to the SUT's CPUs so its CPU is measured apart from the
driver's -- the seeds' TPNS ran on a separate processor for the same reason.
"""

from __future__ import annotations

import marshal
import os
import signal
import time
import traceback
from pathlib import Path

from perflab.drive.workers.wire import READ_CHUNK, FrameReader, WorkerSpec, frame, write_all


def main_from_fd(fd: int) -> None:
    """A worker started by perflab.drive.workers.launch: its parent's import path, then its spec,
    arrive on `fd` before anything else."""
    import pickle
    import sys
    from multiprocessing.connection import Connection

    conn = Connection(fd)
    sys.path[:] = marshal.loads(conn.recv_bytes())
    worker_main(conn, pickle.loads(conn.recv_bytes()))


def worker_main(conn, spec: WorkerSpec) -> None:
    """Entry point of a SUT worker process."""
    # Ctrl-C goes to the whole process group; the driver decides when workers stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # A process group of its own: a hung worker is killed with whatever it started (os.killpg),
    # and it dies with the driver, however the driver ends (SIGKILL included).
    os.setsid()
    _die_with_parent(spec.parent)
    os.environ["PERFLAB_RUN_DIR"] = spec.run_dir
    if spec.cpus:
        os.sched_setaffinity(0, spec.cpus)
    if spec.paths:
        from perflab.sut.releases import prepend_path

        prepend_path(spec.paths)
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
    abort = getattr(adapter, "abort", None)
    if abort is not None:
        # SIGTERM (the pool closing, the driver gone): stop what the adapter runs (a command's
        # process group, which has a session of its own), then exit.
        def on_term(signum, frame):
            abort()
            os._exit(128 + signum)

        signal.signal(signal.SIGTERM, on_term)
    conn.send_bytes(marshal.dumps(("ready", os.getpid())))
    _serve(conn.fileno(), adapter, writer)
    adapter.close()


_PR_SET_PDEATHSIG = 1


def _die_with_parent(parent: int | None) -> None:
    """SIGTERM this worker when the driver dies (Linux prctl PR_SET_PDEATHSIG): a worker stuck in
    a hung call never reads the pipe's end of file, and must not outlive a killed driver."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if parent is not None and os.getppid() != parent:  # the driver died before the prctl
        os._exit(1)


def _serve(fd: int, adapter, writer) -> None:
    """Run requests until the driver sends an empty message or closes the pipe. One read may
    bring several requests; each reply is written as soon as its transaction ends, so no
    transaction's response time includes the next one's."""
    execute = _executor(adapter, writer)
    frames = FrameReader()
    while True:
        try:
            data = os.read(fd, READ_CHUNK)
        except OSError:
            return
        if not data:
            return
        for message in frames.feed(data):
            if not message:
                return
            reply = execute(message)
            try:
                write_all(fd, frame(reply))
            except OSError:  # the driver has gone
                return


def _executor(adapter, writer):
    """The function that runs one request and returns the marshaled reply: the transaction,
    its CPU, and the SUT's counters published for the monitor."""
    take_cpu = getattr(adapter, "take_cpu", None)
    take_instructions = getattr(adapter, "take_instructions", None)
    counter_names = adapter.counter_names
    # CLOCK_THREAD_CPUTIME_ID is the kernel's exact runtime of this thread. getrusage's
    # user/system split is tick-sampled and useless for sub-millisecond transactions, so an
    # in-process transaction records its exact total only; a command records wait4's split.
    thread_time = time.thread_time
    nan = float("nan")
    # The worker's own cost (the harness): all of this thread's CPU that is not the SUT's call --
    # reading and decoding the request, encoding and writing the reply, publishing the counters.
    # Each transaction carries what the thread spent since the previous call ended, less its own
    # call: the reply it writes after that is charged to the next one, so the window's sum is the
    # worker's CPU outside the SUT's calls, whatever the split between neighbours.
    mark = [thread_time()]

    def execute(message: bytes) -> bytes:
        tx_index, params = marshal.loads(message)
        before = thread_time()
        hung = False
        try:
            first = adapter.execute(tx_index, params)
            ok, error = True, None
        except Exception as exc:  # a failed transaction is a result, not a crash
            first, ok, error = None, False, f"{type(exc).__name__}: {exc}"[:500]
            hung = getattr(exc, "hung", False)  # the adapter killed it at its deadline
        after = thread_time()
        cpu = after - before
        harness = before - mark[0]
        usage = take_cpu() if take_cpu is not None else None
        instructions = take_instructions() if take_instructions is not None else nan
        if usage is None:
            user, system = nan, nan
        else:
            user, system = usage
            # The SUT ran in a child process (wait4's account): this thread only started and
            # awaited it, which is the harness's work too.
            harness = after - mark[0]
            cpu = user + system
        values = adapter.counters()
        if writer is not None:
            for name, value in zip(counter_names, values):
                writer.set(name, value)
        mark[0] = after
        return marshal.dumps((ok, error, first, cpu, user, system, values, instructions, harness, hung))

    return execute

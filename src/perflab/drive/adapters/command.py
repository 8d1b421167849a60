"""A program as the system under test: one process per transaction (the batch-job case).

The exit status decides ok/error. The child's own CPU time comes from wait4(2), the kernel's
exact accounting of the reaped process, so each job's user and system CPU is recorded with
the transaction.

With `target.valgrind: true` every command runs under valgrind's cachegrind (cache
simulation off, children traced) and the instructions it executed -- its pathlength, INSTR/CMD
(I) -- are recorded per transaction. Instruction counts are repeatable where time is not, so
this works on machines without hardware counters (like this one). It is for pathlength only:
under valgrind the job runs tens of times slower, so its CPU and response rows measure
valgrind, and every report says so. Python SUTs should set PYTHONHASHSEED=0 (target.env) for
counts that repeat exactly.

With `target.isolation: {layer: gvisor}` every command runs in a gVisor sandbox of its own
(`runsc do`, sut/isolation.py): a job in a fresh guest. wait4's CPU is then the command's and the
layer's together (runsc reaps the sandbox's processes), as the (S) rows are.
"""

from __future__ import annotations

import glob
import os
import shlex
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from perflab.drive.adapters.base import SutAdapter, WorkerContext
from perflab.drive.load.deadline import deadline_text, deadlines_of
from perflab.drive.pathlength.valgrind import cachegrind_prefix, cachegrind_total, callgrind_whole_prefix
from perflab.sut import isolation as layer
from perflab.workload.model import CommandTarget, Workload


class CommandFailed(Exception):
    pass


class DeadlineExceeded(CommandFailed):
    """The command ran past its deadline and its process group was killed (the run is invalid)."""

    hung = True


class CommandAdapter(SutAdapter):
    @classmethod
    def prepare(cls, workload: Workload, workload_dir: Path, run_dir: Path) -> dict[str, Any]:
        programs = []
        for tx in workload.transactions:
            argv = tx.command if isinstance(tx.command, list) else shlex.split(tx.command)
            programs.append(argv[0])
        facts: dict[str, Any] = {"sut_version": "commands: " + ", ".join(sorted(set(programs)))}
        target = workload.target
        if isinstance(target, CommandTarget) and target.isolation is not None:
            facts["isolation"] = layer.describe(target.isolation)
        return facts

    def __init__(self, ctx: WorkerContext):
        target = ctx.workload.target
        assert isinstance(target, CommandTarget)
        self.cwd = str((ctx.workload_dir / target.cwd).resolve()) if target.cwd else str(ctx.workload_dir.resolve())
        self.env = {**os.environ, **target.env}
        self.templates = []
        for tx, deadline in zip(ctx.workload.transactions, deadlines_of(ctx.workload)):
            argv = tx.command if isinstance(tx.command, list) else shlex.split(tx.command)
            self.templates.append((argv, deadline))
        self.running: int | None = None  # the process group of the command running now
        self.stderr = tempfile.TemporaryFile()
        self.last_rusage: tuple[float, float] | None = None
        self.valgrind = target.valgrind
        # behind an isolation layer (gVisor's `runsc do`): every command starts a sandbox of its own
        self.layer = layer.prefix(target.isolation)
        self.last_instructions = float("nan")
        self.count_sink: Callable[[list[Path]], None] | None = None
        if self.valgrind:
            self.cg_dir = tempfile.mkdtemp(prefix="perflab-cg-")
            self.cg_prefix = cachegrind_prefix(f"{self.cg_dir}/cg.%p.out")

    def count_functions(self, sink: Callable[[list[Path]], None]) -> None:
        """Count each command under callgrind rather than cachegrind and hand its processes'
        files to `sink` before they are removed: the counted pass's per-function tables
        (drive/pathlength/worker.py). The total is read as before, from their `summary:` lines."""
        self.cg_prefix = callgrind_whole_prefix(f"{self.cg_dir}/cg.%p.out")
        self.count_sink = sink

    def execute(self, tx_index: int, params: dict[str, Any] | None) -> float | None:
        template, deadline = self.templates[tx_index]
        argv = [a.format(**params) for a in template] if params else list(template)
        if self.valgrind:
            argv = self.cg_prefix + argv
        argv = self.layer + argv
        self.stderr.seek(0)
        self.stderr.truncate()
        # A session (so a process group) of its own: at its deadline the command is killed with
        # every process it started (os.killpg), and nothing of it outlives the run.
        proc = subprocess.Popen(argv, cwd=self.cwd, env=self.env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=self.stderr, close_fds=True,
                                start_new_session=True)
        self.running = proc.pid
        expired = threading.Event()
        timer = threading.Timer(deadline, _expire, (proc.pid, expired))
        timer.daemon = True
        timer.start()
        try:
            # wait4 instead of Popen.wait: it returns the child's resource usage as well.
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)  # tell Popen the child is reaped
        self.last_rusage = (usage.ru_utime, usage.ru_stime)
        if self.valgrind:
            self.last_instructions = self._collect_instructions()
        if expired.is_set() and proc.returncode == -signal.SIGKILL:
            _kill_group(proc.pid)  # what the command started and left in its group
            self.running = None
            raise DeadlineExceeded(f"{deadline_text(deadline)}: the command's process group was killed")
        self.running = None
        if proc.returncode != 0:
            self.stderr.seek(0)
            tail = self.stderr.read()[-300:].decode(errors="replace").strip().splitlines()
            detail = f": {tail[-1]}" if tail else ""
            if proc.returncode < 0:
                raise CommandFailed(f"killed by signal {-proc.returncode}{detail}")
            raise CommandFailed(f"exit status {proc.returncode}{detail}")
        return None

    def _collect_instructions(self) -> float:
        """Sum the `summary:` (Ir) lines of every process the command ran, then clear them."""
        total = 0
        paths = [Path(p) for p in glob.glob(os.path.join(self.cg_dir, "cg.*.out"))]
        if self.count_sink is not None:
            self.count_sink(paths)
        for path in paths:
            total += cachegrind_total(path) or 0
            os.unlink(path)
        return float(total) if total else float("nan")

    def take_instructions(self) -> float:
        value, self.last_instructions = self.last_instructions, float("nan")
        return value

    def take_cpu(self) -> tuple[float, float] | None:
        usage, self.last_rusage = self.last_rusage, None
        return usage

    def close(self) -> None:
        self.stderr.close()
        if self.valgrind:
            import shutil

            shutil.rmtree(self.cg_dir, ignore_errors=True)


    def abort(self) -> None:
        """Kill the command running now with its process group (the worker is being stopped)."""
        if self.running is not None:
            _kill_group(self.running)


def _expire(pid: int, expired: threading.Event) -> None:
    expired.set()
    _kill_group(pid)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass

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
"""

from __future__ import annotations

import glob
import os
import shlex
import signal
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

from perflab.drive.adapters.base import SutAdapter, WorkerContext
from perflab.workload.model import CommandTarget, Workload


class CommandFailed(Exception):
    pass


class CommandAdapter(SutAdapter):
    @classmethod
    def prepare(cls, workload: Workload, workload_dir: Path, run_dir: Path) -> dict[str, Any]:
        programs = []
        for tx in workload.transactions:
            argv = tx.command if isinstance(tx.command, list) else shlex.split(tx.command)
            programs.append(argv[0])
        return {"sut_version": "commands: " + ", ".join(sorted(set(programs)))}

    def __init__(self, ctx: WorkerContext):
        target = ctx.workload.target
        assert isinstance(target, CommandTarget)
        self.cwd = str((ctx.workload_dir / target.cwd).resolve()) if target.cwd else str(ctx.workload_dir.resolve())
        self.env = {**os.environ, **target.env}
        self.templates = []
        for tx in ctx.workload.transactions:
            argv = tx.command if isinstance(tx.command, list) else shlex.split(tx.command)
            self.templates.append((argv, tx.timeout))
        self.stderr = tempfile.TemporaryFile()
        self.last_rusage: tuple[float, float] | None = None
        self.valgrind = target.valgrind
        self.last_instructions = float("nan")
        if self.valgrind:
            self.cg_dir = tempfile.mkdtemp(prefix="perflab-cg-")
            self.cg_prefix = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--trace-children=yes",
                              f"--cachegrind-out-file={self.cg_dir}/cg.%p.out"]

    def execute(self, tx_index: int, params: dict[str, Any] | None) -> float | None:
        template, timeout = self.templates[tx_index]
        argv = [a.format(**params) for a in template] if params else list(template)
        if self.valgrind:
            argv = self.cg_prefix + argv
        self.stderr.seek(0)
        self.stderr.truncate()
        proc = subprocess.Popen(argv, cwd=self.cwd, env=self.env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=self.stderr, close_fds=True)
        timer = None
        if timeout:
            timer = threading.Timer(timeout, _kill, (proc.pid,))
            timer.start()
        # wait4 instead of Popen.wait: it returns the child's resource usage as well.
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)  # tell Popen the child is reaped
        if timer is not None:
            timer.cancel()
        self.last_rusage = (usage.ru_utime, usage.ru_stime)
        if self.valgrind:
            self.last_instructions = self._collect_instructions()
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
        for path in glob.glob(os.path.join(self.cg_dir, "cg.*.out")):
            with open(path) as handle:
                for line in handle:
                    if line.startswith("summary:"):
                        total += int(line.split()[1])
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


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass

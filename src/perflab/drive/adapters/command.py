"""A program as the system under test: one process per transaction (the batch-job case).

The exit status decides ok/error. The child's own CPU time comes from wait4(2), the kernel's
exact accounting of the reaped process, so each job's user and system CPU is recorded with
the transaction.
"""

from __future__ import annotations

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

    def execute(self, tx_index: int, params: dict[str, Any] | None) -> float | None:
        template, timeout = self.templates[tx_index]
        argv = [a.format(**params) for a in template] if params else list(template)
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
        if proc.returncode != 0:
            self.stderr.seek(0)
            tail = self.stderr.read()[-300:].decode(errors="replace").strip().splitlines()
            detail = f": {tail[-1]}" if tail else ""
            if proc.returncode < 0:
                raise CommandFailed(f"killed by signal {-proc.returncode}{detail}")
            raise CommandFailed(f"exit status {proc.returncode}{detail}")
        return None

    def take_cpu(self) -> tuple[float, float] | None:
        usage, self.last_rusage = self.last_rusage, None
        return usage

    def close(self) -> None:
        self.stderr.close()


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass

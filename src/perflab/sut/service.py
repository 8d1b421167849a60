"""Servers as the system under test: started fresh for each run, watched, stopped after.

`ServiceProcess` runs any server from a command (the workload's `service` block): in the SUT's
cgroup, on the SUT's CPUs, as an unprivileged user when perflab is root (and, with `network`,
in a network namespace of its own reached over a veth pair: netns.py), in a session of its
own (a Ctrl-C in the terminal reaches the driver, which then stops the server cleanly rather
than the server dying under load). It is ready when its probe says so (a TCP port accepts, a
URL answers, a command succeeds) and is stopped with its stop signal, then SIGKILL after a
timeout. Its process tree is the SUT the (S) and (V) monitors measure. `Service` is the
generic case built on it; postgres_server.py is PostgreSQL's.

A server that exits during the run is a SUT failure: `failure()` says why, with the last
lines of its log, and the run is marked failed with that reason.
"""

from __future__ import annotations

import os
import pwd
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perflab.errors import SutFailure
from perflab.sut import isolation
from perflab.workload.model import ReadyProbe
from perflab.workload.model import Service as ServiceSpec

LOG_TAIL_LINES = 5


@dataclass
class Account:
    """Who the server runs as. None fields: perflab's own user (not root)."""

    name: str | None
    uid: int | None = None
    gid: int | None = None

    @classmethod
    def resolve(cls, name: str | None) -> Account:
        if os.geteuid() != 0 or name is None:
            return cls(None)
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            raise SutFailure(f"OS user {name!r} does not exist (create it, e.g. `useradd --system {name}`)") from None
        return cls(name, entry.pw_uid, entry.pw_gid)

    @property
    def _user(self) -> tuple[str, int, int] | None:
        """(name, uid, gid) of the user to run as; None: perflab's own (`resolve` sets all three or none)."""
        if self.name is None or self.uid is None or self.gid is None:
            return None
        return self.name, self.uid, self.gid

    def chown(self, path: Path) -> None:
        if (user := self._user) is not None:
            os.chown(path, user[1], user[2])

    def chown_tree(self, path: Path) -> None:
        """The directory and everything in it (a copied data directory)."""
        if (user := self._user) is None:
            return
        _, uid, gid = user
        for root, _dirs, files in os.walk(path):
            os.chown(root, uid, gid)
            for name in files:
                os.chown(os.path.join(root, name), uid, gid, follow_symlinks=False)

    def demote(self) -> None:
        """In the child, last: drop root (PostgreSQL refuses to run as root)."""
        if (user := self._user) is not None:
            name, uid, gid = user
            os.setgid(gid)
            os.initgroups(name, gid)
            os.setuid(uid)

    def can_reach(self, path: Path) -> bool:
        """Whether this user can enter `path` (every parent directory must let it through)."""
        if self.uid is None:
            return True
        return subprocess.run(["test", "-x", str(path)], preexec_fn=self.demote).returncode == 0


def describe_exit(code: int | None) -> str:
    if code is None:
        return "still running"
    return f"killed by signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"


class ServiceProcess:
    """One server process (and its children): start, wait until ready, watch, stop."""

    def __init__(self, name: str, argv: list[str], log_path: Path, *, cwd: Path | None = None,
                 env: dict[str, str] | None = None, account: Account | None = None, cpus: list[int] | None = None,
                 cgroup: Any = None, netns: Any = None):
        self.name, self.argv, self.log_path = name, argv, log_path
        self.cwd, self.env, self.account = cwd, env, account or Account(None)
        self.cpus, self.cgroup, self.netns = cpus, cgroup, netns
        self.proc: subprocess.Popen | None = None
        self.stopping = False

    def start(self) -> None:
        cgroup, cpus, account, netns = self.cgroup, self.cpus, self.account, self.netns

        def child() -> None:  # runs in the child between fork and exec, as root
            if cgroup is not None:
                cgroup.add_self()  # first: every process it starts is born inside
            if cpus:
                os.sched_setaffinity(0, cpus)
            if netns is not None:
                netns.enter()  # while still root: joining a namespace needs CAP_SYS_ADMIN
            account.demote()

        with open(self.log_path, "ab") as log:
            account.chown(self.log_path)
            try:
                self.proc = subprocess.Popen(self.argv, cwd=self.cwd, env=self.env, stdin=subprocess.DEVNULL,
                                             stdout=log, stderr=subprocess.STDOUT, preexec_fn=child,
                                             start_new_session=True)
            except OSError as exc:
                raise SutFailure(f"{self.name} could not start ({self.argv[0]}): {exc.strerror or exc}") from None

    @property
    def pid(self) -> int:
        return self.proc.pid if self.proc is not None else -1

    def exited(self) -> bool:
        """Whether the process was started and has exited since."""
        return self.proc is not None and self.proc.poll() is not None

    def failure(self) -> str | None:
        """Why the server is gone, or None while it runs (or while perflab itself stops it)."""
        if self.proc is None or self.stopping or self.proc.poll() is None:
            return None
        return f"{self.name} (pid {self.proc.pid}) exited during the run ({describe_exit(self.proc.returncode)})" \
               + self.log_tail()

    def log_tail(self) -> str:
        try:
            lines = [ln for ln in self.log_path.read_text(errors="replace").splitlines() if ln.strip()]
        except OSError:
            return ""
        return ("; log: " + " | ".join(lines[-LOG_TAIL_LINES:])) if lines else ""

    def wait_ready(self, probe: Callable[[], bool], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if self.proc is not None and self.proc.poll() is not None:
                raise SutFailure(f"{self.name} exited while starting ({describe_exit(self.proc.returncode)})"
                                 + self.log_tail())
            if probe():
                return
            if time.monotonic() > deadline:
                raise SutFailure(f"{self.name} was not ready within {timeout:g} s" + self.log_tail())
            time.sleep(0.05)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> str | None:
        """Ask it to stop; SIGKILL its whole session after `timeout`. Returns a note if it had to."""
        self.stopping = True
        proc = self.proc
        if proc is None or proc.poll() is not None:
            self._kill_leftovers()
            return None
        try:
            proc.send_signal(sig)
            proc.wait(timeout=timeout)
            note = None
        except subprocess.TimeoutExpired:
            note = f"{self.name} did not stop within {timeout:g} s of {signal.Signals(sig).name}: killed"
            self._kill_leftovers()
            proc.wait()
        self._kill_leftovers()
        return note

    def _kill_leftovers(self) -> None:
        # Children left behind in its session (a worker that outlived its master).
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


# --- readiness probes --------------------------------------------------------------------------


def tcp_probe(host: str, port: int) -> Callable[[], bool]:
    def probe() -> bool:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return True
        except OSError:
            return False
    return probe


def unix_probe(path: str) -> Callable[[], bool]:
    address = "\0" + path[1:] if path.startswith("@") else path  # @name: the abstract namespace

    def probe() -> bool:
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(0.5)
                s.connect(address)
                return True
        except OSError:
            return False
    return probe


def http_probe(url: str) -> Callable[[], bool]:
    # Readiness only: an https server with a certificate made for the run (self-signed) is ready
    # when it answers; the driver's own TLS settings decide what is verified during the run.
    context = None
    if url.startswith("https://"):
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE

    def probe() -> bool:
        try:
            with urllib.request.urlopen(url, timeout=1.0, context=context) as response:
                return response.status < 500
        except urllib.error.HTTPError as exc:
            return exc.code < 500
        except (OSError, ValueError):
            return False
    return probe


def command_probe(argv: list[str], cwd: Path | None) -> Callable[[], bool]:
    def probe() -> bool:
        try:
            return subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  timeout=5).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            return False
    return probe


def make_probe(ready: ReadyProbe, cwd: Path | None, tokens: dict[str, str] | None = None) -> Callable[[], bool]:
    tokens = tokens or {}
    if ready.tcp is not None:
        host, _, port = substitute(str(ready.tcp), tokens).rpartition(":")
        return tcp_probe(host or "127.0.0.1", int(port))
    if ready.http is not None:
        return http_probe(substitute(ready.http, tokens))
    if ready.unix is not None:
        return unix_probe(substitute(ready.unix, tokens))
    return command_probe([substitute(a, tokens) for a in ready.command or []], cwd)


# --- the generic service -----------------------------------------------------------------------


def substitute(text: str, values: dict[str, str]) -> str:
    """`{run_dir}` and friends: plain token replacement (server configs are full of braces)."""
    for key, value in values.items():
        text = text.replace("{" + key + "}", value)
    return text


class Service:
    """A workload's `service` block, started for one run."""

    def __init__(self, spec: ServiceSpec, workload_dir: Path, run_dir: Path, cpus: list[int] | None, cgroup: Any,
                 port: int | None = None):
        self.spec = spec
        # absolute: the server runs in its own directory (nginx resolves a relative path from its
        # prefix), and the default store, ./perflab-runs, is relative
        run_dir, workload_dir = Path(run_dir).resolve(), Path(workload_dir).resolve()
        self.tokens = {"run_dir": str(run_dir), "workload_dir": str(workload_dir), "python": sys.executable,
                       "service_address": spec.address, "run_id": run_dir.name}
        if port is not None:  # the workload's own text has it already (drive/plan.py); its files get it here
            self.tokens["service_port"] = str(port)
        self.cwd = (workload_dir / substitute(spec.cwd, self.tokens)) if spec.cwd else run_dir
        self.workload_dir, self.run_dir = workload_dir, run_dir
        account = Account.resolve(spec.user)
        env = {**os.environ, **{k: substitute(v, self.tokens) for k, v in spec.env.items()}}
        argv = isolation.wrap([substitute(a, self.tokens) for a in spec.command], spec.isolation)
        self.netns = None
        if spec.network is not None:
            from perflab.sut.netns import NetworkNamespace

            self.netns = NetworkNamespace(spec.network, run_dir.name)
        self.process = ServiceProcess(f"service {Path(argv[0]).name}", argv, run_dir / "service.log", cwd=self.cwd,
                                      env=env, account=account, cpus=cpus, cgroup=cgroup, netns=self.netns)
        self.components = isolation.components(spec.isolation, spec.components)
        self.counters = None
        self.version: str | None = None

    def start(self) -> dict[str, Any]:
        for dest, template in self.spec.files.items():
            text = (self.workload_dir / template).read_text()
            target = self.run_dir / dest
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(substitute(text, self.tokens))
        for argv in self.spec.setup:
            self._setup([substitute(a, self.tokens) for a in argv])
        self.version = self._version()
        facts: dict[str, Any] = {}
        if self.spec.isolation is not None:
            facts["isolation"] = isolation.describe(self.spec.isolation)
        if self.netns is not None:
            self.netns.create()  # before the server: it is born inside (removed in stop)
            facts["service_network"] = self.netns.describe()
        self.process.start()
        self.process.wait_ready(make_probe(self.spec.ready, self.cwd, self.tokens), self.spec.ready.timeout)
        return {"sut_version": self.version, "service": self.process.argv, **facts}

    def _setup(self, argv: list[str]) -> None:
        """One setup command, before the server starts (not in its cgroup: not the SUT's work)."""
        try:
            done = subprocess.run(argv, cwd=self.cwd, env=self.process.env, capture_output=True, text=True,
                                  timeout=600, preexec_fn=self.process.account.demote)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SutFailure(f"service setup {Path(argv[0]).name} could not run: {exc}") from None
        if done.returncode != 0:
            raise SutFailure(f"service setup {' '.join(argv)[:200]} failed ({describe_exit(done.returncode)}): "
                             f"{(done.stderr or done.stdout).strip()[-500:]}")

    def _version(self) -> str:
        argv = self.spec.version_command
        if not argv:
            return Path(self.process.argv[0]).name
        try:
            done = subprocess.run([substitute(a, self.tokens) for a in argv], capture_output=True, text=True,
                                  timeout=30, cwd=self.cwd)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"unknown ({exc})"
        return (done.stdout.strip() or done.stderr.strip()).splitlines()[0] if (done.stdout or done.stderr) else "unknown"

    @property
    def pid(self) -> int:
        return self.process.pid

    def failure(self) -> str | None:
        return self.process.failure()

    def stop(self) -> str | None:
        try:
            return self.process.stop(getattr(signal, self.spec.stop_signal), self.spec.stop_timeout)
        finally:
            if self.netns is not None:
                self.netns.remove()  # after the server: nothing is left in the namespace


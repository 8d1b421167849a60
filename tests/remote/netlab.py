"""Hosts for the remote tests: network namespaces on one bridge, made and removed by the tests.

    with NetLab() as lab:                     # a bridge in the root namespace, 10.200.N.1/24
        sut = lab.host("sut")                 # a namespace with eth0 = 10.200.N.2/24
        proc = sut.start(["nginx", ...])      # `ip netns exec`, in a process group of its own
        sut.address                           # "10.200.N.2", reachable from the root namespace

Only addresses on this machine are used: a /24 of 10.200.0.0/16 that no interface here has yet,
on a bridge that connects nothing but these namespaces (no route leaves it, nothing is
forwarded). Everything is removed on exit, even after a failure: the processes started (by
their process group), the namespaces (which removes their veth ends) and the bridge.

`NetLab.available()` says why not when the sandbox refuses namespaces; the tests skip with it.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import programs

IP = programs.path("ip")
NSENTER = programs.location("nsenter")


def _ip(*args: str, ns: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    argv = [IP] + (["netns", "exec", ns, IP] if ns else []) + list(args)
    return subprocess.run(argv, capture_output=True, text=True, check=check, timeout=30)


@dataclass
class Host:
    """One namespace on the lab's bridge."""

    lab: "NetLab"
    name: str
    ns: str
    address: str
    processes: list[subprocess.Popen] = field(default_factory=list)

    def argv(self, argv: list[str]) -> list[str]:
        # nsenter enters the network namespace only: `ip netns exec` also gives the process a
        # mount namespace with /sys remounted for that network namespace, which hides
        # /sys/fs/cgroup -- where a real host's agent finds its SUT's cgroup.
        if NSENTER:
            return [NSENTER, f"--net=/run/netns/{self.ns}", *argv]
        return [IP, "netns", "exec", self.ns, *argv]

    def start(self, argv: list[str], log: Path | None = None, env: dict | None = None, **popen) -> subprocess.Popen:
        """Start a process in this host; stopped by the lab at the end (its whole process group)."""
        out = open(log, "ab") if log is not None else subprocess.DEVNULL
        proc = subprocess.Popen(self.argv(argv), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, env=env, **popen)
        if log is not None:
            out.close()
        self.processes.append(proc)
        return proc

    def run(self, argv: list[str], timeout: float = 60, env: dict | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(self.argv(argv), capture_output=True, text=True, timeout=timeout, env=env)

    def stop(self, proc: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 10.0) -> None:
        """Stop one process group started here (by its id), SIGKILL after `timeout`."""
        for s in (sig, signal.SIGKILL):
            try:
                os.killpg(proc.pid, s)
            except ProcessLookupError:
                break
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                continue
            # the leader is gone; members of its group may linger a moment
            deadline = time.monotonic() + timeout
            while _group_alive(proc.pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            if not _group_alive(proc.pid):
                break


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # zombies of the group count as gone: nobody here will reap a daemon's children
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rfind(")") + 2:].split()
            if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
                return True
    return False


class NetLab:
    """A bridge and namespaces on it; a context manager that removes everything it made."""

    def __init__(self) -> None:
        self.tag = f"plx{os.getpid() % 10000}"
        self.bridge = f"{self.tag}br"
        self.subnet: int | None = None
        self.hosts: list[Host] = []

    @staticmethod
    def available() -> str | None:
        """None when namespaces and veth pairs can be made here, else why not."""
        if os.geteuid() != 0:
            return "network namespaces need root"
        probe = f"plxprobe{os.getpid() % 100000}"
        made = _ip("netns", "add", probe, check=False)
        if made.returncode != 0:
            return f"the sandbox refuses network namespaces: {made.stderr.strip()}"
        try:
            link = _ip("link", "add", f"{probe[:10]}a", "type", "veth", "peer", "name", f"{probe[:10]}b",
                       check=False)
            if link.returncode != 0:
                return f"the sandbox refuses veth pairs: {link.stderr.strip()}"
            _ip("link", "del", f"{probe[:10]}a", check=False)
        finally:
            _ip("netns", "del", probe, check=False)
        return None

    def __enter__(self) -> "NetLab":
        used = set(re.findall(r"inet 10\.200\.(\d+)\.", _ip("-4", "addr").stdout))
        start = 10 + os.getpid() % 200
        self.subnet = next(n for n in [*range(start, 250), *range(10, start)] if str(n) not in used)
        try:
            _ip("link", "add", self.bridge, "type", "bridge")
            _ip("addr", "add", f"10.200.{self.subnet}.1/24", "dev", self.bridge)
            _ip("link", "set", self.bridge, "up")
        except Exception:
            self.close()
            raise
        return self

    @property
    def gateway(self) -> str:
        """The root namespace's address on the bridge: where the driver (perflab) is."""
        return f"10.200.{self.subnet}.1"

    def host(self, name: str) -> Host:
        index = len(self.hosts) + 2
        ns = f"{self.tag}-{name}"
        outer = f"{self.tag}v{index}"
        host = Host(self, name, ns, f"10.200.{self.subnet}.{index}")
        self.hosts.append(host)
        _ip("netns", "add", ns)
        _ip("link", "add", outer, "type", "veth", "peer", "name", "eth0", "netns", ns)
        _ip("link", "set", outer, "master", self.bridge)
        _ip("link", "set", outer, "up")
        _ip("addr", "add", f"{host.address}/24", "dev", "eth0", ns=ns)
        _ip("link", "set", "eth0", "up", ns=ns)
        _ip("link", "set", "lo", "up", ns=ns)
        return host

    def close(self) -> None:
        for host in reversed(self.hosts):
            for proc in reversed(host.processes):
                host.stop(proc, timeout=5)
            _ip("netns", "del", host.ns, check=False)
        self.hosts.clear()
        _ip("link", "del", self.bridge, check=False)

    def __exit__(self, *exc) -> None:
        self.close()


def wait_for(probe, timeout: float = 30.0, what: str = "the service") -> None:
    """Poll `probe()` until true (readiness, not a timing assertion)."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            if probe():
                return
        except Exception as exc:  # not up yet
            last = exc
        time.sleep(0.1)
    raise TimeoutError(f"{what} not ready after {timeout:g} s" + (f": {last}" if last else ""))

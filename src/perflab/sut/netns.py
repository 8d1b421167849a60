"""A network namespace for a service, reached over a veth pair: a second network path to the
same server (the seeds' HiperSockets vs OSA-Express echo study, 004_123ec862020336cf.txt).

The loopback path never leaves one namespace's `lo`; a veth pair between two namespaces is a
real (virtual) link: two interfaces, a route, neighbour resolution, the packet crossing from one
network stack to another. perflab creates the namespace and the pair before the server starts,
puts the server in the namespace, and removes both after the server stops:

    ns = NetworkNamespace(spec, run_id)   # spec: the service's `network` block
    ns.create()                           # SutFailure when this machine does not permit it
    ServiceProcess(..., netns=ns)         # the child joins the namespace before exec
    ...
    ns.remove()

The defaults are link-local addresses (169.254.0.0/16): the kernel never routes them beyond the
link, so the traffic cannot leave the veth pair. Needs root (CAP_SYS_ADMIN for the namespace,
CAP_NET_ADMIN for the link); where that is refused, the run fails saying so.
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import ipaddress
import os
import shutil
import subprocess
import time
from collections.abc import Callable

from perflab.errors import SutFailure
from perflab.workload.model import ServiceNetwork

CLONE_NEWNET = 0x40000000
NETNS_DIR = "/run/netns"  # where `ip netns add` mounts named namespaces
# A namespace of perflab's younger than this may be a run still setting up (created, its
# server not yet started in it), so it is never taken for a killed run's leftover.
STALE_AFTER_S = 60.0


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    program = shutil.which("ip")
    if program is None:
        raise SutFailure("service.network needs the `ip` command (apt-get install iproute2)")
    done = subprocess.run([program, *args], capture_output=True, text=True, timeout=30)
    if check and done.returncode != 0:
        raise SutFailure(f"ip {' '.join(args)} failed: {(done.stderr or done.stdout).strip()}")
    return done


class NetworkNamespace:
    """One run's namespace and veth pair (names derived from the run id: unique, at most 15
    characters as the kernel's interface names must be)."""

    def __init__(self, spec: ServiceNetwork, run_id: str):
        self.spec = spec
        tag = hashlib.sha1(run_id.encode()).hexdigest()[:8]
        self.name = f"perflab-{tag}"
        self.host_if, self.ns_if = f"plh{tag}", f"pln{tag}"
        self.created = False
        self.reclaimed: str | None = None  # a killed run's leftover that create() removed, described
        self._setns: Callable[[int, int], int] | None = None  # libc's, resolved by create()

    @property
    def address(self) -> str:
        """The server's address (inside the namespace), without the prefix length."""
        return str(ipaddress.ip_interface(self.spec.address).ip)

    def describe(self) -> str:
        return (f"netns {self.name}: veth {self.host_if} {self.spec.peer_address} <-> {self.ns_if} "
                f"{self.spec.address}" + (f", mtu {self.spec.mtu}" if self.spec.mtu else "")
                + (f"; {self.reclaimed}" if self.reclaimed else ""))

    def create(self) -> None:
        peer = str(ipaddress.ip_interface(self.spec.peer_address).ip)
        holder = _interface_holding(peer)
        if holder is not None and (leftover := _stale_leftover(holder)) is not None:
            _ip("link", "del", holder, check=False)
            _ip("netns", "del", leftover, check=False)
            self.reclaimed = f"removed {leftover} ({holder} {peer}), left by a run that was killed"
            holder = _interface_holding(peer)
        if holder is not None:
            raise SutFailure(f"service.network: {peer} is already an address of this machine (another run's "
                             f"veth?): give the service other addresses")
        done = _ip("netns", "add", self.name, check=False)
        if done.returncode != 0:
            raise SutFailure(f"network namespaces are not permitted here (ip netns add: "
                             f"{(done.stderr or done.stdout).strip()}): service.network needs root with "
                             f"CAP_SYS_ADMIN and CAP_NET_ADMIN (a container: --cap-add SYS_ADMIN,NET_ADMIN)")
        self.created = True
        try:
            mtu = ["mtu", str(self.spec.mtu)] if self.spec.mtu else []
            _ip("link", "add", self.host_if, *mtu, "type", "veth", "peer", "name", self.ns_if, *mtu,
                "netns", self.name)
            _ip("addr", "add", self.spec.peer_address, "dev", self.host_if)
            _ip("link", "set", self.host_if, "up")
            _ip("-n", self.name, "addr", "add", self.spec.address, "dev", self.ns_if)
            _ip("-n", self.name, "link", "set", self.ns_if, "up")
            _ip("-n", self.name, "link", "set", "lo", "up")
        except SutFailure:
            self.remove()
            raise
        # Resolved now, in the parent: the child calls it between fork and exec, where loading
        # a library is best avoided.
        self._setns = ctypes.CDLL(None, use_errno=True).setns

    def enter(self) -> None:
        """In the server's child process, before exec (and before dropping root): join it."""
        fd = os.open(os.path.join(NETNS_DIR, self.name), os.O_RDONLY | os.O_CLOEXEC)
        try:
            if self._setns is None:
                raise OSError(errno.EINVAL, "setns: the namespace was not created")
            if self._setns(fd, CLONE_NEWNET) != 0:
                code = ctypes.get_errno()
                raise OSError(code, f"setns: {os.strerror(code)}")
        finally:
            os.close(fd)

    def remove(self) -> None:
        """Delete the pair and the namespace (idempotent; whatever is left is reported by `ip`)."""
        if not self.created:
            return
        _ip("link", "del", self.host_if, check=False)  # deleting one end deletes the other
        _ip("netns", "del", self.name, check=False)
        self.created = False


def _interface_holding(address: str) -> str | None:
    """The name of this namespace's interface that has `address`, or None."""
    for line in _ip("-o", "addr", "show", "to", address, check=False).stdout.splitlines():
        fields = line.split()
        if len(fields) > 1:
            return fields[1].split("@")[0]
    return None


def _stale_leftover(interface: str) -> str | None:
    """The namespace of a killed run whose host end is `interface`, or None when the interface
    is not perflab's or its run may be alive. A run killed with SIGKILL (or a session ended under
    it) cannot remove its pair; the kernel keeps the pair as long as the named namespace exists,
    and its address would refuse every later run. A leftover is perflab's naming (plh<tag>, netns
    perflab-<tag>), has no process in the namespace (the server died with the run) and is older
    than STALE_AFTER_S (a live run between creating it and starting its server has none either)."""
    if not interface.startswith("plh"):
        return None
    name = f"perflab-{interface[3:]}"
    path = os.path.join(NETNS_DIR, name)
    try:
        age = time.time() - os.stat(path).st_mtime
    except OSError:
        return None
    if age < STALE_AFTER_S:
        return None
    pids = _ip("netns", "pids", name, check=False)
    if pids.returncode != 0 or pids.stdout.strip():
        return None
    return name


def namespaces_permitted() -> tuple[bool, str]:
    """(True, "") when this process may create a network namespace, else (False, why)."""
    if shutil.which("ip") is None:
        return False, "the ip command is not installed (iproute2)"
    name = f"perflab-probe-{os.getpid()}"
    done = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        return False, f"ip netns add: {(done.stderr or done.stdout).strip() or f'exit code {done.returncode}'}"
    subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=30)
    return True, ""

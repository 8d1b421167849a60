"""A network namespace of the process's own, with its own loopback: for a duet of a service that
listens on a fixed port.

A duet runs a block's two configurations at once (study/duet.py); two servers of one workload
cannot both listen on 127.0.0.1:18080 in one network namespace. Each run of the pair is its own
process, so each can leave the machine's namespace for a new one before it starts anything:
its server, its driver (and an external one: wrk, k6), its monitor all inherit it, and each
finds its server at the same fixed address on a loopback nobody else uses. The path is the same
kernel loopback as outside. What it cannot reach is anything beyond the machine's loopback: the
runs it is used for start their server themselves (a `service` block).

Needs root (CAP_SYS_ADMIN); where unshare is refused, the run fails saying so.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import socket
import struct

from perflab.errors import SutFailure
from perflab.sut.netns import CLONE_NEWNET

SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
_IFREQ = struct.Struct("16sH14s")  # struct ifreq: the name, then ifr_flags (the rest unused here)


def enter_private_loopback() -> None:
    """Move this process into a new network namespace and bring its loopback up."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNET) != 0:
        errno = ctypes.get_errno()
        raise SutFailure(f"a network namespace of the run's own is not permitted here ({os.strerror(errno)}): "
                         f"a duet of a service on a fixed port needs root; or make the service listen on "
                         f"{{service_port}}")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        name = b"lo"
        flags = _IFREQ.unpack(fcntl.ioctl(s, SIOCGIFFLAGS, _IFREQ.pack(name, 0, b"")))[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, _IFREQ.pack(name, flags | IFF_UP, b""))

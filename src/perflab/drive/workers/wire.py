"""The wire between the driver and a SUT worker process, and the values that cross it.

Each request or reply is a 4-byte big-endian length and a `marshal` payload (fast for the plain
tuples exchanged; both ends run the same interpreter). Both ends read the pipe in bulk and split
it into messages themselves (FrameReader): multiprocessing's `recv_bytes` spends two read system
calls on every message, and under load several messages wait per wake-up. The driver also writes
the requests one loop iteration sends to a worker in one system call (`write_all`).
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from typing import Any

READ_CHUNK = 65536  # bytes per read: many replies at once, and a large message in few reads

# The length before every message: multiprocessing.Connection's own header for messages under
# 2 GiB, so the start-up handshake (Connection.send_bytes) and later messages share one format.
_HEADER = struct.Struct("!I")


def frame(message: bytes) -> bytes:
    """One message on the pipe: its length, then the message."""
    return _HEADER.pack(len(message)) + message


class FrameReader:
    """Splits what is read from a pipe into the messages `frame` made.

    A read returns whatever has arrived: several messages, or a message cut anywhere (even
    inside its length); the incomplete end is kept for the next read.
    """

    __slots__ = ("_rest",)

    def __init__(self) -> None:
        self._rest = bytearray()

    def feed(self, data: bytes | bytearray) -> list[bytes | bytearray]:
        if self._rest:
            self._rest += data
            data = self._rest
        messages: list[bytes | bytearray] = []
        start, size = 0, len(data)
        unpack = _HEADER.unpack_from
        while size - start >= 4:
            (length,) = unpack(data, start)
            end = start + 4 + length
            if end > size:
                break
            messages.append(data[start + 4:end])
            start = end
        if start == size:
            self._rest = bytearray()
        elif data is self._rest:
            del self._rest[:start]  # in place: a long message arriving in many reads is not re-copied each time
        else:
            self._rest = bytearray(data[start:])
        return messages


def write_all(fd: int, data: bytes) -> None:
    """Write all of `data` to a blocking pipe (a stream socket may take part of it)."""
    written = os.write(fd, data)
    if written < len(data):
        view = memoryview(data)
        while written < len(data):
            written += os.write(fd, view[written:])


@dataclass
class WorkerSpec:
    workload: dict  # Workload.model_dump(by_alias=True)
    workload_dir: str
    run_dir: str
    index: int
    cpus: list[int] | None = None
    counters: Any = None  # SharedCounters (pickles as its handle), or None
    paths: list[str] | None = None  # releases under test, first on the import path (perflab.sut.releases)
    parent: int | None = None  # the driver's pid (the worker exits if it is gone)


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
    harness_cpu: float = float("nan")  # the worker's own CPU for it, outside the SUT's call
    hung: bool = False  # past its deadline: what ran it was killed (perflab.drive.load.deadline)

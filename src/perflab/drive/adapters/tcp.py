"""Request/response over a raw TCP socket: the seeds' VSE HiperSockets echo and VM/ESA
INSTVER message-size studies.

Each simulated user keeps one connection. A transaction sends `messages` messages of
`message_size` bytes and reads `response_size` bytes back for each (default: the same size,
an echo). A `message` is a request's own text instead (Redis's inline "PING\r\n"), and a
`reply` the answer it must get ("+PONG\r\n"): a line-protocol service driven as its own
benchmark drives it. `round_trip` waits for each reply before sending the next message; `stream` sends
them all, then reads all the replies. first_response is when the first reply byte arrived.

`target.unix` takes a Unix-domain socket instead of TCP (`@name`: Linux's abstract namespace):
the same exchange without the TCP/IP stack (the seeds compared two paths to one server: HiperSockets and OSA-Express). Every
connection opened is counted (driver.connects).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from perflab.drive.adapters.context import NetworkContext
from perflab.drive.adapters.counts import NO_COUNTS
from perflab.drive.adapters.postgres import raise_if_down
from perflab.drive.load.deadline import deadline_text, deadlines_of
from perflab.drive.workers import Reply
from perflab.workload.model import TcpExchange, TcpTarget, Workload

#: One transaction's exchange: the message, how many, the bytes read back for each, and what
#: they must be (None: not checked).
TcpPlan = tuple[bytes, int, int, bytes | None]


def tcp_plan(target: TcpTarget, exchange: TcpExchange) -> TcpPlan:
    """What a transaction sends and expects back. A `message` is sent as given; without one,
    message_size bytes of printable filler, recognisable so that a wrong echo is not mistaken for
    a right one. A `reply` is read and checked; without one, response_size bytes are read (the
    message's size by default), and when that is the message's size it is taken for an echo and
    must equal the message."""
    text = exchange.message if exchange.message is not None else target.message
    if text is not None:
        payload = text.encode()
    else:
        size = exchange.message_size or target.message_size
        payload = (bytes(range(33, 127)) * (size // 94 + 1))[:size]
    count = exchange.messages or target.messages
    reply_text = exchange.reply if exchange.reply is not None else target.reply
    if reply_text is not None:
        expected = reply_text.encode()
        return payload, count, len(expected), expected
    reply = target.response_size if target.response_size is not None else len(payload)
    return payload, count, reply, (payload if reply == len(payload) else None)


#: A reply cut short by the server's close, worded the same on both of the driver's paths.
CLOSED_EARLY = "IncompleteReadError: the server closed the connection before the whole reply"


def mismatch_text(expected: bytes, payload: bytes) -> str:
    """A reply that is not the expected one, worded the same on both of the driver's paths (the
    compiled loop keeps no copy of what came back, so neither says it)."""
    if expected == payload:
        return "the echo differs from the message sent"
    return f"the reply is not the expected {expected[:60]!r}"


def executor(context: NetworkContext) -> TcpExecutor:
    """The tcp kind's executor (workload/kinds.py names this factory)."""
    return TcpExecutor(context.workload, context.failure, context.pool_size, context.tokens,
                       context.counts or NO_COUNTS)


class TcpExecutor:
    def __init__(self, workload: Workload, failure: Callable[[], str | None] | None = None,
                 pool_size: int | None = None, tokens: dict[str, str] | None = None, counts: Any = NO_COUNTS):
        target = workload.target
        assert isinstance(target, TcpTarget)
        self.target = target
        self.failure = failure
        self.counts = counts
        self.unix, self.host = target.unix, target.host
        for key, value in (tokens or {}).items():
            if self.unix is not None:
                self.unix = self.unix.replace("{" + key + "}", value)
            self.host = self.host.replace("{" + key + "}", value)
        self.plans = []
        for tx in workload.transactions:
            exchange = tx.tcp_body()
            self.plans.append(tcp_plan(target, exchange))
        self.connections: dict[int, tuple[asyncio.StreamReader, asyncio.StreamWriter]] = {}
        self.deadlines = deadlines_of(workload)

    async def open(self, users: int | None) -> None:
        for user in range(users or 0):
            self.connections[user] = await self._connect()

    async def _connect(self):
        if self.unix is not None and self.unix.startswith("@"):
            # Linux's abstract namespace (no file): uvloop cannot connect to one by name, so
            # the socket is connected here and handed over.
            import socket

            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.setblocking(False)
            try:
                await asyncio.get_running_loop().sock_connect(sock, "\0" + self.unix[1:])
            except OSError:
                sock.close()
                raise
            reader, writer = await asyncio.open_unix_connection(sock=sock)
        elif self.unix is not None:
            reader, writer = await asyncio.open_unix_connection(self.unix)
        else:
            reader, writer = await asyncio.open_connection(self.host, self.target.port)
            sock = writer.get_extra_info("socket")
            if sock is not None:
                import socket

                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # a message is sent when written
        self.counts.connected()
        return reader, writer

    async def execute(self, tx_index: int, params: dict | None, user: int = -1) -> Reply:
        # asyncio.timeout cancels this task at the deadline (one timer, no task of its own per
        # transaction); a server that never answers is a hung transaction, its connection dropped.
        deadline = self.deadlines[tx_index]
        try:
            async with asyncio.timeout(deadline):
                return await self._exchange(tx_index, user)
        except TimeoutError:
            conn = self.connections.pop(user, None)
            if conn is not None:
                conn[1].transport.abort()
            return Reply(False, deadline_text(deadline), None, hung=True)

    async def _exchange(self, tx_index: int, user: int) -> Reply:
        payload, count, reply_size, expected = self.plans[tx_index]
        first = None
        try:
            conn = self.connections.get(user)
            if conn is None:
                conn = self.connections[user] = await self._connect()
            reader, writer = conn
            if self.target.mode == "stream":
                writer.write(payload * count)
                await writer.drain()
                if reply_size:
                    await reader.readexactly(1)
                    first = time.monotonic()
                    await reader.readexactly(reply_size * count - 1)
            else:
                for _ in range(count):
                    writer.write(payload)
                    if reply_size:
                        data = await reader.readexactly(reply_size)
                        if first is None:
                            first = time.monotonic()
                        if expected is not None and data != expected:
                            return Reply(False, mismatch_text(expected, payload), first)
            return Reply(True, None, first)
        except (OSError, asyncio.IncompleteReadError, ConnectionError) as exc:
            self.connections.pop(user, None)
            await raise_if_down(self.failure)
            text = CLOSED_EARLY if isinstance(exc, asyncio.IncompleteReadError) else f"{type(exc).__name__}: {exc}"
            return Reply(False, text[:500], first)

    async def close(self) -> None:
        for _, writer in self.connections.values():
            writer.close()
        self.connections.clear()

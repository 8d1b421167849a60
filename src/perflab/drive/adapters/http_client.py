"""The HTTP clients the executor (http.py) sends through: aiohttp's, and a lean HTTP/1.1 client.

`client: httptools` is the lean one: one asyncio protocol per keep-alive connection,
httptools' parser, for when the driver's CPU per request matters more than aiohttp's
generality (redirects and cookies are not supported there). It speaks TLS through a memory
BIO of its own (`TlsLayer`), which can resume sessions; aiohttp's TLS cannot. Its cost per
request is the point of it, so it avoids per-request work that does not depend on the request:

- a request with no `{placeholder}` arrives as bytes encoded once, when the workload was
  loaded (http_request.py);
- on the fast path a connection resolves its future to the transaction's Reply itself
  (checks included): see `LeanConnection` and `HttpExecutor.execute`;
- timeouts are one periodic sweep over the open connections, not a timer (and
  `asyncio.wait_for`'s extra future and callback) armed and cancelled per request; a request
  notes the sweep's count when it is sent, not even a clock reading;
- the parser calls back into Python twice per response (on_body, on_message_complete): the
  time the response began to arrive is taken in data_received, keep-alive is read when the
  message is complete (see `LeanConnection`).

Both clients answer a request with (status, headers, body, headers_at): headers_at is when
the response headers arrived (the transaction's first response).
"""

from __future__ import annotations

import asyncio
import functools
import math
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

from perflab.drive.adapters.counts import NO_COUNTS
from perflab.drive.adapters.http_request import IDEMPOTENT, PreparedRequest, encode_request
from perflab.drive.workers import Reply
from perflab.errors import SutFailure
from perflab.extras import require
from perflab.workload.model import TlsOptions

# The 'net' extra's packages, imported by the client that uses them: httptools by the first
# LeanClient (`client: httptools`), aiohttp by each AiohttpClient.
httptools: Any = None


class KeepAliveClosed(ConnectionResetError):
    """The server closed a kept-alive connection while a request on it had no answer yet --
    usually a server that ends keep-alive connections after N requests or when idle, closing
    one the client was about to reuse. Idempotent requests are sent again once (as browsers do)."""


def ca_file_of(options: TlsOptions, tokens: dict[str, str] | None = None) -> str | None:
    """The CA file's path, {run_dir} and {workload_dir} replaced (None: the system's CAs)."""
    ca_file = options.ca_file
    if ca_file is not None:
        for key, value in (tokens or {}).items():
            ca_file = ca_file.replace("{" + key + "}", value)
    return ca_file


def tls_context(options: TlsOptions, tokens: dict[str, str] | None = None) -> ssl.SSLContext:
    """The client's TLS context, made once per run: verification, version, cipher list."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if options.verify:
        ca_file = ca_file_of(options, tokens)
        if ca_file is not None:
            if not Path(ca_file).is_file():
                raise SutFailure(f"target.tls.ca_file {ca_file} does not exist (did the service make it?)")
            try:
                context.load_verify_locations(ca_file)
            except ssl.SSLError as exc:
                raise SutFailure(f"target.tls.ca_file {ca_file} is not a PEM certificate: {exc}") from None
        else:
            context.load_default_certs()
    else:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if options.version is not None:
        version = ssl.TLSVersion.TLSv1_2 if options.version == "1.2" else ssl.TLSVersion.TLSv1_3
        context.minimum_version = context.maximum_version = version
    if options.ciphers is not None:
        context.set_ciphers(options.ciphers)
    return context


@dataclass
class TlsSetup:
    """What a client needs to open TLS connections: the context, the name to verify, and where a
    user's last session is kept (shared by the clients of one user, so a new client -- one per
    transaction -- can resume the previous one's session)."""

    context: ssl.SSLContext
    server_hostname: str | None
    resume: bool = False
    sessions: dict[int, Any] = field(default_factory=dict)


class AiohttpClient:
    def __init__(self, base: str, limit: int, timeout: float, tls: TlsSetup | None = None, counts: Any = NO_COUNTS):
        aiohttp = require("aiohttp", extra="net", feature="an http target")

        # aiohttp connects inside the connector: its trace hooks are where a new connection shows.
        trace = aiohttp.TraceConfig()
        https = base.startswith("https://")

        async def connected(session, context, params) -> None:
            counts.connected()
            if https:  # every new aiohttp connection is a full handshake: it never offers a session
                counts.handshake(False)

        trace.on_connection_create_end.append(connected)
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=limit, ttl_dns_cache=None,
                                           ssl=tls.context if tls is not None else True),
            timeout=aiohttp.ClientTimeout(total=timeout), auto_decompress=True, trace_configs=[trace])

    async def request(self, method: str, url: str, headers: dict, body: bytes | None):
        async with self.session.request(method, url, headers=headers, data=body, allow_redirects=False) as response:
            headers_at = time.monotonic()
            content = await response.read()
            return response.status, response.headers, content, headers_at

    async def close(self) -> None:
        await self.session.close()


class Deadlines:
    """Times out the lean connections' requests: one timer for all open connections, firing
    every tick (a tenth of the timeout, at most 1 s), that aborts each connection whose request
    is past its deadline. A timer per request would cost a libuv timer started and stopped per
    request (and `asyncio.wait_for` a second future and a callback); a request instead times out
    between `timeout` and `timeout + tick` after it was sent.

    The sweeps are counted (`ticks`) and a request notes the count when it is sent (an attribute
    read, where a deadline would take a clock reading per request): it is past its deadline once
    `limit` whole ticks (ceil(timeout / tick)) have passed after the one it was sent in, i.e. at
    the sweep `limit + 1` counts later -- at least `timeout` after it was sent (a late timer only
    makes that later) and less than two ticks more (one when the timeout is a whole number of
    ticks, as it is unless the tick is clamped to 10 ms or 1 s). Sweeps stop while no connection is open, when no
    request can be out."""

    def __init__(self, timeout: float, loop: asyncio.AbstractEventLoop):
        self.timeout = timeout
        self.tick = min(1.0, max(0.01, timeout / 10))
        self.limit = math.ceil(timeout / self.tick - 1e-9)  # whole ticks in a timeout
        self.ticks = 0  # sweeps so far
        self.loop = loop
        self.conns: set[LeanConnection] = set()
        self.timer: asyncio.TimerHandle | None = None

    def add(self, conn: LeanConnection) -> None:
        self.conns.add(conn)
        if self.timer is None:
            self.timer = self.loop.call_later(self.tick, self._sweep)

    def discard(self, conn: LeanConnection) -> None:
        self.conns.discard(conn)

    def _sweep(self) -> None:
        self.ticks += 1
        sent_by = self.ticks - self.limit - 1  # sent in that tick or before: past its deadline
        for conn in [c for c in self.conns if c.waiter is not None and c.sent_tick <= sent_by]:
            conn.break_off(TimeoutError(f"no response within {self.timeout:g} s"))
        self.timer = self.loop.call_later(self.tick, self._sweep) if self.conns else None

    def close(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        for conn in list(self.conns):
            conn.close()


class _Transport(Protocol):
    """What a LeanConnection writes to: the socket's transport, or a TlsLayer over it."""

    def write(self, data: bytes) -> None: ...

    def abort(self) -> None: ...

    def close(self) -> None: ...

    def is_closing(self) -> bool: ...


class _NotConnected:
    """A LeanConnection's transport until connection_made: closed, and nothing to close."""

    def write(self, data: bytes) -> None:
        raise ConnectionError("not connected")

    def abort(self) -> None:
        pass

    def close(self) -> None:
        pass

    def is_closing(self) -> bool:
        return True


_NOT_CONNECTED = _NotConnected()


class LeanConnection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection: one request at a time, parsed by httptools.

    A request's future resolves to (status, headers, body, headers_at), or -- on the fast path,
    where `request` is set -- to the transaction's Reply. When a response completes, the
    connection puts itself back among its client's idle ones before waking the user, so the
    user's next request finds it there.

    headers_at, the transaction's first response, is when the response began to arrive: the
    clock is read in data_received when the first bytes of the response come in (they hold its
    status line and, but for a server that sends its headers in pieces, all of them), so the
    parser has no on_headers_complete to call back per response."""

    __slots__ = ("client", "parser", "loop", "deadlines", "transport", "waiter", "request", "sent_tick",
                 "chunks", "raw_headers", "headers_at", "served", "received", "lost")

    def __init__(self, client: LeanClient):
        self.client = client
        self.parser = httptools.HttpResponseParser(self)
        self.loop = client.loop
        self.deadlines = client.deadlines
        self.transport: _Transport = _NOT_CONNECTED  # connection_made sets the real one
        self.waiter: asyncio.Future | None = None
        self.request: PreparedRequest | None = None
        self.sent_tick = 0  # Deadlines.ticks when the current request was sent
        # reused from response to response: fewer allocations per request
        self.chunks: list[bytes] = []
        self.raw_headers: list[tuple[bytes, bytes]] = []
        self.headers_at = 0.0
        self.served = 0  # responses completed: a reused connection may meet KeepAliveClosed
        self.received = False  # any byte of the current response yet
        self.lost: Exception | None = None

    def exchange(self, wire: bytes, request: PreparedRequest | None = None) -> asyncio.Future:
        """Send one request; the future of its response (of its Reply when `request` is given)."""
        self.waiter = waiter = self.loop.create_future()
        self.request = request
        self.received = False
        self.sent_tick = self.deadlines.ticks
        self.transport.write(wire)
        return waiter

    def break_off(self, exc: Exception) -> None:
        """Fail the current request and drop the connection (a half-read response cannot be
        resumed): timeouts and malformed responses."""
        self.lost = exc
        self.transport.abort()
        self._fail(exc)

    def close(self) -> None:
        self.transport.close()

    # asyncio.Protocol
    def connection_made(self, transport) -> None:
        self.transport = transport
        self.client.deadlines.add(self)

    def data_received(self, data: bytes) -> None:
        if not self.received:  # the response's first bytes: its headers arrive (see the class)
            self.received = True
            self.headers_at = time.monotonic()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserCallbackError:
            raise  # a bug in the callbacks below, not the server's
        except httptools.HttpParserError as exc:
            self.break_off(ConnectionError(f"malformed HTTP response: {exc}"))

    def connection_lost(self, exc) -> None:
        self.client.deadlines.discard(self)
        if self.lost is None:
            if self.waiter is not None and self.served and not self.received:
                self.lost = KeepAliveClosed("the server closed the kept-alive connection before answering")
            else:
                self.lost = exc or ConnectionResetError("connection closed by the server")
        self._fail(self.lost)

    # httptools callbacks (on_header: see HeaderReadingConnection)
    def on_body(self, body: bytes) -> None:
        self.chunks.append(body)

    def on_message_complete(self) -> None:
        waiter, request = self.waiter, self.request
        self.waiter = self.request = None
        self.served += 1
        chunks = self.chunks
        body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        chunks.clear()
        parser = self.parser
        if waiter is None:  # an answer to no request (a 408 on an idle connection, say): do not reuse
            self.lost = ConnectionResetError("the server sent a response to no request")
            self.transport.close()
        elif parser.should_keep_alive():  # llhttp answers it in on_message_complete as in on_headers_complete
            self.client.idle.append(self)  # LeanClient.release
        else:
            self.transport.close()
        if waiter is None or waiter.done():  # nobody waits (a cancelled user): the connection is free again
            self.raw_headers.clear()
            return
        status = parser.get_status_code()
        if request is not None:
            self.raw_headers.clear()
            if request.plain and 200 <= status < 400:  # PreparedRequest.reply's checks, passed
                waiter.set_result(Reply(True, None, self.headers_at))
            else:
                waiter.set_result(request.reply(status, body, self.headers_at))
        else:
            headers = _Headers((k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in self.raw_headers)
            self.raw_headers.clear()
            waiter.set_result((status, headers, body, self.headers_at))

    def _fail(self, exc: Exception) -> None:
        waiter, request = self.waiter, self.request
        self.waiter = self.request = None
        self.chunks.clear()
        self.raw_headers.clear()
        if waiter is None or waiter.done():
            return
        if request is None:
            waiter.set_exception(exc)
        else:  # the engine awaits the future itself: it must get a Reply (or SutFailure)
            self.client.recover(waiter, request, exc)


class HeaderReadingConnection(LeanConnection):
    """A connection that keeps the response headers, for workloads that extract one."""

    __slots__ = ()

    def on_header(self, name: bytes, value: bytes) -> None:
        self.raw_headers.append((name, value))  # decoded only for a general-path request


class _Headers(dict):
    def get(self, key, default=None):  # case-insensitive like aiohttp's
        return super().get(key.lower(), default)


def _settle(waiter: asyncio.Future, task: asyncio.Task) -> None:
    """Hand a task's outcome to a future someone else is awaiting."""
    if task.cancelled():
        waiter.cancel()
        return
    exc = task.exception()  # retrieved either way: no "exception was never retrieved"
    if waiter.done():
        return
    if exc is not None:
        waiter.set_exception(exc)
    else:
        waiter.set_result(task.result())


class TlsLayer(asyncio.Protocol):
    """TLS under one lean connection: ciphertext from the socket in, plaintext to the
    LeanConnection out, through an SSLObject over memory BIOs.

    Why not asyncio's own TLS (create_connection(ssl=...)): it cannot be handed a saved session,
    and resuming sessions is half of what a TLS study measures. The layer also tells the counts
    of each handshake and whether it resumed. To the LeanConnection it is the transport (write,
    close, abort, is_closing); the connection is made -- and `ready` resolves -- once the
    handshake is complete, so a request is timed from the connect through the handshake.
    """

    def __init__(self, app: LeanConnection, tls: TlsSetup, user: int, counts: Any):
        self.app, self.tls, self.user, self.counts = app, tls, user, counts
        self.incoming, self.outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        session = tls.sessions.get(user) if tls.resume else None
        self.sslobj = tls.context.wrap_bio(self.incoming, self.outgoing, server_hostname=tls.server_hostname,
                                           session=session)
        self.ready: asyncio.Future = app.loop.create_future()
        self.raw: asyncio.Transport | None = None
        self.handshaken = False

    # the socket's side
    def connection_made(self, raw) -> None:
        self.raw = raw
        self._handshake()

    def data_received(self, data: bytes) -> None:
        self.incoming.write(data)
        if self.handshaken:
            self._read()
        else:
            self._handshake()

    def eof_received(self) -> bool:
        self.incoming.write_eof()
        return False  # close the socket

    def connection_lost(self, exc) -> None:
        if not self.ready.done():
            self.ready.set_exception(exc or ConnectionResetError("the server closed the connection during the TLS "
                                                                 "handshake"))
        if self.handshaken:
            self._keep_session()
            self.app.connection_lost(exc)

    def _handshake(self) -> None:
        try:
            self.sslobj.do_handshake()
        except ssl.SSLWantReadError:
            self._flush()
            return
        except (ssl.SSLError, ssl.CertificateError) as exc:  # a refused certificate, no common cipher
            self._flush()
            if not self.ready.done():
                self.ready.set_exception(ConnectionError(f"TLS handshake failed: {exc}"))
            self.abort()
            return
        self._flush()
        self.handshaken = True
        self.counts.handshake(bool(self.sslobj.session_reused))
        self.app.connection_made(self)
        if not self.ready.done():
            self.ready.set_result(self.app)
        self._read()  # application data that came with the server's last flight

    def _read(self) -> None:
        while True:
            try:
                chunk = self.sslobj.read(65536)
            except ssl.SSLWantReadError:
                break
            except ssl.SSLZeroReturnError:  # the server's close_notify: the socket closes next
                break
            except ssl.SSLError as exc:
                self.app.break_off(ConnectionError(f"TLS error: {exc}"))
                return
            if not chunk:
                break
            self.app.data_received(chunk)
        self._flush()  # TLS 1.3 may have something to say back (a key update)

    def _flush(self) -> None:
        data = self.outgoing.read()
        if data and self.raw is not None and not self.raw.is_closing():
            self.raw.write(data)

    def _keep_session(self) -> None:
        # Taken at the end of the connection, not after the handshake: a TLS 1.3 server sends
        # its session tickets after the handshake, so only now is the session resumable.
        if self.tls.resume and self.handshaken:
            session = self.sslobj.session
            if session is not None:
                self.tls.sessions[self.user] = session

    # the LeanConnection's transport
    def write(self, data: bytes) -> None:
        self.sslobj.write(data)
        self._flush()

    def close(self) -> None:
        if self.raw is None or self.raw.is_closing():
            return
        self._keep_session()
        try:
            # close_notify: OpenSSL marks a session that ends without it as not resumable
            self.sslobj.unwrap()
        except ssl.SSLError:
            pass  # SSLWantReadError: the peer's close_notify is not awaited
        self._flush()
        self.raw.close()

    def abort(self) -> None:
        if self.raw is not None:
            self.raw.abort()

    def is_closing(self) -> bool:
        return self.raw is None or self.raw.is_closing()


class LeanClient:
    """Keep-alive connections to one http:// or https:// server, at most `limit` requests at a time."""

    def __init__(self, base: str, limit: int, timeout: float, deadlines: Deadlines,
                 recover: Callable[[LeanClient, PreparedRequest, Exception], Any],
                 connection_type: type[LeanConnection] = LeanConnection, tls: TlsSetup | None = None,
                 user: int = -1, counts: Any = NO_COUNTS):
        global httptools
        if httptools is None:
            httptools = require("httptools", extra="net", feature="the httptools client")
        self.host, self.port, self.host_header = self.address(base)
        self.tls, self.user, self.counts = tls, user, counts
        self.timeout = timeout
        self.deadlines = deadlines
        self.loop = deadlines.loop
        self._recover = recover
        self.connection_type = connection_type
        self.idle: list[LeanConnection] = []
        # A per-user client (limit 1) serves one simulated user, who never has two requests in
        # flight, so it needs no semaphore. (Were it called concurrently, each call would still
        # get a connection of its own; only the limit would not hold.)
        self.slots = asyncio.Semaphore(limit) if limit > 1 else None

    @staticmethod
    def address(base: str) -> tuple[str, int, str]:
        """(host, port, Host header) of the base URL."""
        parts = urlsplit(base)
        if parts.scheme not in ("http", "https"):
            raise ValueError("the httptools client speaks http and https only")
        if parts.hostname is None:  # http://:8080 passes the workload's pattern, and names no host
            raise ValueError(f"no host in the base URL {base!r}")
        return parts.hostname, parts.port or (443 if parts.scheme == "https" else 80), parts.netloc

    def _take(self) -> LeanConnection | None:
        idle = self.idle
        while idle:
            conn = idle.pop()
            if conn.lost is None and not conn.transport.is_closing():  # else the server closed it
                return conn
        return None

    def release(self, conn: LeanConnection) -> None:
        self.idle.append(conn)  # (inlined in LeanConnection.on_message_complete)

    def recover(self, waiter: asyncio.Future, request: PreparedRequest, exc: Exception) -> None:
        """A fast-path request failed: resolve its future with the executor's Reply for it."""
        task = self.loop.create_task(self._recover(self, request, exc))
        task.add_done_callback(functools.partial(_settle, waiter))

    async def request(self, method: str, url: str, headers: dict, body: bytes | None):
        return await self.send(encode_request(self.host_header, method, url, headers, body), method in IDEMPOTENT)

    async def send(self, wire: bytes, retry: bool):
        """(status, headers, body, headers_at) of one request given as bytes."""
        if self.slots is None:
            return await self._send(wire, retry)
        async with self.slots:
            return await self._send(wire, retry)

    async def _send(self, wire: bytes, retry: bool):
        conn = self._take()
        if conn is None:
            conn = await self._connect()
        while True:
            try:
                return await conn.exchange(wire)
            except KeepAliveClosed:  # only on a reused connection: a new one is tried at most once
                if not retry:
                    raise
            except BaseException:
                conn.close()  # cancelled mid-response: the connection cannot be reused
                raise
            conn = await self._connect()

    async def _connect(self) -> LeanConnection:
        if self.tls is not None:
            try:
                return await asyncio.wait_for(self._connect_tls(), self.timeout)
            except TimeoutError:
                raise TimeoutError(f"no TLS connection within {self.timeout:g} s") from None
        connecting = self.loop.create_connection(lambda: self.connection_type(self), self.host, self.port)
        try:
            _, conn = await asyncio.wait_for(connecting, self.timeout)
        except TimeoutError:
            raise TimeoutError(f"no connection within {self.timeout:g} s") from None
        self.counts.connected()
        return conn

    async def _connect_tls(self) -> LeanConnection:
        assert self.tls is not None  # _connect comes here only for https
        layer = TlsLayer(self.connection_type(self), self.tls, self.user, self.counts)
        try:
            await self.loop.create_connection(lambda: layer, self.host, self.port)
            self.counts.connected()
            return await layer.ready
        except asyncio.CancelledError:
            layer.abort()  # the timeout (or a cancelled user): no half-made connection left open
            raise

    async def close(self) -> None:
        for conn in self.idle:
            conn.close()
        self.idle.clear()

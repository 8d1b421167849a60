"""HTTP services, from the driver's event loop.

A transaction is a sequence of requests. Values extracted from a response (a JSON path, a
regex group, a header) become the simulated user's variables, and `{name}` in a later path,
header or body is replaced by them or by the transaction's parameters -- a login whose token
feeds the next request. Status and body checks decide ok or error.

Times: first_response is when the first request's response headers arrived (AVG FIRST (T));
end is when the last body was read (AVG LAST (T)).

Clients: aiohttp by default; `client: httptools` is a lean HTTP/1.1 client (one asyncio
protocol per keep-alive connection, httptools' parser) for when the driver's CPU per request
matters more than aiohttp's generality (redirects, cookies, TLS are not supported there).

The lean client's cost per request is the point of it, so it avoids per-request work that
does not depend on the request:

- a request with no `{placeholder}` is encoded to bytes once, when the workload is loaded;
- a transaction of one such request, without extraction, on a user's own connection, takes
  a fast path: `execute` writes the bytes and returns the connection's future, which the
  connection resolves to the Reply itself (checks included) -- no coroutine, no semaphore;
- timeouts are one periodic sweep over the open connections' deadlines, not a timer (and
  `asyncio.wait_for`'s extra future and callback) armed and cancelled per request.
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
import time
from dataclasses import dataclass
from typing import Any, Callable
from urllib.parse import urlsplit

from perflab.drive.adapters.postgres import raise_if_down
from perflab.drive.workers import Reply
from perflab.workload.model import Extract, HttpRequest, HttpTarget, Workload

try:
    import httptools
except ImportError:  # optional (perflab[net]); only `client: httptools` needs it
    httptools = None

_TOKEN = re.compile(r"\{(\w+)\}")
_JSON_STEP = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]|\['([^']*)'\]")
# RFC 9110 9.2.2: a client may send these again when a connection closes before the response.
_IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"})


class CheckFailed(Exception):
    pass


class KeepAliveClosed(ConnectionResetError):
    """The server closed a kept-alive connection while a request on it had no answer yet --
    usually a server that ends keep-alive connections after N requests or when idle, closing
    one the client was about to reuse. Idempotent requests are sent again once (as browsers do)."""


def fill(template: Any, values: dict[str, Any]) -> Any:
    """Replace {name} in strings (recursively in JSON bodies); unknown names stay as written."""
    if isinstance(template, str):
        whole = _TOKEN.fullmatch(template)
        if whole and whole.group(1) in values:
            return values[whole.group(1)]  # keep the value's JSON type
        return _TOKEN.sub(lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0), template)
    if isinstance(template, dict):
        return {k: fill(v, values) for k, v in template.items()}
    if isinstance(template, list):
        return [fill(v, values) for v in template]
    return template


def has_placeholder(template: Any) -> bool:
    """Whether `fill` could change the template (the same traversal: strings, dict values, lists)."""
    if isinstance(template, str):
        return _TOKEN.search(template) is not None
    if isinstance(template, dict):
        return any(has_placeholder(v) for v in template.values())
    if isinstance(template, list):
        return any(has_placeholder(v) for v in template)
    return False


def json_path(document: Any, path: str) -> Any:
    """$.a.b[0]['c d']: the dotted/indexed subset of JSONPath that extraction needs (one value,
    no wildcards or filters) -- a few lines, where a JSONPath library would bring a grammar."""
    node = document
    for match in _JSON_STEP.finditer(path[1:]):
        key, index, quoted = match.groups()
        try:
            node = node[int(index)] if index is not None else node[key if key is not None else quoted]
        except (KeyError, IndexError, TypeError):
            raise CheckFailed(f"{path}: nothing at {match.group(0)}") from None
    return node


def extract(rule: Extract, status: int, headers: Any, body: bytes) -> Any:
    if rule.header is not None:
        value = headers.get(rule.header)
        if value is None:
            raise CheckFailed(f"no {rule.header} header")
        return value
    text = body.decode("utf-8", "replace")
    if rule.regex is not None:
        match = re.search(rule.regex, text)
        if match is None:
            raise CheckFailed(f"regex {rule.regex!r} found nothing")
        return match.group(1) if match.groups() else match.group(0)
    try:
        document = json.loads(text)
    except ValueError:
        raise CheckFailed("response is not JSON") from None
    return json_path(document, rule.json_path)


def encode_request(host: str, method: str, url: str, headers: dict[str, str], body: bytes | None) -> bytes:
    """One HTTP/1.1 request as the lean client sends it (keep-alive is HTTP/1.1's default)."""
    parts = urlsplit(url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host}", *(f"{k}: {v}" for k, v in headers.items())]
    if body is not None:
        lines.append(f"Content-Length: {len(body)}")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return head + body if body else head


def error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:500]


@dataclass
class _Prepared:
    """One request of a transaction, with what can be worked out before the run."""

    method: str
    path: str
    headers: dict[str, str]
    json_body: Any
    body: str | None
    statuses: set[int] | None
    expect_body: str | None
    extract: dict[str, Extract]
    # (url, headers, body) when nothing in them is a {placeholder}: rendered once, here
    fixed: tuple[str, dict[str, str], bytes | None] | None = None
    # the lean client's bytes of `fixed`
    wire: bytes | None = None
    expected: bytes | None = None  # expect_body, encoded

    @classmethod
    def of(cls, request: HttpRequest, default_headers: dict[str, str], base: str) -> "_Prepared":
        statuses = request.expect_status
        if isinstance(statuses, int):
            statuses = [statuses]
        prepared = cls(request.method.upper(), request.path, {**default_headers, **request.headers},
                       request.json_body, request.body, set(statuses) if statuses else None, request.expect_body,
                       request.extract)
        parts = (prepared.path, prepared.headers, prepared.json_body, prepared.body)
        if not any(has_placeholder(part) for part in parts):
            prepared.fixed = prepared.render({}, base)
        if request.expect_body is not None:
            prepared.expected = request.expect_body.encode()
        return prepared

    @property
    def idempotent(self) -> bool:
        return self.method in _IDEMPOTENT

    def render(self, values: dict[str, Any], base: str) -> tuple[str, dict[str, str], bytes | None]:
        """(url, headers, body) with the values filled in."""
        path = str(fill(self.path, values))
        url = path if path.startswith(("http://", "https://")) else base + path
        headers = {k: str(fill(v, values)) for k, v in self.headers.items()}
        body = None
        if self.json_body is not None:
            body = json.dumps(fill(self.json_body, values)).encode()
            headers.setdefault("Content-Type", "application/json")
        elif self.body is not None:
            body = str(fill(self.body, values)).encode()
        return url, headers, body

    def problem(self, status: int, body: bytes) -> str | None:
        """Why the response fails the checks, or None."""
        if (status not in self.statuses) if self.statuses else not (200 <= status < 400):
            return f"HTTP {status} from {self.method} {self.path}"
        if self.expected is not None and self.expected not in body:
            return f"{self.method} {self.path}: body lacks {self.expect_body!r}"
        return None

    def check(self, status: int, body: bytes) -> None:
        problem = self.problem(status, body)
        if problem is not None:
            raise CheckFailed(problem)

    def reply(self, status: int, body: bytes, first: float) -> Reply:
        """The Reply of a one-request transaction without extraction (the lean fast path)."""
        problem = self.problem(status, body)
        return Reply(True, None, first) if problem is None else Reply(False, problem[:500], first)


class HttpExecutor:
    """execute(tx_index, params, user) -> an awaitable of the Reply."""

    def __init__(self, workload: Workload, failure: Callable[[], str | None] | None = None,
                 pool_size: int | None = None):
        target = workload.target
        assert isinstance(target, HttpTarget)
        self.target = target
        self.base = target.base_url
        self.failure = failure
        self.per_user = target.connections == "per_user"
        self.pool_size = target.pool_size or pool_size or 8
        self.lean = target.client == "httptools"
        self.plans = [[_Prepared.of(r, target.headers, self.base) for r in tx.http] for tx in workload.transactions]
        if self.lean:
            host = _LeanClient.address(self.base)[2]
            for request in (r for plan in self.plans for r in plan if r.fixed is not None):
                request.wire = encode_request(host, request.method, *request.fixed)
        # httptools makes two bytes objects and a call per response header when the parser's
        # callbacks include on_header: only for workloads that extract a header.
        self.connection_type = _LeanConnection
        if any(rule.header is not None for plan in self.plans for r in plan for rule in r.extract.values()):
            self.connection_type = _HeaderReadingConnection
        # Per transaction: its request when the fast path can serve it (see execute), else None.
        self.fast = [plan[0] if len(plan) == 1 and plan[0].wire is not None and not plan[0].extract else None
                     for plan in self.plans]
        self.variables: dict[int, dict[str, Any]] = {}
        self.clients: dict[int, Any] = {}
        self.shared: Any = None
        self.deadlines: _Deadlines | None = None

    async def open(self, users: int | None) -> None:
        if not (self.per_user and users):
            self.per_user = False
            self.shared = self._new_client(self.pool_size)

    def _new_client(self, limit: int):
        if not self.lean:
            return _AiohttpClient(self.base, limit, self.target.timeout)
        if self.deadlines is None:
            self.deadlines = _Deadlines(self.target.timeout, asyncio.get_running_loop())
        return _LeanClient(self.base, limit, self.target.timeout, self.deadlines, self._recover,
                           self.connection_type)

    def _client(self, user: int):
        if not self.per_user:
            return self.shared
        client = self.clients.get(user)
        if client is None:
            client = self.clients[user] = self._new_client(1)
        return client

    def execute(self, tx_index: int, params: dict | None, user: int = -1):
        """The fast path: a constant one-request transaction (params cannot change it), a user's
        own lean client and an idle connection -> write the pre-encoded bytes and hand the
        engine the connection's future, which resolves to the Reply. Anything else -> the
        general coroutine."""
        request = self.fast[tx_index]
        if request is not None and self.per_user:
            client = self.clients.get(user)
            conn = client.ready() if client is not None else None
            if conn is not None:
                return conn.exchange(request.wire, request)
        return self._execute(tx_index, params, user)

    async def _execute(self, tx_index: int, params: dict | None, user: int) -> Reply:
        values = self.variables.setdefault(user, {})
        if params:
            values = {**values, **params}
        client = self._client(user)
        first = None
        try:
            for request in self.plans[tx_index]:
                if request.wire is not None:
                    result = await client.send(request.wire, request.idempotent)
                else:
                    url, headers, body = request.fixed or request.render(values, self.base)
                    result = await client.request(request.method, url, headers, body)
                status, response_headers, content, headers_at = result
                if first is None:
                    first = headers_at
                request.check(status, content)
                if request.extract:
                    found = {name: extract(rule, status, response_headers, content)
                             for name, rule in request.extract.items()}
                    self.variables[user].update(found)
                    values.update(found)
            return Reply(True, None, first)
        except CheckFailed as exc:
            return Reply(False, str(exc)[:500], first)
        except (OSError, asyncio.TimeoutError, ConnectionError) as exc:
            return await self._error_reply(exc, first)
        except Exception as exc:  # aiohttp.ClientError and friends
            if type(exc).__module__.startswith("aiohttp"):
                return await self._error_reply(exc, first)
            raise

    async def _error_reply(self, exc: BaseException, first: float | None) -> Reply:
        await raise_if_down(self.failure)  # the server's exit fails the run instead
        return Reply(False, error_text(exc), first)

    async def _recover(self, client: "_LeanClient", request: _Prepared, exc: Exception) -> Reply:
        """A fast-path request failed on its connection: the Reply the general path would give,
        sending it again when the server had closed the kept-alive connection."""
        if isinstance(exc, KeepAliveClosed) and request.idempotent:
            try:
                status, _, content, headers_at = await client.send(request.wire, retry=True)
                return request.reply(status, content, headers_at)
            except (OSError, asyncio.TimeoutError, ConnectionError) as error:
                exc = error
        if not isinstance(exc, (OSError, asyncio.TimeoutError, ConnectionError)):
            raise exc  # not the network's doing (a bug): as on the general path, not an error row
        return await self._error_reply(exc, None)

    async def close(self) -> None:
        for client in [*self.clients.values(), *([self.shared] if self.shared else [])]:
            await client.close()
        if self.deadlines is not None:
            self.deadlines.close()  # and the connections still busy (a cancelled user's)


class _AiohttpClient:
    def __init__(self, base: str, limit: int, timeout: float):
        import aiohttp

        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=limit, ttl_dns_cache=None),
            timeout=aiohttp.ClientTimeout(total=timeout), auto_decompress=True)

    async def request(self, method: str, url: str, headers: dict, body: bytes | None):
        async with self.session.request(method, url, headers=headers, data=body, allow_redirects=False) as response:
            headers_at = time.monotonic()
            content = await response.read()
            return response.status, response.headers, content, headers_at

    async def close(self) -> None:
        await self.session.close()


class _Deadlines:
    """Times out the lean connections' requests: one timer for all open connections, firing
    every tick (a tenth of the timeout, at most 1 s), that aborts each connection whose request
    is past its deadline. A timer per request would cost a libuv timer started and stopped per
    request (and `asyncio.wait_for` a second future and a callback); a request instead times out
    between `timeout` and `timeout + tick` after it was sent."""

    def __init__(self, timeout: float, loop: asyncio.AbstractEventLoop):
        self.timeout = timeout
        self.tick = min(1.0, max(0.01, timeout / 10))
        self.loop = loop
        self.conns: set[_LeanConnection] = set()
        self.timer: asyncio.TimerHandle | None = None

    def add(self, conn: "_LeanConnection") -> None:
        self.conns.add(conn)
        if self.timer is None:
            self.timer = self.loop.call_later(self.tick, self._sweep)

    def discard(self, conn: "_LeanConnection") -> None:
        self.conns.discard(conn)

    def _sweep(self) -> None:
        now = time.monotonic()
        for conn in [c for c in self.conns if c.waiter is not None and c.deadline <= now]:
            conn.break_off(TimeoutError(f"no response within {self.timeout:g} s"))
        self.timer = self.loop.call_later(self.tick, self._sweep) if self.conns else None

    def close(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        for conn in list(self.conns):
            conn.close()


class _LeanConnection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection: one request at a time, parsed by httptools.

    A request's future resolves to (status, headers, body, headers_at), or -- on the fast path,
    where `request` is set -- to the transaction's Reply. When a response completes, the
    connection puts itself back among its client's idle ones before waking the user, so the
    user's next request finds it there."""

    __slots__ = ("client", "parser", "loop", "transport", "waiter", "request", "deadline", "chunks",
                 "raw_headers", "headers_at", "keep_alive", "served", "received", "lost")

    def __init__(self, client: "_LeanClient"):
        self.client = client
        self.parser = httptools.HttpResponseParser(self)
        self.loop = client.loop
        self.transport = None
        self.waiter: asyncio.Future | None = None
        self.request: _Prepared | None = None
        self.deadline = 0.0
        # reused from response to response: fewer allocations per request
        self.chunks: list[bytes] = []
        self.raw_headers: list[tuple[bytes, bytes]] = []
        self.headers_at = 0.0
        self.keep_alive = True
        self.served = 0  # responses completed: a reused connection may meet KeepAliveClosed
        self.received = False  # any byte of the current response yet
        self.lost: Exception | None = None

    def exchange(self, wire: bytes, request: _Prepared | None = None) -> asyncio.Future:
        """Send one request; the future of its response (of its Reply when `request` is given)."""
        self.waiter = waiter = self.loop.create_future()
        self.request = request
        self.received = False
        self.deadline = time.monotonic() + self.client.timeout
        self.transport.write(wire)
        return waiter

    def break_off(self, exc: Exception) -> None:
        """Fail the current request and drop the connection (a half-read response cannot be
        resumed): timeouts and malformed responses."""
        self.lost = exc
        self.transport.abort()
        self._fail(exc)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    # asyncio.Protocol
    def connection_made(self, transport) -> None:
        self.transport = transport
        self.client.deadlines.add(self)

    def data_received(self, data: bytes) -> None:
        self.received = True
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

    # httptools callbacks (on_header: see _HeaderReadingConnection)
    def on_headers_complete(self) -> None:
        self.headers_at = time.monotonic()
        self.keep_alive = self.parser.should_keep_alive()

    def on_body(self, body: bytes) -> None:
        self.chunks.append(body)

    def on_message_complete(self) -> None:
        waiter, request = self.waiter, self.request
        self.waiter = self.request = None
        self.served += 1
        body = b"".join(self.chunks)
        self.chunks.clear()
        if waiter is None:  # an answer to no request (a 408 on an idle connection, say): do not reuse
            self.lost = ConnectionResetError("the server sent a response to no request")
            self.transport.close()
        elif self.keep_alive:
            self.client.release(self)
        else:
            self.transport.close()
        if waiter is None or waiter.done():  # nobody waits (a cancelled user): the connection is free again
            self.raw_headers.clear()
            return
        status = self.parser.get_status_code()
        if request is not None:
            self.raw_headers.clear()
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


class _HeaderReadingConnection(_LeanConnection):
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


class _LeanClient:
    """Keep-alive connections to one http:// server, at most `limit` requests at a time."""

    def __init__(self, base: str, limit: int, timeout: float, deadlines: _Deadlines,
                 recover: Callable[["_LeanClient", _Prepared, Exception], Any],
                 connection_type: type[_LeanConnection] = _LeanConnection):
        if httptools is None:
            raise RuntimeError("client: httptools needs the httptools package (pip install 'perflab[net]')")
        self.host, self.port, self.host_header = self.address(base)
        self.timeout = timeout
        self.deadlines = deadlines
        self.loop = deadlines.loop
        self._recover = recover
        self.connection_type = connection_type
        self.idle: list[_LeanConnection] = []
        # A per-user client (limit 1) serves one simulated user, who never has two requests in
        # flight, so it needs no semaphore. (Were it called concurrently, each call would still
        # get a connection of its own; only the limit would not hold.)
        self.slots = asyncio.Semaphore(limit) if limit > 1 else None

    @staticmethod
    def address(base: str) -> tuple[str, int, str]:
        """(host, port, Host header) of the base URL."""
        parts = urlsplit(base)
        if parts.scheme != "http":
            raise ValueError("the httptools client speaks plain http only")
        return parts.hostname, parts.port or 80, parts.netloc

    def ready(self) -> _LeanConnection | None:
        """An idle open connection the fast path may take without waiting, if any (never from a
        pool: there the semaphore decides who goes first)."""
        return self._take() if self.slots is None else None

    def _take(self) -> _LeanConnection | None:
        idle = self.idle
        while idle:
            conn = idle.pop()
            if conn.lost is None and not conn.transport.is_closing():  # else the server closed it
                return conn
        return None

    def release(self, conn: _LeanConnection) -> None:
        self.idle.append(conn)

    def recover(self, waiter: asyncio.Future, request: _Prepared, exc: Exception) -> None:
        """A fast-path request failed: resolve its future with the executor's Reply for it."""
        task = self.loop.create_task(self._recover(self, request, exc))
        task.add_done_callback(functools.partial(_settle, waiter))

    async def request(self, method: str, url: str, headers: dict, body: bytes | None):
        return await self.send(encode_request(self.host_header, method, url, headers, body), method in _IDEMPOTENT)

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

    async def _connect(self) -> _LeanConnection:
        connecting = self.loop.create_connection(lambda: self.connection_type(self), self.host, self.port)
        try:
            _, conn = await asyncio.wait_for(connecting, self.timeout)
        except asyncio.TimeoutError:
            raise TimeoutError(f"no connection within {self.timeout:g} s") from None
        return conn

    async def close(self) -> None:
        for conn in self.idle:
            conn.close()
        self.idle.clear()

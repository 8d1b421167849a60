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
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from dataclasses import dataclass
from typing import Any, Callable
from urllib.parse import urlsplit

from perflab.drive.adapters.postgres import raise_if_down
from perflab.drive.workers import Reply
from perflab.workload.model import Extract, HttpRequest, HttpTarget, Workload

_TOKEN = re.compile(r"\{(\w+)\}")
_JSON_STEP = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]|\['([^']*)'\]")


class CheckFailed(Exception):
    pass


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


@dataclass
class _Prepared:
    method: str
    path: str
    headers: dict[str, str]
    json_body: Any
    body: str | None
    statuses: set[int] | None
    expect_body: str | None
    extract: dict[str, Extract]

    @classmethod
    def of(cls, request: HttpRequest, default_headers: dict[str, str]) -> "_Prepared":
        statuses = request.expect_status
        if isinstance(statuses, int):
            statuses = [statuses]
        return cls(request.method.upper(), request.path, {**default_headers, **request.headers}, request.json_body,
                   request.body, set(statuses) if statuses else None, request.expect_body, request.extract)

    def check(self, status: int, body: bytes) -> None:
        if (status not in self.statuses) if self.statuses else not (200 <= status < 400):
            raise CheckFailed(f"HTTP {status} from {self.method} {self.path}")
        if self.expect_body is not None and self.expect_body.encode() not in body:
            raise CheckFailed(f"{self.method} {self.path}: body lacks {self.expect_body!r}")


class HttpExecutor:
    """execute(tx_index, params, user) -> Reply."""

    def __init__(self, workload: Workload, failure: Callable[[], str | None] | None = None,
                 pool_size: int | None = None):
        target = workload.target
        assert isinstance(target, HttpTarget)
        self.target = target
        self.base = target.base_url
        self.failure = failure
        self.per_user = target.connections == "per_user"
        self.pool_size = target.pool_size or pool_size or 8
        self.plans = [[_Prepared.of(r, target.headers) for r in tx.http] for tx in workload.transactions]
        self.variables: dict[int, dict[str, Any]] = {}
        self.clients: dict[int, Any] = {}
        self.shared: Any = None
        self._factory = _AiohttpClient if target.client == "aiohttp" else _LeanClient

    async def open(self, users: int | None) -> None:
        if not (self.per_user and users):
            self.per_user = False
            self.shared = self._factory(self.base, self.pool_size, self.target.timeout)

    def _client(self, user: int):
        if not self.per_user:
            return self.shared
        client = self.clients.get(user)
        if client is None:
            client = self.clients[user] = self._factory(self.base, 1, self.target.timeout)
        return client

    async def execute(self, tx_index: int, params: dict | None, user: int = -1) -> Reply:
        values = self.variables.setdefault(user, {})
        if params:
            values = {**values, **params}
        client = self._client(user)
        first = None
        try:
            for request in self.plans[tx_index]:
                path = fill(request.path, values)
                url = path if path.startswith(("http://", "https://")) else self.base + path
                headers = {k: str(fill(v, values)) for k, v in request.headers.items()}
                body = None
                if request.json_body is not None:
                    body = json.dumps(fill(request.json_body, values)).encode()
                    headers.setdefault("Content-Type", "application/json")
                elif request.body is not None:
                    body = str(fill(request.body, values)).encode()
                status, response_headers, content, headers_at = await client.request(request.method, url, headers,
                                                                                       body)
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
            await raise_if_down(self.failure)
            return Reply(False, f"{type(exc).__name__}: {exc}"[:500], first)
        except Exception as exc:  # aiohttp.ClientError and friends
            if type(exc).__module__.startswith("aiohttp"):
                await raise_if_down(self.failure)
                return Reply(False, f"{type(exc).__name__}: {exc}"[:500], first)
            raise

    async def close(self) -> None:
        for client in [*self.clients.values(), *([self.shared] if self.shared else [])]:
            await client.close()


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


class _LeanConnection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection: one request at a time, parsed by httptools."""

    def __init__(self):
        import httptools

        self.parser = httptools.HttpResponseParser(self)
        self.transport = None
        self.waiter: asyncio.Future | None = None
        self.lost: Exception | None = None
        self._reset()

    def _reset(self) -> None:
        self.headers: dict[str, str] = {}
        self.chunks: list[bytes] = []
        self.headers_at = 0.0
        self.keep_alive = True

    # asyncio.Protocol
    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        import httptools

        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._finish(exc)

    def connection_lost(self, exc) -> None:
        self.lost = exc or ConnectionResetError("connection closed by the server")
        self._finish(self.lost)

    # httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        self.headers_at = time.monotonic()
        self.keep_alive = self.parser.should_keep_alive()

    def on_body(self, body: bytes) -> None:
        self.chunks.append(body)

    def on_message_complete(self) -> None:
        self._finish(None)

    def _finish(self, exc: Exception | None) -> None:
        waiter, self.waiter = self.waiter, None
        if waiter is None or waiter.done():
            return
        if exc is not None:
            waiter.set_exception(exc)
        else:
            waiter.set_result((self.parser.get_status_code(), _Headers(self.headers), b"".join(self.chunks),
                               self.headers_at))


class _Headers(dict):
    def get(self, key, default=None):  # case-insensitive like aiohttp's
        return super().get(key.lower(), default)


class _LeanClient:
    def __init__(self, base: str, limit: int, timeout: float):
        parts = urlsplit(base)
        if parts.scheme != "http":
            raise ValueError("the httptools client speaks plain http only")
        self.host, self.port = parts.hostname, parts.port or 80
        self.host_header = parts.netloc
        self.timeout = timeout
        self.idle: list[_LeanConnection] = []
        self.slots = asyncio.Semaphore(limit)

    async def request(self, method: str, url: str, headers: dict, body: bytes | None):
        parts = urlsplit(url)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        lines = [f"{method} {target} HTTP/1.1", f"Host: {self.host_header}"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        if body is not None:
            lines.append(f"Content-Length: {len(body)}")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        async with self.slots:
            conn = self.idle.pop() if self.idle else None
            if conn is None or conn.lost is not None:
                _, conn = await asyncio.get_running_loop().create_connection(_LeanConnection, self.host, self.port)
            conn._reset()
            conn.waiter = asyncio.get_running_loop().create_future()
            conn.transport.write(head + body if body else head)
            try:
                result = await asyncio.wait_for(conn.waiter, self.timeout)
            except BaseException:
                conn.transport.close()  # a half-read response: the connection cannot be reused
                raise
            if conn.keep_alive and conn.lost is None:
                self.idle.append(conn)
            else:
                conn.transport.close()
            return result

    async def close(self) -> None:
        for conn in self.idle:
            conn.transport.close()
        self.idle.clear()

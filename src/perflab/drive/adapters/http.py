"""HTTP services, from the driver's event loop: the executor.

A transaction is a sequence of requests (http_request.py: templating, extraction, checks).
Values extracted from a response become the simulated user's variables, and `{name}` in a
later path, header or body is replaced by them or by the transaction's parameters -- a login
whose token feeds the next request. Status and body checks decide ok or error.

Times: first_response is when the first request's response headers arrived (AVG FIRST (T));
end is when the last body was read (AVG LAST (T)).

Clients (http_client.py): aiohttp by default; `client: httptools` is a lean HTTP/1.1 client
for when the driver's CPU per request matters. Both speak TLS to an https:// base_url
(`target.tls`); only the lean one resumes sessions. `connections: per_transaction` gives every
transaction a new connection (a new client, closed when the transaction ends): what a study of
connection or TLS handshake cost needs. Connections and handshakes are counted (counts.py). With
it, a transaction of one request that has no `{placeholder}` and no extraction, on a user's own
connection, takes a fast path: `execute` writes the request's pre-encoded bytes and returns the connection's future, which the
connection resolves to the Reply itself (checks included) -- no coroutine, no semaphore.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from perflab.drive.adapters.context import NetworkContext
from perflab.drive.adapters.counts import NO_COUNTS
from perflab.drive.adapters.http_client import (
    AiohttpClient,
    Deadlines,
    HeaderReadingConnection,
    KeepAliveClosed,
    LeanClient,
    LeanConnection,
    TlsSetup,
    ca_file_of,
    tls_context,
)
from perflab.drive.adapters.http_request import CheckFailed, PreparedRequest, encode_request, extract
from perflab.drive.adapters.postgres import raise_if_down
from perflab.drive.workers import Reply
from perflab.workload.model import HttpTarget, TlsOptions, Workload


def executor(context: NetworkContext) -> HttpExecutor:
    """The http kind's executor (workload/kinds.py names this factory)."""
    return HttpExecutor(context.workload, context.failure, context.pool_size, context.tokens,
                        context.counts or NO_COUNTS)


def error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:500]


class HttpExecutor:
    """execute(tx_index, params, user) -> an awaitable of the Reply."""

    def __init__(self, workload: Workload, failure: Callable[[], str | None] | None = None,
                 pool_size: int | None = None, tokens: dict[str, str] | None = None, counts: Any = NO_COUNTS):
        target = workload.target
        assert isinstance(target, HttpTarget)
        self.target = target
        self.base = target.base_url.replace("{service_address}", (tokens or {}).get("service_address", "127.0.0.1"))
        self.failure = failure
        self.counts = counts
        self.per_user = target.connections == "per_user"
        self.per_transaction = target.connections == "per_transaction"
        self.tls: TlsSetup | None = None
        #: what the compiled loop needs to speak TLS as this client does (native_http.py)
        self.tls_options: TlsOptions | None = None
        self.ca_file: str | None = None
        if self.base.startswith("https://"):
            options = self.tls_options = target.tls or TlsOptions()
            self.tls = TlsSetup(tls_context(options, tokens), LeanClient.address(self.base)[0],
                                options.session_resumption)
            self.ca_file = ca_file_of(options, tokens)
        self.closed_loop = True  # sessions are kept per simulated user; open loop: one for all arrivals
        self.pool_size = target.pool_size or pool_size or 8
        self.lean = target.chosen_client() == "httptools"
        #: the Host header the lean client sends (and the compiled loop)
        self.host_header = LeanClient.address(self.base)[2]
        self.plans = [[PreparedRequest.of(r, target.headers, self.base) for r in tx.http_body()]
                      for tx in workload.transactions]
        if self.lean:
            host = self.host_header
            for plan in self.plans:
                for request in plan:
                    if request.fixed is not None:
                        request.wire = encode_request(host, request.method, *request.fixed)
        # httptools makes two bytes objects and a call per response header when the parser's
        # callbacks include on_header: only for workloads that extract a header.
        self.connection_type = LeanConnection
        if any(rule.header is not None for plan in self.plans for r in plan for rule in r.extract.values()):
            self.connection_type = HeaderReadingConnection
        # Per transaction: its request when the fast path can serve it (see execute), else None.
        self.fast = [plan[0] if len(plan) == 1 and plan[0].wire is not None and not plan[0].extract else None
                     for plan in self.plans]
        self.variables: dict[int, dict[str, Any]] = {}
        self.clients: dict[int, Any] = {}
        self.shared: Any = None
        self.deadlines: Deadlines | None = None

    async def open(self, users: int | None) -> None:
        self.closed_loop = bool(users)
        if self.per_transaction:
            return  # a client per transaction (_client)
        if not (self.per_user and users):
            self.per_user = False
            self.shared = self._new_client(self.pool_size)

    def _new_client(self, limit: int, user: int = -1):
        if not self.lean:
            return AiohttpClient(self.base, limit, self.target.timeout, self.tls, self.counts)
        if self.deadlines is None:
            self.deadlines = Deadlines(self.target.timeout, asyncio.get_running_loop())
        return LeanClient(self.base, limit, self.target.timeout, self.deadlines, self._recover,
                          self.connection_type, self.tls, user if self.closed_loop else -1, self.counts)

    def _client(self, user: int):
        if self.per_transaction:
            return self._new_client(1, user)
        if not self.per_user:
            return self.shared
        client = self.clients.get(user)
        if client is None:
            client = self.clients[user] = self._new_client(1, user)
        return client

    def execute(self, tx_index: int, params: dict | None, user: int = -1):
        """The fast path: a constant one-request transaction (params cannot change it), a user's
        own lean client and an idle connection -> write the pre-encoded bytes and hand the
        engine the connection's future, which resolves to the Reply. Anything else -> the
        general coroutine."""
        request = self.fast[tx_index]
        if request is not None and self.per_user:
            client = self.clients.get(user)
            # an idle connection of the user's own client (limit 1: no semaphore, so no waiting)
            if client is not None and client.idle:
                conn = client.idle.pop()
                if conn.lost is None and not conn.transport.is_closing():
                    return conn.exchange(request.wire, request)
                # else the server closed it: dropped, as _take drops it
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
        except (TimeoutError, OSError, ConnectionError) as exc:
            return await self._error_reply(exc, first)
        except Exception as exc:  # aiohttp.ClientError and friends
            if type(exc).__module__.startswith("aiohttp"):
                return await self._error_reply(exc, first)
            raise
        finally:
            if self.per_transaction:
                await client.close()  # the transaction's own connection ends with it

    async def _error_reply(self, exc: BaseException, first: float | None) -> Reply:
        await raise_if_down(self.failure)  # the server's exit fails the run instead
        return Reply(False, error_text(exc), first)

    async def _recover(self, client: LeanClient, request: PreparedRequest, exc: Exception) -> Reply:
        """A fast-path request failed on its connection: the Reply the general path would give,
        sending it again when the server had closed the kept-alive connection."""
        if isinstance(exc, KeepAliveClosed) and request.idempotent:
            assert request.wire is not None  # a fast-path request is sent pre-encoded (self.fast)
            try:
                status, _, content, headers_at = await client.send(request.wire, retry=True)
                return request.reply(status, content, headers_at)
            except (TimeoutError, OSError, ConnectionError) as error:
                exc = error
        if not isinstance(exc, (OSError, asyncio.TimeoutError, ConnectionError)):
            raise exc  # not the network's doing (a bug): as on the general path, not an error row
        return await self._error_reply(exc, None)

    async def close(self) -> None:
        for client in [*self.clients.values(), *([self.shared] if self.shared else [])]:
            await client.close()
        if self.deadlines is not None:
            self.deadlines.close()  # and the connections still busy (a cancelled user's)


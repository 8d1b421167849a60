"""The lean HTTP client's fast path (pre-encoded requests, no wait_for, no semaphore for a
user's own connection, the Reply made by the connection) against a real HTTP server in this
process, whose misbehaviour each test chooses: closing keep-alive connections after N requests
(saying so or not), answering too late, answering with a status or body the checks refuse.
The server counts and records what it received, so what the driver recorded can be checked
against what actually arrived."""

from __future__ import annotations

import asyncio
import textwrap
import threading
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import uvloop

from perflab.drive.adapters.http import HttpExecutor
from perflab.drive.adapters.http_request import encode_request
from perflab.workload.loader import load_workload

from .net_helpers import run_workload

BODY = b"hello from the test server\n"


class _Handler(asyncio.Protocol):
    """One server connection: reads requests (Content-Length bodies), answers each in turn."""

    def __init__(self, server: "TestServer"):
        self.server = server
        self.buffer = b""
        self.answered = 0
        self.transport = None
        self.busy = False

    def connection_made(self, transport):
        self.transport = transport
        self.server.open += 1
        self.server.accepted += 1
        self.server.max_open = max(self.server.max_open, self.server.open)

    def connection_lost(self, exc):
        self.server.open -= 1

    def data_received(self, data):
        self.buffer += data
        self._next()

    def _next(self):
        if self.busy or self.transport.is_closing():
            return
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            return
        head = self.buffer[:end + 4]
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        if len(self.buffer) < end + 4 + length:
            return
        raw, self.buffer = self.buffer[:end + 4 + length], self.buffer[end + 4 + length:]
        self.busy = True
        asyncio.ensure_future(self._answer(raw))

    async def _answer(self, raw: bytes):
        server = self.server
        server.requests.append(raw)
        path = raw.split(b" ", 2)[1].decode()
        status = int(path.rsplit("/", 1)[1]) if path.startswith("/status/") else 200
        self.answered += 1
        last = server.close_after is not None and self.answered >= server.close_after
        say_close = last and server.say_close
        head = (f"HTTP/1.1 {status} X\r\nContent-Type: text/plain\r\nContent-Length: {len(BODY)}\r\n"
                + ("Connection: close\r\n" if say_close else "") + "X-Token: abc123\r\n\r\n").encode()
        if path.startswith("/slow"):
            await asyncio.sleep(server.slow_s)
        if self.transport.is_closing():
            return
        if path.startswith("/split"):  # headers first, the body a moment later
            self.transport.write(head)
            await asyncio.sleep(0.02)
            self.transport.write(BODY)
        else:
            self.transport.write(head + BODY)
        self.busy = False
        if last:
            self.transport.close()  # with or without having said so
        else:
            self._next()


class TestServer:
    """An HTTP/1.1 server on its own event loop thread."""

    __test__ = False

    def __init__(self, close_after: int | None = None, say_close: bool = True, slow_s: float = 5.0):
        self.close_after, self.say_close, self.slow_s = close_after, say_close, slow_s
        self.requests: list[bytes] = []
        self.open = self.max_open = self.accepted = 0
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        start = self.loop.create_server(lambda: _Handler(self), "127.0.0.1", 0)
        self.server = asyncio.run_coroutine_threadsafe(start, self.loop).result(10)
        self.port = self.server.sockets[0].getsockname()[1]

    def paths(self) -> Counter:
        return Counter(raw.split(b" ", 2)[1].decode() for raw in list(self.requests))

    def stop(self) -> None:
        async def shut():
            self.server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        asyncio.run_coroutine_threadsafe(shut(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture
def serve():
    servers = []

    def start(**options) -> TestServer:
        servers.append(TestServer(**options))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


def workload(tmp_path: Path, port: int, transactions: str, scripts: str, client: str = "httptools",
             target: str = "") -> Path:
    path = tmp_path / "w.yaml"
    path.write_text(textwrap.dedent("""
        name: fastpath
        target: {{kind: http, base_url: "http://127.0.0.1:{port}", client: {client}{target}}}
        transactions:
        {transactions}
        scripts:
        {scripts}
        think: 0
        load: {{users: 2}}
        timing: {{stagger: 0s, stabilization: 0s, measurement: 1s}}
        seed: 1
    """).format(port=port, client=client, target=target, transactions=textwrap.indent(transactions, "  "),
                scripts=textwrap.indent(scripts, "  ")))
    return path


def rows(tmp_path: Path, run: dict):
    return pq.read_table(tmp_path / "store" / "runs" / run["run_id"] / "transactions.parquet").to_pandas()


def test_pre_encoded_bytes_are_what_per_call_formatting_sends(tmp_path, serve):
    server = serve()
    transactions = textwrap.dedent("""
        - {name: fixed, http: {method: POST, path: "/echo?x=1", headers: {X-A: b}, json: {k: 1, s: t}}}
        - name: templated
          params: {x: {value: 1}, h: {value: b}, k: {value: 1}}
          http: {method: POST, path: "/echo?x={x}", headers: {X-A: "{h}"}, json: {k: "{k}", s: t}}
    """)
    scripts = "- {name: a, steps: [fixed]}\n- {name: b, steps: [templated]}\n"
    path = workload(tmp_path, server.port, transactions, scripts)

    executor = HttpExecutor(load_workload(path))
    fixed, templated = executor.plans[0][0], executor.plans[1][0]
    assert executor.fast[0] is fixed and executor.fast[1] is None  # only the constant one is pre-encoded
    assert templated.wire is None
    body = b'{"k": 1, "s": "t"}'
    expected = (f"POST /echo?x=1 HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nX-A: b\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body
    assert fixed.wire == expected
    url, headers, payload = templated.render({"x": 1, "h": "b", "k": 1}, executor.base)
    assert encode_request(f"127.0.0.1:{server.port}", "POST", url, headers, payload) == expected

    run, metrics = run_workload(tmp_path, path, users=4)
    assert run["status"] == "complete", run["reason"]
    tx = rows(tmp_path, run)
    assert tx["ok"].all() and set(tx["transaction"]) == {"fixed", "templated"}
    # both paths put the same bytes on the wire, and nothing else arrived
    assert set(server.requests) == {expected}


@pytest.mark.parametrize("client", ["httptools", "aiohttp"])
def test_one_recorded_transaction_per_request_the_server_saw(tmp_path, serve, client):
    server = serve()
    transactions = textwrap.dedent("""
        - {name: home, http: {path: /}}
        - name: two
          params: {n: {random_int: [1, 3]}}
          http: [{path: "/a/{n}", extract: {token: {header: x-token}}}, {path: "/b/{token}"}]
    """)
    scripts = "- {name: s, weight: 3, steps: [home]}\n- {name: t, steps: [two]}\n"
    path = workload(tmp_path, server.port, transactions, scripts, client)
    run, metrics = run_workload(tmp_path, path, users=5)
    assert run["status"] == "complete", run["reason"]
    tx = rows(tmp_path, run)
    assert tx["ok"].all(), tx[~tx["ok"]]["error"].unique()
    counts = tx["transaction"].value_counts()
    paths = server.paths()
    assert paths["/"] == counts["home"] > 20
    assert sum(n for p, n in paths.items() if p.startswith("/a/")) == counts["two"]
    assert paths["/b/abc123"] == counts["two"]  # the header extracted from the first response
    assert sum(paths.values()) == counts["home"] + 2 * counts["two"]


@pytest.mark.parametrize("say_close", [True, False], ids=["connection-close-header", "silent-close"])
def test_server_closing_keep_alive_connections_after_n_requests(tmp_path, serve, say_close):
    server = serve(close_after=3, say_close=say_close)
    transactions = textwrap.dedent("""
        - {name: home, http: {path: /}}
        - {name: templated, http: {path: "/t/{n}"}, params: {n: {value: 1}}}
        - {name: post, http: {method: POST, path: "/p/{n}", body: "x"}, params: {n: {value: 1}}}
    """)
    scripts = "- {name: s, weight: 3, steps: [home, templated]}\n- {name: t, steps: [post]}\n"
    path = workload(tmp_path, server.port, transactions, scripts)
    run, metrics = run_workload(tmp_path, path, users=3)
    assert run["status"] == "complete", run["reason"]
    tx = rows(tmp_path, run)
    if say_close:
        assert tx["ok"].all(), tx[~tx["ok"]]["error"].unique()
    else:
        # A silent close races with the next request on that connection. A GET is sent again
        # on a new connection (fast path or not); a POST is not (it is not idempotent), so it
        # may fail, saying why.
        gets = tx[tx["transaction"] != "post"]
        assert gets["ok"].all(), gets[~gets["ok"]]["error"].unique()
        failed = tx[~tx["ok"]]["error"]
        assert failed.str.startswith("KeepAliveClosed").all(), failed.unique()
    assert len(tx) > 30 and server.accepted >= len(server.requests) / 3
    # no request was recorded twice or lost: a retried GET had not reached the server
    assert len(server.requests) == tx["ok"].sum()


@pytest.mark.parametrize("step", ["/slow", "{p}"], ids=["fast-path", "templated"])
def test_requests_past_the_timeout_are_errors_and_the_run_goes_on(tmp_path, serve, step):
    server = serve(slow_s=10.0)
    transactions = textwrap.dedent(f"""
        - {{name: slow, params: {{p: {{value: /slow}}}}, http: {{path: "{step}"}}}}
        - {{name: home, http: {{path: /}}}}
    """)
    scripts = "- {name: s, steps: [slow, home, home]}\n"
    path = workload(tmp_path, server.port, transactions, scripts, target=", timeout: 0.2s")
    run, metrics = run_workload(tmp_path, path, users=2, duration=1.5)
    assert run["status"] == "complete", run["reason"]
    tx = rows(tmp_path, run)
    slow, home = tx[tx["transaction"] == "slow"], tx[tx["transaction"] == "home"]
    assert len(slow) >= 4 and not slow["ok"].any()
    assert (slow["error"] == "TimeoutError: no response within 0.2 s").all(), slow["error"].unique()
    assert home["ok"].all() and home["actual_start"].max() > slow["end"].min()  # went on after a timeout
    # timed out, not waited out: each took at least the timeout, none the server's 10 s
    took = slow["end"] - slow["actual_start"]
    assert (took >= 0.2).all() and (took < 5).all(), took.describe()


def test_failed_checks_are_errors_with_the_reason(tmp_path, serve):
    server = serve()
    transactions = textwrap.dedent("""
        - {name: status, http: {path: /, expect_status: 201}}
        - {name: body, http: {path: /, expect_body: "not in it"}}
        - {name: server_error, http: {path: /status/503}}
        - {name: good, http: {path: /status/202, expect_status: [200, 202], expect_body: ""}}
        - name: templated_body
          params: {p: {value: /}}
          http: {path: "{p}", expect_body: "not in it"}
    """)
    scripts = "- {name: s, steps: [status, body, server_error, good, templated_body]}\n"
    path = workload(tmp_path, server.port, transactions, scripts)
    run, metrics = run_workload(tmp_path, path, users=2)
    assert run["status"] == "complete", run["reason"]
    tx = rows(tmp_path, run)
    errors = {name: set(group["error"].dropna()) for name, group in tx.groupby("transaction")}
    assert errors == {"status": {"HTTP 200 from GET /"}, "body": {"GET /: body lacks 'not in it'"},
                      "server_error": {"HTTP 503 from GET /status/503"}, "good": set(),
                      "templated_body": {"GET {p}: body lacks 'not in it'"}}
    assert tx.groupby("transaction")["ok"].all().to_dict() == {
        "status": False, "body": False, "server_error": False, "good": True, "templated_body": False}
    # a failed check still has its first byte's time
    assert tx["first_response"].notna().all()


@pytest.mark.parametrize("client", ["httptools", "aiohttp"])
def test_first_byte_comes_before_the_end(tmp_path, serve, client):
    server = serve()
    transactions = textwrap.dedent("""
        - {name: split, http: {path: /split}}
        - {name: split_then_home, http: [{path: /split}, {path: /}]}
    """)
    scripts = "- {name: s, steps: [split, split_then_home]}\n"
    path = workload(tmp_path, server.port, transactions, scripts, client)
    run, metrics = run_workload(tmp_path, path, users=2)
    assert run["status"] == "complete", run["reason"]
    tx = rows(tmp_path, run)
    assert tx["ok"].all() and len(tx) > 10
    # the server waits between the headers and the body: the first byte is seen in between
    assert (tx["actual_start"] < tx["first_response"]).all()
    assert (tx["first_response"] < tx["end"]).all()
    assert metrics.values["avg_first_t"] < metrics.values["avg_last_t"]


def test_a_pool_keeps_to_its_size(tmp_path, serve):
    server = serve()
    transactions = "- {name: home, http: {path: /split}}\n"
    scripts = "- {name: s, steps: [home]}\n"
    path = workload(tmp_path, server.port, transactions, scripts, target=", connections: pool, pool_size: 2")
    run, metrics = run_workload(tmp_path, path, users=6)
    assert run["status"] == "complete", run["reason"]
    tx = rows(tmp_path, run)
    assert tx["ok"].all() and len(tx) == len(server.requests) > 10
    assert server.max_open == 2  # six users, two connections


def test_cancelled_fast_path_request_and_idle_connection_closed_by_the_server(tmp_path, serve):
    """Directly on the executor: a user cancelled mid-request (the engine stopping) leaves the
    client usable; a connection the server closed while idle is replaced; close() closes all."""
    server = serve(close_after=2, say_close=False, slow_s=0.3)
    transactions = "- {name: slow, http: {path: /slow}}\n- {name: home, http: {path: /}}\n"
    path = workload(tmp_path, server.port, transactions, "- {name: s, steps: [home]}\n")

    async def scenario():
        executor = HttpExecutor(load_workload(path))
        await executor.open(users=1)
        # (the server closes each connection, silently, after its second answer)
        replies = [await executor.execute(1, None, 0)]  # connection 1 (the general path)
        replies.append(await executor.execute(1, None, 0))  # the fast path on 1, then closed
        await asyncio.sleep(0.1)
        replies.append(await executor.execute(1, None, 0))  # 1 is seen closed: connection 2
        slow = asyncio.ensure_future(executor.execute(0, None, 0))  # the fast path on 2 ...
        await asyncio.sleep(0.05)
        slow.cancel()  # ... cancelled while the server takes its time
        replies.append(await executor.execute(1, None, 0))  # 2 is busy: connection 3
        await asyncio.sleep(0.4)  # the slow answer arrives on 2, which the server then closes
        replies.append(await executor.execute(1, None, 0))  # 3 again
        open_before = len(executor.deadlines.conns)
        await executor.close()
        await asyncio.sleep(0.05)
        return replies, open_before, len(executor.deadlines.conns)

    replies, open_before, open_after = uvloop.run(scenario())
    assert [r.ok for r in replies] == [True] * 5, [r.error for r in replies]
    assert all(r.first is not None for r in replies)
    assert open_before >= 1 and open_after == 0
    assert server.paths() == {"/": 5, "/slow": 1} and server.accepted == 3

"""The compiled HTTP users (drive/load/http_loop.c through native_http.py) against real servers
in this process: they draw what the Python path draws, send what it sends, read every shape of
HTTP/1.1 response it reads, and word every failure as it does.

Each test names the path its run took (run.json's fingerprint.driver_core), so a test of the
compiled loop cannot pass on the Python path by accident.
"""

from __future__ import annotations

import asyncio
import socket
import textwrap
import threading
import time

import programs
import pytest

from perflab.drive.load import native_http

from .net_helpers import run_workload
from .test_http_client_fastpath import rows, serve, workload  # noqa: F401 - serve: the fixture

pytestmark = programs.needs_compiled_loop()


def core_of(run: dict) -> str:
    return run["fingerprint"]["driver_core"]


# --- the same draws as the Python path ------------------------------------------------------------


def test_same_scripts_thinks_and_order_per_user_as_the_python_path(tmp_path, serve):
    """Every distribution the loop draws, an init script, a weighted mix, residual first thinks:
    per user, the transactions, scripts and thinks in order are those of the Python engine for the
    same seed (to the bit), only the number of them differs (the runs' speeds do)."""
    server = serve()
    transactions = textwrap.dedent("""
        - {name: login, http: {path: /login}}
        - {name: a, http: {path: /a}}
        - {name: b, http: {method: POST, path: /b, body: "x=1"}}
        - {name: c, http: {path: /c}}
    """)
    scripts = textwrap.dedent("""
        - {name: init, steps: [login]}
        - name: s1
          weight: 3
          steps:
            - {transaction: a, think: {dist: exponential, mean: 0.004}}
            - {transaction: b, think: {dist: uniform, low: 0.001, high: 0.006}}
        - name: s2
          weight: 1
          steps:
            - {transaction: c, think: {dist: lognormal, mean: 0.003, sigma: 0.8}}
            - {transaction: a, think: 0.002}
    """)
    path = workload(tmp_path, server.port, transactions, scripts)
    text = path.read_text().replace("load: {users: 2}", "load: {users: 6}\ninit_script: init")
    text = text.replace("timing: {", "timing: {first_think: residual, ")
    path.write_text(text)
    sequences = {}
    for core in ("auto", "python"):
        run, _ = run_workload(tmp_path / core, path, changes={"driver.core": core})
        assert run["status"] == "complete", run["reason"]
        assert core_of(run) == ("native" if core == "auto" else "python (driver.core: python)")
        tx = rows(tmp_path / core, run).sort_values(["user", "intended_start"], kind="stable")
        assert tx["ok"].all(), tx[~tx["ok"]]["error"].unique()
        sequences[core] = {user: list(zip(group["script"], group["transaction"], group["think"].fillna(-1.0)))
                           for user, group in tx.groupby("user")}
    assert sequences["auto"].keys() == sequences["python"].keys() == set(range(6))
    for user in range(6):
        native, python = sequences["auto"][user], sequences["python"][user]
        n = min(len(native), len(python))
        assert n >= 20, (user, len(native), len(python))
        assert native[:n] == python[:n], user
        assert native[0][:2] == ("init", "login") and native[0][2] == -1.0  # a residual first think: no whole think


# --- every shape of response --------------------------------------------------------------------


class RawServer:
    """An HTTP server that answers each path with the bytes a test chose, written in pieces."""

    __test__ = False

    RESPONSES = {
        # a chunked body in several chunks and writes, with an extension and a trailer
        "/chunked": [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhel",
                     b"lo\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n"],
        "/empty": [b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"],
        "/no-content": [b"HTTP/1.1 204 No Content\r\n\r\n"],
        # an interim response before the real one, the head split mid-line
        "/continue": [b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Le", b"ngth: 5\r\n\r\nhello"],
        # no length: the body ends when the server closes
        "/until-close": [b"HTTP/1.0 200 OK\r\n\r\nhello ", b"until close"],
        "/garbage": [b"SMTP ready\r\n\r\n"],
        "/bad-chunk": [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"],
        "/big": [b"HTTP/1.1 200 OK\r\nContent-Length: 300000\r\n\r\n" + b"x" * 299_990 + b"needle-end"],
    }

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.requests: list[str] = []
        self.connections = 0
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket):
        buffer = b""
        with conn:
            while True:
                while b"\r\n\r\n" not in buffer:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buffer += data
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                method, path = head.split(b" ", 2)[:2]
                self.requests.append(f"{method.decode()} {path.decode()}")
                pieces = self.RESPONSES[path.decode()]
                if method == b"HEAD":
                    pieces = [b"HTTP/1.1 200 OK\r\nContent-Length: 12345\r\n\r\n"]  # no body follows a HEAD's
                for piece in pieces:
                    conn.sendall(piece)
                    time.sleep(0.002)
                if path in (b"/until-close", b"/garbage", b"/bad-chunk"):
                    return

    def stop(self):
        self.sock.close()


@pytest.fixture
def raw_server():
    server = RawServer()
    yield server
    server.stop()


def test_every_shape_of_response_is_read_and_judged(tmp_path, raw_server):
    transactions = textwrap.dedent("""
        - {name: chunked, http: {path: /chunked, expect_body: "hello world"}}
        - {name: empty, http: {path: /empty}}
        - {name: no_content, http: {path: /no-content, expect_status: 204}}
        - {name: continue, http: {path: /continue, expect_body: hello}}
        - {name: until_close, http: {path: /until-close, expect_body: "hello until close"}}
        - {name: head, http: {method: HEAD, path: /empty}}
        - {name: big, http: {path: /big, expect_body: needle-end}}
        - {name: garbage, http: {path: /garbage}}
        - {name: bad_chunk, http: {path: /bad-chunk}}
    """)
    scripts = ("- {name: s, steps: [chunked, empty, no_content, continue, until_close, head, big, garbage, "
               "bad_chunk]}\n")
    path = workload(tmp_path, raw_server.port, transactions, scripts, target=", timeout: 2s")
    run, _ = run_workload(tmp_path, path, users=2)
    assert run["status"] == "complete", run["reason"]
    assert core_of(run) == "native"
    tx = rows(tmp_path, run)
    by_name = {name: group for name, group in tx.groupby("transaction")}
    for name in ("chunked", "empty", "no_content", "continue", "until_close", "head", "big"):
        assert len(by_name[name]) >= 3 and by_name[name]["ok"].all(), (name, by_name[name]["error"].unique())
    assert set(by_name["garbage"]["error"]) == {"ConnectionError: malformed HTTP response: no HTTP/1.x status line"}
    assert set(by_name["bad_chunk"]["error"]) == {
        "ConnectionError: malformed HTTP response: invalid chunk in a chunked body"}
    # one recorded transaction per request the server saw (a run may stop with one in flight)
    assert abs(len(raw_server.requests) - len(tx)) <= 2
    # the connections that had to end (until-close, garbage, bad chunk) were made anew; the others kept
    per_round = 3
    rounds = len(by_name["garbage"]) + len(by_name["until_close"])
    assert raw_server.connections <= 2 + per_round * rounds
    assert (tx["first_response"] <= tx["end"]).all() and (tx["actual_start"] <= tx["first_response"]).all()


def test_failed_checks_are_worded_as_the_python_path_words_them(tmp_path, serve):
    server = serve()
    transactions = textwrap.dedent("""
        - {name: status, http: {path: /, expect_status: 201}}
        - {name: body, http: {path: /, expect_body: "not in it"}}
        - {name: server_error, http: {path: /status/503}}
        - {name: good, http: {path: /status/202, expect_status: [200, 202], expect_body: ""}}
    """)
    scripts = "- {name: s, steps: [status, body, server_error, good]}\n"
    path = workload(tmp_path, server.port, transactions, scripts)
    errors = {}
    for core in ("auto", "python"):
        run, _ = run_workload(tmp_path / core, path, changes={"driver.core": core})
        assert run["status"] == "complete", run["reason"]
        assert core_of(run).startswith("native" if core == "auto" else "python")
        tx = rows(tmp_path / core, run)
        errors[core] = {name: set(group["error"].dropna()) for name, group in tx.groupby("transaction")}
        assert tx["first_response"].notna().all()
    assert errors["auto"] == errors["python"] == {
        "status": {"HTTP 200 from GET /"}, "body": {"GET /: body lacks 'not in it'"},
        "server_error": {"HTTP 503 from GET /status/503"}, "good": set()}


@pytest.mark.parametrize("say_close", [True, False], ids=["connection-close-header", "silent-close"])
def test_server_closing_kept_alive_connections(tmp_path, serve, say_close):
    """A GET is sent again once on a new connection when the server closed the kept-alive one
    before answering; a POST is not (KeepAliveClosed, as on the Python path). Nothing is recorded
    twice or lost."""
    server = serve(close_after=3, say_close=say_close)
    transactions = "- {name: home, http: {path: /}}\n- {name: post, http: {method: POST, path: /p, body: x}}\n"
    scripts = "- {name: s, weight: 3, steps: [home, home]}\n- {name: t, steps: [post]}\n"
    path = workload(tmp_path, server.port, transactions, scripts)
    run, _ = run_workload(tmp_path, path, users=3)
    assert run["status"] == "complete", run["reason"]
    assert core_of(run) == "native"
    tx = rows(tmp_path, run)
    gets = tx[tx["transaction"] == "home"]
    assert len(tx) > 30 and gets["ok"].all(), gets[~gets["ok"]]["error"].unique()
    failed = tx[~tx["ok"]]["error"]
    assert failed.str.startswith("KeepAliveClosed: ").all(), failed.unique()
    assert len(server.requests) == tx["ok"].sum()
    assert server.accepted >= len(server.requests) / 3


def test_refused_connections_are_errors_and_counted_as_none(tmp_path):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    path = workload(tmp_path, port, "- {name: home, http: {path: /}}\n", "- {name: s, steps: [home]}\n")
    path.write_text(path.read_text().replace("think: 0", "think: 0.01"))
    run, metrics = run_workload(tmp_path, path, users=2)
    assert core_of(run) == "native"
    tx = rows(tmp_path, run)
    assert len(tx) > 20 and not tx["ok"].any()
    assert set(tx["error"]) == {"ConnectionRefusedError: [Errno 111] Connection refused"}


def test_think_times_hold_and_the_window_stops_issuing(tmp_path, serve):
    """Constant thinks of 50 ms: every transaction starts its think after the last one ended and
    no earlier than intended; none is intended at or after the window's end; each user's think
    running at the end is recorded as pending (thinks.parquet)."""
    import pyarrow.parquet as pq

    server = serve()
    path = workload(tmp_path, server.port, "- {name: home, http: {path: /}}\n", "- {name: s, steps: [home]}\n")
    path.write_text(path.read_text().replace("think: 0", "think: 0.05"))
    run, _ = run_workload(tmp_path, path, users=4)
    assert core_of(run) == "native"
    tx = rows(tmp_path, run).sort_values(["user", "intended_start"])
    assert tx["ok"].all() and (tx["think"] == 0.05).all()
    for _, group in tx.groupby("user"):
        assert 10 <= len(group) <= 21  # about 19: 1 s of 50 ms thinks and sub-millisecond responses
        gaps = group["intended_start"].to_numpy()[1:] - group["end"].to_numpy()[:-1]
        assert abs(gaps - 0.05).max() < 1e-9  # intended = the last end + the think
    assert (tx["actual_start"] >= tx["intended_start"]).all()
    assert tx["intended_start"].max() < 1.0  # the window is [0, 1) s here
    thinks = pq.read_table(tmp_path / "store" / "runs" / run["run_id"] / "thinks.parquet").to_pandas()
    assert sorted(thinks["user"]) == [0, 1, 2, 3] and (thinks["think"] == 0.05).all()
    assert (thinks["start"] + thinks["think"] >= 1.0 - 1e-9).all()


@pytest.mark.lab  # a real server and the compiled loop's thread, timed
def test_interrupted_run_stops_its_users_and_keeps_what_they_did(tmp_path, serve):
    """The engine cut short mid-run (as Ctrl-C does): nobody parked wakes again, their thinks
    are pending, the loop's thread ends, and the rows so far are kept."""
    from perflab.drive.adapters.http import HttpExecutor
    from perflab.drive.load.engine import Phases
    from perflab.drive.load.recorder import Recorder
    from perflab.workload.loader import load_workload

    server = serve()
    path = workload(tmp_path, server.port, "- {name: home, http: {path: /}}\n", "- {name: s, steps: [home]}\n")
    path.write_text(path.read_text().replace("think: 0", "think: 0.1"))
    w = load_workload(path)
    executor = HttpExecutor(w)
    t0 = time.monotonic()
    recorder = Recorder([s.name for s in w.scripts], [t.name for t in w.transactions], [], t0,
                        spill_path=tmp_path / "spill")
    engine = native_http.NativeHttpEngine(w, executor, recorder, Phases(0.0, 0.0, 30.0), t0, users=3)
    recorder.class_names = engine.class_names

    async def scenario():
        await executor.open(3)
        asyncio.get_running_loop().call_later(0.5, engine.interrupt, "interrupted by the test")
        outcome = await engine.run()
        await executor.close()
        return outcome

    started = time.monotonic()
    outcome = asyncio.run(scenario())
    assert time.monotonic() - started < 5  # not the 30 s window
    assert outcome.status == "interrupted" and outcome.reason == "interrupted by the test"
    table = recorder.table().to_pandas()
    assert 3 <= len(table) <= 24 and table["ok"].all()  # about 15: three users, 0.5 s of 0.1 s thinks
    pending = recorder.thinks_table().to_pandas()
    assert sorted(pending["user"]) == [0, 1, 2]
    assert len(server.requests) == len(table)
    recorder.close()

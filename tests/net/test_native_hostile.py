"""The compiled loop against hostile and broken servers of our own: every answer it cannot read as
HTTP/1.1 (RFC 9112) or PostgreSQL's protocol is a transaction's error, found when it arrives, with
its words; nothing it is sent is kept whole; memory that runs out fails the run with its rows.
tests/net/test_native_sanitized.py runs this file again on a build of the loop under ASan and
UBSan."""

from __future__ import annotations

import socket
import struct
import time

import programs
import pytest

from perflab.drive.load import native_http

from .native_harness import Server, drive, http_workload, read_request

# servers of its own in this process, and the loop's thread: the lab tier's (tests/tiers.py)
pytestmark = [*programs.needs_compiled_loop(), pytest.mark.lab]


def answering(response: bytes, close: bool = False):
    """A server that answers every request with `response` (and closes after it when asked)."""

    def handler(conn: socket.socket, server: Server) -> None:
        buffer = bytearray()
        while (request := read_request(conn, buffer)) is not None:
            server.requests.append(request)
            conn.sendall(response)
            if close:
                conn.shutdown(socket.SHUT_WR)
                while conn.recv(65536):
                    pass
                return

    return handler


@pytest.fixture
def server():
    servers: list[Server] = []

    def start(handler) -> Server:
        servers.append(Server(handler))
        return servers[-1]

    yield start
    for s in servers:
        s.stop()


def errors(table) -> set[str]:
    return set(table["error"].dropna())


@pytest.mark.parametrize("response, error", [
    (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello", "invalid Content-Length"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n", "invalid Transfer-Encoding"),
    (b"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "invalid Transfer-Encoding"),
    (b"HTTP/1.1 200 OK\nContent-Length: 0\n\n", "a line ended by LF without CR"),
    (b"SSH-2.0-OpenSSH_9.2", "no HTTP/1.x status line"),
    (b"HTTP/1.1 200 OK\r\nContent-Length : 1\r\n\r\nx", "invalid header line"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX", "invalid chunk in a chunked body"),
])
def test_a_malformed_answer_fails_its_transaction_when_it_arrives(tmp_path, server, response, error):
    """Not after the timeout: a bare-LF head, a banner of another protocol or conflicting lengths
    are each found at once, so the users go on and many transactions end in the window."""
    s = server(answering(response))
    path = http_workload(tmp_path, s.port, "- {name: t, http: {path: /}}", target=", timeout: 30s")
    outcome, table, _ = drive(path, window=0.5)
    assert outcome.status == "complete"
    assert len(table) > 20 and not table["ok"].any()
    assert errors(table) == {f"ConnectionError: malformed HTTP response: {error}"}
    assert s.accepted == len(table)  # a connection dropped after each: never reused after garbage


def test_transfer_codings_and_101_read_by_the_rfc(tmp_path, server):
    """"notchunked" is no chunked: that body runs until the server closes, and is searched as it
    came; a 101 is a final answer (not 2xx or 3xx: an error), never skipped as a 100 is."""
    s = server(answering(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: notchunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
                         close=True))
    path = http_workload(tmp_path, s.port, '- {name: t, http: {path: /, expect_body: "5\\r\\nhello"}}')
    _, table, _ = drive(path, window=0.4)
    assert len(table) > 5 and table["ok"].all()
    s = server(answering(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n"))
    path = http_workload(tmp_path, s.port, "- {name: t, http: {path: /up}}")
    _, table, _ = drive(path, window=0.4)
    assert len(table) > 5 and errors(table) == {"HTTP 101 from GET /up"}
    assert s.accepted == len(table)  # after a protocol switch the connection is not HTTP's: dropped


def test_an_early_answer_to_a_large_upload_is_the_answer(tmp_path, server):
    """The server refuses a 4 MiB upload after its head (413) and closes its side: the transaction
    records the 413, not a connection closed by the server."""

    def refuse(conn: socket.socket, s: Server) -> None:
        buffer = bytearray()
        while b"\r\n\r\n" not in buffer:
            buffer += conn.recv(65536)
        s.requests.append(bytes(buffer[:64]))
        conn.sendall(b"HTTP/1.1 413 Payload Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        conn.shutdown(socket.SHUT_WR)
        while conn.recv(1 << 20):  # what was sent already is read, so the close is a FIN, not a reset
            pass

    s = server(refuse)
    body = "x" * (4 << 20)
    path = http_workload(tmp_path, s.port, f"- {{name: t, http: {{method: POST, path: /up, body: {body}}}}}",
                         load="{users: 1}")
    _, table, _ = drive(path, window=0.4)
    assert len(table) >= 2 and errors(table) == {"HTTP 413 from POST /up"}


def peak_rss_since_reset() -> int:
    """The process's peak resident bytes since the last reset (Linux's clear_refs: 5 resets VmHWM)."""
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def test_a_96_mib_body_is_searched_as_it_arrives_never_kept(tmp_path, server):
    """The expected text at the end of a 96 MiB body is found through a window of its own length:
    the driver's peak memory grows by far less than the body (it grew by 241 MB before)."""
    payload = b"x" * (96 << 20) + b"needle-at-the-end"
    head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(payload)

    def big(conn: socket.socket, s: Server) -> None:
        buffer = bytearray()
        while read_request(conn, buffer) is not None:
            conn.sendall(head)
            conn.sendall(memoryview(payload))  # no copy in this process either

    s = server(big)
    path = http_workload(tmp_path, s.port, "- {name: t, http: {path: /big, expect_body: needle-at-the-end}}",
                         load="{users: 1}")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    baseline = peak_rss_since_reset()
    _, table, _ = drive(path, window=0.3)
    assert len(table) >= 1 and table["ok"].all()
    assert peak_rss_since_reset() - baseline < 24 << 20


def test_a_server_that_never_answers_times_the_transaction_out(tmp_path, server):
    def silent(conn: socket.socket, s: Server) -> None:
        while conn.recv(65536):
            pass

    s = server(silent)
    path = http_workload(tmp_path, s.port, "- {name: t, http: {path: /}}", target=", timeout: 0.2s")
    _, table, _ = drive(path, window=0.7)
    assert len(table) >= 4 and errors(table) == {"TimeoutError: no response within 0.2 s"}
    assert ((table["end"] - table["actual_start"]) >= 0.2).all()


def test_a_server_that_reads_slowly_takes_a_large_request_in_pieces(tmp_path, server):
    """An 8 MiB request into a server that reads 16 KiB at a time: the socket fills, the send goes
    on as it takes more (partial sends), and every request arrives whole."""

    def slow(conn: socket.socket, s: Server) -> None:
        buffer = bytearray()
        while True:
            while b"\r\n\r\n" not in buffer:
                data = conn.recv(16384)
                if not data:
                    return
                buffer += data
            end = buffer.index(b"\r\n\r\n") + 4
            length = int(buffer[:end].split(b"Content-Length: ")[1].split(b"\r\n")[0])
            while len(buffer) < end + length:
                data = conn.recv(16384)
                if not data:
                    return
                buffer += data
                time.sleep(0.0001)
            s.requests.append(bytes(buffer[end:end + length]))
            del buffer[:end + length]
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")

    s = server(slow)
    body = "y" * (8 << 20)
    path = http_workload(tmp_path, s.port, f"- {{name: t, http: {{method: PUT, path: /p, body: {body}}}}}",
                         load="{users: 1}")
    _, table, _ = drive(path, window=0.5)
    assert len(table) >= 1 and table["ok"].all()
    assert all(r == body.encode() for r in s.requests)


def test_every_resolved_address_is_tried_in_turn(tmp_path, server):
    with socket.socket() as dead:
        dead.bind(("127.0.0.1", 0))
        dead_port = dead.getsockname()[1]  # nobody listens there once it closes
    s = server(answering(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
    path = http_workload(tmp_path, s.port, "- {name: t, http: {path: /}}")

    def two_addresses(engine) -> None:
        engine._addresses = [(socket.AF_INET, "127.0.0.1", dead_port), (socket.AF_INET, "127.0.0.1", s.port)]

    _, table, _ = drive(path, window=0.3, before=two_addresses)
    assert len(table) > 10 and table["ok"].all()


def test_running_out_of_memory_fails_the_run_and_keeps_its_rows(tmp_path, server):
    """The n-th allocation of the loop fails (the binding's test hook): the run is failed, saying
    so, with the rows recorded before it -- never an abort() that loses them all."""
    s = server(answering(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
    path = http_workload(tmp_path, s.port, "- {name: t, http: {path: /}}", think="0.001")
    failed = []
    for n in range(3, 12):  # the n-th allocation of the run: a user's state, a heap, a block of rows...
        native_http.http_loop.fail_allocations(0)

        def arm(engine, n=n) -> None:
            engine.core = engine._make_core()  # made first: its own allocations are not counted
            native_http.http_loop.fail_allocations(n)

        try:
            outcome, table, _ = drive(path, window=0.7, before=arm)
        finally:
            native_http.http_loop.fail_allocations(0)
        if outcome.status == "complete":
            continue  # the run needed fewer allocations than n
        assert outcome.status == "failed" and outcome.reason.startswith(
            "driver error: OSError: [Errno 12] the compiled loop ran out of memory"), (n, outcome)
        assert table["ok"].all() or set(table["error"].dropna()) <= {native_http.NOMEM_TEXT}
        failed.append((n, len(table)))
        if len(table) > 0:
            break
    assert failed and failed[-1][1] > 0, failed  # some run failed with the rows before its failure kept


# --- PostgreSQL ----------------------------------------------------------------------------------


def pg_message(kind: bytes, body: bytes) -> bytes:
    return kind + struct.pack("!I", len(body) + 4) + body


READY = pg_message(b"Z", b"I")
NOTICES = (pg_message(b"N", b"SNOTICE\0Mhello\0\0") + pg_message(b"S", b"TimeZone\0UTC\0") +
           pg_message(b"A", struct.pack("!I", 7) + b"chan\0payload\0"))


def read_pg(conn: socket.socket, buffer: bytearray, startup: bool = False) -> bytes | None:
    """The next frontend message (its type byte, or b"" for the startup message)."""
    need = 4 if startup else 5
    while len(buffer) < need:
        data = conn.recv(65536)
        if not data:
            return None
        buffer += data
    length = struct.unpack("!I", buffer[need - 4:need])[0] + (0 if startup else 1)
    while len(buffer) < length:
        data = conn.recv(65536)
        if not data:
            return None
        buffer += data
    kind = b"" if startup else bytes(buffer[:1])
    del buffer[:length]
    return kind


def fake_postgres(answer: bytes, between: bytes = b""):
    """A server that logs everyone on (trust), answers each Sync with `answer` + ReadyForQuery, and
    sends `between` on the idle connection after each transaction."""

    def handler(conn: socket.socket, s: Server) -> None:
        buffer = bytearray()
        if read_pg(conn, buffer, startup=True) is None:
            return
        conn.sendall(pg_message(b"R", b"\0\0\0\0") + pg_message(b"K", b"\0" * 8) + READY)
        while (kind := read_pg(conn, buffer)) is not None:
            if kind == b"S":
                s.requests.append(kind)
                conn.sendall(answer)  # (not answer + READY: a copy of a 48 MiB answer in this process)
                conn.sendall(READY)
                if between:
                    time.sleep(0.001)
                    conn.sendall(between)
            elif kind == b"X":
                return

    return handler


def pg_workload(tmp_path, port: int):
    path = tmp_path / "pg.yaml"
    path.write_text(f"""
name: pg
target: {{kind: postgres, dsn: "postgresql://postgres@127.0.0.1:{port}/perflab"}}
transactions: [{{name: t, sql: "SELECT :n::int", params: {{n: {{random_int: [1, 9]}}}}}}]
scripts: [{{name: s, steps: [t]}}]
think: 0.002
load: {{users: 2}}
timing: {{stagger: 0s, stabilization: 0s, measurement: 1s}}
""")
    return path


def drive_pg(tmp_path, port: int, window: float = 0.4):
    """The PostgreSQL engine on the fake server (the choice is the workload's own: a DSN keeps
    asyncpg, so the engine is made here, as a server perflab started would have it)."""
    from perflab.drive.load import native_pg

    path = pg_workload(tmp_path, port)
    original = native_pg.pg_reason
    native_pg.NativePgEngine.reason = staticmethod(lambda workload, executor: None)
    try:
        return drive(path, window=window, dsn=f"postgresql://postgres@127.0.0.1:{port}/perflab")
    finally:
        native_pg.NativePgEngine.reason = staticmethod(original)


ROWS = pg_message(b"1", b"") + pg_message(b"2", b"") + pg_message(b"T", b"\0\0") + pg_message(b"D", b"\0\1") + \
    pg_message(b"C", b"SELECT 1\0")


def test_postgres_notices_and_notifications_on_an_idle_connection_are_read_and_ignored(tmp_path, server):
    """What a server says between transactions (a notice, a parameter's new value, a NOTIFY) used
    to drop the connection, and the next transaction logged on inside its timed span."""
    s = server(fake_postgres(ROWS, between=NOTICES))
    outcome, table, engine = drive_pg(tmp_path, s.port)
    assert outcome.status == "complete", outcome.reason
    assert len(table) > 20 and table["ok"].all(), errors(table)
    assert s.accepted == 2 and engine.core.connects == 2  # logged on once each, before the run


def test_postgres_rows_of_any_size_are_skipped_and_impossible_messages_fail(tmp_path, server):
    huge = pg_message(b"1", b"") + pg_message(b"2", b"") + pg_message(b"D", b"r" * (48 << 20)) + \
        pg_message(b"C", b"SELECT 1\0")
    s = server(fake_postgres(huge))
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    baseline = peak_rss_since_reset()
    _, table, _ = drive_pg(tmp_path, s.port, window=0.3)
    assert len(table) >= 2 and table["ok"].all()
    assert peak_rss_since_reset() - baseline < 24 << 20  # a 48 MiB DataRow read past, never held
    s = server(fake_postgres(pg_message(b"1", b"") + b"Z\0\0\0\x02"))
    _, table, _ = drive_pg(tmp_path, s.port, window=0.3)
    assert len(table) >= 2 and errors(table) == {
        "ProtocolError: a PostgreSQL message of impossible length or type"}

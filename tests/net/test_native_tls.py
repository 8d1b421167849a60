"""https in the compiled loop (drive/load/loop/tls.c): a server of the test's own with a
certificate made for it (perflab.sut.tls_cert), verified against it, handshakes counted, a user's
session offered again on its next connection when asked, and a certificate that does not verify
an error row with OpenSSL's words -- never the Python path by accident (each run asserts its core)."""

from __future__ import annotations

import socket
import ssl
import threading

import programs
import pytest

from perflab.drive.adapters.counts import ConnectionCounts
from perflab.sut.tls_cert import make_self_signed

from .native_harness import Server, drive, http_workload, read_request

pytestmark = [*programs.needs_compiled_loop(), programs.needs("openssl"), pytest.mark.lab]


class TlsServer(Server):
    """The harness's server, its connections wrapped in TLS (TLS 1.2 and 1.3, tickets on)."""

    __test__ = False

    def __init__(self, cert, key):
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(cert, key)
        self.handshakes = 0
        super().__init__(self._handle)

    def _handle(self, conn: socket.socket, server: Server) -> None:
        with self.context.wrap_socket(conn, server_side=True) as tls:
            with self.lock:
                self.handshakes += 1
            buffer = bytearray()
            while read_request(tls, buffer) is not None:
                tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")


@pytest.fixture
def tls_server(tmp_path):
    cert, key = make_self_signed(tmp_path / "cert")
    server = TlsServer(cert, key)
    yield server, cert
    server.stop()


def test_https_users_verify_the_server_and_keep_their_connections(tmp_path, tls_server):
    server, cert = tls_server
    path = http_workload(tmp_path, server.port, "- {name: t, http: {path: /, expect_body: hello}}", scheme="https",
                         target=f', tls: {{ca_file: "{cert}"}}')
    outcome, table, engine = drive(path, window=0.4)
    assert outcome.status == "complete" and len(table) > 20 and table["ok"].all(), set(table["error"].dropna())
    assert engine.core.handshakes == (2, 0) and server.handshakes == 2  # one per user, kept alive


@pytest.mark.parametrize("version", ["1.2", "1.3"])
def test_a_new_connection_per_transaction_resumes_the_users_session(tmp_path, tls_server, version):
    server, cert = tls_server
    path = http_workload(tmp_path, server.port, "- {name: t, http: {path: /}}", scheme="https", think="0.01",
                         target=f', connections: per_transaction, tls: {{ca_file: "{cert}", version: "{version}", '
                                f'session_resumption: true}}')
    counts = ConnectionCounts()
    try:
        def count(engine) -> None:
            engine.http.counts = counts

        _, table, engine = drive(path, window=0.4, before=count)
        assert len(table) > 10 and table["ok"].all(), set(table["error"].dropna())
        handshakes, resumed = engine.core.handshakes
        assert handshakes == len(table) == engine.core.connects  # a connection, and a handshake, each
        assert resumed >= handshakes - 2  # every one but each user's first offers its last session
        totals = counts.totals()
        assert totals["tls_handshakes"] == handshakes and totals["tls_resumed"] == resumed
    finally:
        counts.close()


def test_a_certificate_that_does_not_verify_fails_each_transaction_with_openssls_words(tmp_path, tls_server):
    server, _ = tls_server
    other, _ = make_self_signed(tmp_path / "other")
    path = http_workload(tmp_path, server.port, "- {name: t, http: {path: /}}", scheme="https", think="0.01",
                         target=f', tls: {{ca_file: "{other}"}}')
    _, table, _ = drive(path, window=0.3)
    assert len(table) > 3 and not table["ok"].any()
    # the Python path's words (Python's ssl), but the line of its C source it adds
    assert set(table["error"]) == {"ConnectionError: TLS handshake failed: [SSL: CERTIFICATE_VERIFY_FAILED] "
                                   "certificate verify failed: self-signed certificate"}

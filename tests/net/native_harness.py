"""Driving the compiled loop's engines directly against servers of a test's own (a few hundred
milliseconds, no store, no monitor): the engine the run would choose, its rows and outcome.
Shared by tests/net/test_native_*.py."""

from __future__ import annotations

import asyncio
import socket
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from perflab.drive.adapters.context import NetworkContext
from perflab.drive.adapters.registry import make_executor
from perflab.drive.load import native_http
from perflab.drive.load.engine import Engine, Phases
from perflab.drive.load.recorder import Recorder
from perflab.workload.loader import load_workload


class Server:
    """A TCP server on a free port whose every connection is served by `handler(conn, server)` in
    a thread of its own."""

    __test__ = False

    def __init__(self, handler: Callable[[socket.socket, Server], None], family: int = socket.AF_INET):
        self.handler = handler
        self.sock = socket.create_server(("127.0.0.1" if family == socket.AF_INET else "::1", 0), family=family)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.requests: list[bytes] = []
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.accepted += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # a server's answer in two writes is not held back
        with conn:
            try:
                self.handler(conn, self)
            except OSError:
                pass

    def stop(self) -> None:
        self.sock.close()


def read_request(conn: socket.socket, buffer: bytearray, keep_body: bool = True) -> bytes | None:
    """One HTTP request from the connection (its head and Content-Length body), or None at its end."""
    while b"\r\n\r\n" not in buffer:
        data = conn.recv(65536)
        if not data:
            return None
        buffer += data
    end = buffer.index(b"\r\n\r\n") + 4
    head = bytes(buffer[:end])
    del buffer[:end]
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    while len(buffer) < length:
        data = conn.recv(65536)
        if not data:
            return None
        buffer += data
    body = bytes(buffer[:length])
    del buffer[:length]
    return head + body if keep_body else head


def http_workload(tmp_path: Path, port: int, transactions: str, scripts: str = "- {name: s, steps: [t]}",
                  target: str = "", think: str = "0", load: str = "{users: 2}", scheme: str = "http",
                  extra: str = "") -> Path:
    path = tmp_path / "w.yaml"
    path.write_text(textwrap.dedent("""
        name: native
        target: {{kind: http, base_url: "{scheme}://127.0.0.1:{port}"{target}}}
        transactions:
        {transactions}
        scripts:
        {scripts}
        think: {think}
        load: {load}
        timing: {{stagger: 0s, stabilization: 0s, measurement: 1s}}
        seed: 7
        {extra}
    """).format(port=port, target=target, transactions=textwrap.indent(textwrap.dedent(transactions), "  "),
                scripts=textwrap.indent(scripts, "  "), think=think, load=load, scheme=scheme, extra=extra))
    return path


def drive(path: Path, window: float = 0.6, core: str = "auto", dsn: str | None = None, before: Any = None,
          tokens: dict[str, str] | None = None) -> tuple[Any, Any, Engine]:
    """Run the workload's users (or arrivals) for `window` seconds on the engine a run would choose
    (`core: python` the Python path's): (outcome, transactions table, engine)."""
    workload = load_workload(path)
    if core == "python":
        workload = workload.model_copy(update={"driver": workload.driver.model_copy(update={"core": "python"})})
    load = workload.load
    users = getattr(load, "users", None)
    rate = getattr(load, "rate", None)
    executor = make_executor(NetworkContext(workload, dsn, None, 2, tokens or {}))
    choice = native_http.choose_core(workload, executor, users, rate)
    assert choice.native == (core == "auto"), choice
    t0 = time.monotonic()
    recorder = Recorder([s.name for s in workload.scripts], [t.name for t in workload.transactions], [], t0,
                        spill_path=path.parent / f"spill-{core}")
    kind = choice.engine if choice.native else Engine
    engine = kind(workload, executor, recorder, Phases(0.0, 0.0, window), t0, users=users, rate=rate)
    recorder.class_names = engine.class_names
    if before is not None:
        before(engine)

    async def scenario():
        await engine.before_run(lambda: executor.open(users))()
        try:
            return await engine.run()
        finally:
            await executor.close()

    outcome = asyncio.run(scenario())
    table = recorder.table().to_pandas()
    for column in ("script", "transaction", "class"):
        table[column] = table[column].astype(str)
    recorder.close()
    return outcome, table, engine

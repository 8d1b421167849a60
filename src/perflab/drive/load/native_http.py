"""Closed-loop users run by perflab's compiled loop (http_loop.c), where the workload allows.

The Python path (engine.py's users, http.py's lean client) costs about 2.6x wrk's CPU per
request on this machine; the kernel's part is the same for both, the rest is the interpreter's
(docs/performance.md, issue 28). For a workload whose every transaction is one fixed request on
a user's own keep-alive connection (`client: httptools`, `connections: per_user`, plain http,
no `{placeholder}`, no extraction) and whose think times are constant, uniform, exponential or
lognormal, the users' loop -- logon, think, script pick, send, parse, check, recorder row -- runs
in C on a thread of its own, the GIL released. Python keeps the run's time line (the window's
edges, the driver's CPU over it, the monitor's edge samples, a cut-short run, the drain), takes
the rows in blocks every tick (`_pump`) and words their errors as the Python path does.

The same loop runs the TCP adapter's exchanges (NativeTcpEngine): one message over TCP and a
reply of known length back on the user's own connection (`mode: round_trip`, one message a
transaction), the reply compared as tcp.py compares it; and PostgreSQL users (native_pg.py).

The same seed draws the same script picks and think times as the Python engine (the streams
are workload/rng.py's SplitMix64, in C; tests/core/test_native_http_draws.py and
tests/net/test_native_http.py compare them), so the
two paths differ only in what they cost. `driver: {core: python}` keeps the Python path; when
the extension is not built (not Linux, no compiler at install) the run says so and takes it.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from perflab.drive.load.deadline import deadline_text
from perflab.drive.load.engine import Engine, Outcome, Phases, Share, sleep_until
from perflab.drive.load.recorder import Recorder
from perflab.workload.model import ClosedLoad, Workload
from perflab.workload.thinktime import ConstantThink, ExponentialThink, LognormalThink, UniformThink, lognormal_mu

try:
    from perflab.drive.load import http_loop  # type: ignore[attr-defined]
    NOT_BUILT: str | None = None
except ImportError as exc:  # not built: not Linux, or no C compiler when perflab was installed
    http_loop = None
    NOT_BUILT = f"perflab's compiled HTTP loop is not built here ({exc})"

#: http_loop.c's row_t and pending_t.
ROW_DTYPE = np.dtype({"names": ["intended", "actual", "first", "end", "think", "uid", "script", "tx", "klass", "ok",
                                "err", "detail"],
                      "formats": ["<f8", "<f8", "<f8", "<f8", "<f8", "<i4", "<i2", "<i2", "<i2", "u1", "u1", "<i4"],
                      "offsets": [0, 8, 16, 24, 32, 40, 44, 46, 48, 50, 51, 52], "itemsize": 56})
PENDING_DTYPE = np.dtype({"names": ["start", "think", "uid", "tx", "klass"],
                          "formats": ["<f8", "<f8", "<i4", "<i2", "<i2"], "offsets": [0, 8, 16, 20, 22],
                          "itemsize": 24})

# http_loop.c's error kinds and what was malformed
(E_STATUS, E_BODY, E_CONNECT_TIMEOUT, E_RESPONSE_TIMEOUT, E_CONNECT_OS, E_IO_OS, E_CLOSED, E_MALFORMED, E_GIVEN_UP,
 E_KEEPALIVE, E_SERVER, E_AUTH, E_SERVER_CLOSED) = range(1, 14)
MALFORMED = {1: "no HTTP/1.x status line", 2: "invalid Content-Length", 3: "invalid chunk in a chunked body",
             4: "head or checked body too large", 6: "a PostgreSQL message of impossible length"}
#: The Python path's cost beside the compiled loop's, said when a run falls back to it.
SLOWER = "the Python path costs about twice the driver CPU per request"


@dataclass(frozen=True)
class CoreChoice:
    """Which loop runs the users, and why not the compiled one (None: it runs)."""

    native: bool
    reason: str | None = None
    #: the compiled loop's engine for the target's kind (its registry line's `native`), when it runs
    engine: Any = field(default=None, compare=False)

    def fingerprint(self) -> str:
        return "native" if self.native else f"python ({self.reason})"


def _think_spec(think) -> tuple[int, float, float, float] | None:
    """http_loop.c's think_t of a think-time distribution, or None if the C loop has none of it."""
    if isinstance(think, ConstantThink):
        return (0, think.value, 0.0, 0.0)
    if isinstance(think, UniformThink):
        return (1, think.low, think.high, 0.0)
    if isinstance(think, ExponentialThink):
        return (2, think.mean_s, 0.0, 0.0)
    if isinstance(think, LognormalThink):
        mu = lognormal_mu(think.mean_s, think.sigma)
        return (3, mu, think.sigma, mu + think.sigma ** 2)  # c: the length-biased draw's mu
    return None


def choose_core(workload: Workload, executor: Any, users: int | None) -> CoreChoice:
    """Whether the compiled loop can run this run's users exactly as the Python path would: the
    target kind's engine (its registry line's `native`, workload/kinds.py) says what it cannot send."""
    from perflab.drive.adapters.registry import native_engine
    from perflab.workload.kinds import KINDS, words

    if workload.driver.core == "python":
        return CoreChoice(False, "driver.core: python")
    engine = native_engine(KINDS.of(workload.target))
    if engine is None:
        served = words(k.name for k in KINDS if k.native is not None)
        return CoreChoice(False, f"a {workload.target.kind} target (the compiled loop drives {served})")
    reason = engine.reason(workload, executor)
    if reason is not None:
        return CoreChoice(False, reason)
    if users is None or not isinstance(workload.load, ClosedLoad) or workload.load.batch is not None:
        return CoreChoice(False, "not closed-loop users")
    from perflab.drive.load.mix import compile_scripts

    compiled = compile_scripts(workload)
    if not compiled.mix:
        return CoreChoice(False, "no script to choose after the init script")
    for script in compiled.scripts:
        for step in script.steps:
            if _think_spec(step.think) is None:
                return CoreChoice(False, f"think time {step.think.dist} (the compiled loop draws constant, uniform, "
                                         "exponential and lognormal)")
    if NOT_BUILT is not None:
        return CoreChoice(False, NOT_BUILT)
    return CoreChoice(True, engine=engine)


def http_reason(workload: Workload, executor: Any) -> str | None:
    """Why the compiled loop cannot send this HTTP workload's requests (None: it can)."""
    if not executor.lean:
        return "client: aiohttp (the compiled loop serves client: httptools)"
    if executor.tls is not None:
        return "https"
    if not executor.per_user:
        return "connections: not per_user"
    for tx, request in zip(workload.transactions, executor.fast):
        if request is None:
            return f"transaction {tx.name} is not one fixed request (placeholders, extraction or several requests)"
    return None


def tcp_reason(workload: Workload, executor: Any) -> str | None:
    """Why the compiled loop cannot make this TCP workload's exchanges (None: it can)."""
    if executor.unix is not None:
        return "a Unix-domain socket (the compiled loop connects over TCP)"
    if executor.target.mode != "round_trip":
        return "mode: stream"
    if any(count != 1 for _, count, _, _ in executor.plans):
        return "several messages a transaction"
    if any(not 0 < reply <= 1 << 20 for _, _, reply, _ in executor.plans):
        return "no reply, or one over 1 MiB, to a message"
    if len(set(executor.deadlines)) != 1:
        return "transactions with deadlines of their own (the compiled loop keeps one)"
    return None


class NativeEngine(Engine):
    """engine.Engine's closed loop, its users in the compiled loop (see the module's text). What
    the loop sends and expects, and how a row's error is worded, are the target's: NativeHttpEngine
    and NativeTcpEngine below."""

    def __init__(self, workload: Workload, executor: Any, recorder: Recorder, phases: Phases, t0: float,
                 users: int | None = None, seed: int | None = None, share: Share = Share()):
        self._count_reader: Callable[[], dict[str, int]] | None = None
        super().__init__(workload, executor, recorder, phases, t0, users=users, seed=seed, share=share)
        self.core: Any = None
        self._connects = 0
        self._errors = b""  # the last take()'s ErrorResponses (E_SERVER rows point into it)
        self._address = self._resolve()

    # --- the target's part ---------------------------------------------------------------

    @staticmethod
    def reason(workload: Workload, executor: Any) -> str | None:
        """Why the compiled loop cannot run this workload's transactions (None: it can)."""
        raise NotImplementedError

    def _resolve(self) -> tuple[int, str, int]:
        """(address family, address, port) the users connect to."""
        raise NotImplementedError

    def _exchanges(self) -> list[tuple]:
        """Each transaction's http_loop.c txspec_t, in the workload's order."""
        raise NotImplementedError

    def _timeout(self) -> float:
        """Seconds a connection or a response may take before the transaction fails."""
        raise NotImplementedError

    def _connected(self, count: int) -> None:
        """`count` more connections made (the target's driver.connects)."""
        raise NotImplementedError

    def _error(self, row) -> str:
        """A row's error, worded as the Python path words it."""
        raise NotImplementedError

    def _loop_options(self) -> tuple:
        """The Loop's arguments after the common ones (PostgreSQL's users: their transactions)."""
        return ()

    def _sync_counts(self) -> None:
        """What the loop counted for the driver's counters, into them (the window's edges read them)."""
        self._sync_connects()

    def _given_up_text(self, row) -> str:
        """E_GIVEN_UP: as Engine._given_up words it."""
        tx = int(row["tx"])
        deadline = self.deadlines[tx]
        end, actual = float(row["end"]), float(row["actual"])
        if end - actual >= deadline:
            self._hung(tx)
            return f"{deadline_text(deadline)}: still in flight {max(0.0, end - self.stop_at):.1f} s after the " \
                   "window's end; given up"
        return f"still in flight when the run ended ({self.outcome.status}); given up"

    # The driver's connection count lives in the loop until a pump: read it at the window's edges.
    @property
    def count_reader(self) -> Callable[[], dict[str, int]] | None:
        if self._count_reader is None:
            return None
        reader = self._count_reader

        def read() -> dict[str, int]:
            self._sync_counts()
            return reader()

        return read

    @count_reader.setter
    def count_reader(self, reader: Callable[[], dict[str, int]] | None) -> None:
        self._count_reader = reader

    def _make_core(self) -> Any:
        thinks: list[tuple[int, float, float, float]] = []
        think_ids: dict[int, int] = {}

        def think_id(think) -> int:
            if id(think) not in think_ids:
                spec = _think_spec(think)
                assert spec is not None  # choose_core admitted only these
                think_ids[id(think)] = len(thinks)
                thinks.append(spec)
            return think_ids[id(think)]

        txs = self._exchanges()
        scripts = [[(step.tx_index, step.klass, think_id(step.think)) for step in script.steps]
                   for script in self.scripts]
        family, address, port = self._address
        users = self.users or 0
        return http_loop.Loop(
            family, address, port, self._timeout(), txs, thinks, scripts,
            [script.index for script in self.mix], [float(c) for c in self.mix_cumulative],
            self.init.index if self.init is not None else -1,
            users, self.share.first_user, self.share.all_users or users, self.seed & ((1 << 64) - 1),
            self.t0, self.phases.stagger, self.stop_at, self._residual_start, *self._loop_options())

    @property
    def in_flight(self) -> int:  # the live display reads it
        return int(self.core.in_flight) if self.core is not None else 0

    @in_flight.setter
    def in_flight(self, value: int) -> None:
        pass  # Engine.__init__ sets it; the loop counts its own

    async def run(self, on_tick: Callable[[Engine, float], None] | None = None, tick_s: float = 0.5) -> Outcome:
        loop = asyncio.get_running_loop()
        self.outcome.started_at = time.monotonic()
        window = asyncio.ensure_future(self._measure_driver(loop))
        if self.core is None:  # PostgreSQL's users made it to log on before the run (native_pg.py)
            self.core = self._make_core()
        users_done = loop.run_in_executor(None, self.core.run)
        if self.cut_short:
            self.core.cut()
        while not self.stopping:
            now = time.monotonic()
            if now >= self.stop_at:
                break
            await sleep_until(min(now + tick_s, self.stop_at))
            self._pump()
            if on_tick is not None:
                on_tick(self, time.monotonic() - self.t0)
        self._stop()
        started = time.monotonic()
        while not users_done.done() and (left := started + self.drain_wait_s - time.monotonic()) > 0:
            await asyncio.wait({users_done}, timeout=min(left, 0.5))
            self._pump()
        if not users_done.done():
            self.core.give_up()  # still in flight a deadline after the window: recorded as given up
        try:
            await users_done
        except OSError as exc:
            self.fail(f"driver error: {type(exc).__name__}: {exc}")
        self._pump()
        window.cancel()
        await asyncio.gather(window, return_exceptions=True)
        if on_tick is not None:
            on_tick(self, time.monotonic() - self.t0)
        return self.outcome

    def _stop(self) -> None:
        self.stopping = True
        if self.cut_short and self.core is not None:
            self.core.cut()  # parked users wake no more; the ones in flight end

    def _sync_connects(self) -> None:
        if self.core is None:
            return
        connects = int(self.core.connects)
        if connects > self._connects:
            self._connected(connects - self._connects)
        self._connects = connects

    def _pump(self) -> None:
        """The rows and pending thinks the loop recorded since the last pump, into the recorder."""
        raw_rows, raw_pending, _, self._errors = self.core.take()
        self._sync_counts()
        if raw_rows:
            rows = np.frombuffer(raw_rows, ROW_DTYPE)
            errors = {int(i): self._error(rows[i]) for i in np.flatnonzero(rows["err"])}
            self.recorder.add_block(rows["uid"], rows["script"], rows["tx"], rows["klass"], rows["intended"],
                                    rows["actual"], rows["first"], rows["end"], rows["ok"].astype(bool),
                                    rows["think"], errors)
        if raw_pending:
            for p in np.frombuffer(raw_pending, PENDING_DTYPE):
                self.recorder.add_pending_think(int(p["uid"]), int(p["tx"]), int(p["klass"]), float(p["start"]),
                                                float(p["think"]))

class NativeHttpEngine(NativeEngine):
    """HTTP requests in the compiled loop: each transaction's one fixed request (http_request.py)."""

    reason = staticmethod(http_reason)

    def __init__(self, workload: Workload, executor: Any, recorder: Recorder, phases: Phases, t0: float,
                 users: int | None = None, seed: int | None = None, share: Share = Share()):
        from perflab.drive.adapters.http import HttpExecutor

        assert isinstance(executor, HttpExecutor)  # choose_core admits nothing else
        self.http: HttpExecutor = executor
        super().__init__(workload, executor, recorder, phases, t0, users=users, seed=seed, share=share)

    def _resolve(self) -> tuple[int, str, int]:
        from perflab.drive.adapters.http_client import LeanClient

        host, port, _ = LeanClient.address(self.http.base)
        family, _, _, _, sockaddr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        return int(family), str(sockaddr[0]), port

    def _exchanges(self) -> list[tuple]:
        txs = []
        for request in self.http.fast:
            assert request is not None  # every transaction is one fixed request (choose_core)
            statuses = tuple(sorted(request.statuses)) if request.statuses else ()
            txs.append((request.wire, request.idempotent, request.method == "HEAD", statuses, request.expected))
        return txs

    def _timeout(self) -> float:
        return float(self.http.target.timeout)

    def _connected(self, count: int) -> None:
        self.http.counts.connected(count)

    def _error(self, row) -> str:
        """A row's error, worded as the Python path words it (http.py, http_client.py)."""
        from perflab.drive.adapters.http import error_text

        err, detail, tx = int(row["err"]), int(row["detail"]), int(row["tx"])
        timeout = self.http.target.timeout
        if err in (E_STATUS, E_BODY):
            request = self.http.fast[tx]
            assert request is not None  # every transaction is one fixed request (choose_core)
            return (request.problem(detail, b"") or f"HTTP {detail}")[:500]
        if err == E_CONNECT_TIMEOUT:
            return f"TimeoutError: no connection within {timeout:g} s"
        if err == E_RESPONSE_TIMEOUT:
            return f"TimeoutError: no response within {timeout:g} s"
        if err in (E_CONNECT_OS, E_IO_OS):
            return error_text(OSError(detail, os.strerror(detail)))
        if err == E_CLOSED:
            return "ConnectionResetError: connection closed by the server"
        if err == E_KEEPALIVE:
            return "KeepAliveClosed: the server closed the kept-alive connection before answering"
        if err == E_MALFORMED:
            return f"ConnectionError: malformed HTTP response: {MALFORMED.get(detail, 'unreadable')}"
        return self._given_up_text(row)



class NativeTcpEngine(NativeEngine):
    """The TCP adapter's exchanges in the compiled loop: the message, then the reply's bytes,
    compared as tcp.py compares them."""

    reason = staticmethod(tcp_reason)

    def __init__(self, workload: Workload, executor: Any, recorder: Recorder, phases: Phases, t0: float,
                 users: int | None = None, seed: int | None = None, share: Share = Share()):
        from perflab.drive.adapters.tcp import TcpExecutor

        assert isinstance(executor, TcpExecutor)  # choose_core admits nothing else
        self.tcp: TcpExecutor = executor
        super().__init__(workload, executor, recorder, phases, t0, users=users, seed=seed, share=share)

    def _resolve(self) -> tuple[int, str, int]:
        port = self.tcp.target.port
        assert port is not None  # a TCP target without a Unix socket has its port (the model checks)
        family, _, _, _, sockaddr = socket.getaddrinfo(self.tcp.host, port, type=socket.SOCK_STREAM)[0]
        return int(family), str(sockaddr[0]), port

    def _exchanges(self) -> list[tuple]:
        # (message, not idempotent: never sent twice, not HEAD, no statuses, the reply to match
        # exactly or None, the reply's length: a raw exchange)
        return [(payload, False, False, (), expected, reply) for payload, _, reply, expected in self.tcp.plans]

    def _timeout(self) -> float:
        return float(self.tcp.deadlines[0])  # one for all (choose_core)

    def _connected(self, count: int) -> None:
        self.tcp.counts.connected(count)

    def _error(self, row) -> str:
        """A row's error, worded as tcp.py words it."""
        from perflab.drive.adapters.tcp import CLOSED_EARLY, mismatch_text

        err, detail, tx = int(row["err"]), int(row["detail"]), int(row["tx"])
        if err == E_BODY:
            payload, _, _, expected = self.tcp.plans[tx]
            assert expected is not None  # only a checked reply fails so
            return mismatch_text(expected, payload)
        if err in (E_CONNECT_TIMEOUT, E_RESPONSE_TIMEOUT):
            self._hung(tx)  # as tcp.py's deadline: the connection dropped, the transaction hung
            return deadline_text(self.deadlines[tx])
        if err in (E_CONNECT_OS, E_IO_OS):
            exc = OSError(detail, os.strerror(detail))
            return f"{type(exc).__name__}: {exc}"[:500]
        if err in (E_CLOSED, E_KEEPALIVE):
            return CLOSED_EARLY
        if err == E_MALFORMED:
            return "ProtocolError: more bytes came back than the reply's"
        return self._given_up_text(row)


def say_fallback(choice: CoreChoice) -> None:
    """A run that could have had the compiled loop and did not get it says so, once."""
    if not choice.native and choice.reason == NOT_BUILT and NOT_BUILT is not None:
        print(f"perflab: {NOT_BUILT}: {SLOWER}", file=sys.stderr)


"""Users and arrivals run by perflab's compiled loop (drive/load/loop/), wherever the workload
allows: the default, with no setting.

The Python path (engine.py's users, http.py's lean client) costs about 2.6x wrk's CPU per
request on this machine; the kernel's part is the same for both, the rest is the interpreter's
(docs/performance.md, issue 28). For the HTTP, TCP and PostgreSQL targets the users' loop --
logon, think, script pick, parameter draws, send, parse, check, recorder row -- runs in C on a
thread of its own, the GIL released: closed-loop users, and open-loop arrivals (`rate:`) with
their intended start taken from the arrival schedule, so lateness and response time count from
it and a slow server shows in them (coordinated omission), at most `max_in_flight` in flight.
Python keeps the run's time line (the window's edges, the driver's CPU over it, the monitor's
edge samples, a cut-short run, the drain), takes the rows in blocks every tick (`_pump`) and
words their errors as the Python path does.

An HTTP transaction is one request on the user's own keep-alive connection (plain or TLS), its
`{placeholders}` filled with the transaction's parameters (native_requests.py); a TCP one is the
TCP adapter's message and a reply of known length (`mode: round_trip`, one message a
transaction); PostgreSQL's are native_pg.py's. What the loop cannot run exactly as the Python
path would (choose_core says which, and why) takes the Python path; the run says so once, at
its start and in run.json's `fingerprint.driver_core`, and `perflab validate` says it before.

The same seed draws the same script picks, think times, arrival times and parameters as the
Python engine (the streams are workload/rng.py's SplitMix64, in C; tests/core/
test_native_http_draws.py and tests/net/test_native_http.py compare them), so the two paths
differ only in what they cost. `driver: {core: python}` keeps the Python path; when the
extension is not built (not Linux, no compiler at install) the run says so and takes it.
"""

from __future__ import annotations

import asyncio
import os
import socket
import struct
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from perflab.drive.load.deadline import deadline_text
from perflab.drive.load.engine import Engine, Outcome, Phases, Share, sleep_until
from perflab.drive.load.native_params import param_spec
from perflab.drive.load.recorder import Recorder
from perflab.workload.model import BatchLoad, ClosedLoad, OpenLoad, Workload
from perflab.workload.thinktime import ConstantThink, ExponentialThink, LognormalThink, UniformThink, lognormal_mu

try:
    from perflab.drive.load import http_loop  # type: ignore[attr-defined]
    NOT_BUILT: str | None = None
except ImportError as exc:  # not built: not Linux, or no C compiler when perflab was installed
    http_loop = None
    NOT_BUILT = f"perflab's compiled loop is not built here ({exc})"

#: loop.h's row_t and pending_t.
ROW_DTYPE = np.dtype({"names": ["intended", "actual", "first", "end", "think", "uid", "script", "tx", "klass", "ok",
                                "err", "detail"],
                      "formats": ["<f8", "<f8", "<f8", "<f8", "<f8", "<i4", "<i2", "<i2", "<i2", "u1", "u1", "<i4"],
                      "offsets": [0, 8, 16, 24, 32, 40, 44, 46, 48, 50, 51, 52], "itemsize": 56})
PENDING_DTYPE = np.dtype({"names": ["start", "think", "uid", "tx", "klass"],
                          "formats": ["<f8", "<f8", "<i4", "<i2", "<i2"], "offsets": [0, 8, 16, 20, 22],
                          "itemsize": 24})

# loop.h's error kinds and what was malformed (http_parse.h's HM_*, loop.h's M_*)
(E_STATUS, E_BODY, E_CONNECT_TIMEOUT, E_RESPONSE_TIMEOUT, E_CONNECT_OS, E_IO_OS, E_CLOSED, E_MALFORMED, E_GIVEN_UP,
 E_KEEPALIVE, E_SERVER, E_AUTH, E_SERVER_CLOSED, E_DROPPED, E_TLS, E_NOMEM) = range(1, 17)
MALFORMED = {1: "no HTTP/1.x status line", 2: "invalid Content-Length", 3: "invalid chunk in a chunked body",
             4: "head or trailer too large", 5: "more bytes came back than the reply's",
             6: "a PostgreSQL message of impossible length or type", 7: "a line ended by LF without CR",
             8: "invalid Transfer-Encoding", 9: "invalid header line"}
# timing.wake -> the loop's timer grids (s), (think ends and deadlines, an open loop's arrivals):
# exact wakes at each due time; tick on whole milliseconds of the monotonic clock (the Python
# engine's event-loop timer); auto, the default, think ends exact and arrivals on the grid, as the
# Python engine's open loop always ran them (and wrk2's): at 10,000 arrivals/s exact arrivals cost
# the driver 43 us of CPU each on this KVM guest, on the grid 8-9 (bench/findings.md). An
# arrival's wait for its grid point is lateness, recorded; its intended time stays the schedule's.
WAKE_GRIDS_S = {"auto": (0.0, 0.001), "exact": (0.0, 0.0), "tick": (0.001, 0.001)}
NOMEM_TEXT = "MemoryError: the driver ran out of memory (the run fails)"
#: The Python path's cost beside the compiled loop's, said when a run falls back to it.
SLOWER = "the Python path costs about twice the driver CPU per request"


@dataclass(frozen=True)
class CoreChoice:
    """Which loop runs the users, and why not the compiled one (None: it runs)."""

    native: bool
    reason: str | None = None
    #: the compiled loop's engine for the target's kind (its registry line's `native`), when it runs
    engine: Any = field(default=None, compare=False)
    #: the compiled loop drives this kind of target at all (a sqlite target's runs are not told)
    applies: bool = True
    #: known before the run (False: `perflab validate` could not tell; the run will say)
    known: bool = True

    def fingerprint(self) -> str:
        return "native" if self.native else f"python ({self.reason})"

    def sentence(self) -> str:
        """What a user is told, at the run's start and by `perflab validate`."""
        if not self.known:
            return f"decided when the run starts ({self.reason})"
        if self.native:
            return "the compiled loop runs this workload's users"
        return f"the Python path runs this workload's users: {self.reason} ({SLOWER})"


def _think_spec(think) -> tuple[int, float, float, float] | None:
    """rng.h's think_t of a think-time distribution, or None if the C loop has none of it."""
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


def choose_core(workload: Workload, executor: Any, users: int | None, rate: float | None = None) -> CoreChoice:
    """Whether the compiled loop can run this run's users (or arrivals) exactly as the Python path
    would: the target kind's engine (its registry line's `native`, workload/kinds.py) says what it
    cannot send."""
    from perflab.drive.adapters.registry import native_engine
    from perflab.workload.kinds import KINDS, words

    if workload.driver.core == "python":
        return CoreChoice(False, "driver.core: python")
    engine = native_engine(KINDS.of(workload.target))
    if engine is None:
        served = words(k.name for k in KINDS if k.native is not None)
        return CoreChoice(False, f"a {workload.target.kind} target (the compiled loop drives {served})", applies=False)
    load = workload.load
    if isinstance(load, BatchLoad) or (isinstance(load, ClosedLoad) and load.batch is not None):
        return CoreChoice(False, "a job stream (its initiators are the Python engine's)")
    open_loop = rate is not None or (users is None and isinstance(load, OpenLoad))
    if open_loop and not engine.open_loop:
        return CoreChoice(False, f"open loop (the compiled loop's {workload.target.kind} users are closed-loop)")
    reason = engine.reason(workload, executor)
    if reason is not None:
        return CoreChoice(False, reason)
    from perflab.drive.load.mix import compile_scripts

    compiled = compile_scripts(workload)
    if not compiled.mix:
        return CoreChoice(False, "no script to choose after the init script")
    for script in compiled.scripts:
        for step in script.steps:
            if _think_spec(step.think) is None:
                return CoreChoice(False, f"think time {step.think.dist} (the compiled loop draws constant, uniform, "
                                         "exponential and lognormal)")
    for tx in workload.transactions:
        for name, spec in tx.params.items():
            if param_spec(spec) is None:
                return CoreChoice(False, f"transaction {tx.name}: parameter {name} (the compiled loop draws "
                                         "random_int ranges below 2^53, sequences, choices and values)")
    if NOT_BUILT is not None:
        return CoreChoice(False, NOT_BUILT)
    return CoreChoice(True, engine=engine)


def http_reason(workload: Workload, executor: Any) -> str | None:
    """Why the compiled loop cannot send this HTTP workload's requests (None: it can)."""
    from perflab.drive.load.native_requests import Refused, request_spec

    if not executor.lean:
        return "client: aiohttp (the compiled loop speaks as client: httptools, the default where it is installed)"
    if executor.tls is not None and not (http_loop is not None and http_loop.TLS):
        return "https (the compiled loop was built without OpenSSL's headers)"
    if not (executor.per_user or executor.per_transaction):
        return f"connections: {executor.target.connections} (the compiled loop keeps a connection per user, or " \
               "makes one per transaction)"
    if any(request.extract for plan in executor.plans for request in plan):
        return "values extracted from responses (the compiled loop sends what the workload's parameters make)"
    host = executor.host_header
    for tx, plan in zip(workload.transactions, executor.plans):
        if len(plan) != 1:
            return f"transaction {tx.name} makes several requests (the compiled loop sends one a transaction)"
        request = plan[0]
        if request.path.startswith(("http://", "https://")):
            return f"transaction {tx.name} sends to a URL of its own (the compiled loop sends to target.base_url)"
        if request.expected is not None and len(request.expected) > (http_loop.MAX_EXPECT if http_loop else 1 << 16):
            return f"transaction {tx.name}: expect_body longer than 64 KiB"
        try:
            request_spec(request, host, executor.base, tx.params)
        except Refused as why:
            return f"transaction {tx.name}: {why}"
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


def resolve(host: str, port: int) -> list[tuple[int, str, int]]:
    """Every address the host resolves to, in getaddrinfo's order: the loop tries each in turn."""
    seen: list[tuple[int, str, int]] = []
    for family, _, _, _, sockaddr in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
        if family in (socket.AF_INET, socket.AF_INET6):
            entry = (int(family), str(sockaddr[0]), port)
            if entry not in seen:
                seen.append(entry)
    return seen


class NativeEngine(Engine):
    """engine.Engine's users or arrivals in the compiled loop (see the module's text). What the
    loop sends and expects, and how a row's error is worded, are the target's: NativeHttpEngine
    and NativeTcpEngine below, NativePgEngine in native_pg.py."""

    #: the loop runs this target's arrivals too (open loop)
    open_loop = True

    def __init__(self, workload: Workload, executor: Any, recorder: Recorder, phases: Phases, t0: float,
                 users: int | None = None, rate: float | None = None, seed: int | None = None,
                 share: Share = Share()):
        self._count_reader: Callable[[], dict[str, int]] | None = None
        super().__init__(workload, executor, recorder, phases, t0, users=users, rate=rate, seed=seed, share=share)
        self.core: Any = None
        self._connects = 0
        self._handshakes = (0, 0)
        self._errors = b""  # the last take()'s words (E_SERVER and E_TLS rows point into them)
        self._addresses = self._resolve()

    # --- the target's part ---------------------------------------------------------------

    @staticmethod
    def reason(workload: Workload, executor: Any) -> str | None:
        """Why the compiled loop cannot run this workload's transactions (None: it can)."""
        raise NotImplementedError

    def _resolve(self) -> list[tuple[int, str, int]]:
        """[(address family, address, port)] the users connect to, tried in turn."""
        raise NotImplementedError

    def _protocol(self) -> tuple[Any, list]:
        """(the protocol: "http", "raw" or ("pg", ...), each transaction's spec in the workload's order)."""
        raise NotImplementedError

    def _timeout(self) -> float:
        """Seconds a connection or a response may take before the transaction fails."""
        raise NotImplementedError

    def _tls(self) -> tuple | None:
        """tls.c's settings of an https target (None: plain TCP)."""
        return None

    def _error(self, row) -> str:
        """A row's error, worded as the Python path words it."""
        raise NotImplementedError

    def _sync_counts(self) -> None:
        """What the loop counted for the driver's counters, into them (the window's edges read them)."""
        self._sync_connects()

    def _words(self, row) -> bytes | None:
        """The words an E_SERVER, E_SERVER_CLOSED or E_TLS row carries (None: lost for want of memory)."""
        detail = int(row["detail"])
        if detail < 0:
            return None
        (length,) = struct.unpack_from("=I", self._errors, detail)
        return self._errors[detail + 4:detail + 4 + length]

    def _common_error(self, row) -> str | None:
        """The errors every target words alike (None: the target's own)."""
        err = int(row["err"])
        if err == E_DROPPED:
            return f"dropped: {int(row['detail'])} transactions already in flight"
        if err == E_NOMEM:
            return NOMEM_TEXT
        if err == E_TLS:
            words = self._words(row)
            return "ConnectionError: TLS handshake failed" if words is None else words.decode("utf-8", "replace")[:500]
        if err == E_GIVEN_UP:
            return self._given_up_text(row)
        return None

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

        protocol, txs = self._protocol()
        params = []
        for tx, deadline in zip(self.workload.transactions, self.deadlines):
            specs = [param_spec(spec) for spec in tx.params.values()]  # the ParamMaker's drawing order
            assert all(s is not None for s in specs)  # choose_core admitted only these
            params.append((float(deadline), specs))
        scripts = [[(step.tx_index, step.klass, think_id(step.think)) for step in script.steps]
                   for script in self.scripts]
        if self.users is not None:
            users = self.users
            load: tuple = ("closed", users, self.share.first_user, self.share.all_users or users)
        else:
            assert self.rate is not None  # an open loop's, which has its rate
            load = ("open", float(self.rate), self.arrival == "poisson", int(self.max_in_flight), self.share.index,
                    self.share.count)
        return http_loop.Loop(
            self._addresses, self._timeout(), thinks, scripts,
            [script.index for script in self.mix], [float(c) for c in self.mix_cumulative],
            self.init.index if self.init is not None else -1, load, self.seed & ((1 << 64) - 1),
            self.t0, self.phases.stagger, self.stop_at, self._residual_start, protocol, txs, params, self._tls(),
            WAKE_GRIDS_S[self.workload.timing.wake])

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
            # the run's time line holds whatever the users do (every one may have stopped early: its
            # next think outlasting the window); a loop that failed ends it at once
            if now >= self.stop_at or (users_done.done() and users_done.exception() is not None):
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
        except OSError as exc:  # the loop's own failure (out of memory, a system call): the rows so far are kept
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
        counts = getattr(self.executor, "counts", None)
        if connects > self._connects and counts is not None:
            counts.connected(connects - self._connects)
        self._connects = connects
        handshakes, resumed = self.core.handshakes
        done, done_resumed = self._handshakes
        if handshakes > done and counts is not None:
            counts.handshakes(handshakes - done, resumed - done_resumed)
        self._handshakes = (handshakes, resumed)

    def _pump(self) -> None:
        """The rows and pending thinks the loop recorded since the last pump, into the recorder."""
        raw_rows, raw_pending, _, self._errors, dropped = self.core.take()
        self.outcome.dropped = int(dropped)
        self._sync_counts()
        if raw_rows:
            rows = np.frombuffer(raw_rows, ROW_DTYPE)
            errors = {int(i): self._common_error(rows[i]) or self._error(rows[i]) for i in np.flatnonzero(rows["err"])}
            self.recorder.add_block(rows["uid"], rows["script"], rows["tx"], rows["klass"], rows["intended"],
                                    rows["actual"], rows["first"], rows["end"], rows["ok"].astype(bool),
                                    rows["think"], errors)
        if raw_pending:
            for p in np.frombuffer(raw_pending, PENDING_DTYPE):
                self.recorder.add_pending_think(int(p["uid"]), int(p["tx"]), int(p["klass"]), float(p["start"]),
                                                float(p["think"]))


class NativeHttpEngine(NativeEngine):
    """HTTP requests in the compiled loop: each transaction's one request (native_requests.py)."""

    reason = staticmethod(http_reason)

    def __init__(self, workload: Workload, executor: Any, recorder: Recorder, phases: Phases, t0: float,
                 users: int | None = None, rate: float | None = None, seed: int | None = None,
                 share: Share = Share()):
        from perflab.drive.adapters.http import HttpExecutor

        assert isinstance(executor, HttpExecutor)  # choose_core admits nothing else
        self.http: HttpExecutor = executor
        super().__init__(workload, executor, recorder, phases, t0, users=users, rate=rate, seed=seed, share=share)

    def _resolve(self) -> list[tuple[int, str, int]]:
        from perflab.drive.adapters.http_client import LeanClient

        host, port, _ = LeanClient.address(self.http.base)
        return resolve(host, port)

    def _protocol(self) -> tuple[Any, list]:
        from perflab.drive.load.native_requests import request_spec

        host = self.http.host_header
        protocol = "http-close" if self.http.per_transaction else "http"
        return protocol, [request_spec(plan[0], host, self.http.base, tx.params)
                        for tx, plan in zip(self.workload.transactions, self.http.plans)]

    def _timeout(self) -> float:
        return float(self.http.target.timeout)

    def _tls(self) -> tuple | None:
        options, setup = self.http.tls_options, self.http.tls
        if options is None or setup is None:
            return None
        return (self.http.ca_file if options.verify else None, options.verify, options.version, options.ciphers,
                setup.server_hostname or "", options.session_resumption)

    def _error(self, row) -> str:
        """A row's error, worded as the Python path words it (http.py, http_client.py)."""
        from perflab.drive.adapters.http import error_text

        err, detail, tx = int(row["err"]), int(row["detail"]), int(row["tx"])
        timeout = self.http.target.timeout
        if err in (E_STATUS, E_BODY):
            request = self.http.plans[tx][0]
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
        return f"error {err}"


class NativeTcpEngine(NativeEngine):
    """The TCP adapter's exchanges in the compiled loop: the message, then the reply's bytes,
    compared as tcp.py compares them."""

    reason = staticmethod(tcp_reason)

    def __init__(self, workload: Workload, executor: Any, recorder: Recorder, phases: Phases, t0: float,
                 users: int | None = None, rate: float | None = None, seed: int | None = None,
                 share: Share = Share()):
        from perflab.drive.adapters.tcp import TcpExecutor

        assert isinstance(executor, TcpExecutor)  # choose_core admits nothing else
        self.tcp: TcpExecutor = executor
        super().__init__(workload, executor, recorder, phases, t0, users=users, rate=rate, seed=seed, share=share)

    def _resolve(self) -> list[tuple[int, str, int]]:
        port = self.tcp.target.port
        assert port is not None  # a TCP target without a Unix socket has its port (the model checks)
        return resolve(self.tcp.host, port)

    def _protocol(self) -> tuple[Any, list]:
        # the message, the reply's length, the reply to match exactly or None
        return "raw", [(payload, reply, expected) for payload, _, reply, expected in self.tcp.plans]

    def _timeout(self) -> float:
        return float(self.tcp.deadlines[0])  # one for all (choose_core)

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
        return f"error {err}"


_said: set[str] = set()


def say_core(choice: CoreChoice) -> None:
    """A run that could have had the compiled loop and did not get it says why, once, at its start
    (a study's runs say it the first time only)."""
    if choice.native or not choice.applies or choice.reason is None or choice.reason == "driver.core: python":
        return
    if choice.reason in _said:
        return
    _said.add(choice.reason)
    print(f"perflab: {choice.sentence()}", file=sys.stderr)


def core_for(workload: Workload) -> CoreChoice:
    """The core a run of this workload will get, as `perflab validate` says it: choose_core on the
    executor the run would make, with what only a run has stood in for -- a PostgreSQL server's
    DSN (nothing connects), the service's port, a CA file the service makes (the core does not
    depend on them)."""
    import json

    from perflab.drive.adapters.context import NetworkContext
    from perflab.drive.adapters.registry import make_executor
    from perflab.workload.kinds import KINDS
    from perflab.workload.service_port import TOKEN as SERVICE_PORT

    if not KINDS.of(workload.target).network:
        return choose_core(workload, None, None)
    data = json.loads(json.dumps(workload.model_dump(mode="json", by_alias=True)).replace(SERVICE_PORT, "1"))
    tls = (data.get("target") or {}).get("tls")
    if isinstance(tls, dict):
        tls["ca_file"] = None
    stand_in = Workload.model_validate(data)
    load = stand_in.load
    users = load.users if isinstance(load, ClosedLoad) else None
    rate = load.rate if isinstance(load, OpenLoad) else None
    tokens = {"run_dir": "/nonexistent", "workload_dir": "/nonexistent", "run_id": "validate",
              "service_address": workload.service.address if workload.service else "127.0.0.1"}
    try:
        executor = make_executor(NetworkContext(stand_in, "postgresql://postgres@127.0.0.1:5432/perflab", None, 1,
                                                tokens))
    except Exception as exc:  # noqa: BLE001 -- what only a run has: told, not raised
        return CoreChoice(False, f"{type(exc).__name__}: {exc}", known=False)
    return choose_core(stand_in, executor, users, rate)

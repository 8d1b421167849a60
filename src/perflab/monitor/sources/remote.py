"""The SUT host's monitor, read over the network: a Prometheus node_exporter (and optionally a
process-exporter), or `perflab agent` (monitor/agent.py). Same columns as the local sources,
so reduction is unchanged; where they came from is recorded in run.json (sut.host).

    spec = RemoteSpec("agent", "http://10.0.0.5:8766", token="...")
    info = probe(spec)            # before the run: RemoteUnavailable says why it cannot be used
    src = RemoteSource(spec, t0)  # in the monitor process; read() every sample

Clocks. The agent's samples carry its own CLOCK_MONOTONIC, which means nothing on another
host, so the offset between the two clocks is measured the way NTP does: the driver notes its
clock before (t1) and after (t2) asking the agent's (ta); offset = ta - (t1 + t2) / 2, within
+-(t2 - t1) / 2. Of several tries the one with the shortest round trip is kept. It is measured
when the monitor starts and again when it stops (the difference is the drift over the run),
and every sample's agent time is converted with it into `remote.t` (seconds since t0), beside
the row's own `t` (the midpoint of the request on the driver's clock): the two agree within
the round trip, which the tests check. node_exporter has no monotonic clock to offer; its
`node_time_seconds` gives the offset of the wall clocks (recorded: an NTP health check).

A monitor that stops answering mid-run is not an error of the run: its columns are absent from
the samples from then on (never zero), the time and the reason are in the source's status, and
reduction marks the rows whose window it leaves uncovered `na` with that reason.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from perflab.extras import MissingExtra, require

from . import SourceUnavailable

if TYPE_CHECKING:
    from aiohttp import ClientSession
from .prometheus import NotPrometheus, cpus_in, node_exporter_columns, process_exporter_columns

#: node_exporter collectors perflab reads (its `collect[]` filter): scraping only these costs
#: the exporter and the driver's monitor a small fraction of a full scrape.
NODE_COLLECTORS = ("cpu", "diskstats", "netdev", "meminfo", "vmstat", "time")
CLOCK_TRIES = 7
AGENT_PREFIX = "agent."  # the agent's own CPU, as monitor.* is the driver-side monitor's


class RemoteUnavailable(SourceUnavailable):
    """The SUT host's monitor cannot be used; the message says why."""


@dataclass(frozen=True)
class RemoteSpec:
    """Where the SUT host's monitor is (picklable: it travels in MonitorSpec.remote)."""

    kind: str  # "node_exporter" or "agent"
    url: str
    process_url: str | None = None  # a process-exporter beside node_exporter: (S), (V)
    groups: tuple[str, ...] | None = None  # process-exporter groups that are the SUT
    token: str | None = None  # the agent's
    timeout_s: float = 2.0

    def describe(self) -> str:
        return f"{self.kind} {self.url}" + (f" + process-exporter {self.process_url}" if self.process_url else "")


@dataclass
class HostInfo:
    """What the probe learnt about the SUT host."""

    kind: str
    url: str
    hostname: str | None = None
    boot_id: str | None = None
    cpus: list[int] = field(default_factory=list)
    memory_bytes: int | None = None
    provides: list[str] = field(default_factory=list)  # column groups: h, s, v, sut
    clock_offset_s: float | None = None
    clock_error_s: float | None = None
    wall_offset_s: float | None = None
    agent_version: str | None = None
    sources: dict[str, Any] = field(default_factory=dict)


class Http:
    """A small synchronous HTTP client (aiohttp on a private event loop, one kept-alive session):
    the monitor process is synchronous, as pg_counters.py's asyncpg reads are."""

    def __init__(self, timeout_s: float, token: str | None = None) -> None:
        try:
            aiohttp = require("aiohttp", extra="net", feature="reading the SUT host's monitor")
        except MissingExtra as exc:
            raise RemoteUnavailable(str(exc)) from None
        self._aiohttp = aiohttp
        self._loop = asyncio.new_event_loop()
        self._timeout = aiohttp.ClientTimeout(total=timeout_s)
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._session: ClientSession | None = None  # made on the first request, in the loop

    async def _get(self, url: str, params) -> tuple[int, str]:
        session = self._session
        if session is None:
            session = self._session = self._aiohttp.ClientSession(timeout=self._timeout, headers=self._headers)
        async with session.get(url, params=params) as response:
            return response.status, await response.text()

    def get(self, url: str, params=None) -> str:
        """The body of a 200 answer; RemoteUnavailable with the reason otherwise."""
        try:
            status, text = self._loop.run_until_complete(self._get(url, params))
        except TimeoutError:
            raise RemoteUnavailable(f"{url}: no answer within {self._timeout.total:g} s") from None
        except Exception as exc:
            raise RemoteUnavailable(f"{url}: {type(exc).__name__}: {exc}") from None
        if status != 200:
            why = {401: "the token was refused", 403: "forbidden", 404: "not found"}.get(status, text.strip()[:200])
            raise RemoteUnavailable(f"{url}: HTTP {status}: {why}")
        return text

    def close(self) -> None:
        try:
            if self._session is not None:
                self._loop.run_until_complete(self._session.close())
        finally:
            self._loop.close()


def _join(base: str, path: str) -> str:
    return base.rstrip("/") + path


def _agent_json(http: Http, url: str, path: str, expect: tuple[str, ...]) -> dict[str, Any]:
    """A perflab agent's JSON answer at `path`, with the keys it always has; RemoteUnavailable
    in one line when the server there is something else (a web server, a node_exporter)."""
    address = _join(url, path)
    text = http.get(address)
    try:
        answer = json.loads(text)
    except ValueError:
        answer = None
    if not isinstance(answer, dict) or any(key not in answer for key in expect):
        shown = " ".join(text.split())[:60]
        raise RemoteUnavailable(f"{address}: not a perflab agent (its answer {shown!r} is not the agent's JSON; "
                                f"is it another server's port? `perflab agent` prints its own address)")
    return answer


def _exporter_columns(http: Http, url: str, params, read) -> dict[str, float]:
    """An exporter's columns; RemoteUnavailable in one line when the page is not Prometheus text."""
    text = http.get(url, params)
    try:
        return read(text)
    except NotPrometheus as exc:
        raise RemoteUnavailable(f"{url}: {exc}") from None


def _node_params(url: str):
    # The user's own query (a proxy's, or collect[] of their choice) is kept as given.
    return None if urllib.parse.urlsplit(url).query else [("collect[]", c) for c in NODE_COLLECTORS]


def measure_clock(http: Http, url: str, tries: int = CLOCK_TRIES) -> tuple[float, float, float]:
    """(monotonic offset, its error bound, wall-clock offset) of the agent at `url` against this
    host: the agent's clock minus ours, from the try with the shortest round trip."""
    best: tuple[float, float, float] | None = None
    for _ in range(tries):
        t1, w1 = time.monotonic(), time.time()
        answer = _agent_json(http, url, "/clock", ("monotonic", "realtime"))
        t2, w2 = time.monotonic(), time.time()
        half = (t2 - t1) / 2
        candidate = (half, answer["monotonic"] - (t1 + t2) / 2, answer["realtime"] - (w1 + w2) / 2)
        if best is None or candidate[0] < best[0]:
            best = candidate
    if best is None:
        raise ValueError("measure_clock needs tries >= 1")
    return best[1], best[0], best[2]


def probe(spec: RemoteSpec) -> HostInfo:
    """Reach the monitor once, before the run: its host's processors, memory, what it provides
    and its clock. RemoteUnavailable (with the reason) when it cannot be used."""
    http = Http(spec.timeout_s, spec.token)
    try:
        if spec.kind == "agent":
            facts = _agent_json(http, spec.url, "/info", ("perflab", "provides"))
            offset, error, wall = measure_clock(http, spec.url)
            return HostInfo(kind="agent", url=spec.url, hostname=facts.get("hostname"), boot_id=facts.get("boot_id"),
                            cpus=list(facts.get("cpus") or []), memory_bytes=facts.get("memory_bytes"),
                            provides=list(facts.get("provides") or []), clock_offset_s=offset, clock_error_s=error,
                            wall_offset_s=wall, agent_version=facts.get("perflab"),
                            sources=dict(facts.get("sources") or {}))
        w1 = time.time()
        columns = _exporter_columns(http, spec.url, _node_params(spec.url), node_exporter_columns)
        w2 = time.time()
        cpus = cpus_in(columns)
        if not cpus:
            raise RemoteUnavailable(f"{spec.url}: no node_cpu_seconds_total in the scrape: not a node_exporter "
                                    "(or its cpu collector is off)")
        provides = ["h"]
        if spec.process_url:
            groups = _exporter_columns(http, spec.process_url, None,
                                       lambda text: process_exporter_columns(text, list(spec.groups) if spec.groups
                                                                             else None))
            if spec.groups and not any(k.startswith("s.") for k in groups):
                raise RemoteUnavailable(f"{spec.process_url}: the process-exporter has no group "
                                        f"{sorted(spec.groups)} (yet)")
            if not any(k.startswith("v.") for k in groups):
                raise RemoteUnavailable(f"{spec.process_url}: no namedprocess_namegroup_* metrics: not a "
                                        "process-exporter, or no process matched its groups")
            provides += ["s", "v"]
        wall_time = columns.get("remote.wall_time")
        total = columns.get("h.mem.total_bytes")
        return HostInfo(kind="node_exporter", url=spec.url, cpus=cpus, provides=provides,
                        memory_bytes=int(total) if total else None,
                        wall_offset_s=None if wall_time is None else wall_time - (w1 + w2) / 2,
                        clock_error_s=(w2 - w1) / 2)
    finally:
        http.close()


class RemoteSource:
    """The monitor process's reader of the SUT host's monitor (see the module doc)."""

    name = "remote"

    def __init__(self, spec: RemoteSpec, t0_monotonic: float) -> None:
        self._spec = spec
        self._t0 = t0_monotonic
        self._http = Http(spec.timeout_s, spec.token)
        self._state: dict[str, Any] = {"kind": spec.kind, "url": spec.url, "samples": 0, "failures": 0,
                                       "lost_at": None, "lost_reason": None, "gaps": []}
        try:
            if spec.kind == "agent":
                offset, error, wall = measure_clock(self._http, spec.url)
                self._state.update(clock_offset_s=offset, clock_error_s=error, wall_offset_s=wall)
            else:
                self._read_exporters()  # reachable, and a node_exporter: else unavailable now
        except RemoteUnavailable:
            self._http.close()
            raise
        self._offset: float | None = self._state.get("clock_offset_s")  # an agent's (measured above)

    def _read_exporters(self) -> dict[str, float]:
        spec = self._spec
        out = node_exporter_columns(self._http.get(spec.url, _node_params(spec.url)))
        if not cpus_in(out):
            raise RemoteUnavailable(f"{spec.url}: no node_cpu_seconds_total in the scrape")
        if spec.process_url:
            out.update(process_exporter_columns(self._http.get(spec.process_url),
                                                list(spec.groups) if spec.groups else None))
        return out

    def _read_agent(self) -> dict[str, float]:
        t1 = time.monotonic()
        answer = json.loads(self._http.get(_join(self._spec.url, "/sample")))
        t2 = time.monotonic()
        out = {}
        for key, value in answer["values"].items():
            if value is None:
                continue
            out[AGENT_PREFIX + key[len("monitor."):] if key.startswith("monitor.") else key] = float(value)
        out["remote.t"] = answer["t"] - self._offset - self._t0
        out["remote.rtt_s"] = t2 - t1
        # the request's own midpoint: the row's `t` is the midpoint of reading every source, the
        # local ones too, so only this one bounds where the agent's reading lies (within rtt/2)
        out["remote.mid"] = (t1 + t2) / 2 - self._t0
        return out

    def read(self) -> dict[str, float]:
        state = self._state
        gaps = state["gaps"]
        try:
            out = self._read_agent() if self._spec.kind == "agent" else self._read_exporters()
        except Exception as exc:  # lost: no columns in this sample (never a made-up value)
            state["failures"] += 1
            if not gaps or gaps[-1]["to"] is not None:
                reason = str(exc) if isinstance(exc, RemoteUnavailable) else f"{type(exc).__name__}: {exc}"
                gaps.append({"from": round(time.monotonic() - self._t0, 3), "to": None, "reason": reason})
                if state["lost_at"] is None:
                    state["lost_at"], state["lost_reason"] = gaps[-1]["from"], reason
            return {}
        if gaps and gaps[-1]["to"] is None:
            gaps[-1]["to"] = round(time.monotonic() - self._t0, 3)
        state["samples"] += 1
        return out

    def status(self) -> dict[str, Any]:
        """Samples read, failures, the first loss (lost_at, lost_reason, seconds since t0) and
        every gap (from, to: None while still lost), the clock offsets."""
        return {**self._state, "gaps": [dict(g) for g in self._state["gaps"]]}

    def close(self) -> None:
        try:
            gaps = self._state["gaps"]
            if self._spec.kind == "agent" and self._offset is not None and not (gaps and gaps[-1]["to"] is None):
                offset, error, _ = measure_clock(self._http, self._spec.url, tries=3)
                self._state.update(clock_offset_end_s=offset, clock_error_end_s=error,
                                   clock_drift_s=offset - self._offset)
        except Exception:
            pass  # the run keeps its start offset; the drift is unknown
        finally:
            self._http.close()


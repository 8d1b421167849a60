"""`perflab agent`: perflab's own monitor sources, served to the driver's host over HTTP.

A SUT perflab does not start (a staging database, a web service) runs on a host of its own;
the agent runs there and reads, when asked, the same sources the monitor process reads
locally -- /proc/stat, /proc/vmstat, /proc/diskstats, /proc/net/dev, the SUT's cgroup or its
process tree (found by name), PostgreSQL's counters -- and answers with the same columns
(docs/architecture.md), so a remote run reduces exactly as a local one.

    GET /info    {"perflab", "hostname", "boot_id", "cpus", "memory_bytes", "provides", "sources"}
    GET /clock   {"monotonic", "realtime"}: for the driver's offset measurement (sources/remote.py)
    GET /sample  {"t": CLOCK_MONOTONIC here, the midpoint of the reads, "values": {column: value}}

Every request carries `Authorization: Bearer <token>` when the agent was given a token
(compared in constant time); without one it only listens on the loopback. It changes nothing
on the host: it reads /proc, /sys/fs/cgroup and pg_stat_database.

The SUT: `--cgroup PATH` (exact CPU from the cgroup, processes found by membership) or
`--pid-match REGEX` (processes whose name or command line matches, and their descendants;
looked for again before every sample, so a server restarted or started later is found).
"""

from __future__ import annotations

import os
import re
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perflab import __version__
from perflab.extras import require
from perflab.http_server import bearer_matches, serve_until_stopped

from .sampler import MonitorSpec

if TYPE_CHECKING:
    from aiohttp import web as aiohttp_web
from .sources import close_all
from .sources.procfs import read_bytes, read_pid_stat


@dataclass
class AgentConfig:
    cgroup: str | dict[str, str] | None = None
    pid_match: str | None = None
    components: dict[str, str] = field(default_factory=dict)
    pg_dsn: str | None = None
    cpus: list[int] | None = None


class PidMatcher:
    """The roots of the processes whose comm or command line matches: matching processes whose
    parent does not match (a server's master, not each of its workers)."""

    def __init__(self, pattern: str) -> None:
        self._rx = re.compile(pattern)
        self._me = os.getpid()

    def roots(self) -> list[int]:
        matched: dict[int, int] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == self._me:
                continue
            pid = int(entry)
            st = read_pid_stat(pid)
            if st is None:
                continue
            if self._rx.search(st.comm):
                matched[pid] = st.ppid
                continue
            raw = read_bytes(f"/proc/{pid}/cmdline") or b""
            if raw and self._rx.search(raw.replace(b"\0", b" ").decode("utf-8", "replace")):
                matched[pid] = st.ppid
        return sorted(pid for pid, ppid in matched.items() if ppid not in matched)


def online_cpus() -> list[int]:
    data = read_bytes("/proc/stat") or b""
    return sorted(int(line.split()[0][3:]) for line in data.splitlines()
                  if line.startswith(b"cpu") and not line.startswith(b"cpu "))


def cgroup_cpus(cgroup: str | dict[str, str] | None) -> list[int] | None:
    """The CPUs a cgroup may run on (its effective cpuset), when it has one."""
    from perflab.sut.cgroup import parse_cpu_list

    if cgroup is None:
        return None
    if isinstance(cgroup, dict):
        candidates = [Path(cgroup["cpuset"]) / "cpuset.effective_cpus"] if "cpuset" in cgroup else []
        if "unified" in cgroup:
            candidates.append(Path(cgroup["unified"]) / "cpuset.cpus.effective")
    else:
        candidates = [Path(cgroup) / "cpuset.cpus.effective", Path(cgroup) / "cpuset.effective_cpus"]
    for path in candidates:
        try:
            cpus = sorted(parse_cpu_list(path.read_text().strip()))
        except OSError:
            continue
        if cpus:
            return cpus
    return None


def resolve_cgroup(path: str) -> str | dict[str, str]:
    """`--cgroup`: a v2 directory, a v1 directory under one controller (its siblings under the
    other controllers are found by the same relative path), or a cgroup path such as
    /system.slice/postgresql.service looked up under every mounted hierarchy. ValueError when
    there is none."""
    from perflab.sut.cgroup import hierarchies

    given = Path(path)
    mounts = hierarchies()
    if (given / "cgroup.controllers").exists():
        return str(given)
    relative = None
    for h in mounts:
        try:
            relative = given.relative_to(h.mount)
            break
        except ValueError:
            continue
    if relative is None:
        relative = Path(str(given).lstrip("/"))
    found: dict[str, str] = {}
    for h in mounts:
        candidate = h.mount / relative
        if not candidate.is_dir():
            continue
        if h.version == 2:
            if h.controllers or not found:
                found["unified"] = str(candidate)
        else:
            for controller in h.controllers:
                found[controller] = str(candidate)
    if not found:
        raise ValueError(f"no cgroup {path} (looked under {', '.join(str(h.mount) for h in mounts) or 'no mount'})")
    if set(found) == {"unified"}:
        return found["unified"]
    found.pop("unified", None)
    return found


class Agent:
    """The sources, read under a lock (one sample at a time, whoever asks)."""

    def __init__(self, config: AgentConfig) -> None:
        from .monitor_process import build_sources

        counters = None
        if config.pg_dsn:
            counters = pg_counter_spec(config.pg_dsn)
        spec = MonitorSpec(out_path=os.devnull, t0_monotonic=0.0, sut_cgroup=config.cgroup,
                           components=dict(config.components), driver_pid=None, counters=counters,
                           perf_counters=False)
        self.config = config
        self.sources, self.status, self.tree = build_sources(spec)
        self.matcher = PidMatcher(config.pid_match) if config.pid_match else None
        self.lock = threading.Lock()
        self.errors: dict[str, str] = {}
        self.sample()  # the first reading: counters start, the tree finds its processes

    def sample(self) -> dict[str, Any]:
        with self.lock:
            begin = time.monotonic()
            if self.matcher is not None:
                self.tree.add_roots(self.matcher.roots())
            values: dict[str, float] = {}
            for src in self.sources:
                try:
                    values.update(src.read())
                except Exception as exc:  # one source's trouble must not cost the others
                    self.errors.setdefault(src.name, f"{type(exc).__name__}: {exc}")
            end = time.monotonic()
        return {"t": (begin + end) / 2, "values": {k: v for k, v in values.items() if v == v}}

    def info(self) -> dict[str, Any]:
        sample = self.sample()["values"]
        provides = sorted({key.split(".", 1)[0] for key in sample} & {"h", "s", "v", "sut"})
        memory = None
        for line in (read_bytes("/proc/meminfo") or b"").splitlines():
            if line.startswith(b"MemTotal:"):
                memory = int(line.split()[1]) * 1024
        boot_id = (read_bytes("/proc/sys/kernel/random/boot_id") or b"").decode().strip() or None
        cpus = self.config.cpus or cgroup_cpus(self.config.cgroup) or online_cpus()
        return {"perflab": __version__, "hostname": socket.gethostname(), "boot_id": boot_id, "cpus": cpus,
                "memory_bytes": memory, "provides": provides,
                "sources": {**self.status, **{k: {"available": True, "error": v} for k, v in self.errors.items()}}}

    def close(self) -> None:
        close_all(self.sources)


def pg_counter_spec(dsn: str):
    """PostgreSQL's counters (sources/pg_counters.py) for a DSN postgresql://user@host:port/db."""
    import urllib.parse

    from .sources.pg_counters import PgCounterSpec

    parts = urllib.parse.urlsplit(dsn)
    if parts.scheme not in ("postgres", "postgresql") or not parts.path.strip("/"):
        raise ValueError(f"expected postgresql://user@host:port/database, got {dsn!r}")
    return PgCounterSpec(parts.hostname or "127.0.0.1", parts.port or 5432, parts.username or "postgres",
                         parts.path.strip("/"))


def create_app(agent: Agent, token: str | None):
    """The aiohttp application: three read-only GET endpoints behind the token."""
    import asyncio
    import json

    web = require("aiohttp.web", extra="net", feature="perflab agent")

    @web.middleware
    async def guard(request, handler):
        if token is not None:
            if not bearer_matches(request.headers.get("Authorization", ""), token):
                return web.Response(status=401, text="perflab agent: a valid token is required\n")
        return await handler(request)

    def answer(data: dict) -> aiohttp_web.Response:
        return web.Response(text=json.dumps(data), content_type="application/json",
                            headers={"Cache-Control": "no-store"})

    # The reads run in a thread: PostgreSQL's counters drive an event loop of their own, which
    # cannot run inside this one.
    async def info(_request):
        return answer(await asyncio.get_running_loop().run_in_executor(None, agent.info))

    async def clock(_request):
        return answer({"monotonic": time.monotonic(), "realtime": time.time()})

    async def sample(_request):
        return answer(await asyncio.get_running_loop().run_in_executor(None, agent.sample))

    app = web.Application(middlewares=[guard])
    app.router.add_get("/info", info)
    app.router.add_get("/clock", clock)
    app.router.add_get("/sample", sample)
    return app


def serve(agent: Agent, sock: socket.socket, token: str | None) -> None:
    """Serve until SIGINT or SIGTERM (perflab.http_server)."""
    web = require("aiohttp.web", extra="net", feature="perflab agent")
    serve_until_stopped(web, lambda: create_app(agent, token), sock, on_stop=agent.close)

"""`perflab agent`: the command line of the SUT host's agent (the agent itself: agent.py).

Only typer is imported at module level: cli/main.py imports this module on every `perflab`
invocation, and the web framework loads only when the agent starts.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import typer

from perflab.errors import InputError
from perflab.http_server import MIN_TOKEN_CHARS, check_token, is_loopback, url_of
from perflab.http_server import listen as listen_on

T = TypeVar("T")

DEFAULT_LISTEN = "127.0.0.1:8766"


def _split_listen(listen: str) -> tuple[str, int]:
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise InputError(f"expected HOST:PORT (e.g. {DEFAULT_LISTEN} or 10.0.0.5:8766), got {listen!r}",
                         field="--listen")
    return host.strip("[]") or "127.0.0.1", int(port)


def agent_command(
    listen: str = typer.Option(DEFAULT_LISTEN, "--listen", help="HOST:PORT to listen on (port 0: any free port); "
                               "any address but the loopback needs --token"),
    token: str | None = typer.Option(None, "--token", envvar="PERFLAB_AGENT_TOKEN",
                                        help=f"require this token (at least {MIN_TOKEN_CHARS} characters) on every "
                                             "request; better from the environment (PERFLAB_AGENT_TOKEN) or "
                                             "--token-file, which `ps` does not show"),
    token_file: Path | None = typer.Option(None, "--token-file", metavar="FILE",
                                              help="read the token from this file's first line"),
    cgroup: str | None = typer.Option(None, "--cgroup", help="the SUT's cgroup (a directory under "
                                         "/sys/fs/cgroup, or a cgroup path such as /system.slice/nginx.service)"),
    pid_match: str | None = typer.Option(None, "--pid-match", help="the SUT's processes: a regular expression "
                                            "searched in process names and command lines"),
    component: list[str] | None = typer.Option(None, "--component", help="NAME=REGEX: a SUT component, "
                                                  "(V) rows (repeatable)"),
    pg: str | None = typer.Option(None, "--pg", help="PostgreSQL's counters: postgresql://user@host:port/db"),
    cpus: str | None = typer.Option(None, "--cpus", help="the SUT's processors on this host, e.g. 1-3 "
                                       "(default: its cgroup's cpuset, else every online CPU)"),
) -> None:
    """Serve this host's counters to a perflab driver elsewhere (docs/distributed.md).

    Prints the agent's URL, then answers until Ctrl-C or SIGTERM. Read-only.

    Example (on the SUT host): `perflab agent --pid-match postgres --listen 0.0.0.0:8766 --token-file
    /etc/perflab/token`
    """
    from perflab.extras import require
    from perflab.monitor.agent import Agent, AgentConfig, pg_counter_spec, resolve_cgroup, serve
    from perflab.sut.placement import parse_cpus

    require("aiohttp.web", extra="net", feature="perflab agent")   # before anything is bound or printed

    if token_file is not None:
        if token is not None:
            raise InputError("give the token once: --token (or PERFLAB_AGENT_TOKEN) or --token-file",
                             field="--token-file")
        from perflab.files import read_text_file

        token = (read_text_file(token_file).splitlines() or [""])[0].strip()
    host, port = _split_listen(listen)
    if (cgroup is None) == (pid_match is None):
        raise InputError("give the SUT as --cgroup PATH or --pid-match REGEX (one of them)",
                         field="--cgroup/--pid-match")
    check_token(token)
    if token is None and not is_loopback(host):
        raise InputError(f"{host} is not the loopback: give --token (at least {MIN_TOKEN_CHARS} characters), "
                         "the only lock on this host's counters", field="--token")
    components: dict[str, str] = {}
    for item in component or []:
        name, sep, pattern = item.partition("=")
        if not sep or not name or "." in name:
            raise InputError(f"expected NAME=REGEX with a NAME without '.', got {item!r}", field="--component")
        components[name] = pattern

    def checked(option: str, check: Callable[[], T]) -> T:
        try:
            return check()
        except (ValueError, re.error) as exc:  # the user's to fix
            raise InputError(str(exc), field=option) from None

    group = checked("--cgroup", lambda: resolve_cgroup(cgroup) if cgroup is not None else None)
    checked("--pg", lambda: pg_counter_spec(pg) if pg is not None else None)
    checked("--pid-match", lambda: re.compile(pid_match) if pid_match is not None else None)
    agent = Agent(AgentConfig(cgroup=group, pid_match=pid_match, components=components, pg_dsn=pg,
                              cpus=parse_cpus(cpus, "--cpus") if cpus else None))
    sock = listen_on(host, port, "--listen", backlog=64)
    print(f"perflab agent: {url_of(host, sock)}", flush=True)
    print(f"SUT: {group if group is not None else 'processes matching ' + repr(pid_match)}; "
          f"{'token required' if token else 'no token (loopback only)'}; pid {os.getpid()}; Ctrl-C stops",
          file=sys.stderr, flush=True)
    serve(agent, sock, token)

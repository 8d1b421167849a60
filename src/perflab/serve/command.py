"""The command-line entries of this package: `perflab serve` and `perflab show RUN --html`.

Only typer is imported at module level: cli.py imports this module on every `perflab`
invocation, and the web framework (aiohttp, the `serve` extra) loads only when serving.
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import typer

from perflab.cli_options import StoreOpt
from perflab.errors import InputError
from perflab.extras import require
from perflab.safe_text import visible

#: A token given on the command line must be at least this long: it is the only lock.
MIN_TOKEN_CHARS = 16


def serve_command(
    store: Path | None = StoreOpt,
    host: str = typer.Option("127.0.0.1", "--host", help="address to listen on; any but the loopback needs a token"),
    port: int = typer.Option(8765, "--port", min=0, max=65535, help="port (0: any free port)"),
    token: str | None = typer.Option(None, "--token", envvar="PERFLAB_SERVE_TOKEN",
                                        help="require this token on every request (generated when the address "
                                             "is not the loopback and none is given)"),
) -> None:
    """Serve the run store as a local web application: runs, studies, compare, live runs.

    Read-only: it never changes the store (docs/serve.md). Prints the address to open (with
    the token when one is needed) and serves until Ctrl-C.

    Example: `perflab serve --port 8765`, then open the address it prints.
    """
    from perflab.store.catalog import store_home

    require("aiohttp.web", extra="serve", feature="perflab serve")   # before anything is bound or printed
    from perflab.serve.security import is_loopback, new_token

    home = store_home(store)
    if not home.is_dir():
        raise InputError(f"no run store at {home} (run `perflab run` first, or give --store DIR)", field="--store")
    loopback = is_loopback(host)
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise InputError(f"a token needs at least {MIN_TOKEN_CHARS} characters", field="--token")
    if token is None and not loopback:
        token = new_token()
    sock = _listen(host, port)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{bound}/" + (f"?token={token}" if token else "")
    print(f"perflab serve: {url}", flush=True)
    print(f"store: {visible(home.resolve())} (read-only); Ctrl-C stops", file=sys.stderr, flush=True)
    _index_if_missing(home)
    _serve(sock, home, token, check_host=loopback and token is None)


def _listen(host: str, port: int) -> socket.socket:
    """The listening socket, bound here so a port that is taken is a one-line error (exit 2)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        raise InputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}", field="--host/--port") from None
    sock.setblocking(False)
    return sock


def _index_if_missing(home: Path) -> None:
    """A store copied without its catalog would list nothing: index it, as `perflab runs
    --rescan` would (the catalog is an index of the run directories, not data)."""
    from perflab.store.catalog import Store

    if not (home / "catalog.sqlite").exists() and (home / "runs").is_dir():
        Store(home).rescan()


def _serve(sock: socket.socket, home: Path, token: str | None, check_host: bool) -> None:
    import asyncio
    import logging
    import signal

    from perflab.serve.app import create_app

    web = require("aiohttp.web", extra="serve", feature="perflab serve")

    logging.basicConfig(level=logging.WARNING, format="perflab serve: %(levelname)s %(message)s")

    async def main() -> None:
        runner = web.AppRunner(create_app(home, token=token, check_host=check_host), access_log=None)
        await runner.setup()
        # Open live streams are ended at once on shutdown instead of being waited for.
        site = web.SockSite(runner, sock, shutdown_timeout=0.5)
        await site.start()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        try:
            await stop.wait()
        finally:
            await runner.cleanup()

    asyncio.run(main())


def write_show_html(run_dir: Path) -> Path:
    """`perflab show RUN --html`: the run's self-contained report, <run_dir>/report.html."""
    from perflab.serve.run_report import write_run_html

    return write_run_html(run_dir)

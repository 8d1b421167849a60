"""The command-line entries of this package: `perflab serve` and `perflab show RUN --html`.

Only typer is imported at module level: cli/main.py imports this module on every `perflab`
invocation, and the web framework (aiohttp, the `serve` extra) loads only when serving.
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import typer

from perflab.cli.options import StoreOpt
from perflab.errors import InputError
from perflab.extras import require
from perflab.http_server import check_token, is_loopback, listen, serve_until_stopped, url_of
from perflab.safe_text import visible


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
    from perflab.serve.security import new_token

    home = store_home(store)
    if not home.is_dir():
        raise InputError(f"no run store at {home} (run `perflab run` first, or give --store DIR)", field="--store")
    loopback = is_loopback(host)
    check_token(token)
    if token is None and not loopback:
        token = new_token()
    sock = listen(host, port, "--host/--port")
    url = url_of(host, sock) + "/" + (f"?token={token}" if token else "")
    print(f"perflab serve: {url}", flush=True)
    print(f"store: {visible(home.resolve())} (read-only); Ctrl-C stops", file=sys.stderr, flush=True)
    _index_if_missing(home)
    _serve(sock, home, token, check_host=loopback and token is None)


def _index_if_missing(home: Path) -> None:
    """A store copied without its catalog would list nothing: index it, as `perflab runs
    --rescan` would (the catalog is an index of the run directories, not data)."""
    from perflab.store.catalog import Store

    if not (home / "catalog.sqlite").exists() and (home / "runs").is_dir():
        Store(home).rescan()


def _serve(sock: socket.socket, home: Path, token: str | None, check_host: bool) -> None:
    import logging

    from perflab.serve.app import create_app

    web = require("aiohttp.web", extra="serve", feature="perflab serve")
    logging.basicConfig(level=logging.WARNING, format="perflab serve: %(levelname)s %(message)s")
    serve_until_stopped(web, lambda: create_app(home, token=token, check_host=check_host), sock)


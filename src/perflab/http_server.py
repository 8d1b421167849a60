"""What perflab's two HTTP servers share -- `perflab serve` (the run store) and `perflab agent`
(a SUT host's counters): the listening socket, the loopback rule, the token's length and its
constant-time check, and the loop that serves until Ctrl-C or SIGTERM. aiohttp is imported only
when serving (the `serve` and `net` extras); the checks need nothing.
"""

from __future__ import annotations

import hmac
import ipaddress
import socket
from collections.abc import Callable
from typing import Any

from perflab.errors import InputError

#: A token must be at least this long: on an address other than the loopback it is the only lock.
MIN_TOKEN_CHARS = 16
LOOPBACK_NAMES = {"localhost", "localhost.", "ip6-localhost"}


def is_loopback(host: str) -> bool:
    """Whether `host` (a name or an address, IPv6 in brackets or not) is this machine's loopback."""
    bare = host.strip("[]")
    if bare.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(bare).is_loopback
    except ValueError:
        return False


def check_token(token: str | None, field: str = "--token") -> None:
    """A given token is long enough to be a lock (InputError naming `field` otherwise)."""
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise InputError(f"a token needs at least {MIN_TOKEN_CHARS} characters", field=field)


def bearer_matches(header: str, token: str) -> bool:
    """`Authorization: Bearer <token>`, compared in constant time."""
    return hmac.compare_digest(header.encode(), f"Bearer {token}".encode())


def listen(host: str, port: int, field: str, backlog: int = 128) -> socket.socket:
    """The listening socket, bound before anything is printed, so a port that is taken (or an
    address this host does not have) is one line, exit 2."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(backlog)
    except OSError as exc:
        raise InputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}", field=field) from None
    sock.setblocking(False)
    return sock


def url_of(host: str, sock: socket.socket) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{sock.getsockname()[1]}"


def serve_until_stopped(web: Any, make_app: Callable[[], Any], sock: socket.socket,
                        on_stop: Callable[[], None] | None = None) -> None:
    """Serve `make_app()` (an aiohttp application) on `sock` until SIGINT or SIGTERM; open
    streams are ended at once rather than waited for. `web`: aiohttp.web, imported by the
    caller through its extra."""
    import asyncio
    import signal

    async def main() -> None:
        runner = web.AppRunner(make_app(), access_log=None)
        await runner.setup()
        await web.SockSite(runner, sock, shutdown_timeout=0.5).start()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        try:
            await stop.wait()
        finally:
            await runner.cleanup()
            if on_stop is not None:
                on_stop()

    asyncio.run(main())

"""Safe by default: who may ask, and what a page may load.

* Bound to a loopback address, the server answers only requests whose Host header names the
  loopback (a web page elsewhere cannot reach it through DNS rebinding).
* Bound to any other address it needs a token, generated (and printed) when none is given.
  Every request must carry it -- the pages, the files, the live stream: `?token=...` once
  (the response then sets an HttpOnly, SameSite=Strict cookie that later requests carry,
  EventSource included), the cookie, or an `Authorization: Bearer` header. Tokens are compared
  in constant time.
* Pages get a Content-Security-Policy that runs only the scripts the package ships (served as
  files, no inline script), loads nothing from elsewhere, and cannot be framed by other sites;
  reports (user text and matplotlib's SVG) get a stricter one: no script at all, sandboxed.
"""

from __future__ import annotations

import hmac
import secrets
from typing import TYPE_CHECKING

from perflab.extras import require
from perflab.http_server import is_loopback

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.typedefs import Handler, Middleware
else:
    web = require("aiohttp.web", extra="serve", feature="perflab serve")

TOKEN_COOKIE = "perflab_token"
PAGE_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
            "frame-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
#: The reports' own policy (the same as their <meta> tag) plus a sandbox without scripts; the
#: server's pages frame them (same origin, so a page's script can size the frame).
REPORT_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'self'; sandbox allow-same-origin"
DOWNLOAD_CSP = "default-src 'none'; sandbox"
def new_token() -> str:
    return secrets.token_urlsafe(24)


def _host_name(header: str) -> str:
    """The host part of a Host header: "[::1]:8765" -> "::1", "localhost:80" -> "localhost"."""
    if header.startswith("["):
        return header[1:header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def guard(token: str | None, check_host: bool) -> Middleware:
    """The middleware that admits a request (or answers 401/403 before any handler runs)."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if check_host and not is_loopback(_host_name(request.headers.get("Host", ""))):
            return web.Response(status=403, text="perflab serve: unexpected Host header (the server answers "
                                "requests to the loopback address only)\n")
        if token is None:
            return await handler(request)
        given = request.query.get("token")
        offered = [given, request.cookies.get(TOKEN_COOKIE)]
        auth = request.headers.get("Authorization", "")
        if auth.startswith("Bearer "):
            offered.append(auth[len("Bearer "):])
        if not any(o is not None and hmac.compare_digest(o.encode(), token.encode()) for o in offered):
            return web.Response(status=401, text="perflab serve: a token is required: open the address "
                                "`perflab serve` printed (with ?token=...)\n")
        response = await handler(request)
        if given is not None and not response.prepared:
            response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="Strict", path="/")
        return response

    return middleware


async def headers(request: web.Request, response: web.StreamResponse) -> None:
    """on_response_prepare: every response, streamed ones and errors included."""
    h = response.headers
    h.setdefault("Content-Security-Policy", PAGE_CSP)
    h.setdefault("X-Content-Type-Options", "nosniff")
    h.setdefault("Referrer-Policy", "no-referrer")
    h.setdefault("Cross-Origin-Opener-Policy", "same-origin")
    h.setdefault("Cross-Origin-Resource-Policy", "same-origin")
    h.setdefault("Cache-Control", "no-store")

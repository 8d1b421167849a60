"""An HTTP server whose cost per request is known: the ruler for HTTP studies.

Each request burns `cost_us` microseconds of the server thread's user CPU (the same exact burn
as perflab.sut.synthetic: until the thread CPU clock has advanced by the target), on top of
the server's own cost of parsing and answering a request. A study that raises `cost_us` by a
known amount adds exactly that much CPU per request, so its true ratio is known from the base's
measured CPU per request -- as the known-cost injection of the python SUT does in-process.

    python -m perflab.sut.known_cost_http --port 18090 --cost-us 200

Started by a workload's `service` block (examples/http/known-cost.yaml). `GET /?cost_us=N`
overrides the cost for one request; `GET /?work=N` adds N turns of an interpreted loop
(perflab.sut.knob.python_work: fixed work, not a CPU-time target, so a CPU shared with another
server can magnify it -- the accuracy studies' HTTP knob); the body is `bytes` bytes long
(default 64).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from perflab.extras import require
from perflab.sut.knob import python_work
from perflab.sut.synthetic import burn_user

if TYPE_CHECKING:
    from aiohttp import web
else:
    web = require("aiohttp.web", extra="net", feature="the known-cost HTTP server")


def make_app(cost_us: float, body_bytes: int) -> web.Application:
    body = b"x" * body_bytes

    async def handle(request: web.Request) -> web.Response:
        try:
            cost = float(request.query.get("cost_us", cost_us))
            work = int(request.query.get("work", 0))
        except ValueError:
            return web.Response(status=400, text="cost_us, work: expected numbers")
        burn_user(max(0.0, cost) / 1e6)
        if work > 0:
            python_work(work)
        return web.Response(body=body, content_type="application/octet-stream")

    app = web.Application()
    app.router.add_get("/", handle)
    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cost-us", type=float, default=0.0, help="CPU microseconds burned per request")
    parser.add_argument("--bytes", type=int, default=64, help="response body size")
    args = parser.parse_args()
    web.run_app(make_app(args.cost_us, args.bytes), host=args.host, port=args.port, access_log=None,
                print=None, handle_signals=True)


if __name__ == "__main__":
    main()

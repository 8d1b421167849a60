"""A TCP echo server: the system under test of the echo examples (the seeds' VSE HiperSockets
echo study). Every byte received is sent back. One process, one event loop (uvloop when
installed), like a single-threaded network service.

    python echo_server.py PORT [WORK_US]

WORK_US (default 0) is CPU work per received message, in microseconds: a service that does
something with each request. A bare echo costs so little that a Python load driver saturates
before the server does; the sweep example gives the server 50 us per message so the server is
the bottleneck being measured (see docs/real-systems.md).
"""

import asyncio
import sys
import time

WORK_S = 0.0


def work() -> None:
    end = time.perf_counter() + WORK_S
    while time.perf_counter() < end:
        pass


class Echo(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data):
        if WORK_S:
            work()
        self.transport.write(data)


async def main(port: int) -> None:
    server = await asyncio.get_running_loop().create_server(Echo, "127.0.0.1", port, backlog=1024)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    if len(sys.argv) > 2:
        WORK_S = float(sys.argv[2]) / 1e6
    asyncio.run(main(int(sys.argv[1])))

"""A TCP echo server: the system under test of the echo examples (the seeds' VSE HiperSockets
echo study). Every byte received is sent back. One process, one event loop (uvloop when
installed), like a single-threaded network service.

    python echo_server.py ADDRESS [WORK_US [ADDRESS ...]]

ADDRESS is PORT (on 127.0.0.1), HOST:PORT, or unix:PATH (a Unix-domain socket: the same
service without the TCP/IP stack -- the path the echo-paths study compares with TCP; unix:@NAME
is Linux's abstract namespace: no file, and no 108-byte limit on the directory it would be in).
One process serves every address given, so a study can switch the client's path and nothing else.

WORK_US (default 0) is CPU work per received message, in microseconds: a service that does
something with each request. A bare echo costs so little that a Python load driver saturates
before the server does; the sweep example gives the server 50 us per message so the server is
the bottleneck being measured (see docs/real-systems.md).
"""

import asyncio
import os
import socket
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


async def listen(address: str):
    loop = asyncio.get_running_loop()
    if address.startswith("unix:"):
        path = address[len("unix:"):]
        if path.startswith("@"):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.bind("\0" + path[1:])
            return await loop.create_unix_server(Echo, sock=sock, backlog=1024)
        if os.path.exists(path):
            os.unlink(path)  # a socket file left by an earlier server
        return await loop.create_unix_server(Echo, path, backlog=1024)
    host, _, port = address.rpartition(":")
    return await loop.create_server(Echo, host or "127.0.0.1", int(port), backlog=1024)


async def main(addresses: list[str]) -> None:
    servers = [await listen(address) for address in addresses]
    await asyncio.gather(*(server.serve_forever() for server in servers))


if __name__ == "__main__":
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    if len(sys.argv) > 2:
        WORK_S = float(sys.argv[2]) / 1e6
    asyncio.run(main([sys.argv[1], *sys.argv[3:]]))

"""A TCP echo server: the system under test of the echo examples (the seeds' VSE HiperSockets
echo study). Every byte received is sent back. One process, one event loop (uvloop when
installed), like a single-threaded network service.

    python echo_server.py PORT
"""

import asyncio
import sys


class Echo(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data):
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
    asyncio.run(main(int(sys.argv[1])))

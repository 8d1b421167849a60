"""redis-server as the target of the TCP driver benchmark: in the foreground on the target CPU,
no persistence, started and stopped by this benchmark only. What measure_http needs of a server:
the requests it has handled so far and its CPU seconds."""

from __future__ import annotations

import shutil
import socket
import subprocess

from common import TARGET_CPU, proc_cpu_s, stop_process, taskset, wait_answering

PORT = 17379


def redis_path() -> str | None:
    return shutil.which("redis-server")


class Redis:
    def __init__(self, port: int = PORT):
        self.port = port
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> "Redis":
        exe = redis_path()
        if exe is None:
            raise RuntimeError("redis-server is not installed (apt-get install redis-server redis-tools)")
        argv = [exe, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                "--io-threads", "1", "--daemonize", "no", "--logfile", ""]
        self.proc = subprocess.Popen(taskset(TARGET_CPU, argv), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_answering(self.proc, self.requests, "redis-server")
        return self

    def __exit__(self, *exc) -> None:
        if self.proc is not None:
            stop_process(self.proc)

    def requests(self) -> int:
        """Commands processed so far (INFO stats), this INFO included."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=2) as sock:
            sock.sendall(b"INFO stats\r\n")
            data = b""
            while b"\r\n" not in data or len(data) < int(data[1:data.index(b"\r\n")]) + data.index(b"\r\n") + 2:
                chunk = sock.recv(65536)
                if not chunk:
                    raise OSError("redis closed the connection")
                data += chunk
        for line in data.decode().splitlines():
            if line.startswith("total_commands_processed:"):
                return int(line.split(":", 1)[1])
        raise OSError("no total_commands_processed in INFO stats")

    def cpu_s(self) -> float:
        return (proc_cpu_s(self.proc.pid) or 0.0) if self.proc else 0.0

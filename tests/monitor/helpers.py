"""Helpers for monitor tests: child processes with a known cost that report what they did.

A child runs Python code, prints one JSON line (`report()`: its own times() and exact CPU
clock) when its work is done, and then waits on stdin, so the test can read the monitor while
the child is alive and idle, and then let it go.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys

TICK = 1.0 / os.sysconf("SC_CLK_TCK")  # the resolution of utime/stime and of /proc/stat

PRELUDE = r'''
import json, os, sys, time

def report(**extra):
    t = os.times()
    print(json.dumps(dict(user=t.user, system=t.system, cuser=t.children_user,
                          csys=t.children_system, cpu=time.process_time(), pid=os.getpid(),
                          **extra)), flush=True)

def wait_line():
    return sys.stdin.readline()

def burn_user(seconds):
    """Until this process's own user time has grown by `seconds` (pure Python arithmetic)."""
    start, x = os.times().user, 0
    while os.times().user - start < seconds:
        for i in range(20000):
            x += i

def burn_sys(seconds):
    """Until this process's own system time has grown by `seconds`: 1 MiB reads of /dev/zero
    into a preallocated buffer keep the CPU in the kernel (clearing pages) almost all the time."""
    fd, buf = os.open("/dev/zero", os.O_RDONLY), bytearray(1 << 20)
    start = os.times().system
    while os.times().system - start < seconds:
        for i in range(10):
            os.readv(fd, [buf])
    os.close(fd)
'''

BURN_USER_CHILD = (
    "import os\nstart = os.times().user\n"
    "while os.times().user - start < float(os.environ.get('BURN', '0.2')):\n"
    "    sum(range(20000))\n"
)


class Child:
    def __init__(self, body: str, *args: str, **popen_kw) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", PRELUDE + body, *args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, **popen_kw,
        )
        self.pid = self.proc.pid

    def report(self, timeout: float = 120.0) -> dict:
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        assert ready, "child did not report in time"
        line = self.proc.stdout.readline()
        assert line, f"child exited without reporting (rc={self.proc.poll()})"
        return json.loads(line)

    def has_report(self) -> bool:
        return bool(select.select([self.proc.stdout], [], [], 0)[0])

    def send(self, line: str = "go") -> None:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def finish(self) -> int:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except BrokenPipeError:
                pass
        return self.proc.wait(timeout=60)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

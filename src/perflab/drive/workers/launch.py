"""How a SUT worker process is started: a fresh interpreter that imports only the worker.

multiprocessing's `spawn` would also do, but every spawned child imports the parent's main
module first (the `perflab` command line, or pytest under the tests): 0.3-0.7 s of start-up per
worker and per run, measured on this 2-core guest, for code the worker never calls. A worker is
`python -c "...; main()"` instead, told its parent's import path and its WorkerSpec over its end
of a socket pair. `fork` is not an option: a worker must not inherit the driver's event loop or
threads.

`WorkerProcess` answers what the pool asks of a worker's process (pid, exitcode, is_alive, join,
terminate), with multiprocessing's meaning: an exit code, or minus the signal that ended it.
"""

from __future__ import annotations

import marshal
import pickle
import socket
import subprocess
import sys
from multiprocessing.connection import Connection
from pathlib import Path

from perflab.drive.workers.wire import WorkerSpec

#: The directory holding the perflab package: first on the new interpreter's path, so the
#: bootstrap finds this perflab before the parent's path (sent next) replaces the whole path.
_PACKAGE_PARENT = str(Path(__file__).resolve().parents[3])
_BOOTSTRAP = ("import sys; sys.path.insert(0, sys.argv[2]); "
              "from perflab.drive.workers.process import main_from_fd; main_from_fd(int(sys.argv[1]))")


class WorkerProcess:
    """A started worker's process (subprocess.Popen), seen the way multiprocessing.Process is."""

    def __init__(self, popen: subprocess.Popen):
        self._popen = popen
        self.pid: int = popen.pid

    @property
    def exitcode(self) -> int | None:
        return self._popen.poll()

    def is_alive(self) -> bool:
        return self._popen.poll() is None

    def join(self, timeout: float | None = None) -> None:
        try:
            self._popen.wait(timeout)
        except subprocess.TimeoutExpired:
            pass

    def terminate(self) -> None:
        if self._popen.poll() is None:
            try:
                self._popen.terminate()
            except ProcessLookupError:
                pass


def start_worker(spec: WorkerSpec) -> tuple[WorkerProcess, Connection]:
    """Start a worker for `spec`; -> (its process, the driver's end of its pipe). The worker says
    "ready" (or why not) on the pipe once its SUT is open (perflab.drive.workers.process)."""
    ours, theirs = socket.socketpair()
    try:
        popen = subprocess.Popen([sys.executable, "-c", _BOOTSTRAP, str(theirs.fileno()), _PACKAGE_PARENT],
                                 pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL)
    except BaseException:
        ours.close()
        raise
    finally:
        theirs.close()
    conn = Connection(ours.detach())
    # The parent's import path first (a SUT's module may be found only on it, as with spawn),
    # then the spec, which may name classes found on that path. A socket pair's buffer holds
    # both long before the worker reads them; the worker reads them first thing.
    try:
        conn.send_bytes(marshal.dumps(list(sys.path)))
        conn.send_bytes(pickle.dumps(spec, protocol=pickle.HIGHEST_PROTOCOL))
    except OSError:
        pass  # it died at start: the pool's wait for "ready" reads the end of file and its exit code
    return WorkerProcess(popen), conn

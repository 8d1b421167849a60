"""The driver's own counts of what it does to reach the SUT: connections opened, TLS handshakes
(and how many of them resumed a session), PostgreSQL commits and the time it waited for them.

Only the driver knows them -- the kernel's TCP counters are system-wide, shared with every other
process that connects -- so the executors count them here, in shared memory the monitor samples
like any counter (`driver.connects`, `driver.tls_handshakes`, `driver.tls_resumed`); the
reduction takes their window differences (CONNECTS/CMD (T), HANDSHAKES/CMD (T), RESUMED % (T)).

    counts = ConnectionCounts()               # the driver, before the monitor starts
    spec.counters = counts.spec               # for the monitor
    counts.connected(); counts.handshake(resumed=False)
    counts.close()                            # after the monitor stopped
"""

from __future__ import annotations

from perflab.monitor.sources.counters import SharedCounters

NAMES = ("connects", "tls_handshakes", "tls_resumed")


class ConnectionCounts:
    """Counters in one shared-memory slot, written by the driver's event loop only."""

    def __init__(self) -> None:
        self._shared = SharedCounters(NAMES, slots=1, prefix="driver")
        self._slot = self._shared.writer(0)

    @property
    def spec(self):
        """What the monitor opens (MonitorSpec.counters)."""
        return self._shared.handle

    def connected(self, n: int = 1) -> None:
        """`n` connections made (the compiled HTTP loop reports its count in blocks)."""
        self._slot.add("connects", n)

    def handshake(self, resumed: bool) -> None:
        self._slot.add("tls_handshakes")
        if resumed:
            self._slot.add("tls_resumed")

    def handshakes(self, n: int, resumed: int) -> None:
        """`n` TLS handshakes, `resumed` of them resuming a session (the compiled loop's, in blocks)."""
        self._slot.add("tls_handshakes", n)
        self._slot.add("tls_resumed", resumed)

    def totals(self) -> dict[str, int]:
        return self._shared.totals()

    def close(self) -> None:
        self._shared.close()
        self._shared.unlink()


class CommitCounts:
    """The commits a PostgreSQL executor waited for, and how long (`driver.commits`,
    `driver.commit_us`): COMMIT TIME (T), the commit's own response time -- the round trip of the
    COMMIT of a transaction of several statements, which returns once the server's commit is as
    durable as synchronous_commit asks (the WAL flushed, or the standby's reply)."""

    NAMES = ("commits", "commit_us")

    def __init__(self) -> None:
        self._shared = SharedCounters(self.NAMES, slots=1, prefix="driver")
        self._slot = self._shared.writer(0)

    @property
    def spec(self):
        return self._shared.handle

    def committed(self, seconds: float) -> None:
        self._slot.add("commits")
        self._slot.add("commit_us", round(seconds * 1e6))

    def add(self, commits: int, commit_us: int) -> None:
        """Commits counted elsewhere (the compiled loop's, native_pg.py), each rounded to a microsecond there."""
        self._slot.add("commits", commits)
        self._slot.add("commit_us", commit_us)

    def totals(self) -> dict[str, int]:
        return self._shared.totals()

    def close(self) -> None:
        self._shared.close()
        self._shared.unlink()


class NoCommitCounts:
    """Where nobody samples them."""

    def committed(self, seconds: float) -> None:
        pass

    def add(self, commits: int, commit_us: int) -> None:
        pass


NO_COMMIT_COUNTS = NoCommitCounts()


class NoCounts:
    """Where nobody samples the counts (an executor made outside a run, a test): nothing kept."""

    def connected(self, n: int = 1) -> None:
        pass

    def handshake(self, resumed: bool) -> None:
        pass

    def handshakes(self, n: int, resumed: int) -> None:
        pass


NO_COUNTS = NoCounts()

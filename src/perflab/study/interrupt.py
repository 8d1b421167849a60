"""Ctrl-C and SIGTERM during a study: whenever they come, the study ends as interrupted -- what
it measured judged, study.json and the reports written, exit 130 -- instead of Python's default
(SIGINT: a traceback and no report; SIGTERM: death with study.json left `running`).

While a run is in its window, the run's own handlers take over (drive/lifecycle.py: the run is
stored, interrupted) and the study stops after it. Between runs -- calibrating, reducing a run,
waiting for a pair -- the signal interrupts the study where it is. While the study is being
finished (judged, saved, its reports written) a signal is remembered, not raised: a second
Ctrl-C must not lose the report of the first.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class StudySignals:
    def __init__(self) -> None:
        self.received: str | None = None
        self.deferring = False

    def _handle(self, signum: int, frame: object) -> None:
        name = "SIGTERM" if signum == signal.SIGTERM else "SIGINT (Ctrl-C)"
        self.received = self.received or f"interrupted by {name}"
        if not self.deferring:
            raise KeyboardInterrupt

    @contextmanager
    def installed(self) -> Iterator[StudySignals]:
        """Handle SIGINT and SIGTERM for the block's duration (the main thread only: a study run
        in a thread leaves the process's signals alone), restoring the previous handlers."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
        for sig in previous:
            signal.signal(sig, self._handle)
        try:
            yield self
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler if handler is not None else signal.SIG_DFL)

    @contextmanager
    def deferred(self) -> Iterator[StudySignals]:
        """Inside: a signal is remembered (`received`), never raised."""
        was, self.deferring = self.deferring, True
        try:
            yield self
        finally:
            self.deferring = was

"""Errors a user can act on.

A bad input file or argument is the user's to fix, so it is reported as one clear message
(file, line, field, what was expected) and exit code 2 -- never a traceback. Everything else
is a bug or a failure of the system under test and is handled where it happens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

#: Exit codes, defined once (README.md "Exit codes" lists them for users).
EXIT_OK = 0
EXIT_FAILED = 1           # compare/study --gate: a primary verdict is WORSE; run: the SUT failed; derive: a row disagrees
EXIT_USAGE = 2            # bad input: one line naming the file, line and field
EXIT_INCONCLUSIVE = 3     # compare/study --gate: no primary verdict WORSE, but one INCONCLUSIVE (more blocks needed)
EXIT_NO_COMPARISON = 4    # study/compare: a primary metric has no valid pair of runs (every pair excluded)
EXIT_INVALID = 5          # run: complete, but excluded by the validity rule (hung, driver saturated, errors...)
EXIT_CHANGE_POINT = 6     # history --gate: a change point of the software among a series' last --recent runs
EXIT_INTERRUPTED = 130    # run: interrupted (Ctrl-C or SIGTERM); the run is stored, marked interrupted


#: How many entries of a list a message names before it gives the count of the rest.
SHOWN_ENTRIES = 5


def some_of(entries: Sequence[object], shown: int = SHOWN_ENTRIES) -> str:
    """A list in a message, named in full when short, else its first few and the count:
    "'t0', 't1', 't2', 't3', 't4' and 1,995 more (2,000 in all)". A message about a generated
    file of thousands of entries stays one readable line."""
    named = ", ".join(repr(e) for e in entries[:shown])
    if len(entries) <= shown:
        return named
    return f"{named} and {len(entries) - shown:,} more ({len(entries):,} in all)"


def repeated(names: list[str]) -> dict[str, list[int]]:
    """Each name given more than once, with the indexes of its entries (in one pass: a list of
    10,000 names is checked in milliseconds, not by counting each name in the whole list)."""
    seen: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        seen.setdefault(name, []).append(i)
    return {name: where for name, where in seen.items() if len(where) > 1}


@dataclass
class InputError(Exception):
    """A problem with something the user gave perflab: a file, a field, an argument."""

    message: str
    file: Path | str | None = None
    line: int | None = None
    field: str | None = None

    def __str__(self) -> str:
        where = ""
        if self.file is not None:
            where = str(self.file)
            if self.line is not None:
                where += f":{self.line}"
            where += ": "
        field = f"{self.field}: " if self.field else ""
        return f"{where}{field}{self.message}"


class MissingFile(InputError):
    """An input file that is not there: a kind of bad input a caller may want to tell apart (a
    think-time file a workload names) without reading the message."""


class NoCurve(InputError):
    """A capacity model that the data cannot support (too few levels, a metric not measured):
    its message says why, starting "no curve:"; a summary of several models lists it as a note."""


class SutFailure(Exception):
    """The system under test failed (a worker died, a server went away).

    The run that saw it is kept and marked failed with this reason.
    """


class StorageError(InputError):
    """The store could not be written (the disk is full, an I/O error).

    Reported like bad input, in one line naming the file and the system's reason; what was
    stored before is intact, and a run that was being stored is marked failed where it could be.
    """


def storage_reason(exc: BaseException) -> str:
    """The system's reason for a failed write, in one line: sqlite3 and pyarrow word ENOSPC
    their own ways ("database or disk is full", "Error writing bytes... [errno 28]")."""
    import errno
    import os

    code = getattr(exc, "errno", None)
    text = str(exc)
    sqlite_full = getattr(exc, "sqlite_errorcode", None) == 13   # SQLITE_FULL, without importing sqlite3
    # pyarrow's OSError carries no errno: its message names it ("[errno 28]"), the one way to know
    if code == errno.ENOSPC or sqlite_full or "[errno 28]" in text.lower():
        return os.strerror(errno.ENOSPC)
    if isinstance(code, int) and code > 0:
        return os.strerror(code)
    return text.splitlines()[0] if text else type(exc).__name__


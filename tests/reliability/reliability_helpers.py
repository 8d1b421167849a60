"""Run perflab's command-line entry in-process (fast enough for a fuzzer) and report what a
user would see: the exit code, stdout and stderr. A case that runs longer than `timeout`
seconds is stopped by SIGALRM and reported as a hang (exit code None)."""

from __future__ import annotations

import contextlib
import io
import signal
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang()


def run_main(*args: str, timeout: float = 10.0) -> tuple[int | None, str, str]:
    from perflab.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved_argv, saved_handler = sys.argv, signal.signal(signal.SIGALRM, _alarm)
    sys.argv = ["perflab", *map(str, args)]
    code: int | None = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            signal.setitimer(signal.ITIMER_REAL, timeout)
            try:
                main()
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            except Hang:
                code = None
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
    finally:
        sys.argv = saved_argv
        signal.signal(signal.SIGALRM, saved_handler)
    return code, out.getvalue(), err.getvalue()


def one_line_error(code, err: str) -> str:
    """Assert the shape every input error has -- exit 2, one line on stderr, no traceback -- and
    return the line."""
    assert code == 2, (code, err)
    assert "Traceback" not in err, err
    lines = err.strip("\n").splitlines()
    assert len(lines) == 1, err
    return lines[0]


def write(directory: Path, text: str, name: str = "w.yaml") -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(text).lstrip())
    return path

"""Optional dependencies: imported where a feature uses them, named when they are missing.

A plain `pip install perflab` runs the embedded default end to end (SQLite, python, command
and batch SUTs: validate, run, study, show, reports, capacity). The packages of the extras in
pyproject.toml -- PostgreSQL's client and server, HTTP clients, a remote SUT host's monitor,
`perflab agent`, `perflab serve`, drivers on a Ray cluster -- are imported only by the feature
that needs them, through `require`. A feature whose package is missing stops with one line
naming the extra to install (an InputError: exit 2, never a traceback):

    a postgres target needs the 'net' extra: pip install 'perflab[net]'
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from types import ModuleType

from perflab.errors import InputError


class MissingExtra(InputError):
    """An optional package a feature needs is not installed; the message names the extra."""


def install_hint(extra: str) -> str:
    """The command that installs an extra, as a user types it (quoted for the shell)."""
    return f"pip install 'perflab[{extra}]'"


def missing_extra(extra: str, feature: str, detail: str = "", *, file: Path | str | None = None,
                  line: int | None = None, field: str | None = None) -> MissingExtra:
    """The one wording: "<feature> needs the '<extra>' extra: pip install 'perflab[<extra>]'"."""
    return MissingExtra(f"{feature} needs the {extra!r} extra{detail}: {install_hint(extra)}", file=file, line=line,
                        field=field)


def require(module: str, *, extra: str, feature: str, file: Path | str | None = None, line: int | None = None,
            field: str | None = None) -> ModuleType:
    """Import `module` (e.g. "aiohttp.web"), or raise MissingExtra naming the extra, with the
    file, line and field when the need comes from a file the user wrote.

    A package that is installed but fails to import for want of one of its own dependencies
    is reported the same way, naming the module that was missing: reinstalling the extra is
    the fix for both.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        missing = exc.name or module
        detail = "" if missing.split(".")[0] == module.split(".")[0] else f" (no module named {missing!r})"
        raise missing_extra(extra, feature, detail, file=file, line=line, field=field) from None


def check(module: str, *, extra: str, feature: str, file: Path | str | None = None, line: int | None = None,
          field: str | None = None) -> None:
    """`require` without the import, for validation: the top-level package is looked for
    (importlib.util.find_spec), not loaded, so `perflab validate` stays quick."""
    try:
        found = importlib.util.find_spec(module.split(".")[0]) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise missing_extra(extra, feature, file=file, line=line, field=field)

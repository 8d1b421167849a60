"""The system programs the tests use for real, read from the one table that installs them
(scripts/system-programs.tsv, which scripts/setup-system.sh reads and `make test` runs first).

A test that needs a program says `@programs.needs("nginx")`. A program missing at run time fails
the test, naming the set-up command: after README's test command every one is installed, so a
missing program is a set-up bug to see, never a skip to overlook. Naming a program the table does
not hold is an error at import, so nothing a test uses can be left out of the set-up."""

from __future__ import annotations

import os
import shutil
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TABLE = REPO / "scripts" / "system-programs.tsv"
SETUP = "scripts/setup-system.sh (`make test` runs it; as root on Debian)"


@dataclass(frozen=True)
class Program:
    name: str
    where: str        # an absolute path, or a name on PATH (Go programs: also $GOPATH/bin)
    how: str          # apt, go, go-static
    what: str         # the Debian package, or module@version


def read_table(path: Path = TABLE) -> dict[str, Program]:
    table: dict[str, Program] = {}
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, where, how, what = line.split("\t")
        table[name] = Program(name, where, how, what)
    return table


PROGRAMS = read_table()


def location(name: str) -> str | None:
    """Where the program is, or None. The two Python build inputs are checked as Python sees them."""
    program = PROGRAMS[name]
    if program.where == "python3-dev":
        header = Path(sysconfig.get_paths()["include"]) / "Python.h"
        return str(header) if header.exists() else None
    if program.where == "python3-venv":
        return "ensurepip" if _importable("ensurepip") else None
    if program.where.startswith("/") and program.where.endswith(".h"):  # a header: a build input
        return program.where if os.path.isfile(program.where) else None
    if program.where.startswith("/"):
        return program.where if os.access(program.where, os.X_OK) else None
    if program.how.startswith("go"):
        from perflab.tools import find_go_tool
        return find_go_tool(program.where)
    return shutil.which(program.where)


def _importable(module: str) -> bool:
    import importlib.util
    return importlib.util.find_spec(module) is not None


def path(name: str) -> str:
    """The program's path; the table's own location when it is missing (the test then fails at
    its `needs` marker, before it runs)."""
    return location(name) or PROGRAMS[name].where


def needs(*names: str) -> pytest.MarkDecorator:
    unknown = [n for n in names if n not in PROGRAMS]
    if unknown:
        raise KeyError(f"{', '.join(unknown)}: not in {TABLE.relative_to(REPO)}; add a row so the set-up installs it")
    return pytest.mark.needs_programs(*names)


def needs_compiled_loop() -> list[pytest.MarkDecorator]:
    """perflab's compiled loop (drive/load/loop/), built at install where gcc and Python's
    headers are (and OpenSSL's, for https): the set-up installs them before `make test` builds the
    environment, so a loop that is not built fails the test (reinstall: .venv/bin/pip install -e
    .), never skips it."""
    return [needs("gcc", "python-headers", "openssl-headers"), pytest.mark.needs_compiled_loop]


def compiled_loop_missing(item: pytest.Item) -> str | None:
    if item.get_closest_marker("needs_compiled_loop") is None:
        return None
    from perflab.drive.load import native_http
    return None if native_http.NOT_BUILT is None else (
        f"{native_http.NOT_BUILT}; gcc and Python's headers are installed: reinstall perflab (.venv/bin/pip install -e .)")


def missing(item: pytest.Item) -> list[str]:
    """The programs an item's `needs` markers name that are not installed."""
    names = [n for mark in item.iter_markers("needs_programs") for n in mark.args]
    return [n for n in dict.fromkeys(names) if location(n) is None]


def failure(names: list[str]) -> str:
    described = ", ".join(f"{n} ({PROGRAMS[n].what})" for n in names)
    return f"not installed: {described}. Run {SETUP}."

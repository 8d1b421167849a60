"""Which library a function belongs to: the groups "where the pathlength went" sums by.

One registry, read in order, the first match naming the group (DESIGN.md: one registry per open
set): a new SUT's library is one more line. A function no line claims is grouped by its object's
own name, so nothing is dropped.

SQLite and apsw share one object (each apsw wheel links its SQLite release in): SQLite's functions
are told apart by their source file, the amalgamation `sqlite3.c`, and where a wheel has no line
information (apsw 3.54's) by apsw's own naming (`APSWCursor_step`, `Connection_execute`,
`statementcache_prepare_internal`, `commithookcb`...): every other function of the object is
SQLite's.
perflab's adapter is Python: callgrind counts it as the interpreter's instructions (a C-level
count sees `_PyEval_EvalFrameDefault`, not the Python function it runs), so it is inside "the
Python interpreter"; what perflab adds in machine code of its own (the known loop, the client
requests) is a group of its own. The kernel is seen only by a sampled profile (perf), never by
valgrind.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

SQLITE = "SQLite"
APSW = "apsw (the binding)"
PYTHON = "the Python interpreter"
PERFLAB = "perflab (its machine code)"
LIBC = "libc"
KERNEL = "the kernel"
POSTGRES = "PostgreSQL"
VALGRIND = "valgrind"
NO_OBJECT = "code with no symbol"


@dataclass(frozen=True)
class Library:
    name: str
    claims: Callable[[str, str, str], bool]   # (object, function, source file)


def _object(pattern: str) -> Callable[[str, str, str], bool]:
    compiled = re.compile(pattern)
    return lambda obj, _fn, _file: bool(compiled.search(obj))


#: apsw's own C functions (its src/*.c), for a wheel built without line information, where the
#: source file cannot tell them from the SQLite it links in
_APSW_NAMES = re.compile(r"^(APSW|apsw|Connection_|argcheck_|statementcache_|convert|resetcursor|make_exception|"
                         r"set_context_result|getfunctionargs|cbdispatch|collation_cb|progresshandlercb|"
                         r"authorizercb|busyhandlercb)|hookcb$")


def _sqlite(obj: str, fn: str, file: str) -> bool:
    if "sqlite" in obj:
        return True
    if not obj.startswith("apsw/"):
        return False
    if file and file != "???":
        return file.endswith("sqlite3.c")
    return not _APSW_NAMES.search(fn)


LIBRARIES: tuple[Library, ...] = (
    Library(PERFLAB, _object(r"^\(perflab machine code\)$|http_loop\.")),
    Library(SQLITE, _sqlite),
    Library(SQLITE, _object(r"^libsqlite3\.")),
    Library(APSW, _object(r"^apsw/")),
    Library(POSTGRES, _object(r"^postgres$|^pgserver|/postgres$")),
    Library(PYTHON, _object(r"^libpython|^python\d|cpython-\d+.*\.so$|^libffi\.")),
    Library(LIBC, _object(r"^(libc|libm|libpthread|libdl|librt|ld-linux)[.-]")),
    Library(KERNEL, _object(r"^\[kernel")),
    Library(VALGRIND, _object(r"^vgpreload_")),
    Library(NO_OBJECT, _object(r"^\(no object\)$|^\[unknown\]$|^\?\?\?$")),
)


def library_of(obj: str, function: str, file: str = "") -> str:
    """The group a function is summed in: the first library that claims it, else its object."""
    for library in LIBRARIES:
        if library.claims(obj, function, file):
            return library.name
    return obj

"""A few bytes of x86-64 machine code made callable from Python, with no compiler.

Two jobs need instructions Python cannot write and a compiler may not be installed for:
valgrind's client requests (drive/pathlength/client_request.py), a fixed sequence valgrind
recognises, and the known loop (sut/known_loop.py), whose instruction count is the ruler the
pathlength counter is checked against. Both are tiny functions of the x86-64 System V ABI
(argument in rdi, result in rax), written as bytes into an executable page and called through
ctypes.

Code written this way has no symbol: a profiler sees an address in anonymous memory. Each page
is therefore named when it is made (`name`) and listed by `code_map()`, the map the counted
pass hands to its reading of callgrind's dumps (drive/pathlength/functions.py) so that the
known loop shows as itself in a table of functions.
"""

from __future__ import annotations

import ctypes
import mmap
import platform
from collections.abc import Callable
from typing import Any


def x86_64() -> bool:
    return platform.machine() in ("x86_64", "AMD64")


#: every page made in this process: (start address, length of its code, name)
_PAGES: list[tuple[int, int, str]] = []


def code_map() -> list[tuple[int, int, str]]:
    """The machine code this process made, as (start, size, name): perf's map format's fields."""
    return list(_PAGES)


class MachineCode:
    """`code` in a page of its own, callable as `restype f(*argtypes)`; the page lives as long
    as this object (and stays in `code_map()`: an address is not reused while the process runs
    its pass)."""

    def __init__(self, code: bytes, restype: Any, argtypes: tuple[Any, ...], name: str = "perflab machine code"):
        if not x86_64():
            raise OSError(f"perflab's machine code is written for x86-64, not {platform.machine()}")
        if len(code) > mmap.PAGESIZE:
            raise ValueError("machine code longer than a page")
        self._page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        self._page.write(code)
        address = ctypes.addressof(ctypes.c_char.from_buffer(self._page))
        _PAGES.append((address, len(code), name))
        self.address = address   # the page's first byte: another entry into it is address + offset
        self.function: Callable[..., Any] = ctypes.CFUNCTYPE(restype, *argtypes)(address)

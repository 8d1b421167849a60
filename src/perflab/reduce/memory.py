"""Reusing freed memory in a process that reduces one large run and exits (`perflab show`).

A reduction of ten million transactions makes a few dozen arrays of 50-80 MB that live for a
moment each. glibc gives every allocation above 32 MB its own mapping and returns it to the
kernel when freed, so the next array is faulted in again, page by page; numpy also asks for
transparent huge pages on large arrays, and where the kernel compacts memory to find them
(defrag = madvise) a first touch can stall for seconds. Measured on the lab machine (a VM, 2
cores): of a 10M-row `perflab show` of 8-9 s, 4 s were system time in page faults and
compaction, not the reduction's own work.

`reuse_freed_memory()` keeps freed memory in the process's heap for the next array (glibc:
no per-allocation mappings, no trimming) and turns off numpy's huge-page advice. It changes
where memory comes from, never a value: a process that calls it computes the same numbers.
Only for a short-lived process: the heap then never shrinks until exit.
"""

from __future__ import annotations

import ctypes
import sys

# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4


def reuse_freed_memory() -> bool:
    """Keep freed memory for reuse (see the module's doc). True when glibc took the settings;
    False elsewhere (another libc, another platform), where nothing changes."""
    try:
        from numpy._core.multiarray import _set_madvise_hugepage  # type: ignore[attr-defined]

        _set_madvise_hugepage(False)
    except (ImportError, AttributeError):  # another numpy: its default stays
        pass
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # no mallopt (musl has none to speak of)
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_MAX, 0)) and bool(mallopt(_M_TRIM_THRESHOLD, 0x7FFFFFFF))

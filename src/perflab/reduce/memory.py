"""Reusing freed memory in a process that reduces one large run and exits (`perflab show --json`).

A reduction of ten million transactions makes a few dozen arrays of 50-80 MB that live for a
moment each. glibc gives every allocation above 32 MB its own mapping and returns it to the
kernel when freed, so the next array is faulted in again, page by page; numpy also asks for
transparent huge pages on large arrays, and where the kernel compacts memory to find them
(defrag = madvise) a first touch can stall for seconds.

`reuse_freed_memory()` keeps freed memory in the process's heap for the next array (glibc:
no per-allocation mappings, no trimming) and turns off numpy's huge-page advice. Measured on the
lab machine (a VM, 2 cores), `perflab show --json` of 10M transactions, the reader streamed
(bench/findings.md, 2026-11-28): 4.71 s wall with both, 5.84 s with glibc's settings only,
6.82 s with neither -- system time 1.1-1.3 s, 2.1-2.4 s, 3.1-3.8 s. It changes where memory
comes from, never a value: `show --json` prints the same bytes either way.

Why it is safe where it is:
* scoped: only `perflab show --json` calls it, a process that reduces one run, prints and
  exits; the heap then never shrinks, which nothing long-lived (serve, study, a test) may call;
* numpy's switch is private (numpy._core.multiarray._set_madvise_hugepage; the public knob,
  NUMPY_MADVISE_HUGEPAGE, is read once when numpy is imported, before the command runs): a
  numpy without it keeps its default, nothing fails;
* mallopt is glibc's: elsewhere (another libc, another platform) nothing changes and the
  function says False.
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

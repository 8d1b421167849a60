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

`one_malloc_arena()` makes every thread allocate from that one heap: reduce_run makes the
grouped rows on threads of their own, and glibc's other arenas, without mappings, are too small
for their arrays. It must come before any thread allocates, so the command line asks for it
first thing, whatever the command.

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
from typing import Any

# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4
_M_ARENA_MAX = -8


def reuse_freed_memory() -> bool:
    """Keep freed memory for reuse (see the module's doc). True when glibc took the settings;
    False elsewhere (another libc, another platform), where nothing changes."""
    try:
        from numpy._core.multiarray import _set_madvise_hugepage  # type: ignore[attr-defined]

        _set_madvise_hugepage(False)
    except (ImportError, AttributeError):  # another numpy: its default stays
        pass
    mallopt = _mallopt()
    if mallopt is None:
        return False
    return bool(mallopt(_M_MMAP_MAX, 0)) and bool(mallopt(_M_TRIM_THRESHOLD, 0x7FFFFFFF))


def one_malloc_arena() -> bool:
    """glibc: every thread allocates from the one heap (M_ARENA_MAX = 1). reduce_run makes the
    grouped rows on a second thread; with the settings above (no mappings of its own) a second
    arena's heaps are too small for a large array, and each was faulted in anew: 550k page
    faults against 227k, and `perflab show --json` of 10M transactions 2.4-2.7 s against
    1.7-1.8 s (measured). glibc fixes the number of arenas when a thread first needs one, and
    importing numpy or pyarrow starts threads, so this is called first thing by the command
    line (perflab/cli/__init__.py). One arena costs a multi-threaded allocator contention;
    perflab's threads allocate little (Python objects come from Python's own allocator).
    True when glibc took it; False elsewhere, where nothing changes."""
    mallopt = _mallopt()
    return mallopt is not None and bool(mallopt(_M_ARENA_MAX, 1))


def _mallopt() -> Any:
    """glibc's mallopt, or None (another libc, another platform)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # no mallopt (musl has none to speak of)
        return None
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return mallopt

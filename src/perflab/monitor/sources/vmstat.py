"""System-wide paging counters from /proc/vmstat (H): `h.vm.{pgfault,pgmajfault,pswpin,pswpout}`
and, where the kernel has them, `h.vm.workingset_refault_{file,anon}` (or the older single
`h.vm.workingset_refault`).

READS/SEC of the seeds' paging rows are page-ins from storage: major faults and swap-ins;
WRITES/SEC are swap-outs. pgfault (all faults, minor included) is kept for context.

A refault is a page read back in soon after memory pressure evicted it (the kernel's workingset
shadow entries recognise it): on a machine without swap, the page cache is what a memory
limit takes away, and refaults are what the SUT pays for it -- the closest analog of the seeds'
page reads of a storage-constrained system. A file read through read() that misses the cache
is a refault but not a major fault (only faults on mapped pages are), so both are kept.
"""

from __future__ import annotations

from . import SourceUnavailable
from .procfs import parse_key_values, read_bytes

_WANTED = {b"pgfault": 0, b"pgmajfault": 0, b"pswpin": 0, b"pswpout": 0, b"workingset_refault_file": 0,
           b"workingset_refault_anon": 0, b"workingset_refault": 0}


class VmstatSource:
    name = "vmstat"

    def __init__(self, path: str = "/proc/vmstat") -> None:
        self._path = path
        data = read_bytes(path)
        if data is None:
            raise SourceUnavailable(f"cannot read {path}")
        # Only the counters this kernel has become columns (absent, never zero-filled).
        self._keys = [k for k in _WANTED if k in parse_key_values(data, _WANTED)]
        if not self._keys:
            raise SourceUnavailable(f"{path}: none of pgfault/pgmajfault/pswpin/pswpout")

    def read(self) -> dict[str, float]:
        # /proc/vmstat has ~180 lines; finding four of them beats splitting them all (5x).
        data = b"\n" + (read_bytes(self._path) or b"")
        out: dict[str, float] = {}
        for key in self._keys:
            at = data.find(b"\n" + key + b" ")
            if at >= 0:
                end = data.find(b"\n", at + 1)
                out[f"h.vm.{key.decode()}"] = float(data[at + len(key) + 2 : end if end > 0 else None])
        return out

    def close(self) -> None:
        pass

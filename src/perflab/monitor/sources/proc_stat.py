"""Whole-machine CPU time per processor, from /proc/stat (H).

Columns `h.cpu<N>.{user,nice,system,irq,softirq,iowait,steal,idle}`, cumulative seconds.
Only the per-CPU lines are kept (not the aggregate `cpu` line): reduction sums the CPUs the
run actually uses, which is the seeds' "busy time of the processors in the configuration".
"""

from __future__ import annotations

from . import SourceUnavailable
from .procfs import CLK_TCK, read_bytes

# Field order of a `cpuN` line (proc(5)): user nice system idle iowait irq softirq steal ...
# `user` already includes guest time and `nice` guest_nice, so guest fields are not added again.
_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")

# The kernel documents that per-CPU idle and iowait can go backwards on tickless (NO_HZ)
# kernels (Documentation/filesystems/proc.rst: "iowait ... can decrease"). The contract says
# counters are cumulative, so these two are held at their running maximum.
_MAY_DECREASE = ("idle", "iowait")


class ProcStatSource:
    name = "proc_stat"

    def __init__(self, path: str = "/proc/stat") -> None:
        self._path = path
        first = self._parse()
        if not first:
            raise SourceUnavailable(f"{path}: no per-CPU lines")
        # The set of CPUs is fixed at open time so the column set stays stable; a CPU taken
        # offline later reads as absent (NaN in the parquet), never as zero.
        self._cpus = sorted(first)
        self._peak: dict[str, float] = {}

    def _parse(self) -> dict[int, list[int]]:
        data = read_bytes(self._path)
        if data is None:
            raise SourceUnavailable(f"cannot read {self._path}")
        # The cpu lines come first; cut before the (long) `intr` line instead of splitting it.
        end = data.find(b"\nintr")
        per_cpu: dict[int, list[int]] = {}
        for line in (data[:end] if end > 0 else data).splitlines():
            if line.startswith(b"cpu") and not line.startswith(b"cpu "):
                parts = line.split()
                per_cpu[int(parts[0][3:])] = [int(x) for x in parts[1 : 1 + len(_FIELDS)]]
        return per_cpu

    def read(self) -> dict[str, float]:
        out: dict[str, float] = {}
        per_cpu = self._parse()
        for cpu in self._cpus:
            values = per_cpu.get(cpu)
            if values is None:
                continue
            for field, ticks in zip(_FIELDS, values):
                key = f"h.cpu{cpu}.{field}"
                seconds = ticks / CLK_TCK
                if field in _MAY_DECREASE:
                    seconds = max(seconds, self._peak.get(key, 0.0))
                    self._peak[key] = seconds
                out[key] = seconds
        return out

    def close(self) -> None:
        pass

"""Which CPUs the driver and the SUT run on.

The seeds' lab drove the system from a separate processor (TPNS) so the driver's cost never
landed on the measured system. On one machine perflab does the same with CPU affinity: by
default the driver gets the first CPU it may use and the SUT the rest. With a single CPU
they share it, and every report says so.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from perflab.errors import InputError


@dataclass
class Placement:
    driver_cpus: list[int]
    sut_cpus: list[int]

    @property
    def shared(self) -> bool:
        return bool(set(self.driver_cpus) & set(self.sut_cpus))

    def describe(self) -> str:
        text = f"driver on CPU {','.join(map(str, self.driver_cpus))}, SUT on CPU {','.join(map(str, self.sut_cpus))}"
        return text + (" (shared: the driver's CPU use is included in the SUT's CPUs' busy time)" if self.shared else "")


def available_cpus() -> list[int]:
    return sorted(os.sched_getaffinity(0))


def resolve_placement(driver_cpus: list[int] | None, sut_cpus: list[int] | None) -> Placement:
    cpus = available_cpus()
    for name, chosen in (("placement.driver_cpus", driver_cpus), ("placement.sut_cpus", sut_cpus)):
        if chosen is not None:
            missing = sorted(set(chosen) - set(cpus))
            if missing or not chosen:
                raise InputError(f"CPUs {missing or chosen} are not available; this machine offers {cpus}", field=name)
    if driver_cpus is None and sut_cpus is None:
        if len(cpus) >= 2:
            return Placement([cpus[0]], cpus[1:])
        return Placement(cpus, cpus)
    if driver_cpus is None:
        assert sut_cpus is not None  # (both None: above)
        rest = [c for c in cpus if c not in sut_cpus]
        return Placement(rest[:1] or list(sut_cpus), list(sut_cpus))
    if sut_cpus is None:
        rest = [c for c in cpus if c not in driver_cpus]
        return Placement(list(driver_cpus), rest or list(driver_cpus))
    return Placement(list(driver_cpus), list(sut_cpus))


def parse_cpus(text: str | None, option: str = "--cpus") -> list[int] | None:
    """CPU numbers from '1', '0,2-3'; InputError naming the option otherwise."""
    if text is None:
        return None
    try:
        cpus: list[int] = []
        for part in text.split(","):
            if "-" in part:
                low, high = part.split("-")
                cpus.extend(range(int(low), int(high) + 1))
            elif part.strip():
                cpus.append(int(part))
    except ValueError:
        raise InputError(f"expected CPU numbers such as 1 or 0,2-3, got {text!r}", field=option) from None
    if not cpus or any(c < 0 or c > 4095 for c in cpus):
        raise InputError(f"expected CPU numbers such as 1 or 0,2-3, got {text!r}", field=option)
    return cpus

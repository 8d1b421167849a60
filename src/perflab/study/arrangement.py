"""How a block's runs are arranged on the machine, and what each arrangement is known to cost in
accuracy.

* **one-at-a-time** -- the seeds' way: each run alone on the machine, the driver on its CPUs and
  the SUT on the rest, the blocks interleaved. Its ratio is the truth the others are measured
  against (docs/accuracy.md): what each configuration does alone at the study's load. On a host
  whose speed wanders between runs it needs many blocks.
* **duet** -- both runs of a block at once, both SUTs time-sharing the SUT's CPUs and both
  drivers the driver's, each at half the calibrated load (Bulej et al., ICPE 2020). A slow spell
  of the host slows both and cancels from their ratio, so it is precise; but two servers on one
  core share its caches and run queue, which magnifies a CPU-bound difference.
* **split-duet** -- both runs of a block at once, each SUT on CPUs of its own, each driver on the
  other SUT's CPUs ("crossed": each core holds one SUT and the other configuration's driver, so
  the traffic between a driver and its SUT crosses cores as it does one at a time), the sides
  swapped from block to block so that neither configuration keeps the faster CPU. Each SUT runs
  at the calibrated load when its CPU has room for it beside the other's driver, else at the
  share that leaves 10% of the CPU free (the report says which).

Every arrangement but one-at-a-time has a measured bias (perflab.stats.bias), kept in
`arrangement_bias.json` beside this module and written by `perflab accuracy --studies`; a study
in that arrangement widens its verdict intervals by it and says so.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from importlib import resources

from perflab.records.study import DesignBias
from perflab.stats.bias import BiasBound
from perflab.study.compare import DesignTraits

ARRANGEMENTS = ("one-at-a-time", "duet", "split-duet")
#: The busy share a split duet leaves each CPU below: its SUT at the calibrated load plus the
#: other configuration's driver must fit under it, else both run at the share that does.
SPLIT_CPU_CEILING_PCT = 90.0
BIAS_FILE = "arrangement_bias.json"


def measured_bias(arrangement: str) -> DesignBias | None:
    """The arrangement's bias as `perflab accuracy --studies` measured it (None: not measured, or
    one-at-a-time, which is the reference)."""
    if arrangement == "one-at-a-time":
        return None
    try:
        text = resources.files("perflab.study").joinpath(BIAS_FILE).read_text()
    except (FileNotFoundError, OSError):
        return None
    entry = (json.loads(text).get("arrangements") or {}).get(arrangement)
    if not entry:
        return None
    return DesignBias.model_validate({"arrangement": arrangement, **entry})


def traits(arrangement: str, bias: DesignBias | None) -> DesignTraits:
    """What the comparisons of a study in this arrangement may say (perflab.study.compare)."""
    bound = None
    if bias is not None and bias.widened:
        bound = BiasBound(bias.k_low, bias.k_high, bias.a_max)
    return DesignTraits(concurrent=arrangement != "one-at-a-time", bias=bound)


@dataclass(frozen=True)
class Sides:
    """A split duet's two halves of the machine's CPUs."""

    first: list[int]
    second: list[int]

    @classmethod
    def of(cls, cpus: list[int]) -> "Sides":
        if len(cpus) < 2:
            raise ValueError("a split duet needs at least two CPUs")
        half = len(cpus) // 2
        return cls(cpus[:half], cpus[half:half * 2])

    def placement(self, slot: int, block: int) -> tuple[list[int], list[int]]:
        """(driver CPUs, SUT CPUs) of the run in `slot` (0 or 1) of `block`: the SUT on one half
        and its driver on the other, the halves swapped every block."""
        sut_first = (slot + block) % 2 == 0
        sut, other = (self.first, self.second) if sut_first else (self.second, self.first)
        return list(other), list(sut)


def split_share(sut_util: float | None, driver_util: float | None) -> float:
    """The share of the calibrated load a split duet runs each SUT at: all of it when the SUT's
    calibrated utilization plus the other configuration's driver fits under the ceiling on one
    CPU, else the share that does (both measured by the calibration, % of one CPU)."""
    if sut_util is None or driver_util is None or not (math.isfinite(sut_util) and math.isfinite(driver_util)):
        return 0.5
    total = sut_util + driver_util
    return 1.0 if total <= SPLIT_CPU_CEILING_PCT else max(0.1, SPLIT_CPU_CEILING_PCT / total)

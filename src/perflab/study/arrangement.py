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

Every arrangement but one-at-a-time has a bias (perflab.stats.bias), measured on each host by
`perflab accuracy --studies` and kept in that host's run store (store/bias.py); a study in that
arrangement on that host widens its verdict intervals by it and says so. On a host with no
bound of its own the study says that instead, and its intervals are the arrangement's own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perflab.records.bias import HostIdentity
from perflab.records.study import Arrangement, CalibrationStep, DesignBias, LoadRecord
from perflab.stats.bias import BiasBound
from perflab.store.bias import bounds_path, host_bound
from perflab.study.compare import DesignTraits

ARRANGEMENTS = ("one-at-a-time", "interleaved", "duet", "split-duet")
#: The arrangements whose runs each have the machine to themselves: unbiased by construction,
#: the reference the others are measured against; they state no bias bound.
ALONE = ("one-at-a-time", "interleaved")
#: The order `auto` tries the arrangements in: the best measured first (docs/accuracy.md, "Study
#: arrangements against known truths", 2026-11-27: the duet's bias within -0.55..+1.14 points on
#: SQLite and the synthetic SUT, its intervals ±0.3-0.8 points; the split duet's intervals
#: ±5-7 points on SQLite and its bias up to 5 points on PostgreSQL, where one at a time needs
#: ±12 points); each is taken only if its drivers can keep up. Interleaved is not among them: its
#: SQLite cells of 2026-12-07 (Intel Xeon guest, 24 pairs of 2 s + 4 s, 6 minutes a study) read
#: ±5.0 to ±9.4 points -- 17,000 think-time users do not reach a steady state in a 2 s warm-up.
PREFERENCE: tuple[Arrangement, ...] = ("duet", "split-duet", "one-at-a-time")
#: Headroom `auto` leaves under the drivers' saturation limit: a driver measured near it in a
#: calibration run would cross it in some block.
DRIVER_HEADROOM = 0.85
#: The busy share a split duet leaves each CPU below: its SUT at the calibrated load plus the
#: other configuration's driver must fit under it, else both run at the share that does.
SPLIT_CPU_CEILING_PCT = 90.0


def measured_bias(arrangement: str, target_kind: str, home: Path, fingerprint: dict[str, Any]) -> DesignBias | None:
    """The bias bound a study in `arrangement` states on this machine (None: one-at-a-time, the
    reference, has none): this host's own bound for the study's kind of target, measured by
    `perflab accuracy --studies` into the run store -- or, when the host has none, a record that
    says so (route `none`: the arrangement's own interval, unwidened, and the report says that its
    bias on this host is not measured). A bound of another machine is never applied."""
    if arrangement in ALONE:
        return None
    host = HostIdentity.of(fingerprint)
    found = host_bound(home, fingerprint, arrangement, target_kind)
    if found is None:
        return DesignBias(arrangement=arrangement, route="none", target=target_kind, host=host.describe(),
                          source=f"none in {bounds_path(home, host)}")
    days = sorted(set(found.days))
    return DesignBias(arrangement=arrangement, route="host", k_low=found.k_low, k_high=found.k_high,
                      a_max=max(abs(found.a_low), abs(found.a_high)), a_low=found.a_low, a_high=found.a_high,
                      k_mid=found.k_mid, a_mid=found.a_mid, level=found.level, widened=True,
                      measured=f"on {host.describe()}, {found.fit.studies} studies of {', '.join(found.cases)} "
                               f"over {len(days)} day(s) ({', '.join(days)})",
                      source=str(bounds_path(home, host)), target=target_kind, host=host.describe(),
                      studies=found.fit.studies, days=days, host_states=found.host_states)


def traits(arrangement: str, bias: DesignBias | None) -> DesignTraits:
    """What the comparisons of a study in this arrangement may say (perflab.study.compare)."""
    bound = None
    if bias is not None and bias.widened:
        bound = BiasBound(bias.k_low, bias.k_high, bias.a_max, bias.a_low, bias.a_high, bias.k_mid, bias.a_mid)
    return DesignTraits(concurrent=arrangement not in ALONE, bias=bound, swapped=arrangement == "split-duet")


@dataclass(frozen=True)
class Sides:
    """A split duet's two halves of the machine's CPUs."""

    first: list[int]
    second: list[int]

    @classmethod
    def of(cls, cpus: list[int]) -> Sides:
        if len(cpus) < 2:
            raise ValueError("a split duet needs at least two CPUs")
        half = len(cpus) // 2
        return cls(cpus[:half], cpus[half:half * 2])

    def placement(self, side: int) -> tuple[list[int], list[int]]:
        """(driver CPUs, SUT CPUs) of a run whose SUT takes `side` (0: the first half, 1: the
        second): its driver on the other half (stats.schedule.balanced_sides chooses the sides)."""
        sut, other = (self.first, self.second) if side == 0 else (self.second, self.first)
        return list(other), list(sut)


def choose(can_pair: bool, driver_util: float | None, sut_util: float | None, driver_cpus: int) -> \
        tuple[Arrangement, str]:
    """`auto`: the first arrangement of PREFERENCE whose drivers can keep up, judged from the
    calibration run at the chosen load (one driver alone at the full load, % of one core; the
    SUT's UTIL/PROC (S)); (arrangement, why) -- the report prints why."""
    from perflab.caveats import DRIVER_SATURATION_PCT

    if not can_pair:
        return "one-at-a-time", "auto: the study cannot run its blocks as pairs (not two configurations, a sweep, " \
                                "or a primary metric a pair cannot attribute)"
    if driver_util is None or sut_util is None:
        return "one-at-a-time", "auto: the calibration did not measure the driver's and the SUT's CPU"
    limit = DRIVER_SATURATION_PCT * DRIVER_HEADROOM
    for arrangement in PREFERENCE:
        if arrangement == "duet" and driver_util <= limit * max(1, min(2, driver_cpus)):
            # two drivers at half the load each use about what one uses at the whole
            return "duet", (f"auto: a duet (the two drivers at half the load need about {driver_util:.0f}% of the "
                            f"driver's CPU together, under {limit:.0f}%)")
        if arrangement == "split-duet":
            share = split_share(sut_util, driver_util)
            if share >= 0.5:
                return "split-duet", (f"auto: a split duet, each SUT at {100 * share:.0f}% of the calibrated load on "
                                      f"a CPU of its own (SUT {sut_util:.0f}% + the other's driver {driver_util:.0f}% "
                                      f"of one CPU at the whole load)")
        if arrangement == "one-at-a-time" and driver_util <= limit:
            return "one-at-a-time", (f"auto: one at a time (the driver needs {driver_util:.0f}% of a CPU at the "
                                     f"calibrated load: no room to run two beside two SUTs)")
    return "one-at-a-time", (f"auto: one at a time, though its driver needs {driver_util:.0f}% of a CPU at the "
                             f"calibrated load and may be excluded as saturated: the SUT costs less per transaction "
                             f"than the driver (an external driver, or costlier transactions)")


def pair_load(arrangement: str, record: LoadRecord, step: CalibrationStep | None) -> LoadRecord:
    """A calibrated load as a pair runs it. Calibration finds the load at which one SUT fills
    the target share of its CPUs alone (`step`: that calibration run). A duet runs two SUTs on
    those CPUs at once, so each gets half of it: the pair together at the target, neither
    saturated, each at the same load. A split duet gives each SUT CPUs of its own, shared with
    the other configuration's driver: each runs at the calibrated load when both fit on one CPU,
    else at the share that does. One at a time, the load is the calibrated one."""
    if arrangement in ALONE:
        return record
    if arrangement == "split-duet":
        share = split_share(step.util_proc_s if step else None, step.driver_util if step else None)
        why = (f"a split duet: each SUT at {100 * share:.0f}% of the calibrated load on a CPU of its own beside the "
               f"other configuration's driver" + ("" if share == 1.0 else
                                                   f" (SUT and driver together would exceed "
                                                   f"{SPLIT_CPU_CEILING_PCT:.0f}% of the CPU at the full load)"))
    else:
        share, why = 0.5, "a duet: each of the pair at half the calibrated load"
    users = None if record.users is None else max(1, int(record.users * share))
    rate = None if record.rate is None else record.rate * share
    return record.model_copy(update={"users": users, "rate": rate, "share": why, "share_fraction": share})


def split_share(sut_util: float | None, driver_util: float | None) -> float:
    """The share of the calibrated load a split duet runs each SUT at: all of it when the SUT's
    calibrated utilization plus the other configuration's driver fits under the ceiling on one
    CPU, else the share that does (both measured by the calibration, % of one CPU)."""
    if sut_util is None or driver_util is None or not (math.isfinite(sut_util) and math.isfinite(driver_util)):
        return 0.5
    total = sut_util + driver_util
    return 1.0 if total <= SPLIT_CPU_CEILING_PCT else max(0.1, SPLIT_CPU_CEILING_PCT / total)

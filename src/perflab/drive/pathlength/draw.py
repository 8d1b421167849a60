"""The counted pass's transactions: drawn from the workload's mix with the run's seed, as a job
stream draws its jobs (job n: one script chosen from its own seeded stream, its steps' parameters
from another), so two configurations of a study count the same transactions with the same
parameters -- their pathlengths are paired, transaction by transaction.

A workload's init script (each user's logon) is drawn once, first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from perflab.drive.load.mix import compile_scripts
from perflab.workload.model import Workload
from perflab.workload.rng import UserRandom


@dataclass(frozen=True)
class Drawn:
    tx_index: int
    params: dict[str, Any] | None


def draw(workload: Workload, seed: int, count: int) -> list[Drawn]:
    """The first `count` transactions of the counted pass."""
    compiled = compile_scripts(workload)
    drawn: list[Drawn] = []
    if compiled.init is not None:
        prng = UserRandom(seed, 0, 1)
        drawn += [Drawn(step.tx_index, step.params(prng)) for step in compiled.init.steps]
    job = 0
    while len(drawn) < count:
        rng, prng = UserRandom(seed, job, 0), UserRandom(seed, job, 1)
        script = compiled.mix[rng.pick(compiled.cumulative)]
        drawn += [Drawn(step.tx_index, step.params(prng)) for step in script.steps]
        job += 1
    return drawn[:count]

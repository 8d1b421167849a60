"""Run orders: randomized interleaved blocks (RMIT) and the sequential order they replace.

Why interleave: the host drifts (thermal state, page cache, noisy neighbours, background jobs).
Run A five times and then B five times and a 2 % drift over the session shows up as a 1 %
"difference" that a t-test will call significant about 44 % of the time on identical
configurations (statistics-and-capacity.md §2, §5.3). Put every configuration once into each
block, compare within blocks, and the drift cancels. Randomize the order inside each block so
that "B always runs second" cannot alias with a within-block trend (an alternating ABAB… order
keeps a small bias: 11 % false alarms instead of 10 % in the same simulation). Abedi & Brecht
(ICPE 2017) call this design randomized multiple interleaved trials.

A schedule is a list of (block, configuration) in execution order. The block number is what the
analysis pairs on (`perflab.stats.estimate.compare`), and the list itself is what a study
records, so a result can always be traced to the order its runs had.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TypeVar

Schedule = list[tuple[int, str]]
T = TypeVar("T")


def interleaved_schedule(configs: Sequence[str], blocks: int, seed: int) -> Schedule:
    """*blocks* blocks, each holding every configuration once, in a seeded random order that is
    balanced in its first place: every configuration starts floor or ceil(blocks / k) of the
    blocks (with two configurations and an even number of blocks, exactly half each). A plain
    shuffle per block left it to chance -- with seed 1, the second configuration started 4 of 6
    blocks -- and the first place of a block is where a carry-over (a warmer page cache, a
    fresher allocator) would bias a comparison.

    The first places are drawn round by round (a random permutation of the configurations for
    each k blocks), the other places shuffled. The shuffles are Fisher–Yates over
    `random.Random(seed).random()` rather than `random.shuffle` or numpy: Python guarantees the
    `random()` sequence for a seed across versions, not the algorithms built on it, and a
    recorded schedule must be re-derivable from its seed years later.
    """
    names = _check(configs, blocks)
    rng = random.Random(seed)
    firsts: list[str] = []
    while len(firsts) < blocks:
        firsts.extend(_shuffled(names, rng))
    out: Schedule = []
    for block in range(blocks):
        rest = _shuffled([n for n in names if n != firsts[block]], rng)
        out.extend((block, name) for name in [firsts[block], *rest])
    return out


def _shuffled(items: list[T], rng: random.Random) -> list[T]:
    order = list(items)
    for i in range(len(order) - 1, 0, -1):
        j = int(rng.random() * (i + 1))
        order[i], order[j] = order[j], order[i]
    return order


def block_seed(seed: int, block: int) -> int:
    """The workload's random seed for one block of a study: derived from the study's seed and the
    block number, the same for every run of the block (so its configurations replay one random
    stream of think times and choices, and the pair differs only in what is compared) and
    different from block to block (so the blocks do not all replay one stream, which would make
    the stream itself a fixed effect of every comparison). numpy's SeedSequence hashes the pair
    the same way on every platform and version."""
    import numpy as np

    return int(np.random.SeedSequence([int(seed) & 0xFFFFFFFF, int(block)]).generate_state(1)[0] & 0x7FFFFFFF)


def balanced_sides(blocks: int, seed: int) -> list[int]:
    """The side of the machine (0 or 1) the base configuration's SUT takes in each block of a split
    duet; the other configuration takes the other side. Balanced (each side floor or ceil of half
    the blocks) and drawn from a stream of its own, independent of the start order: when the side
    followed the run's place in the block and the start order alternated, the two cancelled and a
    configuration kept one side in every block (a quarter of 6-block studies), which leaves the
    side's own speed inseparable from the change."""
    import numpy as np

    if blocks < 1:
        raise ValueError(f"blocks must be >= 1, got {blocks}")
    state = np.random.SeedSequence([int(seed) & 0xFFFFFFFF, 0x51DE5]).generate_state(1)[0]
    rng = random.Random(int(state))
    sides = [block % 2 for block in range(blocks)]
    if blocks % 2 and rng.random() < 0.5:
        sides[-1] = 1  # an odd count: which side gets the extra block is drawn too
    return _shuffled(sides, rng)


def sequential_schedule(configs: Sequence[str], blocks: int) -> Schedule:
    """All runs of the first configuration, then all of the next: AAAA…BBBB….

    The k-th run of each configuration is labelled block k, so a paired analysis of it is
    possible -- and is biased by any drift. It exists for the drift comparison and for
    reproducing legacy studies, not as a design to use.
    """
    names = _check(configs, blocks)
    return [(block, name) for name in names for block in range(blocks)]


def _check(configs: Sequence[str], blocks: int) -> list[str]:
    names = [str(c) for c in configs]
    if not names:
        raise ValueError("a schedule needs at least one configuration")
    if len(set(names)) != len(names):
        raise ValueError(f"configuration names must be unique: {names}")
    if blocks < 1:
        raise ValueError(f"blocks must be >= 1, got {blocks}")
    return names

"""Schedules: seeded, complete blocks, and unbiased orders."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest

from perflab.stats import interleaved_schedule, sequential_schedule


def test_same_seed_same_order_and_different_seeds_differ():
    configs = ["base", "new", "tuned"]
    assert interleaved_schedule(configs, 8, seed=42) == interleaved_schedule(configs, 8, seed=42)
    orders = {tuple(interleaved_schedule(configs, 8, seed=s)) for s in range(20)}
    assert len(orders) == 20


def test_order_is_pinned_for_a_seed():
    """A recorded schedule must be re-derivable from its seed on any future Python version."""
    assert interleaved_schedule(["A", "B"], 4, seed=0) == [
        (0, "A"), (0, "B"), (1, "B"), (1, "A"), (2, "A"), (2, "B"), (3, "B"), (3, "A"),
    ]


@pytest.mark.parametrize("configs,blocks", [(["A", "B"], 6), (["A", "B"], 7), (["r1", "r2", "r3"], 8)])
@pytest.mark.parametrize("seed", range(20))
def test_every_configuration_starts_its_share_of_the_blocks(configs, blocks, seed):
    schedule = interleaved_schedule(configs, blocks, seed)
    firsts = [name for i, (block, name) in enumerate(schedule) if i == 0 or schedule[i - 1][0] != block]
    counts = [firsts.count(c) for c in configs]
    assert max(counts) - min(counts) <= 1 and sum(counts) == blocks


@pytest.mark.parametrize("configs", [["A", "B"], ["r1", "r2", "r3", "r4"]])
def test_every_block_contains_each_configuration_once_in_block_order(configs):
    schedule = interleaved_schedule(configs, 7, seed=3)
    assert len(schedule) == 7 * len(configs)
    blocks = [b for b, _ in schedule]
    assert blocks == sorted(blocks)  # blocks run one after another, never interleaved
    for b in range(7):
        assert sorted(c for blk, c in schedule if blk == b) == sorted(configs)


def test_within_block_orders_are_uniform():
    """Each of the 6 orders of three configurations is about equally likely (no position bias)."""
    configs = ["A", "B", "C"]
    counts = Counter()
    for seed in range(400):
        schedule = interleaved_schedule(configs, 10, seed=seed)
        for b in range(10):
            counts[tuple(c for blk, c in schedule if blk == b)] += 1
    assert set(counts) == set(itertools.permutations(configs))
    total = sum(counts.values())  # 4000 blocks: expected 667 each, SD about 24
    assert all(abs(n - total / 6) < 100 for n in counts.values())


def test_sequential_schedule_runs_each_configuration_back_to_back():
    assert sequential_schedule(["A", "B"], 3) == [
        (0, "A"), (1, "A"), (2, "A"), (0, "B"), (1, "B"), (2, "B"),
    ]


@pytest.mark.parametrize("configs,blocks", [([], 3), (["A", "A"], 3), (["A", "B"], 0)])
def test_bad_schedules_are_rejected(configs, blocks):
    with pytest.raises(ValueError):
        interleaved_schedule(configs, blocks, seed=1)

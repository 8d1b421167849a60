"""The bisect's decisions (perflab.bisect.search) on scripted studies: each step's answer is what a
study of known truth would print -- the true ratio between the two versions, an interval of a
chosen half-width around it, the verdict perflab.stats.verdict gives that interval -- so every
path (one version, gradual, none, opposed, INCONCLUSIVE and more blocks, undecided) is checked
exactly, with no noise."""

from __future__ import annotations

import math

import pytest

from perflab.bisect.model import BisectDocument, Step
from perflab.bisect.search import Bisect, planned_studies
from perflab.stats.verdict import classify

MARGIN = 0.03


class Scripted:
    """Studies of versions whose ITR (S) is `levels[i]`; an interval of half-width `width(blocks)`
    (on the log scale) around the true ratio."""

    def __init__(self, levels, width=lambda blocks: 0.005, needed=None):
        self.levels = levels
        self.width = width
        self.needed = needed
        self.doc = BisectDocument(bisect_id="test", versions_file="v.yaml", study_file="s.yaml", metric="itr_s",
                                  label="ITR (S)", direction="higher", margin=MARGIN,
                                  versions=[f"v{i}" for i in range(len(levels))],
                                  studies_planned=planned_studies(len(levels)))

    def measure(self, base: int, new: int, blocks: int, purpose: str) -> Step:
        ratio = self.levels[new] / self.levels[base]
        w = self.width(blocks)
        low, high = ratio * math.exp(-w), ratio * math.exp(w)
        verdict, _ = classify(low, high, margin=MARGIN, higher_is_better=True)
        step = Step(number=len(self.doc.steps) + 1, base=base, new=new, base_version=f"v{base}",
                    new_version=f"v{new}", purpose=purpose, blocks=blocks, metric="itr_s", verdict=str(verdict),
                    ratio=ratio, ci_low=low, ci_high=high, level=0.95, n_blocks=blocks,
                    blocks_needed=self.needed(blocks) if self.needed else None)
        self.doc.steps.append(step)
        return step

    def run(self, blocks: int = 4, max_blocks: int = 24):
        finding = Bisect(self.doc, self.measure, blocks, max_blocks).run()
        return finding, [(s.base, s.new, s.blocks, s.verdict) for s in self.doc.steps]


@pytest.mark.parametrize("n,at", [(9, 5), (9, 1), (9, 8), (14, 7), (2, 1), (3, 2), (33, 20)])
def test_one_version_is_found_in_log2_steps(n, at):
    levels = [1000.0] * at + [1080.0] * (n - at)
    finding, steps = Scripted(levels).run()
    assert finding.kind == "version" and finding.version == f"v{at}" and (finding.base, finding.new) == (at - 1, at)
    assert steps[0][:2] == (0, n - 1)
    # at most 1 + ceil(log2(n - 1)) studies, one more when the located step was only derived
    assert len(steps) <= planned_studies(n) + 1
    assert finding.parts[0].ratio == pytest.approx(1.08)


def test_a_gradual_change_is_said_so_with_its_parts():
    levels = [1000.0 * 1.025 ** i for i in range(9)]      # +2.5% each version, +22% in all
    finding, steps = Scripted(levels).run()
    assert finding.kind == "gradual" and finding.version is None
    assert "gradual" in finding.text and "no one version made it" in finding.text
    first, rest = finding.parts
    assert first.ratio == pytest.approx(1.025 ** 4) and rest.ratio == pytest.approx(1.025 ** 4) and rest.derived


def test_two_steps_in_one_half_narrow_to_the_step_that_carries_part_and_say_it_is_not_all():
    # +5% at v3 and +5% at v4: the halving goes to (v0, v4], then (v2, v4] is spread
    levels = [1000.0] * 3 + [1050.0] + [1102.5] * 5
    finding, _ = Scripted(levels).run()
    assert finding.kind == "gradual"
    assert (finding.base, finding.new) == (2, 4)


def test_no_change_over_the_range_is_one_study():
    finding, steps = Scripted([1000.0] * 9).run()
    assert finding.kind == "none" and len(steps) == 1 and steps[0][3] == "EQUIVALENT"


def test_changes_that_oppose_each_other_are_not_bisected():
    levels = [1000.0, 900.0, 900.0, 900.0, 1100.0, 1100.0, 1100.0, 1100.0, 1100.0]
    finding, steps = Scripted(levels).run()
    assert finding.kind == "opposed" and "oppose" in finding.text
    assert steps[0][3] == "BETTER" and steps[-1][3] == "WORSE" and steps[-1][:2] == (0, 2)


def test_an_inconclusive_step_runs_again_with_the_blocks_it_needs_not_a_guess():
    # the interval's half-width falls as 1/sqrt(blocks): 6.5% at 4 blocks (INCONCLUSIVE), 2.6% at 25
    width = lambda blocks: 0.13 / math.sqrt(blocks)    # noqa: E731
    needed = lambda blocks: 16                          # noqa: E731  -- what its report says the margin needs
    levels = [1000.0] * 5 + [1100.0] * 4
    finding, steps = Scripted(levels, width=width, needed=needed).run(blocks=4, max_blocks=24)
    assert finding.kind == "version" and finding.version == "v5"
    # every INCONCLUSIVE step is followed by the same pair with max(needed, 2 x blocks) blocks
    for (b1, n1, blocks1, v1), (b2, n2, blocks2, _) in zip(steps, steps[1:]):
        if v1 == "INCONCLUSIVE":
            assert (b2, n2) == (b1, n1) and blocks2 == min(24, max(16, 2 * blocks1))
    assert any(v == "INCONCLUSIVE" for *_, v in steps)


def test_a_step_still_inconclusive_at_max_blocks_leaves_the_range_undecided():
    levels = [1000.0] * 5 + [1100.0] * 4
    finding, steps = Scripted(levels, width=lambda blocks: 0.5, needed=lambda b: 100).run(blocks=4, max_blocks=8)
    assert finding.kind == "undecided" and [s[2] for s in steps] == [4, 8]

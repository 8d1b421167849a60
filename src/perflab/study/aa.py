"""What an A/A study (`perflab study FILE --aa`: the base against itself) says about the lab:
the primary metric's noise, the claims of a change it made (each one false), and the blocks the
margin needs -- the seeds' ±3% rule made measurable. Computed from the finished document;
running the study is study/runner.py's.
"""

from __future__ import annotations

import math

from perflab.records.study import AAResult, Design, StudyDocument
from perflab.stats.criteria import DEFAULT_CONFIDENCE, DEFAULT_MARGIN
from perflab.stats.noise import power
from perflab.stats.verdict import MIN_BLOCKS, blocks_needed
from perflab.study.arrangement import traits
from perflab.study.compare import CLAIMS, default_primary

#: The power an A/A study plans blocks for (the chance of EQUIVALENT when nothing changed).
AA_POWER = 0.80


def aa_result(doc: StudyDocument) -> AAResult | None:
    """What an A/A study says about the lab: the observed noise of the primary metric, how many
    claims of a change the report made about identical configurations (each one false), and the
    blocks the margin needs at `AA_POWER` -- the seeds' ±3% rule made measurable."""
    if not doc.comparisons:
        return None
    comparison = doc.comparisons[0]
    key = doc.design.primary_metrics[0] if doc.design.primary_metrics else default_primary()[0]
    entry = comparison.entry(key)
    claims = [f"{m.label}: {m.verdict}" for m in comparison.metrics if m.verdict in CLAIMS]
    result = AAResult(metric=key, false_claims=len(claims), claims=claims, margin=doc.design.margin)
    if entry is None or entry.cv is None:
        return result
    result.cv, result.n_blocks = entry.cv, entry.n_blocks
    margin = effective_margin(doc.design, doc.design.margin or DEFAULT_MARGIN)
    if margin <= 0:
        # Under this bias bound no design interval about no change widens to one inside the margin.
        result.blocks_needed, result.power = None, 0.0
        return result
    result.blocks_needed = blocks_needed(entry.cv, margin, confidence=doc.design.confidence or DEFAULT_CONFIDENCE,
                                         power=AA_POWER)
    if entry.cv > 0 and entry.n_blocks >= MIN_BLOCKS:
        result.power = power(entry.cv, entry.n_blocks, 1.0, margin=margin,
                             confidence=doc.design.confidence or DEFAULT_CONFIDENCE).equivalent
    return result


def effective_margin(design: Design, margin: float) -> float:
    """The margin an A/A's own interval must fall within for its verdict interval to: the study's
    margin, or -- when a bias bound widens the intervals -- the smaller one the widening leaves
    (stats.bias.BiasBound.effective_margin), as a fraction. 0: none."""
    bound = traits(design.arrangement or "one-at-a-time", design.bias).bias
    if bound is None or bound.none:
        return margin
    room = bound.effective_margin(math.log(1.0 / (1.0 - margin)))
    return -math.expm1(-room)

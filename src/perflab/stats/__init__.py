"""Statistics: run schedules, ratio estimates with intervals, verdicts, noise and power.

The pipeline, one small module per job (in the spirit of benchstat's benchmath):

* `schedule`      -- randomized interleaved blocks (RMIT) and the sequential order for contrast
* `estimate`      -- the ratio B/A from per-run values: paired by block, Welch as the fallback
* `verdict`       -- EQUIVALENT / BETTER / WORSE / INCONCLUSIVE against a log-symmetric margin
* `noise`         -- A/A dimensioning (the CV of a workload on a host) and exact power
* `multiplicity`  -- Bonferroni intervals and gatekeeping for several claims; intersection–union
                     for "equivalent overall"

The assumptions (run = replication unit, multiplicative noise, t-interval on logs) are stated
where they are used; statistics-and-capacity.md §5 is the specification.
"""

from perflab.stats.estimate import (
    Comparison,
    LogInterval,
    compare,
    paired_log_interval,
    welch_log_interval,
)
from perflab.stats.multiplicity import Overall, equivalent_overall, gate_opens
from perflab.stats.noise import NoiseEstimate, Power, dimension, power
from perflab.stats.schedule import interleaved_schedule, sequential_schedule
from perflab.stats.verdict import (
    DEFAULT_CONFIDENCE,
    DEFAULT_MARGIN,
    LEGACY_LABEL,
    MIN_BLOCKS,
    Judgement,
    Verdict,
    blocks_needed,
    classify,
    judge,
    legacy_label,
    margin_bounds,
)

__all__ = [
    "DEFAULT_CONFIDENCE",
    "DEFAULT_MARGIN",
    "LEGACY_LABEL",
    "MIN_BLOCKS",
    "Comparison",
    "Judgement",
    "LogInterval",
    "NoiseEstimate",
    "Overall",
    "Power",
    "Verdict",
    "blocks_needed",
    "classify",
    "compare",
    "dimension",
    "equivalent_overall",
    "gate_opens",
    "interleaved_schedule",
    "judge",
    "legacy_label",
    "margin_bounds",
    "paired_log_interval",
    "power",
    "sequential_schedule",
    "welch_log_interval",
]

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

import importlib
from typing import Any

# Where each name lives. Imported on first use (PEP 562): `perflab.stats.criteria`, which the
# command line, the study file model and the reports need, then does not pull in scipy (1.5 s of
# start-up on this machine for every `perflab` command).
_HOME = {
    "Comparison": "estimate", "LogInterval": "estimate", "compare": "estimate", "paired_log_interval": "estimate",
    "welch_log_interval": "estimate",
    "Overall": "multiplicity", "equivalent_overall": "multiplicity", "gate_opens": "multiplicity",
    "NoiseEstimate": "noise", "Power": "noise", "dimension": "noise", "power": "noise",
    "interleaved_schedule": "schedule", "sequential_schedule": "schedule",
    "DEFAULT_CONFIDENCE": "verdict", "DEFAULT_MARGIN": "verdict", "LEGACY_LABEL": "verdict", "MIN_BLOCKS": "verdict",
    "Judgement": "verdict", "Verdict": "verdict", "blocks_needed": "verdict", "classify": "verdict", "judge": "verdict",
    "legacy_label": "verdict", "margin_bounds": "verdict",
}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'perflab.stats' has no attribute {name!r}")
    return getattr(importlib.import_module(f"perflab.stats.{_HOME[name]}"), name)


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

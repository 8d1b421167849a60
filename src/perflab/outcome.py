"""A run's outcome judged with every gate: the one decision behind `perflab run`'s exit code and
what the runs lists and `perflab show` say of a run (the outcome itself: perflab.store.outcome).

"Invalid" means what the one exclusion rule says: `perflab.study.validity.judge_run` with the
default gates (`GateSettings()`) -- the run's own caveats (hung transactions, a saturated driver,
another run on its CPUs...), its error rate, nothing measured, steadiness. A study judges its runs
with its own gates (study.json keeps that decision); this is what the rule says of a run alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from perflab.store.outcome import RunOutcome, classify, run_exit_code

if TYPE_CHECKING:
    from perflab.records.run import RunRecord

__all__ = ["judge_outcome", "run_exit_code"]


def judge_outcome(record: RunRecord, metrics: Any = None) -> RunOutcome:
    """The run's outcome. `metrics`: its reduction (a RunMetrics: `values`, `per_interval`,
    `caveats`); None when it could not be reduced -- then what its record says alone."""
    if metrics is None:
        return classify(record)
    from perflab.study.validity import GateSettings, judge_run

    exclusions = judge_run(record, metrics.values, metrics.per_interval, GateSettings()).exclusions
    return classify(record, exclusions, metrics.caveats)

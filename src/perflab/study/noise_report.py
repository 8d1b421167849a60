"""Noise in a study: where each primary metric's run-to-run spread comes from, and which runs
scatter far more than their peers (docs/noise.md explains the decomposition).

For each configuration and primary metric:

* `cv_between` -- the SD of ln(value) across the configuration's valid runs: what the paired
  comparison pays for (drift between blocks included; the paired analysis cancels the drift
  that is common to a block, so the comparison's own CV can be lower);
* `cv_within` -- the part a run's own interval-to-interval scatter explains: the median over the
  runs of (SD of the per-interval values / their mean) / sqrt(intervals), the CV of a run's mean
  if its intervals were independent. When `cv_between` is much larger, the noise is between runs
  (a server's state, placement, the host), and longer windows will not remove it; when the two
  are close, longer windows will.

A run whose own scatter is `SCATTER_FLAG_RATIO` times the median of its configuration's runs is
flagged for a look; it stays in the analysis (it passed the gates).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from perflab import caveats as cav
from perflab.catalog.registry import REGISTRY
from perflab.caveats import Caveat
from perflab.records.study import NoiseRow, StudyDocument, StudyRun
from perflab.stats.criteria import DEFAULT_CONFIDENCE, DEFAULT_MARGIN
from perflab.stats.verdict import blocks_needed


def _interval_cv(run: StudyRun, key: str) -> tuple[float, int] | None:
    """(CV of the per-interval values, number of intervals) of one run."""
    values = [float(v) for v in (row.get(key) for row in run.per_interval)
              if isinstance(v, (int, float)) and math.isfinite(v) and v > 0]
    if len(values) < 3:
        return None
    mean = statistics.fmean(values)
    return statistics.stdev(values) / mean, len(values)


def noise_rows(doc: StudyDocument) -> list[NoiseRow]:
    """One row per primary metric and configuration. Its blocks_needed comes from the paired CV
    of the comparison the configuration takes part in (s_d / sqrt(2): the noise the paired
    interval pays for, drift common to a block cancelled), not from cv_between, which counts
    that drift and over-states what the comparison needs."""
    rows = []
    margin = doc.design.margin or DEFAULT_MARGIN
    confidence = doc.design.confidence or DEFAULT_CONFIDENCE
    for key in doc.design.primary_metrics:
        paired: dict[str, float] = {}
        for comparison in doc.comparisons:
            entry = comparison.entry(key)
            if entry is not None and entry.cv is not None and entry.method != "welch":
                paired.setdefault(comparison.new, entry.cv)
                paired.setdefault(comparison.base, entry.cv)
        for conf in doc.configurations:
            runs = [r for r in doc.runs_of(conf.name) if not r.excluded]
            values = [r.metrics.get(key) for r in runs]
            logs = [math.log(v) for v in values if isinstance(v, (int, float)) and v and v > 0]
            between = statistics.stdev(logs) if len(logs) >= 2 else None
            within_each = [cv / math.sqrt(n) for cv, n in filter(None, (_interval_cv(r, key) for r in runs))]
            within = statistics.median(within_each) if within_each else None
            cv = paired.get(conf.name)
            rows.append(NoiseRow(config=conf.name, key=key, runs=len(logs), cv_between=between, cv_within=within,
                                 cv_paired=cv, blocks_needed=None if cv is None else blocks_needed(cv, margin,
                                                                                                   confidence=confidence)))
    return rows


def scatter_flags(doc: StudyDocument) -> list[Caveat]:
    flags = []
    for key in doc.design.primary_metrics:
        for conf in doc.configurations:
            runs = [r for r in doc.runs_of(conf.name) if not r.excluded]
            scatter = {r.run_id: s[0] for r in runs if (s := _interval_cv(r, key)) is not None}
            if len(scatter) < 3:
                continue
            typical = statistics.median(scatter.values())
            for run_id, value in scatter.items():
                if typical > 0 and value / typical >= cav.SCATTER_FLAG_RATIO:
                    flags.append(cav.scatter(run_id, REGISTRY.label_of(key), value / typical))
    return flags


__all__: Sequence[str] = ["noise_rows", "scatter_flags"]

"""The USL fitted to a sweep study: every valid run's ETR (T) at its level's concurrency.

Runs, not level means, are the observations, so repeated blocks add degrees of freedom and the
intervals reflect the run-to-run noise; the residual table shows each level's geometric mean
against the curve. Called by `summary.capacity_summary` and `perflab capacity usl`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from perflab.capacity.points import SweepData, check_monotone, require_levels, require_metric
from perflab.capacity.usl import MIN_LEVELS, USLFit, fit_usl


@dataclass(frozen=True)
class LevelResidual:
    """One level against the fitted curve: measured (geometric mean over runs), fitted, and the
    residual as measured/fitted − 1."""

    n: float
    runs: int
    measured: float
    fitted: float
    residual: float

    def to_dict(self) -> dict:
        return asdict(self)


def fit_sweep_usl(data: SweepData, key: str = "etr_t", confidence: float | None = None
                  ) -> tuple[USLFit, list[LevelResidual]]:
    """USL of *key* (default ETR (T)) over the sweep's factor; InputError "no curve" when the
    sweep has too few levels, lacks the metric, is not monotone, or the fit fails."""
    require_levels(data, MIN_LEVELS, "a USL fit")
    require_metric(data, key, "ETR (T)", "a USL fit")
    check_monotone(data, key)
    n, x = [], []
    for level in data.levels:
        for v in level.values(key):
            if v > 0:
                n.append(level.n)
                x.append(v)
    fit = fit_usl(n, x, confidence=data.confidence if confidence is None else confidence)
    residuals = []
    for level in data.levels:
        measured = level.measured(key)  # (require_metric, above)
        fitted = float(fit.predict(level.n))
        residuals.append(LevelResidual(level.n, len(level.runs), measured, fitted,
                                       measured / fitted - 1.0 if fitted > 0 else math.nan))
    return fit, residuals

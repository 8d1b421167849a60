"""The timeline chart draws one path per configuration (valid or excluded runs), each run's line
broken from the next by a NaN (report/charts.py `run_lines`): every run's points are drawn, where
they were, and no line joins two runs."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from perflab.report.charts import run_lines


def _run(config: str, excluded: bool = False) -> SimpleNamespace:
    return SimpleNamespace(config=config, excluded=excluded)


def test_each_configuration_is_one_path_of_its_runs_lines_in_study_order():
    runs = [
        (_run("base"), {"t": [100.0, 101.0, 102.0], "etr_t": [10.0, 11.0, 12.0]}),
        (_run("new"), {"t": [200.0, 201.0], "etr_t": [20.0, 21.0]}),
        (_run("base"), {"t": [300.0, 301.0], "etr_t": [30.0, np.nan]}),
        (_run("base", excluded=True), {"t": [400.0, 401.0], "etr_t": [40.0, 41.0]}),
        (_run("new"), {"t": [500.0], "etr_t": [np.nan]}),       # nothing measured: not drawn
        (_run("new"), {"t": [600.0, 601.0], "util_proc_s": [1.0, 2.0]}),  # another key only
    ]
    lines = run_lines(runs, "etr_t")
    assert sorted(lines) == [("base", False), ("base", True), ("new", False)]
    t, y = lines[("base", False)]
    # seconds into each run's own window, a NaN after each run
    assert np.array_equal(t, [0.0, 1.0, 2.0, np.nan, 0.0, 1.0, np.nan], equal_nan=True)
    assert np.array_equal(y, [10.0, 11.0, 12.0, np.nan, 30.0, np.nan, np.nan], equal_nan=True)
    t, y = lines[("new", False)]
    assert np.array_equal(t, [0.0, 1.0, np.nan], equal_nan=True)
    assert np.array_equal(y, [20.0, 21.0, np.nan], equal_nan=True)
    assert np.array_equal(lines[("base", True)][1], [40.0, 41.0, np.nan], equal_nan=True)

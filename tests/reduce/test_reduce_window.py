"""The window helpers: edges, bucket widths, counters read at the edges."""

from __future__ import annotations

import numpy as np
import pytest

from perflab.errors import InputError
from perflab.records.run import WindowRecord
from perflab.reduce.window import Counter, Window, bucket_width, coverage


def test_window_from_run_and_membership(tmp_path):
    window = Window.from_record(WindowRecord(start=7.0, end=37.0), tmp_path / "run.json")
    assert window.duration == 30.0
    inside = window.contains(np.array([6.999, 7.0, 36.999, 37.0, np.nan]))
    assert inside.tolist() == [False, True, True, False, False]     # half-open; unfinished never inside
    with pytest.raises(InputError):
        Window.from_record(WindowRecord(start=9.0, end=3.0), tmp_path / "run.json")


def test_bucket_widths_and_edges():
    window = Window(0.0, 30.0)
    assert bucket_width(window, 1.0) == 1.0
    assert bucket_width(Window(0.0, 1800.0), 1.0) == 10.0          # at most 300 buckets
    assert bucket_width(window, 2.0) == 2.0                         # never finer than the monitor
    assert bucket_width(window, 1.0, requested=7.0) == 7.0
    assert Window(0.0, 10.0).bucket_edges(4.0).tolist() == [0.0, 4.0, 8.0, 10.0]


def test_counter_interpolation_and_sums():
    t = np.array([0.0, 1.0, 2.0, 3.0])
    a = Counter.of(t, np.array([0.0, 10.0, 20.0, 30.0]))
    assert a.delta(0.5, 2.5) == pytest.approx(20.0)
    b = Counter.of(t, np.array([0.0, np.nan, 2.0, 3.0]))          # a missing sample is skipped
    total = a + b
    assert total.delta(0.0, 3.0) == pytest.approx(33.0)


def test_coverage_rules():
    t = np.arange(0.0, 31.0, 1.0)
    assert coverage(t, Window(10.0, 20.0), 1.0) == (True, [])
    ok, notes = coverage(t + 0.3, Window(0.0, 20.0), 1.0)          # first sample 0.3 s late: clamped, said
    assert ok and "after the window start" in notes[0]
    ok, notes = coverage(t[:15], Window(10.0, 20.0), 1.0)
    assert not ok and "(S)/(H) rows are na" in notes[0]

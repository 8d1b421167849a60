"""The per-driver table of a run driven from several hosts (Ray): each driver's share, its
transactions and rate over the whole run, its CPU, clock offset and whether it was lost."""

from __future__ import annotations

from perflab.records.run import DriverHostRecord, RunRecord, WindowRecord
from perflab.report.run.drivers import COLUMNS, drivers_table


def _record(**fields) -> RunRecord:
    return RunRecord(run_id="20260101-000000-ray-0001", status="complete", **fields)


def test_one_driver_has_no_table():
    assert drivers_table(_record()) is None


def test_each_driver_is_a_row_with_its_rate_over_the_whole_run():
    record = _record(window=WindowRecord(start=2.0, end=12.0), drivers=[
        DriverHostRecord(index=0, node="10.0.0.2", cpus=[0], users=30, transactions=1200, util_pct=41.26,
                         clock_offset_s=0.00123, clock_error_s=0.0004),
        DriverHostRecord(index=1, node="10.0.0.3", cpus=[0, 1], users=20, transactions=600, util_pct=99.0,
                         saturated=True, lost="node died at 9.5 s"),
    ])
    table = drivers_table(record)
    assert table is not None and table.columns == COLUMNS
    first, second = (dict(zip(COLUMNS, row)) for row in table.rows)
    # the rate is over the whole run (t0 to the window's end, 12 s): stabilization included
    assert first == {"driver": "0", "node": "10.0.0.2", "CPUs": "0", "share": "30 users", "transactions": "1,200",
                     "rate (whole run)": "100.0/s", "CPU (window)": "41.3%", "clock offset": "+1.23 ± 0.40 ms",
                     "lost": "no"}
    assert second["CPUs"] == "0,1" and second["rate (whole run)"] == "50.0/s"
    assert second["CPU (window)"] == "99.0% (saturated)" and second["lost"] == "node died at 9.5 s"
    assert second["clock offset"] == "na"

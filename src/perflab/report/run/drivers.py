"""A run driven from several hosts (Ray): one row per driver."""

from __future__ import annotations

from perflab.records.run import RunRecord
from perflab.report import numbers as fmt
from perflab.report.view import Table

TITLE = "Drivers (Ray)"
COLUMNS = ["driver", "node", "CPUs", "share", "transactions", "rate (whole run)", "CPU (window)", "clock offset",
           "lost"]


def drivers_table(record: RunRecord) -> Table | None:
    """Each driver's node, share, transactions, rate, CPU over the window, clock offset, and
    whether it was lost. None for a single driver."""
    if not record.drivers:
        return None
    # a driver's transactions are every one it recorded, stabilization included: its rate is over
    # the whole run, from t0 to the window's end
    span = record.window.end if record.window is not None else None
    rows = []
    for d in record.drivers:
        share = f"{d.users:,} users" if d.users is not None else fmt.formatted(d.rate, ",.1f", suffix="/s")
        rate = d.transactions / span if span else None
        rows.append([str(d.index), d.node or "?", ",".join(map(str, d.cpus)) or "-", share, f"{d.transactions:,}",
                     fmt.NA if rate is None else f"{rate:,.1f}/s",
                     fmt.NA if d.util_pct is None else f"{d.util_pct:.1f}%" + (" (saturated)" if d.saturated else ""),
                     fmt.NA if d.clock_offset_s is None else
                     f"{1000 * d.clock_offset_s:+.2f} ± {1000 * (d.clock_error_s or 0):.2f} ms",
                     d.lost or ("hung: " + str(d.hung) if d.hung else "no")])
    return Table(list(COLUMNS), rows)

"""The calibration knob: a known amount of extra work a study adds to every transaction of a SUT
to measure its own arrangement's bias (study/knob.py). The work is the SUT's own kind of work --
SQLite's virtual machine counting the rows of a recursive CTE for a SQLite target, the Python
interpreter turning a loop for a python target -- linear in the knob's units and zero at zero;
its cost is not assumed but measured alone, beside the unchanged transactions (study/knob.py).
"""

from __future__ import annotations

from typing import Any

#: The transaction parameter that carries the knob's units. A python target's adapter takes it
#: out of the call's keyword arguments (the SUT's function never sees it); a SQL target binds it
#: in the statement below.
KNOB_PARAM = "perflab_knob"
#: The statement appended to a SQLite transaction: pure VM work, nothing stored.
SQLITE_STATEMENT = (f"WITH RECURSIVE perflab_knob_rows(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM perflab_knob_rows "
                    f"WHERE x < :{KNOB_PARAM}) SELECT count(*) FROM perflab_knob_rows")


def add_parameter(transaction: dict[str, Any], units: int) -> None:
    """A transaction (as a workload's dump holds it) carrying `units` of the knob as its parameter:
    the kind's adapter turns it into work (a python target's: `python_work`)."""
    transaction["params"] = {**(transaction.get("params") or {}), KNOB_PARAM: {"value": int(units)}}


def add_sqlite_statement(transaction: dict[str, Any], units: int) -> None:
    """A SQLite transaction running SQLITE_STATEMENT after its own, bound to `units` rows (a
    transaction with no SQL runs none: it gets the parameter alone, which binds nothing)."""
    if transaction.get("sql"):
        statements = [transaction["sql"]] if isinstance(transaction["sql"], str) else list(transaction["sql"])
        transaction["sql"] = [*statements, SQLITE_STATEMENT]
    add_parameter(transaction, units)


#: The statement appended to a PostgreSQL transaction: the executor's own work (a set-returning
#: function counted), nothing stored.
POSTGRES_STATEMENT = f"SELECT count(*) FROM generate_series(1, :{KNOB_PARAM})"


def add_postgres_statement(transaction: dict[str, Any], units: int) -> None:
    """A PostgreSQL transaction running POSTGRES_STATEMENT after its own, bound to `units` rows."""
    if transaction.get("sql"):
        statements = [transaction["sql"]] if isinstance(transaction["sql"], str) else list(transaction["sql"])
        transaction["sql"] = [*statements, POSTGRES_STATEMENT]
    add_parameter(transaction, units)


def python_work(units: int) -> int:
    """`units` turns of an interpreted loop: the Python SUT's own kind of work (bytecode
    dispatch, integer objects), about 20-40 ns a turn. Returns its sum so nothing is elided."""
    total = 0
    for turn in range(int(units)):
        total += turn & 7
    return total

"""The window's transactions read a batch of row groups at a time (reduce/transactions.py) are
those of the whole file: each row group with a dictionary of its own, nulls where a writer left
them, and batches that split the file anywhere. The expected values are worked out here row by
row in plain Python from the same rows."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from perflab.reduce import arrow_numpy, transactions
from perflab.reduce.response import instructions_total
from perflab.reduce.transactions import read_window_transactions
from perflab.reduce.window import Window

WINDOW = Window(10.0, 20.0)
# Each row: class, transaction, intended, actual, first response, end, ok, think, instructions
ROWS = [
    ("b", "home", 8.0, 8.1, 8.2, 9.5, True, 0.5, 1.0),       # ends before the window
    ("a", "home", 9.0, 9.2, 9.3, 10.0, True, 1.0, 2.0),      # ends at its start: inside
    ("b", "buy", 10.0, 10.5, None, 11.0, None, 0.2, 3.0),    # ok null: an error; no first response
    (None, "buy", 11.0, 11.0, 11.1, 12.5, True, None, 4.0),  # no class; no think
    ("c", None, 12.0, None, 12.4, 13.0, False, 2.0, 5.0),    # no transaction name; no actual start
    ("a", "home", 13.0, 13.1, 13.2, 14.0, True, 0.1, 6.0),
    ("c", "buy", 18.0, 18.5, 18.6, 20.0, True, 0.3, 7.0),    # ends at the window's end: outside
    ("a", "home", 19.0, 19.1, 19.2, None, None, 0.4, 8.0),   # unfinished
    ("d", "home", 19.5, 19.6, 19.7, 19.9, True, 3.0, 9.0),
]
COLUMNS = ("class", "transaction", "intended_start", "actual_start", "first_response", "end", "ok", "think",
           "instructions")


def _group(rows: list[tuple]) -> pa.Table:
    """One row group: its own dictionaries, in its own order of first appearance."""
    columns = list(zip(*rows))
    arrays = []
    for name, values in zip(COLUMNS, columns):
        if name in ("class", "transaction"):
            arrays.append(pa.array(list(values), pa.string()).dictionary_encode())
        elif name == "ok":
            arrays.append(pa.array(list(values), pa.bool_()))
        else:
            arrays.append(pa.array(list(values), pa.float64()))
    return pa.table(dict(zip(COLUMNS, arrays)))


@pytest.fixture
def spread(tmp_path):
    """ROWS in row groups of 1, 2, 3 and 3 rows."""
    path = tmp_path / "transactions.parquet"
    groups = [ROWS[0:1], ROWS[1:3], ROWS[3:6], ROWS[6:9]]
    with pq.ParquetWriter(path, _group(groups[0]).schema) as writer:
        for rows in groups:
            writer.write_table(_group(rows))
    assert pq.ParquetFile(path).num_row_groups == 4
    return path


def _name(value: str | None) -> str:
    return "(none)" if value is None else value


@pytest.mark.parametrize("batch_rows", [1, 2, 4, 1 << 20])
def test_batches_of_row_groups_read_the_rows_of_the_whole_file(spread, monkeypatch, batch_rows):
    monkeypatch.setattr(transactions, "BATCH_ROWS", batch_rows, raising=False)
    tx = read_window_transactions(spread, WINDOW)
    window = [r for r in ROWS if r[5] is not None and 10.0 <= r[5] < 20.0]
    # the ok rows first, then the failed ones, each in file order (WindowTransactions.ok_prefix)
    inside = [r for r in window if r[6]] + [r for r in window if not r[6]]
    assert tx.count == len(inside) == 6 and tx.ok_prefix == 4
    # names: every name in the file (even those only outside the window), sorted; "(none)" for a null
    assert tx.class_names == ["(none)", "a", "b", "c", "d"]
    assert tx.tx_names == ["(none)", "buy", "home"]
    assert [tx.class_names[c] for c in tx.class_code] == [_name(r[0]) for r in inside]
    assert tx.tx_names is not None and tx.tx_code is not None
    assert [tx.tx_names[c] for c in tx.tx_code] == [_name(r[1]) for r in inside]
    assert tx.ok.tolist() == [bool(r[6]) for r in inside] == [True] * 4 + [False] * 2  # a null ok is an error
    assert tx.end.tolist() == [r[5] for r in inside]
    assert tx.response.tolist() == [r[5] - r[2] for r in inside]
    nan = math.nan
    assert np.array_equal(tx.service, [nan if r[3] is None else r[5] - r[3] for r in inside], equal_nan=True)
    assert np.array_equal(tx.first, [nan if r[4] is None else r[4] - r[2] for r in inside], equal_nan=True)
    assert np.array_equal(tx.think, [nan if r[7] is None else r[7] for r in inside], equal_nan=True)
    assert tx.instructions.tolist() == [r[8] for r in inside]
    # offered: intended start in the window, finished or not
    assert tx.offered == sum(1 for r in ROWS if 10.0 <= r[2] < 20.0) == 7


def test_thinks_that_started_in_the_window_keep_their_class(spread, tmp_path, monkeypatch):
    monkeypatch.setattr(transactions, "BATCH_ROWS", 2, raising=False)
    thinks = tmp_path / "thinks.parquet"
    pq.write_table(pa.table({"start": [15.0, 25.0], "think": [0.7, 0.8], "class": ["a", "e"]}), thinks)
    tx = read_window_transactions(spread, WINDOW, thinks)
    started = [r for r in ROWS if r[7] is not None and 10.0 <= r[2] - r[7] < 20.0]
    assert tx.thinks is not None and tx.think_class is not None
    assert tx.thinks.tolist() == [r[7] for r in started] + [0.7]
    assert [tx.class_names[c] for c in tx.think_class] == [_name(r[0]) for r in started] + ["a"]


def test_a_column_nobody_measured_is_nan_without_a_copy(tmp_path):
    path = tmp_path / "transactions.parquet"
    table = _group(ROWS).drop_columns(["instructions"]).append_column("instructions", pa.array([math.nan] * len(ROWS)))
    pq.write_table(table, path, row_group_size=4)
    tx = read_window_transactions(path, WINDOW)
    assert tx.count == 6 and np.isnan(tx.instructions).all() and not tx.instructions.flags.writeable
    assert instructions_total(tx) == (None, None)


def test_instructions_of_some_completed_transactions_only_are_na(tmp_path):
    path = tmp_path / "transactions.parquet"
    counts = [1.0, 2.0, 3.0, 4.0, 5.0, math.nan, 7.0, 8.0, 9.0]  # the 6th row (ok, inside) unmeasured
    table = _group(ROWS).drop_columns(["instructions"]).append_column("instructions", pa.array(counts))
    pq.write_table(table, path, row_group_size=4)
    total, note = instructions_total(read_window_transactions(path, WINDOW))
    assert total is None and note is not None and "measured for 3 of 4 transactions" in note
    pq.write_table(_group(ROWS), path, row_group_size=4)
    assert instructions_total(read_window_transactions(path, WINDOW)) == (2.0 + 4.0 + 6.0 + 9.0, None)


def test_columns_convert_as_pyarrow_converts_them_sliced_and_with_nulls():
    doubles = pa.array([1.5, None, -2.0, 4.25, None, 6.0])
    flags = pa.array([True, None, False, True, True, None, False, True, True, False])
    for start, length in ((0, 6), (1, 4), (3, 3), (5, 0)):
        part = doubles.slice(start, length)
        assert np.array_equal(arrow_numpy.floats(part), part.to_numpy(zero_copy_only=False), equal_nan=True)
        assert np.array_equal(arrow_numpy.floats(part.fill_null(0.0)), part.fill_null(0.0).to_numpy())
    for start, length in ((0, 10), (1, 9), (3, 5), (9, 1)):
        part = flags.slice(start, length)
        assert arrow_numpy.flags(part).tolist() == [bool(v) for v in part.to_pylist()]
    ints = pa.array([3, None, 7], pa.int32())
    assert np.array_equal(arrow_numpy.floats(ints), [3.0, math.nan, 7.0], equal_nan=True)
    codes = pa.array(["x", None, "y", "x"]).dictionary_encode().slice(1, 3)
    assert arrow_numpy.indices(codes, 99).tolist() == [99, 1, 0]
    chunked = pa.chunked_array([doubles.slice(0, 2), doubles.slice(2, 4)])
    assert np.array_equal(arrow_numpy.floats(chunked), doubles.to_numpy(zero_copy_only=False), equal_nan=True)

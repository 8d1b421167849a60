"""perflab.arrow_arrays builds the arrays perflab writes without importing pandas, equal to
pyarrow's own pa.array for every kind of column it writes: numbers, booleans, strings, with and
without nulls, empty, NaN and non-ASCII text."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

from perflab import arrow_arrays as aa

NUMBER_CASES = [
    ([1.5, -2.0, math.nan, 0.0], pa.float64()),
    ([1.5, None, math.nan, None], pa.float64()),
    ([], pa.float64()),
    ([None, None], pa.float64()),
    ([3, -1, 32767], pa.int16()),
    ([3, None, 7], pa.int32()),
    ([2**40, 0], pa.int64()),
    (np.arange(10, dtype=np.float64) / 3, pa.float64()),
    (np.array([1, 2, 3], dtype=np.int64), pa.int32()),
]


def _same(built: pa.Array, expected: pa.Array) -> bool:
    """Equal type, nulls and values, a NaN equal to a NaN (Array.equals holds NaN unequal to itself)."""
    def key(v):
        return "nan" if isinstance(v, float) and math.isnan(v) else v
    return (built.type == expected.type and built.null_count == expected.null_count
            and [key(v) for v in built.to_pylist()] == [key(v) for v in expected.to_pylist()])


@pytest.mark.parametrize("values, kind", NUMBER_CASES)
def test_numbers_equal_pyarrows_own(values, kind):
    built = aa.numbers(values, kind)
    assert built.type == kind and built.validate(full=True) is None
    assert _same(built, pa.array(values, kind)), (built, pa.array(values, kind))


@pytest.mark.parametrize("values", [[True, False, True] * 5, [True, None, False], [], [None], np.array([0, 1, 1], bool)])
def test_booleans_equal_pyarrows_own(values):
    built = aa.booleans(values)
    assert built.validate(full=True) is None and built.equals(pa.array(values, pa.bool_()))


@pytest.mark.parametrize("values", [["a", "bc", ""], ["x", None, "äöü ✓", None], [], [None, None],
                                    ["timeout after 2 s"] * 1000])
def test_strings_equal_pyarrows_own(values):
    built = aa.strings(values)
    assert built.validate(full=True) is None and built.equals(pa.array(values, pa.string()))


def test_dictionary_and_of_type():
    built = aa.dictionary([0, 2, 1, 0], ["a", "b", "c"])
    expected = pa.DictionaryArray.from_arrays(pa.array([0, 2, 1, 0], pa.int16()), pa.array(["a", "b", "c"]))
    assert built.equals(expected)
    assert aa.of_type(["q", None], pa.string()).equals(pa.array(["q", None], pa.string()))
    assert aa.of_type([True], pa.bool_()).equals(pa.array([True]))
    assert aa.of_type([1, 2], pa.int16()).equals(pa.array([1, 2], pa.int16()))
    with pytest.raises(TypeError):
        aa.numbers([1], pa.string())


def test_building_and_writing_imports_no_pandas(tmp_path):
    code = f"""
import sys
import pyarrow as pa, pyarrow.parquet as pq
from perflab import arrow_arrays as aa
table = pa.Table.from_arrays([aa.numbers([1.0, None], pa.float64()), aa.strings(["a", None]), aa.booleans([1, 0]),
                              aa.dictionary([0, 1], ["x", "y"])], names=["f", "s", "b", "d"])
pq.write_table(table, {str(tmp_path / "t.parquet")!r})
print("pandas" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"

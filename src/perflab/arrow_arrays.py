"""Arrow arrays built from Python lists and numpy arrays without pyarrow's pandas bridge: the
writing side of reduce/arrow_numpy.py.

`pa.array` asks pyarrow's pandas shim whether its argument is a pandas object, and the shim
imports pandas to answer -- for a list of floats as much as for a Series: a third of a second
of CPU in every process that writes a run's files (the driver's transactions and samples, a
pathlength count, an external driver's import), which never touches pandas otherwise. The
columns perflab writes are numbers, booleans and strings, each with or without nulls (None);
their arrow layouts are plain buffers (values, a validity bitmap, string offsets), made here
with numpy and handed to `Array.from_buffers`. The arrays are equal to pa.array's
(tests/core/test_arrow_arrays.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

#: The primitive arrow types and their numpy layouts (reduce/arrow_numpy.py reads the same ones).
NUMPY_DTYPES: dict[pa.DataType, np.dtype] = {
    pa.float64(): np.dtype(np.float64), pa.float32(): np.dtype(np.float32),
    pa.int8(): np.dtype(np.int8), pa.int16(): np.dtype(np.int16), pa.int32(): np.dtype(np.int32),
    pa.int64(): np.dtype(np.int64), pa.uint8(): np.dtype(np.uint8), pa.uint16(): np.dtype(np.uint16),
    pa.uint32(): np.dtype(np.uint32), pa.uint64(): np.dtype(np.uint64),
}


Values = Sequence[Any] | np.ndarray


def _buffer(array: np.ndarray) -> pa.Buffer:
    """A numpy array's memory as an arrow buffer, without a copy."""
    return pa.py_buffer(array.data)   # contiguous: every array here is made so


def _validity(values: Values) -> tuple[pa.Buffer | None, np.ndarray | None, int]:
    """(the validity bitmap, the null mask, the null count); no bitmap when nothing is null."""
    if isinstance(values, np.ndarray) and values.dtype != object:
        return None, None, 0
    mask = np.fromiter((v is None for v in values), dtype=np.bool_, count=len(values))
    nulls = int(mask.sum())
    if nulls == 0:
        return None, None, 0
    return _buffer(np.packbits(~mask, bitorder="little")), mask, nulls


def numbers(values: Values, type: pa.DataType) -> pa.Array:
    """A numeric array (ints or floats; None is null) of `type`, as pa.array(values, type)."""
    dtype = NUMPY_DTYPES.get(type)
    if dtype is None:
        raise TypeError(f"not a numeric arrow type: {type}")
    validity, mask, nulls = _validity(values)
    if mask is not None:
        data = np.zeros(len(values), dtype=dtype)
        data[~mask] = [v for v in values if v is not None]
    else:
        data = np.ascontiguousarray(values, dtype=dtype)
    return pa.Array.from_buffers(type, len(data), [validity, _buffer(data)], null_count=nulls)


def booleans(values: Values) -> pa.Array:
    """A boolean array (None is null), as pa.array(values, pa.bool_())."""
    validity, mask, nulls = _validity(values)
    if mask is not None:
        bits = np.zeros(len(values), dtype=np.bool_)
        bits[~mask] = [bool(v) for v in values if v is not None]
    else:
        bits = np.asarray(values, dtype=np.bool_)
    return pa.Array.from_buffers(pa.bool_(), len(bits), [validity, _buffer(np.packbits(bits, bitorder="little"))],
                                 null_count=nulls)


def strings(values: Values) -> pa.Array:
    """A UTF-8 string array (None is null), as pa.array(values, pa.string())."""
    validity, mask, nulls = _validity(values)
    encoded = [b"" if v is None else v.encode() for v in values]
    lengths = np.fromiter((len(b) for b in encoded), dtype=np.int64, count=len(encoded))
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] >= 2**31:   # past a plain string array's int32 offsets: pyarrow's own way (chunks)
        return pa.array(values, pa.string())
    return pa.Array.from_buffers(pa.string(), len(encoded),
                                 [validity, _buffer(offsets.astype(np.int32)), pa.py_buffer(b"".join(encoded))],
                                 null_count=nulls)


def dictionary(indices: Values, names: Sequence[str], index_type: pa.DataType = pa.int16()
               ) -> pa.DictionaryArray:
    """Names by index (a dictionary array), as DictionaryArray.from_arrays(pa.array(...), pa.array(...))."""
    return pa.DictionaryArray.from_arrays(numbers(indices, index_type), strings(list(names)))


def of_type(values: Values, type: pa.DataType) -> pa.Array:
    """An array of one of the types above, chosen by `type`."""
    if type == pa.string():
        return strings(values)
    if type == pa.bool_():
        return booleans(values)
    return numbers(values, type)

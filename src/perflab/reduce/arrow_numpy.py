"""numpy arrays from the primitive arrow arrays a reduction reads, without pyarrow's pandas bridge.

pyarrow's `Array.to_numpy` goes through its pandas conversion code, which imports pandas the
first time it runs, even for a plain double column without a null: a third of a second of every
`perflab show`, whose goal for ten million transactions is two seconds. The columns a reduction
reads are doubles, booleans and dictionary indices; their values buffers already are the numpy
layout (the booleans bit-packed, least significant bit first), so they are read from the buffers
here. Anything else -- another type, or a double column with nulls -- goes through to_numpy as
before: slower the first time, the same values.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from perflab.arrow_arrays import NUMPY_DTYPES


def _chunks(column: pa.Array | pa.ChunkedArray) -> list[pa.Array]:
    return list(column.chunks) if isinstance(column, pa.ChunkedArray) else [column]


def _join(parts: list[np.ndarray], dtype: np.dtype) -> np.ndarray:
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else np.empty(0, dtype=dtype)


def _buffer(chunk: pa.Array, index: int) -> memoryview:
    """A chunk's buffer (0: validity, 1: values), there because the caller checked the chunk
    has one (a validity bitmap is absent only when nothing is null)."""
    buffer = chunk.buffers()[index]
    assert buffer is not None, (chunk.type, index)
    return memoryview(buffer)


def _bits(chunk: pa.Array, index: int) -> np.ndarray:
    """An arrow bitmap (validity or boolean values) as bools, one per element."""
    offset, length = chunk.offset, len(chunk)
    if length == 0:
        return np.empty(0, dtype=np.bool_)
    raw = np.frombuffer(_buffer(chunk, index), dtype=np.uint8)
    return np.unpackbits(raw, count=offset + length, bitorder="little")[offset:].view(np.bool_)


def _values(chunk: pa.Array, dtype: np.dtype) -> np.ndarray:
    """The values buffer of a primitive chunk without nulls: a read-only view, no copy."""
    if len(chunk) == 0:  # an empty chunk may have no buffer at all
        return np.empty(0, dtype=dtype)
    return np.frombuffer(_buffer(chunk, 1), dtype=dtype, count=len(chunk), offset=chunk.offset * dtype.itemsize)


def floats(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A numeric column as float64, null as NaN (what to_numpy(zero_copy_only=False) gives, then
    astype(float64)). A view of the file's buffer when it already is float64 without nulls:
    never written to, only read and gathered from."""
    parts = []
    for chunk in _chunks(column):
        dtype = NUMPY_DTYPES.get(chunk.type)
        if dtype is None or chunk.null_count:
            values = chunk.to_numpy(zero_copy_only=False)  # nulls, or another type: pyarrow's conversion
        else:
            values = _values(chunk, dtype)
        parts.append(values.astype(np.float64, copy=False))
    return _join(parts, np.dtype(np.float64))


def flags(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A boolean column as bools, null as False (fill_null(False))."""
    parts = []
    for chunk in _chunks(column):
        if chunk.type != pa.bool_():
            parts.append(chunk.fill_null(False).to_numpy(zero_copy_only=False).astype(bool))
            continue
        values = _bits(chunk, 1)
        if chunk.null_count:
            values = values & _bits(chunk, 0)
        parts.append(values)
    return _join(parts, np.dtype(np.bool_))


def indices(chunk: pa.DictionaryArray, null: int) -> np.ndarray:
    """A dictionary chunk's indices as int32, a null as `null`."""
    raw = chunk.indices
    dtype = NUMPY_DTYPES.get(raw.type)
    if dtype is None or dtype.kind not in "iu":
        return raw.fill_null(null).to_numpy(zero_copy_only=False).astype(np.int32)
    values = _values(raw, dtype).astype(np.int32)
    if raw.null_count:
        values[~_bits(raw, 0)] = null
    return values

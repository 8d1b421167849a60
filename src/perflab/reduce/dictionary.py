"""A dictionary-encoded column (`class`, `transaction`) read a row group at a time.

Each row group of a parquet file carries its own dictionary. `Names` gives every row a code
into one list of names over all the row groups read so far, in order of first appearance --
what pyarrow's unify_dictionaries makes of the whole column -- and `window_names` turns the
codes into the reduction's: names sorted, so output never depends on dictionary order, with
"(none)" for a row without a name.
"""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np
import pyarrow as pa

from perflab.reduce import arrow_numpy

#: The name shown for a row whose column is null.
NONE = "(none)"
#: The code of a null row until window_names numbers it.
NULL_CODE = -1


class Names:
    """One dictionary column's names over every row group (see the module's doc)."""

    def __init__(self) -> None:
        self._index: dict[Hashable, int] = {}

    def codes(self, column: pa.ChunkedArray) -> np.ndarray:
        """Each row's code (int32) into the names seen so far; NULL_CODE for a null."""
        parts = []
        for part in column.chunks:
            chunk = part if isinstance(part, pa.DictionaryArray) else part.dictionary_encode()
            lookup = [self._index.setdefault(value, len(self._index)) for value in chunk.dictionary.to_pylist()]
            table = np.array([*lookup, NULL_CODE], dtype=np.int32)  # the last entry: a null index
            parts.append(table[arrow_numpy.indices(chunk, len(lookup))])
        if len(parts) == 1:
            return parts[0]
        return np.concatenate(parts) if parts else np.empty(0, dtype=np.int32)

    def _raw_names(self) -> list[str]:
        return [NONE if value is None else str(value) for value in self._index]

    def window_names(self, codes: np.ndarray) -> tuple[np.ndarray, list[str]]:
        """`codes` (the window's rows) as indices into the names sorted, and the names: every
        name of the file, and NONE when one of these rows has none. `codes` is renumbered in
        place and returned."""
        names = self._raw_names()
        null = codes == NULL_CODE
        if null.any():
            codes[null] = len(names)
            names.append(NONE)
        order = sorted(range(len(names)), key=lambda i: names[i])
        remap = np.empty(len(names), dtype=np.int32)
        remap[order] = np.arange(len(names), dtype=np.int32)
        if len(names):
            np.take(remap, codes, out=codes, mode="clip")  # in place: a copy of 10M codes is 40 MB of new pages
        return codes, [names[i] for i in order]

    def to_window(self, codes: np.ndarray, names: list[str]) -> np.ndarray:
        """`codes` of any rows as indices into `names` (window_names' list), -1 for a name the
        window has none of; renumbered in place."""
        raw = self._raw_names()
        position: dict[str, int] = {}
        for i, name in enumerate(names):
            position.setdefault(name, i)  # the first, as list.index would
        lookup = np.array([position.get(name, -1) for name in raw] + [position.get(NONE, -1)], dtype=np.int32)
        # NULL_CODE (-1) indexes the last entry: a null row's name is NONE
        if len(codes):
            np.take(lookup, codes, out=codes, mode="wrap")  # "wrap": NULL_CODE (-1) is the last entry
        return codes

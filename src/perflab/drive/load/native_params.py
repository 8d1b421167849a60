"""A transaction's parameters as the compiled loop draws them (drive/load/loop/params.c): what
drive/load/params.py draws, in the same order from the same stream, handed to C as numbers and
texts.

A random_int or a sequence is a number the loop writes in decimal; a choice's or a constant's
values are texts made here once, in the four encodings a value may need where it is sent: in a
request's head (str() as Latin-1, as encode_request writes the head), in a body or as a
PostgreSQL parameter (str() as UTF-8), inside a JSON string of a body (str() escaped as
json.dumps escapes it), or as a JSON value of its own (json.dumps). http_request.py's fill()
makes the same texts on the Python path.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from perflab.workload.model import Choice, Constant, ParamSpec, RandomInt, Sequence

#: params.c's kinds and encodings
P_RANDOM_INT, P_CHOICE, P_WEIGHTED, P_SEQUENCE, P_CONSTANT = range(5)
ENC_HEAD, ENC_TEXT, ENC_JSON_STR, ENC_JSON = range(4)
_INT62 = 1 << 62  # a sequence stays an int64 for 2^62 steps at least


def texts(value: Any) -> tuple[bytes | None, bytes, bytes, bytes]:
    """A value's text in each encoding (None: it has no Latin-1 text for a request's head)."""
    text = str(value)
    try:
        head: bytes | None = text.encode("latin-1")
    except UnicodeEncodeError:
        head = None
    return head, text.encode(), json.dumps(text)[1:-1].encode(), json.dumps(value).encode()


def param_spec(spec: ParamSpec) -> tuple | None:
    """params.c's param_t of a parameter generator, or None if the loop has none of it."""
    if isinstance(spec, RandomInt):
        low, high = spec.random_int
        return (P_RANDOM_INT, low, high, (), ()) if 0 <= high - low < 2 ** 53 and abs(low) < _INT62 and \
            abs(high) < _INT62 else None
    if isinstance(spec, Sequence):
        if abs(spec.sequence) >= _INT62 or abs(spec.step) >= _INT62:
            return None
        return (P_SEQUENCE, spec.sequence, spec.step, (), ())
    if isinstance(spec, Constant):
        return (P_CONSTANT, 0, 0, (texts(spec.value),), ())
    if isinstance(spec, Choice):
        values = tuple(texts(v) for v in spec.choice)
        if spec.weights is None:
            return (P_CHOICE, 0, 0, values, ())
        # summed as params.py sums them, so the C pick sees the same cumulative weights
        return (P_WEIGHTED, 0, 0, values, tuple(float(c) for c in itertools.accumulate(spec.weights)))
    return None


def values_of(spec: ParamSpec) -> list[Any] | None:
    """The values a choice or a constant can take (None: a number the loop draws)."""
    if isinstance(spec, Choice):
        return list(spec.choice)
    if isinstance(spec, Constant):
        return [spec.value]
    return None

"""Numbers as the stages hand them over: a measured value is a finite float or it is not there.

One rule, in one place, for what counts as a number: a float or anything `float()` accepts,
except a bool (True is not a measurement) and NaN or an infinity (a value that could not be
measured). `finite` says None for everything else, `as_float` a default (NaN by default, so that
arithmetic on a missing value stays missing).
"""

from __future__ import annotations

import math
from typing import Any


def finite(value: Any) -> float | None:
    """A finite float, or None: NaN, infinities, bools and non-numbers are all "not measured"."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def as_float(value: Any, default: float = math.nan) -> float:
    """`finite(value)`, or `default` (NaN unless given) when it is not a number."""
    number = finite(value)
    return default if number is None else number

"""The pieces every workload model is built of: strict models (an unknown field is an error),
durations and sizes as a workload file writes them ('30s', '5m', '512M').

They sit apart from workload/model.py so that the target models (workload/targets.py) and the
registry of target kinds (workload/kinds.py), which model.py's `Target` is built from, can use
them without importing model.py.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from perflab import limits

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h)?\s*$")
_UNIT_SECONDS = {None: 1.0, "s": 1.0, "ms": 0.001, "m": 60.0, "min": 60.0, "h": 3600.0}


def parse_duration(value: Any) -> float:
    """Seconds from a number or a string such as '30s', '5m', '250ms', '1h'."""
    if isinstance(value, bool):
        raise ValueError("expected a duration such as 30, '30s', '5m'")
    try:
        if isinstance(value, (int, float)):
            seconds = float(value)
        elif isinstance(value, str) and (m := _DURATION.match(value)):
            seconds = float(m.group(1)) * _UNIT_SECONDS[m.group(2)]
        else:
            raise ValueError(f"expected a duration such as 30, '30s', '5m', got {value!r}")
    except OverflowError:
        raise ValueError(f"the number is too large: {limits.MAX_DURATION.value():,g} seconds at most") from None
    if math.isnan(seconds) or seconds < 0:
        raise ValueError("a duration cannot be negative" if seconds < 0 else "expected a finite duration")
    if math.isinf(seconds):
        raise ValueError("expected a finite duration")
    return limits.check_duration(seconds)


def parse_bytes(value: Any) -> int:
    """Bytes from a number or '512M', '2G', '256MiB'."""
    if isinstance(value, bool):
        raise ValueError("expected a size such as 512M")
    text = str(value).strip().upper().removesuffix("B").removesuffix("I")
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    try:
        if isinstance(value, (int, float)):
            size = float(value)
        elif text and text[-1] in units:
            size = float(text[:-1]) * units[text[-1]]
        else:
            size = float(text)
    except (ValueError, OverflowError):
        raise ValueError(f"expected a size such as 512M or 2G, got {value!r}") from None
    if not math.isfinite(size) or size > 1 << 60:
        raise ValueError(f"expected a size such as 512M or 2G, got {value!r}")
    return int(size)


Duration = Annotated[float, Field(json_schema_extra={"examples": [30, "30s", "5m"]})]


class Strict(BaseModel):
    """Unknown fields are errors: a typo in a workload file must not be silently ignored."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, allow_inf_nan=False)



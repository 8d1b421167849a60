"""Numbers as the stages hand them over: a measured value is a finite float or it is not there.

One rule, in one place, for what counts as a number: a float or anything `float()` accepts,
except a bool (True is not a measurement) and NaN or an infinity (a value that could not be
measured). `finite` says None for everything else, `as_float` a default (NaN by default, so that
arithmetic on a missing value stays missing).

And the one rule for printing a bare number that may be missing: `na` (the seeds' word for a row
a source did not measure), else the number -- `fixed` to a number of places with thousands
separators, `formatted` by a format spec. Every stage prints through these (capacity/ and
study/ come before report/ in the pipeline); report/numbers.py builds the registry's rules --
a metric's decimals, an interval's precision -- on them.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

#: A value not measured, as every report, table and terminal line prints it.
NA = "na"
# Hyphen-minus, not the typographic minus: numbers copied out of a report must parse.
MINUS = "-"


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


def fixed(value: Any, decimals: int, *, signed: bool = False, significant: int = 1) -> str:
    """A number with `decimals` places and thousands separators, widened when needed to show
    `significant` digits of a value below 1 (so a nonzero is never printed as 0). Negative
    `decimals` round to tens, hundreds...: 19,287 with -1 is 19,290. NA when not a number."""
    x = finite(value)
    if x is None:
        return NA
    places = decimals
    if x != 0 and abs(x) < 1:
        places = max(places, min(12, significant - 1 - math.floor(math.log10(abs(x)))))
    if places < 0:
        x = round(x, places)
        places = 0
    text = f"{x:{'+' if signed else ''},.{places}f}"
    if text.lstrip("+-").strip("0.,") == "":  # -0.000 and +0.000 read as plain zero
        text = f"{0:.{places}f}"
    return text.replace("-", MINUS)


def formatted(value: Any, spec: str = ".4g", *, scale: float = 1.0, suffix: str = "") -> str:
    """A number by a Python format spec (",.1f", ".4g", "+.2f"), times `scale`, with `suffix`
    ("%", "/s"); an integer stays one (so "d" works); an infinity prints as "inf"; NA, without the
    suffix, when it is not a number."""
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and scale == 1.0:
        return format(int(value), spec) + suffix
    x = finite(value)
    return NA if x is None else format(x * scale, spec) + suffix

"""How every number in a report or on the terminal is printed: one place, so prose, tables,
charts and the terminal agree.

The rule, for people: thousands separators (19,290, never 1.929e+04), the unit beside the value,
`na` when unavailable (the seeds' convention for a source that did not measure a row), and as
many digits as the measurement supports. A value compared with an interval is printed to two
significant digits of the interval's half-width -- ITR (S) 19,290 with a ±1.2% interval, but
PBT/CMD (S) 0.05120 ms with a ±0.8% one -- so no digit is shown that the interval says nothing
about, and none is hidden that it resolves. A value without an interval keeps the registry's
decimals (and at least two significant digits below 1). Nothing here computes a new quantity
except the fallbacks for a comparison entry that lacks its own delta, and those use the
registry's `delta` / `percent_change` so no arithmetic lives outside the registry.
"""

from __future__ import annotations

import math
from typing import Any

from perflab.catalog.registry import REGISTRY, Metric, delta, percent_change
from perflab.records.study import MetricComparison

# The bare number's rules (perflab.values), which every report module reads from here.
from perflab.values import MINUS, NA, finite, fixed, formatted  # noqa: F401

#: Decimals of a ratio (ITRR, B/A) and its bounds: the seeds print ITRR with three.
RATIO_DECIMALS = 3
#: Decimals of a relative change in percent ("5.0%").
PCT_DECIMALS = 1
#: Significant digits a metric value below 1 keeps even when the registry's decimals are fewer.
#: The seeds' decimals were chosen for 1990 magnitudes (AVG LAST (T) to the millisecond, in
#: seconds); a 0.4 ms response time must not read "0.000 s", nor 1.2 ms "0.001 s".
MIN_SIGNIFICANT = 2
#: Significant digits of an interval's half-width a value measured with it is printed to.
INTERVAL_DIGITS = 2
#: The most significant digits any number is printed with: an interval that narrow adds nothing.
MAX_SIGNIFICANT = 6
#: Bounds on the decimals of a ratio and of a relative change in percent set by their interval.
RATIO_DECIMALS_RANGE = (2, 5)
PCT_DECIMALS_RANGE = (0, 2)


#: A finite float, or None: NaN, infinities, bools and non-numbers are all `na` (perflab.values).
number = finite


def metric_of(key: str | None) -> Metric | None:
    """The registry entry of a key; per-class or per-component keys ("avg_last_t.trivial",
    "srv_wkset_v:checkpointer") fall back to the metric they are an instance of."""
    if not key:
        return None
    found = REGISTRY.get(key)
    if found is None:
        for sep in (".", ":", "@", "/"):
            if sep in key:
                found = REGISTRY.get(key.split(sep, 1)[0])
                if found is not None:
                    break
    return found


def decimals_of(key: str | None, entry: MetricComparison | None = None) -> int:
    metric = metric_of(key)
    if metric is not None:
        return metric.decimals
    if entry is not None and entry.decimals is not None:
        return entry.decimals
    return 3


def unit_of(key: str | None, entry: MetricComparison | None = None) -> str:
    if entry is not None and entry.unit:
        return entry.unit
    metric = metric_of(key)
    return metric.unit if metric is not None else ""


def label_of(key: str | None, entry: MetricComparison | None = None) -> str:
    if entry is not None and entry.label:
        return entry.label
    metric = metric_of(key)
    return metric.label if metric is not None else str(key)


def interval_decimals(halfwidth: Any) -> int | None:
    """The decimals that show `INTERVAL_DIGITS` significant digits of an interval's half-width
    (±0.012 -> 3, ±386 -> -1); None without a usable interval."""
    h = number(halfwidth)
    if h is None or h <= 0:
        return None
    return INTERVAL_DIGITS - 1 - math.floor(math.log10(h))


def relative_halfwidth(entry: MetricComparison | None) -> float | None:
    """Half the width of a comparison's ratio interval, relative to the ratio: the relative
    precision every value, change and ratio of that row is printed to."""
    if entry is None:
        return None
    lo, hi, r = number(entry.ci_low), number(entry.ci_high), number(entry.ratio)
    if lo is None or hi is None or not r or hi < lo:
        return None
    return (hi - lo) / 2.0 / abs(r)


def _interval_places(x: float | None, entry: MetricComparison | None) -> int | None:
    """Decimals of value `x` measured to the entry's relative precision, within MAX_SIGNIFICANT."""
    rel = relative_halfwidth(entry)
    if x is None or x == 0 or rel is None:
        return None
    places = interval_decimals(abs(x) * rel)
    if places is None:
        return None
    return min(places, MAX_SIGNIFICANT - 1 - math.floor(math.log10(abs(x))))


def value(value: Any, key: str | None, entry: MetricComparison | None = None, *, signed: bool = False,
          scale: Any = None) -> str:
    """A metric's value, no unit (tables carry the unit column): to the precision of the entry's
    interval when it has one, else with the registry's decimals. `scale`: the magnitude that
    sets the precision when it is not the value itself (a change is as precise as its base)."""
    x = number(value)
    places = _interval_places(number(scale) if scale is not None else x, entry)
    if places is None:
        return fixed(value, decimals_of(key, entry), signed=signed, significant=MIN_SIGNIFICANT)
    return fixed(value, places, signed=signed)


def quantity(x: Any, key: str | None, entry: MetricComparison | None = None) -> str:
    """A value with its unit, as prose prints it: "0.051 ms", "90.10%", "1.48"."""
    text = value(x, key, entry)
    if text == NA:
        return NA
    return with_unit(text, unit_of(key, entry))


def with_unit(text: str, unit: str) -> str:
    if not unit:
        return text
    return f"{text}%" if unit == "%" else f"{text} {unit}"


def magnitude(x: Any, key: str | None, entry: MetricComparison | None = None) -> str:
    """The size of an absolute change, unsigned, with its unit. A change of a percentage is in
    percentage points, so it cannot be mistaken for the relative change printed beside it."""
    n = number(x)
    if n is None:
        return NA
    text = value(abs(n), key, entry, scale=entry.base_value if entry is not None else None)
    unit = unit_of(key, entry)
    return f"{text} percentage points" if unit == "%" else with_unit(text, unit)


def _clamped(places: int | None, default: int, bounds: tuple[int, int]) -> int:
    return default if places is None else max(bounds[0], min(bounds[1], places))


def pct(fraction: Any, *, signed: bool = True, decimals: int = PCT_DECIMALS,
        entry: MetricComparison | None = None) -> str:
    """A relative change given as a fraction (0.05) printed as a percentage ("+5.0%"); with an
    entry, to the precision of its interval (a change of 2.013% ± 0.05 points keeps three)."""
    x = number(fraction)
    if x is None:
        return NA
    rel = relative_halfwidth(entry)
    if rel is not None:
        decimals = _clamped(interval_decimals(100.0 * rel), decimals, PCT_DECIMALS_RANGE)
    return fixed(100.0 * x if signed else abs(100.0 * x), decimals, signed=signed) + "%"


def _ratio_places(low: Any, high: Any) -> int:
    lo, hi = number(low), number(high)
    width = None if lo is None or hi is None else (hi - lo) / 2.0
    return _clamped(interval_decimals(width), RATIO_DECIMALS, RATIO_DECIMALS_RANGE)


def ratio(x: Any, entry: MetricComparison | None = None) -> str:
    """A ratio B/A: with its entry, to two significant digits of its interval's half-width."""
    places = RATIO_DECIMALS if entry is None else _ratio_places(entry.ci_low, entry.ci_high)
    return fixed(x, places)


def ci_ratio(low: Any, high: Any) -> str:
    """The interval of a ratio B/A as the table prints it: "[1.041, 1.065]", to two significant
    digits of its half-width."""
    lo, hi = number(low), number(high)
    if lo is None or hi is None:
        return NA
    places = _ratio_places(lo, hi)
    return f"[{fixed(lo, places)}, {fixed(hi, places)}]"


def ci_pct(low: Any, high: Any) -> str:
    """The interval of a ratio as relative changes: "4.1% to 6.5%" when wholly above no change,
    signed otherwise ("-6.5% to -4.1%", "-1.2% to +2.0%") so the side of 1 is never ambiguous."""
    lo, hi = number(low), number(high)
    if lo is None or hi is None:
        return NA
    signed = lo < 1.0
    return f"{pct(lo - 1.0, signed=signed)} to {pct(hi - 1.0, signed=signed)}"


def percent_level(fraction: Any) -> str:
    """A confidence level or margin given as a fraction, as a reader reads it: 0.9 -> "90%",
    0.03 -> "3%", a Bonferroni level 1 - 0.05/11 -> "99.5%" (one decimal; two where the level
    is above 99.9%, so that it never reads "100%")."""
    x = number(fraction)
    if x is None:
        return NA
    percent = 100.0 * x
    decimals = 2 if 99.9 < percent < 100.0 else 1
    text = f"{percent:.{decimals}f}".rstrip("0").rstrip(".")
    return f"{text}%"


def margin(fraction: Any) -> str:
    text = percent_level(fraction)
    return text if text == NA else f"±{text}"


def changes(entry: MetricComparison) -> tuple[float | None, float | None]:
    """(absolute, relative as a fraction) of a comparison entry: its own fields, else the
    registry's delta and percent_change of its base and new values."""
    base, new = number(entry.base_value), number(entry.new_value)
    absolute = number(entry.abs_change)
    relative = number(entry.rel_change)
    if absolute is None and base is not None and new is not None:
        absolute = number(delta(new, base))
    if relative is None and base not in (None, 0.0) and new is not None:
        relative = number(percent_change(new, base))
        relative = None if relative is None else relative / 100.0
    return absolute, relative


def gib(nbytes: Any) -> str:
    x = number(nbytes)
    return NA if x is None else f"{x / 2**30:.1f} GiB"

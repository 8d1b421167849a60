"""The outcome of recomputing one printed cell, and how it is judged.

A recomputed value agrees with a printed one when they match within the printed rounding:
every input is known to ± half a unit in its last printed digit, the formula is evaluated on
those intervals, and the result must overlap the printed value's own ± half unit.

**Doubtful cells (a trailing `?`): one rule, for every derive check and for `perflab capacity
matrix`.** A doubtful cell is never evidence: no check is judged against it, and no check is
judged on a value computed from it -- such a check is `unknown` (neither agrees nor fails).
Where the cell still reads as something (`0.91?`, `1.064?`: `reading`), a shape that carries
the reading shows the value computed from it beside the printed one, marked doubtful, with the
reason (`judge_doubtful`); a bare `?` reads as nothing, and a check that needs it has no value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

from perflab.derive.interval import Interval
from perflab.derive.table import Cell, Kind


class Gap(Enum):
    ABSENT = "absent"  # the row is not in the table and cannot be derived: the formula does not apply
    NA = "na"          # the table prints na


@dataclass(frozen=True)
class Unknown:
    """A value that exists but is not known (a `?` cell, a text cell); carries why."""

    reason: str


@dataclass(frozen=True)
class Underivable:
    """A printed value the table does not determine (a percent of a run the table does not
    print); carries why. Reported as not derivable, never guessed and never failing."""

    reason: str


Outcome = Interval | Gap | Unknown | Underivable


class Status(str, Enum):
    AGREE = "agree"
    DISAGREE = "disagree"
    APPROX = "approx"          # an approximate identity (RTM's own ITR), within its tolerance
    APPROX_OFF = "approx-off"  # an approximate identity beyond its tolerance: reported, never failing
    UNKNOWN = "unknown"        # a `?` cell in the way: neither agrees nor fails
    NA = "na"                  # printed na and not recomputable: nothing to check
    DEFINES = "defines"        # the cell defines a symbol other rows use; nothing to check it against
    NOT_DERIVABLE = "not-derivable"  # the table does not determine the value: reported, never failing

    @property
    def reproduced(self) -> bool | None:
        """True when the printed cell was judged and agrees, False when it disagrees, None when
        it was not judged (an approximate identity, a `?`, na, a definition, not derivable)."""
        return {Status.AGREE: True, Status.DISAGREE: False}.get(self)


@dataclass
class Check:
    row: str
    column: str
    line: int
    printed: Cell
    recomputed: Interval | None
    status: Status
    formula: str
    reason: str = ""
    tolerance: float | None = None
    deviation: float | None = None   # signed relative difference of the midpoints (approximate checks)
    col: int | None = None           # index of the column among the table's data columns

    @property
    def counted(self) -> bool:
        """Whether the check counts in 'checked' (an exact comparison that was made)."""
        return self.status in (Status.AGREE, Status.DISAGREE)


def judge(printed: Cell, outcome: Outcome, approx: float | None = None) -> tuple[Status, str, float | None]:
    """Compare a printed cell with a recomputed outcome."""
    if isinstance(outcome, Underivable) and printed.kind is not Kind.NA:
        return Status.NOT_DERIVABLE, outcome.reason, None
    if printed.kind is Kind.UNKNOWN:
        return Status.UNKNOWN, f"printed {printed.text!r} is marked unknown", None
    if printed.kind is Kind.NA:
        if isinstance(outcome, Interval):
            return Status.UNKNOWN, "printed na although its inputs are known", None
        return Status.NA, "", None
    if printed.kind is not Kind.NUMBER or printed.value is None:
        return Status.UNKNOWN, f"printed {printed.text!r} is not a number", None
    if outcome is Gap.NA:
        return Status.UNKNOWN, "an input is na", None
    if isinstance(outcome, Unknown):
        return Status.UNKNOWN, outcome.reason, None
    assert isinstance(outcome, Interval)
    if not outcome.bounded:
        return Status.UNKNOWN, "a divisor rounds to zero: the recomputed value is unbounded", None
    shown = printed.interval()
    if approx is None:
        return (Status.AGREE if outcome.overlaps(shown) else Status.DISAGREE), "", None
    deviation = (outcome.mid - printed.value) / abs(printed.value) if printed.value else math.inf
    off = outcome.gap(shown) / abs(printed.value) if printed.value else math.inf
    return (Status.APPROX if off <= approx else Status.APPROX_OFF), "", deviation


@dataclass(frozen=True)
class Reading:
    """A printed number: its value, known to ± half a unit of its last digit, and whether the
    cell was doubtful (read through its `?`)."""

    text: str
    value: float
    half: float
    doubtful: bool

    @property
    def interval(self) -> Interval:
        return Interval.around(self.value, self.half)


def reading(cell: Cell) -> Reading | None:
    """What *cell* reads as (see the module docstring); None for a bare `?`, na or text."""
    inner = cell.reading()
    if inner is None or inner.value is None:
        return None
    return Reading(cell.text, inner.value, inner.half, cell.kind is Kind.UNKNOWN)


@dataclass(frozen=True)
class Judged:
    """A printed cell judged against a recomputed value: the status, why, and the value shown."""

    status: Status
    reason: str
    value: Interval | None


def judge_doubtful(printed: Cell, value: Interval | None, problem: str | None, doubt: str | None) -> Judged:
    """The doubtful-cell rule applied to one check: *value* recomputed (None with *problem* when
    there is none); *doubt* says why it was computed from a doubtful reading. A check that would
    be judged is `unknown` when *doubt* is set; the value is shown all the same."""
    if value is None:
        status, reason, _ = judge(printed, Unknown(problem or "no value"))
        return Judged(status, reason, None)
    status, reason, _ = judge(printed, value)
    if doubt is not None and status in (Status.AGREE, Status.DISAGREE):
        return Judged(Status.UNKNOWN, f"{doubt}: computed from a doubtful reading, not judged", value)
    return Judged(status, reason, value)


def first_problem(outcomes: list[Outcome]) -> Outcome | None:
    """ABSENT beats not derivable beats na beats unknown: a missing row means the formula does
    not apply at all; an input the table does not give means the value cannot be checked even
    where the other inputs are known."""
    if any(o is Gap.ABSENT for o in outcomes):
        return Gap.ABSENT
    underivable = next((o for o in outcomes if isinstance(o, Underivable)), None)
    if underivable is not None:
        return underivable
    if any(o is Gap.NA for o in outcomes):
        return Gap.NA
    return next((o for o in outcomes if isinstance(o, Unknown)), None)

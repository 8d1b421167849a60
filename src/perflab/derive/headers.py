"""What a column heading says: a change column (the difference between two runs) or a run.

The seeds print the change between two runs beside them under many headings: DELTA and
PERCENT (VM/ESA DFW tables 42-45), Delta / Pct. pairs (Tables 33 and 47-51), `Delta (%)`
(z/OS IEBCOPY tables), `Delta V1.11 to V.12 w/GRS and allocation` (z/OS GRS table). A heading
is a change column when a change word opens or closes it; a heading that only mentions a
percent word ("Pct Busy") is a measurement, unless the rest of it is empty, numbering
("Pct..1"), or names the runs compared.

Only the heading is read here; a DELTA column whose printed cells all carry a `%` is a percent
change after all, which `changes.py` settles from the cells.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum


class Change(str, Enum):
    DELTA = "delta"        # later run minus earlier run
    PERCENT = "percent"    # the delta as a percent of the earlier run's value


_DELTA_WORDS = {"delta", "diff", "difference", "change", "δ"}
_PERCENT_WORDS = {"pct", "percent", "percentage"}
_WORD = re.compile(r"[^\W\d_]+|%")
_CHANGE_WORD = re.compile(r"(?<!\w)(?:" + "|".join(sorted(_DELTA_WORDS | _PERCENT_WORDS)) + r")(?!\w)|\(?%\)?",
                          re.IGNORECASE)
_NUMBERING = re.compile(r"^[\s#.,:()\[\]_\d-]*$")
# Separators that say which way a change goes: "V1.11 to V1.12" is V1.12 minus V1.11, and so is
# "V1.11->V1.12" -- an arrow needs no spaces around it (a transcription writes `A->B` as often as
# `A -> B`), a word does. A plain hyphen ("Y64F4809 - Y64F480E") does not say which way: it reads
# both as a transition and as a subtraction.
_DIRECTED = re.compile(r"\s*(?:->|→|=>)\s*|\s+to\s+", re.IGNORECASE)
_NAMED_PAIR = re.compile(r"\s*(?:->|→|=>)\s*|\s(?:to|vs\.?|-|–)\s", re.IGNORECASE)
# Brackets around the names ("Delta (A->B)") are not part of them.
_BRACKETS = re.compile(r"^[(\[](.*)[)\]]$")


@dataclass(frozen=True)
class ChangeHeading:
    kind: Change
    names: str     # what the heading says besides its change words ("V1.11 to V1.12"); "" if nothing

    @property
    def bare(self) -> bool:
        """Nothing but change words (and numbering): the runs are the ones printed before it."""
        return bool(_NUMBERING.match(self.names))

    @property
    def _inner(self) -> str:
        bracketed = _BRACKETS.match(self.names.strip())
        return bracketed.group(1).strip() if bracketed else self.names

    def pair(self) -> tuple[str, str] | None:
        """(earlier, later) when the heading names them with a direction ("from A to B",
        "A -> B", "A->B")."""
        parts = _DIRECTED.split(re.sub(r"^from\s+", "", self._inner, flags=re.IGNORECASE))
        if len(parts) != 2 or not all(p.strip() for p in parts):
            return None
        return parts[0].strip(), parts[1].strip()

    def hyphen_pair(self) -> tuple[str, str] | None:
        """(first, second) when the heading names two runs joined by a hyphen ("Y64F4809 -
        Y64F480E"). Which way the change goes is not in the hyphen; `changes.py` reads it as
        "from the first to the second" only for runs tabulated in another table (Table 33,
        whose text says "moving from the first run to the second")."""
        names = self._inner
        parts = re.split(r"\s+[-–]\s+", names)
        if len(parts) == 1 and " " not in names and names.count("-") + names.count("–") == 1:
            # "Y64F4809-Y64F480E": one hyphen between two words. A name with hyphens of its own
            # (a perflab run id, 20261128-003516-...) is never split.
            parts = re.split(r"[-–]", names)
        if len(parts) != 2 or not all(p.strip() and " " not in p.strip() for p in parts):
            return None
        return parts[0].strip(), parts[1].strip()


def change_heading(header: str) -> ChangeHeading | None:
    """The change a column heading announces, or None for a run (or measurement) column."""
    words = _WORD.findall(header.lower())
    if not words:
        return None
    ends = {words[0], words[-1]}
    names = " ".join(_CHANGE_WORD.sub(" ", header).split()).strip(" .:,")
    if ends & _DELTA_WORDS:
        percent = "%" in words or bool(set(words) & _PERCENT_WORDS)
        return ChangeHeading(Change.PERCENT if percent else Change.DELTA, names)
    if ends & _PERCENT_WORDS or header.strip() in {"%", "(%)"}:
        if _NUMBERING.match(names) or _NAMED_PAIR.search(f" {names} "):
            return ChangeHeading(Change.PERCENT, names)
    return None

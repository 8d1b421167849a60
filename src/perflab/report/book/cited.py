"""What a page cites: the study, suite and run ids it names, and the numbers it quotes from them.

A page names its evidence by id (20261128-003516-sqlite-release-a05c), in full or shortened to
its time and suffix ("…234844…f6bf"). A number it copies out of a report is written inside a
quote block that names the reports it comes from:

    <!-- quote: 20261126-193357-pg-storage-constrained-2878 -->
    ... ITR (S) 1.104, SUT/CMD (S) 0.765 -> 0.683 ms ...
    <!-- /quote -->

Every number in the block (below) must be found in one of those reports -- printed in its
report.md, or a value of its record (report.json, suite.json) -- as the page prints it: rounded
to the page's digits, in the report's units or a thousand times them (s and ms), or a ratio
written as a percent change (1.104 as +10.4%). That is a check against typing and copying
slips and against numbers from nowhere, not a proof that the page's sentence is right: a small
number can match a value it was not taken from. Tables that must be exact are generated from
the stored record instead (tables.py, page.py).

Numbers the check reads: a decimal number, or an integer of three or more digits (with or
without thousands separators, a sign, a %). Left out: ids, dates and clock times, versions
(3.40.1), anything in a code span (a command, a file name), and small integers (4 blocks, 2
CPUs: counts the report need not print).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from perflab.report.book.layout import ELIDED, ID

# A marker opens its line (one in a code span, or in a sentence about markers, is not a marker).
QUOTE_OPEN = re.compile(r"^[ \t]*<!--\s*quote:\s*(?P<ids>[^>]*?)\s*-->", re.M)
QUOTE_CLOSE = re.compile(r"^[ \t]*<!--\s*/quote\s*-->", re.M)
_CODE = re.compile(r"`[^`\n]*`")
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}:\d{2}(?::\d{2})?\b")
_VERSION = re.compile(r"\b\d+(?:\.\d+){2,}\b")
_NUMBER = re.compile(r"(?<![\w.])(?P<sign>[+\-−]?)(?P<int>\d{1,3}(?:,\d{3})+|\d+)(?:\.(?P<frac>\d+))?(?P<pct>\s?%)?"
                     r"(?![\w.]\d)")


@dataclass(frozen=True)
class Citation:
    page: Path
    line: int
    text: str                                   # as the page writes it
    elided: tuple[str | None, str, str] | None  # (day, time, suffix) of a shortened id


def citations(page: Path, text: str | None = None) -> list[Citation]:
    """Every id a page names, with its line, in order."""
    text = Path(page).read_text(encoding="utf-8") if text is None else text
    found: list[Citation] = []
    for number, line in enumerate(text.splitlines(), start=1):
        for match in ID.finditer(line):
            found.append(Citation(Path(page), number, match.group(1), None))
        for match in ELIDED.finditer(line):
            if "…" in match.group(0):
                found.append(Citation(Path(page), number, match.group(0), (match.group(1), match.group(2),
                                                                            match.group(3))))
    return found


@dataclass(frozen=True)
class Quoted:
    """A number as a page prints it."""
    text: str
    value: float
    decimals: int
    percent: bool
    rounded: int = 0      # trailing zeros of a whole number written to thousands ("3,668,000": 3)

    @property
    def tolerance(self) -> float:
        """Half a unit in the last digit the page prints."""
        return 0.5 * 10.0 ** (self.rounded if self.rounded else -self.decimals) * (1 + 1e-9) + 1e-12


@dataclass(frozen=True)
class QuoteBlock:
    page: Path
    line: int              # the opening marker's line
    ids: tuple[str, ...]
    text: str

    def numbers(self) -> list[Quoted]:
        return quoted_numbers(self.text)


def quote_blocks(page: Path, text: str | None = None) -> list[QuoteBlock]:
    """The quote blocks of a page; an opening marker without its close is a block to the end
    of the page (and `unclosed` says so)."""
    text = Path(page).read_text(encoding="utf-8") if text is None else text
    blocks: list[QuoteBlock] = []
    for match in QUOTE_OPEN.finditer(text):
        close = QUOTE_CLOSE.search(text, match.end())
        body = text[match.end():close.start() if close else len(text)]
        ids = tuple(ID.findall(match.group("ids")))
        blocks.append(QuoteBlock(Path(page), text.count("\n", 0, match.start()) + 1, ids, body))
    return blocks


def unclosed(text: str) -> list[int]:
    """Lines of quote markers opened and not closed before the next one opens."""
    lines = []
    opens = list(QUOTE_OPEN.finditer(text))
    for i, match in enumerate(opens):
        end = opens[i + 1].start() if i + 1 < len(opens) else len(text)
        if not QUOTE_CLOSE.search(text, match.end(), end):
            lines.append(text.count("\n", 0, match.start()) + 1)
    return lines


def _checked_text(text: str) -> str:
    """The prose whose numbers are quoted: without comments, code spans, link targets, ids,
    dates, clock times and versions."""
    for pattern in (_COMMENT, _CODE, _LINK_TARGET, ID, ELIDED, _DATE, _VERSION):
        text = pattern.sub(" ", text)
    return text


def quoted_numbers(text: str, small: bool = False) -> list[Quoted]:
    """The numbers a text prints (see the module's docstring for which); *small*: also the
    integers below 100 (a report's own numbers, where a count may be what a page quotes)."""
    out: list[Quoted] = []
    for match in _NUMBER.finditer(_checked_text(text)):
        whole = match.group("int")
        frac = match.group("frac")
        if not small and frac is None and len(whole.replace(",", "")) < 3:
            continue
        sign = -1.0 if match.group("sign") in ("-", "−") else 1.0
        value = sign * float(whole.replace(",", "") + (f".{frac}" if frac else ""))
        # "3,668,000 instructions": a whole number written to its thousands (at most) is as precise as
        # its last nonzero digit; "20,000 users" may be exact, and matching it looser only forgives.
        digits = whole.replace(",", "")
        zeros = min(len(digits) - len(digits.rstrip("0")), 3) if frac is None and "," in whole else 0
        out.append(Quoted(match.group(0).strip(), value, len(frac or ""), bool(match.group("pct")), zeros))
    return out


def record_values(data: Any, skip: frozenset[str] = frozenset({"per_interval"})) -> list[float]:
    """Every number in a stored record (report.json, suite.json), but the per-interval series a
    chart draws (a page quotes the runs and the comparisons, not each second of a run)."""
    found: list[float] = []
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, bool) or item is None:
            continue
        if isinstance(item, (int, float)):
            found.append(float(item))
        elif isinstance(item, dict):
            stack.extend(v for k, v in item.items() if k not in skip)
        elif isinstance(item, list):
            stack.extend(item)
    return found


class NumberPool:
    """The numbers of the reports a quote block names, and the forms a page may print them in."""

    def __init__(self, values: list[float]) -> None:
        base = np.asarray([v for v in values if np.isfinite(v)], dtype=float)
        # as printed; in ms where the report has s (and the other way); a fraction or ratio as a
        # percent, a ratio as a percent change (1.104: +10.4%)
        self.forms = np.unique(np.concatenate([base, base * 1000.0, base / 1000.0, base * 100.0,
                                               (base - 1.0) * 100.0])) if base.size else base

    def holds(self, number: Quoted) -> bool:
        if not self.forms.size:
            return False
        tolerance = number.tolerance
        close = np.abs(self.forms - number.value) <= tolerance
        if number.percent:     # "fell 10.7%" and "-10.7%" are one change
            close |= np.abs(np.abs(self.forms) - abs(number.value)) <= tolerance
        return bool(close.any())

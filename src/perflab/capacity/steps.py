"""ITRR steps for composition, from what a planner has: studies, stored runs, printed numbers.

A STEP is one of

* a study (its id or unique prefix in the store, its directory, or its study.json), optionally
  `#CONFIG` to pick the comparison whose new configuration is CONFIG: the ITR (S) comparison
  the study measured (ratio, interval, blocks);
* `runs:A..B` -- two run groups in `perflab compare`'s forms (run ids, `label:NAME`,
  `study:ID:CONFIG`), compared here the way `perflab compare` compares them;
* a number, `1.30`, optionally named and with an interval: `R21=1.04:1.02:1.06` (ratio, low,
  high at the command's --confidence), and optionally the interval's degrees of freedom
  (`:1.06:3` for a t-interval with 3 df; without it the interval is read as normal, which
  overstates the SE of a small-df interval -- conservative) -- a printed table value, or a
  processor ITRR from a vendor's table. A bare number is taken as exact: no uncertainty.

Called by `perflab capacity compose|whatif`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from perflab import caveats as cav
from perflab.capacity.compose import ITRR
from perflab.capacity.source import StudySource, read_study
from perflab.caveats import Caveat, Code
from perflab.errors import InputError
from perflab.stats.criteria import DEFAULT_CONFIDENCE, DEFAULT_MARGIN, Criteria

METRIC = "itr_s"
_NUMBER = re.compile(r"^(?:(?P<label>[^=]+)=)?(?P<ratio>[0-9.]+)"
                     r"(?::(?P<low>[0-9.]+):(?P<high>[0-9.]+)(?::(?P<df>[0-9.]+))?)?$")


@dataclass(frozen=True)
class Step:
    """One composed factor: the ITRR, where it came from, and its base → new names."""

    itrr: ITRR
    source: str
    base: str
    new: str
    n_blocks: int | None = None

    def to_dict(self, confidence: float) -> dict:
        return {**self.itrr.to_dict(confidence), "source": self.source, "base": self.base, "new": self.new,
                "n_blocks": self.n_blocks}


def parse_step(text: str, *, store: str | Path | None, confidence: float) -> Step:
    """One STEP argument (see the module docstring)."""
    m = _NUMBER.match(text.strip())
    if m:
        return _literal(text, m, confidence)
    if text.startswith("runs:"):
        return _runs(text, store, confidence)
    ref, _, config = text.partition("#")
    return from_study(read_study(ref, store), config or None, source=text)


def _literal(text: str, m: re.Match, confidence: float) -> Step:
    try:
        ratio = float(m["ratio"])
        label = (m["label"] or "").strip() or m["ratio"]
        if m["low"] is None:
            itrr = ITRR(ratio, label=label)
        else:
            low, high = float(m["low"]), float(m["high"])
            df = float(m["df"]) if m["df"] else math.inf
            if not 0 < low <= ratio <= high:
                raise InputError(f"expected low ≤ ratio ≤ high, got {text!r}", field="STEP")
            if not df >= 1:
                raise InputError(f"degrees of freedom must be ≥ 1, got {text!r}", field="STEP")
            itrr = ITRR.from_interval(ratio, low, high, confidence=confidence, df=df, label=label)
    except ValueError:
        raise InputError(f"expected a ratio such as 1.04 or R21=1.04:1.02:1.06, got {text!r}", field="STEP") from None
    return Step(itrr, "given", "", label)


def from_study(study: StudySource, config: str | None, source: str) -> Step:
    """The ITR (S) comparison of a study document (or a `perflab compare` document)."""
    doc, path = study.document, study.path
    comparisons = [c for c in doc.comparisons if config is None or c.new == config]
    if not comparisons:
        which = f" with new configuration {config!r}" if config else ""
        raise InputError(f"no comparison{which} in this study (a sweep has none)", file=path, field="comparisons")
    if len(comparisons) > 1:
        names = ", ".join(repr(c.new) for c in comparisons)
        raise InputError(f"the study compares several configurations ({names}); add #CONFIG to pick one",
                         file=path, field="comparisons")
    comp = comparisons[0]
    label = f"{comp.base} -> {comp.new}"
    entry = comp.entry(METRIC)
    if entry is None or not _pos(entry.ratio):
        raise InputError(f"no ITR (S) ratio in the comparison {comp.base!r} -> {comp.new!r} "
                         "(ITR (S) not measured, or fewer than 2 valid runs per configuration)",
                         file=path, field="comparisons.metrics")
    ratio, low, high, n = entry.ratio, entry.ci_low, entry.ci_high, entry.n_blocks
    if ratio is None or low is None or high is None or not (_pos(low) and _pos(high)) or n < 2:
        raise InputError(f"the ITR (S) ratio of {label!r} has no interval (fewer than 2 blocks): composing it "
                         "would carry no uncertainty", file=path, field="comparisons.metrics")
    # the row's own level: a primary row of a study with k primary hypotheses is at 1 - alpha/k
    level = entry.level or doc.design.confidence or DEFAULT_CONFIDENCE
    itrr = ITRR.from_interval(ratio, low, high, confidence=level,
                              df=max(1, n - 1), label=label)
    return Step(itrr, source, comp.base, comp.new, n)


def _runs(text: str, store, confidence: float) -> Step:
    body = text[len("runs:"):]
    if ".." not in body:
        raise InputError(f"expected runs:A..B (two run groups as `perflab compare` takes them), got {text!r}",
                         field="STEP")
    a, _, b = body.rpartition("..")
    from perflab.store.catalog import Store
    from perflab.study.groups import comparison_document

    doc = comparison_document(Store(store), a, b, Criteria.from_fields(DEFAULT_MARGIN, confidence=confidence), metrics=[METRIC],
                              primary=[METRIC])
    return from_study(StudySource(doc), None, source=text)


def chain_warnings(steps: list[Step]) -> list[Caveat]:
    """Consecutive measured steps should chain (A→B then B→C); names that differ are worth a
    look (they may only be labels), so this warns and does not refuse."""
    out = []
    for a, b in zip(steps, steps[1:]):
        if a.source != "given" and b.source != "given" and a.new != b.base:
            out.append(cav.remark(Code.STEPS_UNCHAINED, f"steps do not chain by name: {a.base!r} -> {a.new!r}, then "
                                  f"{b.base!r} -> {b.new!r}"))
    return out


def _pos(v: float | None) -> bool:
    return v is not None and math.isfinite(v) and v > 0

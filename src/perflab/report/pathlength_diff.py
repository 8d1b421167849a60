"""'Where the pathlength went': a comparison's change in instructions per command, by library,
by function (exclusive and inclusive) and by transaction, with the differential flame graph's
data -- the seeds' table of the modules whose pathlength grew, built once from the study
document's record (records/pathlength_diff.py) for every format: Markdown and HTML render the same
tables (report/view.py carries this view), JSON holds the record itself.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from perflab.records.pathlength_diff import FunctionChange, PathlengthDiff
from perflab.records.study import ComparisonRecord, StudyDocument
from perflab.report import numbers as fmt

TITLE = "Where the pathlength went"


@dataclass
class Table:
    columns: list[str]
    rows: list[list[str]]
    title: str = ""
    verdict_column: int | None = None


@dataclass
class PathlengthView:
    summary: list[str]
    libraries: Table
    exclusive: Table
    inclusive: Table
    transactions: Table | None
    notes: list[str]
    flame: str | None = None          # the flame graph's data, as JSON text safe inside <script>
    flame_id: str = "flame"
    tables: list[Table] = field(default_factory=list)


def instructions(x: Any, signed: bool = False) -> str:
    value = fmt.number(x)
    if value is None:
        return fmt.NA
    if value == 0:
        return "0"
    return fmt.fixed(value, 0 if abs(value) >= 100 else 1, signed=signed)


def _share(delta: float, total: float | None) -> str:
    return fmt.pct(delta / total) if total else "-"


def _interval(row: FunctionChange) -> str:
    if row.delta_low is None or row.delta_high is None:
        return fmt.NA
    return f"[{instructions(row.delta_low, signed=True)}, {instructions(row.delta_high, signed=True)}]"


def _noise(row: FunctionChange) -> str:
    return {True: "yes", False: "no", None: fmt.NA}[row.above_noise]


def total_is_a_change(diff: PathlengthDiff) -> bool:
    """Whether the total change is one to share out: its interval excludes zero (without
    intervals, any nonzero change)."""
    if diff.total_low is None or diff.total_high is None:
        return diff.delta != 0
    return diff.total_low > 0 or diff.total_high < 0


def function_table(diff: PathlengthDiff, rows: list[FunctionChange], title: str, shares: bool) -> Table:
    total = diff.delta if shares and total_is_a_change(diff) else None
    columns = ["function", "library", "object", diff.base, diff.new, "change", f"{fmt.percent_level(diff.confidence)}"
               " interval", "share of the change", "above the noise"]
    body = [[row.function, row.library, row.object, instructions(row.base), instructions(row.new),
             instructions(row.delta, signed=True), _interval(row), _share(row.delta, total), _noise(row)]
            for row in rows]
    return Table(columns, body, title)


def view(study: StudyDocument, comparison: ComparisonRecord, suffix: str = "") -> PathlengthView | None:
    """The section of one comparison, or None when its runs were not counted per function."""
    diff = study.pathlength_diff(comparison.base, comparison.new)
    if diff is None:
        return None
    return build(diff, suffix)


def build(diff: PathlengthDiff, suffix: str = "") -> PathlengthView:
    delta, changed = diff.delta, total_is_a_change(diff)
    total = delta if changed else None
    relative = delta / diff.base_total if diff.base_total else None
    explained = sum(r.delta for r in diff.exclusive)
    interval = ("" if diff.total_low is None or diff.total_high is None else
                f" ({fmt.percent_level(diff.confidence)} interval [{instructions(diff.total_low, signed=True)}, "
                f"{instructions(diff.total_high, signed=True)}])")
    blocks = (f"{diff.paired_transactions:,} transactions counted in both, paired by their place in the "
              f"{diff.blocks} block{'s' if diff.blocks != 1 else ''}' draws" if diff.blocks else
              f"{len(diff.runs_base)} unpaired run{'s' if len(diff.runs_base) != 1 else ''} of each")
    summary = [f"Instructions per command in the counted pass: {instructions(diff.base_total)} ({diff.base}) -> "
               f"{instructions(diff.new_total)} ({diff.new}), {instructions(delta, signed=True)}"
               f" ({fmt.pct(relative)}){interval}; counted function by function, {blocks}."]
    if changed:
        summary.append(f"The {len(diff.exclusive)} functions listed by their own instructions explain "
                       f"{fmt.pct(explained / delta, signed=False)} of the change; the libraries' rows explain all of "
                       f"it.")
    else:
        summary.append("The total is no change above the noise of a count: the shares of it are not given.")
    above = [r for r in diff.exclusive if r.above_noise]
    widest = max((r.delta_high - r.delta_low for r in diff.exclusive
                  if r.above_noise is False and r.delta_low is not None and r.delta_high is not None), default=None)
    if diff.blocks and diff.paired_transactions >= 2:
        noise = (f"Noise of a count: a function's change is above it when its {fmt.percent_level(diff.confidence)} "
                 f"interval over the {diff.paired_transactions:,} paired transactions (Bonferroni over the "
                 f"{diff.functions_changed} functions whose count moved in one) excludes zero; {len(above)} of the "
                 f"{len(diff.exclusive)} functions listed are above it")
        noise += (f", and the widest interval of one that is not spans {instructions(widest)} instructions per "
                  "command." if widest is not None else ".")
        summary.append(noise)
    else:
        summary.append("Noise of a count: not measured (the runs are not paired); no row is called above it.")
    libraries = Table(["library", diff.base, diff.new, "change", "share of the change", "functions"],
                      [[lib.name, instructions(lib.base), instructions(lib.new), instructions(lib.delta, signed=True),
                        _share(lib.delta, total), str(lib.functions)] for lib in diff.libraries],
                      "By library (their functions' own instructions per command)")
    exclusive = function_table(diff, diff.exclusive, "By function, exclusive (its own instructions per command)", True)
    inclusive = function_table(diff, diff.inclusive, "By function, inclusive (its own and its callees' instructions "
                               "per command; rows overlap)", True)
    transactions = None
    if diff.per_transaction:
        transactions = Table(["transaction", "counted per run", diff.base, diff.new, "change"],
                             [[t.name, str(t.counted), instructions(t.base), instructions(t.new),
                               fmt.pct((t.new - t.base) / t.base) if t.base and not math.isnan(t.new) else fmt.NA]
                              for t in diff.per_transaction],
                             "By transaction (the mean of each name's counted transactions)")
    notes = [
        "Instructions per command of the counted pass's own mix, the same draw of transactions in both configurations "
        "of a block: the total differs a little from INSTR/CMD (I), which weights each transaction by the window's mix.",
        "Exclusive counts add up to the total; inclusive counts overlap (a caller includes its callees) and are exact, "
        "recursion included: a function re-entered through others is counted from its outermost activation.",
        "Objects by file name (two builds of one library pair up); GCC's clones of a function (.constprop, .isra, "
        ".part, .cold) are folded into it. perflab's adapter is Python code: its instructions are counted as the "
        "interpreter's. The kernel is not counted by valgrind (a sampled profile sees it, never as counts).",
        *diff.notes,
    ]
    flame = None
    if diff.flame is not None and len(diff.flame.nodes) > 1:
        flame = flame_json(diff)
        notes.append("The flame graph (HTML report) is drawn from callgrind's caller -> callee counts: the first level "
                     "of frames is exact, deeper frames share their caller's width in proportion to its calls' "
                     f"instructions (callgrind keeps one level of callers); frames under "
                     f"{instructions(diff.flame.pruned_below)} instructions per command in both are left out.")
    out = PathlengthView(summary, libraries, exclusive, inclusive, transactions, notes, flame, f"flame{suffix}")
    out.tables = [t for t in (libraries, exclusive, inclusive, transactions) if t is not None]
    return out


def flame_json(diff: PathlengthDiff) -> str:
    """The flame graph's data for the page's script: every '<' escaped, so a function name can
    never close the <script> element it sits in."""
    assert diff.flame is not None
    data = {"base": diff.base, "new": diff.new,
            "labels": [[label.name, label.object, label.library] for label in diff.flame.labels],
            "nodes": [[p, lab, round(a, 1), round(b, 1)] for p, lab, a, b in diff.flame.nodes]}
    return json.dumps(data, ensure_ascii=True, separators=(",", ":")).replace("<", "\\u003c").replace(">", "\\u003e")


@cache
def flame_script() -> str:
    """The flame graph's script, inlined in the page (the report fetches nothing)."""
    return resources.files("perflab.report").joinpath("static/flame.js").read_text(encoding="utf-8")


# -- where the CPU went, sampled (drive/profile.py): shares, never counts -----------------------------

PROFILE_TITLE = "Where the CPU went (sampled)"


@dataclass
class ProfileView:
    summary: list[str]
    tables: list[Table]
    notes: list[str]


def _pct(share: float) -> str:
    return fmt.pct(share, signed=False, decimals=1)


def _share_interval(low: float, high: float) -> str:
    return f"[{fmt.pct(low, decimals=1)}, {fmt.pct(high, decimals=1)}]"


def profile_view(study: StudyDocument, comparison: ComparisonRecord) -> ProfileView | None:
    diff = study.profile_diff(comparison.base, comparison.new)
    if diff is None:
        return None
    summary = [f"The SUT's processes sampled during every window (perf cpu-clock): {diff.base_samples:,} samples of "
               f"{diff.base} over {len(diff.runs_base)} runs, {diff.new_samples:,} of {diff.new} over "
               f"{len(diff.runs_new)}. Each row is a share of the sampled CPU time, with its 95% interval, never a "
               "count of instructions."]
    columns = [f"{diff.base} share", f"{diff.new} share", "change of share", "95% interval"]
    libraries = Table(["library", *columns],
                      [[r.library, _pct(r.base), _pct(r.new), fmt.pct(r.new - r.base, decimals=1),
                        _share_interval(r.delta_low, r.delta_high)] for r in diff.libraries],
                      "By library (the kernel is in a sampled profile)")
    functions = Table(["function", "library", "object", *columns, "samples"],
                      [[r.function, r.library, r.object, _pct(r.base), _pct(r.new), fmt.pct(r.new - r.base, decimals=1),
                        _share_interval(r.delta_low, r.delta_high), f"{r.base_samples:,} / {r.new_samples:,}"]
                       for r in diff.functions],
                      "By function, the largest changes of share")
    notes = ["Intervals: Wilson's for a share, Newcombe's for a change of share. Samples a millisecond apart are not "
             "independent, and the runs differ in more than their samples: the intervals are a floor on the error. "
             "A share is of the SUT's own CPU time: a configuration that uses less CPU in all can have a larger share "
             "in a function that did not change."]
    return ProfileView(summary, [libraries, functions], notes)

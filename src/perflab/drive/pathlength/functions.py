"""Per-function counts from callgrind's dumps: where each counted transaction's instructions went.

The counted pass already asks callgrind for one dump (a `part`) per transaction
(drive/pathlength/inprocess.py, server.py); each part holds, besides its total, every function's
own instructions (its *exclusive* count) and every call it made with the callee's instructions
during that call (callgrind's `calls=` lines). This module reads those parts back function by
function -- so the per-function count costs the pass no second run, only this reading -- and
writes two tables beside pathlength.parquet:

* `pathlength_functions.parquet`: per counted transaction and function, its exclusive and
  inclusive instructions (and the part of the exclusive ones in the function's inner
  activations, below): a study pairs the two configurations' counts transaction by transaction;
* `pathlength_calls.parquet`: per transaction name, caller and callee, the calls and the
  callee's instructions during them (what a flame graph is drawn from).

The empty calls' own instructions (the client requests, or the PostgreSQL marker) are taken out
function by function, as the pass takes them out of each total: the part of the median empty call
is subtracted from each transaction's part, so the functions of a transaction sum to its count.

Names are made comparable across two builds of the same code, so a table of A against B pairs a
function with itself: an object is named by its file name (`apsw/__init__...so`, `postgres`,
`libc.so.6`), not its install path; callgrind's recursion levels (`f'2`) are folded into `f`; GCC's
clones of a function (`.constprop.0`, `.isra.0`, `.part.0`, `.cold`) are folded into the function
they were cloned from, as a release that stops cloning it has not removed it. Code with no symbol
that perflab itself wrote (sut/machine_code.py: the known loop, the client requests) is named by
the map of that code the counted worker hands back.

Inclusive counts are exact, recursion included. callgrind keeps a function's first activation on
the stack apart from the ones inside it (`--separate-recs`, 2 by default: `f` and `f'2`, whether
f re-entered itself directly or through others, as Python's interpreter does:
`_PyEval_EvalFrameDefault` -> `_PyFunction_Vectorcall` -> `_PyEval_EvalFrameDefault'2`). A
function's inclusive count is its first activations' own instructions and their calls' -- the
inner activations are inside those calls -- so nothing is counted twice. Summing `f` and `f'2`'s
calls instead would count the inner ones again (by half as much again for the main job's
debit-credit). The calls table keeps the two apart (`caller_recursive`, `callee_recursive`), so a
flame graph drawn from it keeps the outermost frames apart from the inner ones.
"""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from perflab import arrow_arrays

FUNCTIONS_FILE = "pathlength_functions.parquet"
CALLS_FILE = "pathlength_calls.parquet"
#: the object callgrind gives code with no symbol and no file (`???`), as the tables name it
NO_OBJECT = "(no object)"
#: the object of code perflab wrote itself (sut/machine_code.py), named by the worker's map
PERFLAB_CODE = "(perflab machine code)"

_RECURSION = re.compile(r"'\d+$")
_CLONE = re.compile(r"\.(?:constprop|isra|part|cold|lto_priv|localalias)(?:\.\d+)?$")
_ADDRESS = re.compile(r"^0x([0-9a-fA-F]+)")

Key = tuple[str, str]   # (object, function)
Context = tuple[str, str, bool]   # (object, function, an inner activation: callgrind's f'2)


@dataclass(frozen=True)
class CodeRange:
    """Code perflab made executable itself (no symbol): [start, start + size) is `name`."""

    start: int
    size: int
    name: str


def object_name(path: str) -> str:
    """An object named as two builds of it share: its file name (a package's `__init__` module
    with its package's name)."""
    if path in ("", "???"):
        return NO_OBJECT
    parts = path.rstrip("/").split("/")
    name = parts[-1]
    if name.startswith("__init__") and len(parts) > 1:
        return f"{parts[-2]}/{name}"
    return name


def function_name(name: str) -> str:
    """callgrind's recursion level and GCC's clone suffixes folded away."""
    name = _RECURSION.sub("", name)
    while True:
        shorter = _CLONE.sub("", name)
        if shorter == name:
            return name
        name = shorter


@dataclass
class PartFunctions:
    """One dump: its trigger, its total, and its costs function by function."""

    trigger: str
    total: int = 0
    own: dict[Key, int] = field(default_factory=lambda: defaultdict(int))        # every activation's
    inner: dict[Key, int] = field(default_factory=lambda: defaultdict(int))      # the inner activations' own
    inclusive: dict[Key, int] = field(default_factory=lambda: defaultdict(int))  # the first activations'
    calls: dict[tuple[Context, Context], list[int]] = field(default_factory=dict)   # [calls, inclusive]
    files: dict[Key, str] = field(default_factory=dict)                     # the source file of each function


class _Names:
    """callgrind's name compression: `(7) name` defines id 7, `(7)` refers to it."""

    def __init__(self) -> None:
        self.ids: dict[str, str] = {}

    def read(self, text: str) -> str:
        text = text.strip()
        if text.startswith("("):
            close = text.find(")")
            if close > 0:
                ident, rest = text[1:close], text[close + 1:].strip()
                if rest:
                    self.ids[ident] = rest
                    return rest
                return self.ids.get(ident, text)
        return text


def read_parts(path: Path, code: Sequence[CodeRange] = ()) -> list[PartFunctions]:
    """Every part of a callgrind file (combined dumps, or one dump), in dump order."""
    return list(_parts(path, code))


def _parts(path: Path, code: Sequence[CodeRange]) -> Iterator[PartFunctions]:
    objects, files, functions = _Names(), _Names(), _Names()
    renamed: dict[tuple[str, str], Context] = {}

    def context(obj: str, fn: str) -> Context:
        cached = renamed.get((obj, fn))
        if cached is None:
            key = _key(obj, fn, code)
            cached = renamed[(obj, fn)] = (key[0], key[1], bool(_RECURSION.search(fn)))
        return cached

    part: PartFunctions | None = None
    positions, ir_index, events = 1, 0, 1
    simple = True
    ob = fl = ""
    current: Context = (NO_OBJECT, "???", False)
    current_key: Key = current[:2]
    cob: str | None = None
    cfn: str | None = None
    pending_call: tuple[Context, int] | None = None
    with open(path, errors="replace") as handle:
        for line in handle:
            first = line[:1]
            if first.isdigit() or first in "+-*":
                if simple:   # "position Ir": the counted pass's own format, read without a split
                    space = line.find(" ")
                    value = int(line[space + 1:]) if space > 0 else 0
                else:
                    fields = line.split()
                    value = int(fields[positions + ir_index]) if len(fields) > positions + ir_index else 0
                if part is None:
                    part = PartFunctions("")
                if pending_call is not None:
                    callee, count = pending_call
                    pending_call = None
                    entry = part.calls.get((current, callee))
                    if entry is None:
                        part.calls[(current, callee)] = [count, value]
                    else:
                        entry[0] += count
                        entry[1] += value
                    if not current[2] and callee != current:
                        part.inclusive[current_key] += value
                else:
                    part.own[current_key] += value
                    if current[2]:
                        part.inner[current_key] += value
                    else:
                        part.inclusive[current_key] += value
                continue
            if line.startswith("fn="):
                current = context(ob, functions.read(line[3:]))
                current_key = (current[0], current[1])
                if part is None:
                    part = PartFunctions("")
                if current_key not in part.files:
                    part.files[current_key] = fl
            elif line.startswith("cfn="):
                cfn = functions.read(line[4:])
            elif line.startswith("calls="):
                callee = context(cob if cob is not None else ob, cfn or "???")
                pending_call = (callee, int(line[6:].split()[0]))
                cob = cfn = None
            elif line.startswith("cob="):
                cob = objects.read(line[4:])
            elif line.startswith(("cfi=", "cfl=", "fi=", "fe=")):
                files.read(line.split("=", 1)[1])   # kept for their ids; a cost's file is not used
            elif line.startswith("fl="):
                fl = files.read(line[3:])
            elif line.startswith("ob="):
                ob = objects.read(line[3:])
            elif line.startswith("part:"):
                if part is not None:
                    yield part
                part = PartFunctions("")
            elif line.startswith("desc: Trigger:"):
                if part is None:
                    part = PartFunctions("")
                part.trigger = line.split(":", 2)[2].strip()
            elif line.startswith(("summary:", "totals:")):
                if part is None:
                    part = PartFunctions("")
                part.total = int(line.split()[1])
            elif line.startswith("positions:"):
                positions = len(line.split()[1:]) or 1
                simple = positions == 1 and events == 1
            elif line.startswith("events:"):
                names = line.split()[1:]
                ir_index = names.index("Ir") if "Ir" in names else 0
                events = len(names)
                simple = positions == 1 and events == 1
    if part is not None:
        yield part


def _key(obj: str, fn: str, code: Sequence[CodeRange]) -> Key:
    if obj in ("", "???") and code:
        match = _ADDRESS.match(fn)
        if match:
            address = int(match.group(1), 16)
            for block in reversed(code):   # the newest page at an address is the live one
                if block.start <= address < block.start + block.size:
                    return (PERFLAB_CODE, block.name)
    return (object_name(obj), function_name(fn))


# -- the profile of a pass: its transactions' parts, less the empty calls' ----------------------------------------

@dataclass
class Profile:
    """Each counted transaction's functions -- their own instructions (and the part in inner
    activations) and inclusive ones, the empty call's part subtracted -- by its number in the
    pass; and per transaction name, each call's instructions summed over that name's transactions."""

    names: dict[int, str] = field(default_factory=dict)
    own: dict[int, dict[Key, float]] = field(default_factory=dict)
    inner: dict[int, dict[Key, float]] = field(default_factory=dict)
    inclusive: dict[int, dict[Key, float]] = field(default_factory=dict)
    calls: dict[str, dict[tuple[Context, Context], list[float]]] = field(default_factory=lambda: defaultdict(dict))
    files: dict[Key, str] = field(default_factory=dict)

    def add(self, index: int, name: str, part: PartFunctions, empty: PartFunctions | None) -> None:
        self.names[index] = name
        calls = self.calls[name]
        tables = (self.own.setdefault(index, defaultdict(float)), self.inner.setdefault(index, defaultdict(float)),
                  self.inclusive.setdefault(index, defaultdict(float)))
        for sign, source in ((1, part), (-1, empty)):
            if source is None:
                continue
            for mine, theirs in zip(tables, (source.own, source.inner, source.inclusive)):
                for k, v in theirs.items():
                    mine[k] += sign * v
            for edge, (count, inclusive) in source.calls.items():
                entry = calls.setdefault(edge, [0.0, 0.0])
                entry[0] += sign * count
                entry[1] += sign * inclusive
        for k, f in part.files.items():
            self.files.setdefault(k, f)


def median_part(parts: Sequence[PartFunctions]) -> PartFunctions | None:
    """The empty call whose total is the median of theirs (the one the pass subtracts)."""
    if not parts:
        return None
    middle = statistics.median_low([p.total for p in parts])
    return next(p for p in parts if p.total == middle)


def profile_of(counted: Sequence[tuple[int, str | None, PartFunctions]], empty: PartFunctions | None) -> Profile:
    """The profile of the counted transactions: (its number in the pass, its name -- None: not
    used, it failed or has no count -- and its dump)."""
    profile = Profile()
    for index, name, part in counted:
        if name is not None:
            profile.add(index, name, part, empty)
    return profile


def write_profile(profile: Profile, run_dir: Path) -> int:
    """pathlength_functions.parquet and pathlength_calls.parquet; the functions written."""
    rows: dict[str, list] = {k: [] for k in ("transaction", "index", "object", "function", "file", "exclusive",
                                             "exclusive_inner", "inclusive")}
    for index in sorted(profile.own):
        own, inner, incl = profile.own[index], profile.inner[index], profile.inclusive[index]
        for k in sorted(set(own) | set(incl)):
            if own.get(k, 0.0) == 0 and incl.get(k, 0.0) == 0:
                continue   # only in the empty call, taken out whole
            for column, value in zip(rows, (profile.names[index], index, k[0], k[1], profile.files.get(k, ""),
                                            float(own.get(k, 0.0)), float(inner.get(k, 0.0)),
                                            float(incl.get(k, 0.0)))):
                rows[column].append(value)
    pq.write_table(pa.table({
        "transaction": arrow_arrays.strings(rows["transaction"]),
        "index": arrow_arrays.numbers(rows["index"], pa.int32()),
        "object": arrow_arrays.strings(rows["object"]),
        "function": arrow_arrays.strings(rows["function"]),
        "file": arrow_arrays.strings(rows["file"]),
        "exclusive": arrow_arrays.numbers(rows["exclusive"], pa.float64()),
        "exclusive_inner": arrow_arrays.numbers(rows["exclusive_inner"], pa.float64()),
        "inclusive": arrow_arrays.numbers(rows["inclusive"], pa.float64()),
    }), run_dir / FUNCTIONS_FILE)
    columns: dict[str, list] = {k: [] for k in ("transaction", "caller_object", "caller", "caller_recursive",
                                                 "callee_object", "callee", "callee_recursive", "calls", "inclusive")}
    for name in sorted(profile.calls):
        for (caller, callee), (count, cost) in sorted(profile.calls[name].items()):
            if caller == callee or (count == 0 and cost == 0):
                continue
            for column, value in zip(columns, (name, *caller, *callee, float(count), float(cost))):
                columns[column].append(value)
    pq.write_table(pa.table({
        "transaction": arrow_arrays.strings(columns["transaction"]),
        "caller_object": arrow_arrays.strings(columns["caller_object"]),
        "caller": arrow_arrays.strings(columns["caller"]),
        "caller_recursive": arrow_arrays.booleans(columns["caller_recursive"]),
        "callee_object": arrow_arrays.strings(columns["callee_object"]),
        "callee": arrow_arrays.strings(columns["callee"]),
        "callee_recursive": arrow_arrays.booleans(columns["callee_recursive"]),
        "calls": arrow_arrays.numbers(columns["calls"], pa.float64()),
        "inclusive": arrow_arrays.numbers(columns["inclusive"], pa.float64()),
    }), run_dir / CALLS_FILE)
    return len(set(zip(rows["object"], rows["function"])))

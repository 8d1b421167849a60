"""Per-function counts from callgrind's dumps: where each counted transaction's instructions went.

The counted pass already asks callgrind for one dump (a `part`) per transaction
(drive/pathlength/inprocess.py, server.py); each part holds, besides its total, every function's
own instructions (its *exclusive* count) and every call it made with the callee's instructions
during that call (callgrind's `calls=` lines). This module reads those parts back function by
function -- so the per-function count costs the pass no second run, only this reading -- and
writes two tables beside pathlength.parquet:

* `pathlength_functions.parquet`: per transaction name and function, the exclusive and inclusive
  instructions summed over that name's counted transactions;
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

Inclusive counts are callgrind's: a function's own instructions plus those of the calls it made
to other functions. A function that re-enters itself through another (Python's interpreter:
`_PyEval_EvalFrameDefault` -> ... -> `_PyEval_EvalFrameDefault`) has the inner calls counted again,
as callgrind_annotate counts them; a function that calls itself directly does not.
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
    own: dict[Key, int] = field(default_factory=lambda: defaultdict(int))
    calls: dict[tuple[Key, Key], list[int]] = field(default_factory=dict)   # [calls, inclusive]
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
    renamed: dict[tuple[str, str], Key] = {}

    def key(obj: str, fn: str) -> Key:
        cached = renamed.get((obj, fn))
        if cached is None:
            cached = renamed[(obj, fn)] = _key(obj, fn, code)
        return cached

    part: PartFunctions | None = None
    positions, ir_index = 1, 0
    ob = fl = ""
    current: Key = (NO_OBJECT, "???")
    cob: str | None = None
    cfn: str | None = None
    pending_call: tuple[Key, int] | None = None
    with open(path, errors="replace") as handle:
        for line in handle:
            first = line[:1]
            if first.isdigit() or first in "+-*":
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
                else:
                    part.own[current] += value
                continue
            if line.startswith("fn="):
                current = key(ob, functions.read(line[3:]))
                if part is None:
                    part = PartFunctions("")
                if current not in part.files:
                    part.files[current] = fl
            elif line.startswith("cfn="):
                cfn = functions.read(line[4:])
            elif line.startswith("calls="):
                callee = key(cob if cob is not None else ob, cfn or "???")
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
            elif line.startswith("events:"):
                names = line.split()[1:]
                ir_index = names.index("Ir") if "Ir" in names else 0
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
    """Per transaction name: each function's exclusive instructions and each call's, summed over
    the name's counted transactions (the empty call's part subtracted from each)."""

    own: dict[str, dict[Key, float]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(float)))
    calls: dict[str, dict[tuple[Key, Key], list[float]]] = field(default_factory=lambda: defaultdict(dict))
    files: dict[Key, str] = field(default_factory=dict)
    transactions: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def add(self, name: str, part: PartFunctions, empty: PartFunctions | None) -> None:
        own, calls = self.own[name], self.calls[name]
        for k, v in part.own.items():
            own[k] += v
        for edge, (count, inclusive) in part.calls.items():
            entry = calls.setdefault(edge, [0.0, 0.0])
            entry[0] += count
            entry[1] += inclusive
        if empty is not None:
            for k, v in empty.own.items():
                own[k] -= v
            for edge, (count, inclusive) in empty.calls.items():
                entry = calls.setdefault(edge, [0.0, 0.0])
                entry[0] -= count
                entry[1] -= inclusive
        for k, f in part.files.items():
            self.files.setdefault(k, f)
        self.transactions[name] += 1


def median_part(parts: Sequence[PartFunctions]) -> PartFunctions | None:
    """The empty call whose total is the median of theirs (the one the pass subtracts)."""
    if not parts:
        return None
    middle = statistics.median_low([p.total for p in parts])
    return next(p for p in parts if p.total == middle)


def profile_of(parts: Sequence[PartFunctions], names: Sequence[str | None], empty: PartFunctions | None) -> Profile:
    """The profile of the counted transactions: `parts[i]` is transaction i's dump, `names[i]`
    its name (None: not counted -- it failed, or has no dump)."""
    profile = Profile()
    for part, name in zip(parts, names):
        if name is not None:
            profile.add(name, part, empty)
    return profile


def inclusive(own: dict[Key, float], calls: dict[tuple[Key, Key], list[float]]) -> dict[Key, float]:
    """callgrind's inclusive count: own instructions plus the calls' to other functions."""
    out = dict(own)
    for (caller, callee), (_count, cost) in calls.items():
        if caller != callee:
            out[caller] = out.get(caller, 0.0) + cost
    return out


def write_profile(profile: Profile, run_dir: Path) -> int:
    """pathlength_functions.parquet and pathlength_calls.parquet; the functions written."""
    t_names: list[str] = []
    objects: list[str] = []
    functions: list[str] = []
    files: list[str] = []
    own_values: list[float] = []
    incl_values: list[float] = []
    for name in sorted(profile.own):
        own = profile.own[name]
        incl = inclusive(own, profile.calls.get(name, {}))
        for k in sorted(set(own) | set(incl)):
            if own.get(k, 0.0) == 0 and incl.get(k, 0.0) == 0:
                continue   # only in the empty call, taken out whole
            t_names.append(name)
            objects.append(k[0])
            functions.append(k[1])
            files.append(profile.files.get(k, ""))
            own_values.append(float(own.get(k, 0.0)))
            incl_values.append(float(incl.get(k, 0.0)))
    counts = [profile.transactions[n] for n in t_names]
    pq.write_table(pa.table({
        "transaction": arrow_arrays.strings(t_names),
        "transactions": arrow_arrays.numbers(counts, pa.int32()),
        "object": arrow_arrays.strings(objects),
        "function": arrow_arrays.strings(functions),
        "file": arrow_arrays.strings(files),
        "exclusive": arrow_arrays.numbers(own_values, pa.float64()),
        "inclusive": arrow_arrays.numbers(incl_values, pa.float64()),
    }), run_dir / FUNCTIONS_FILE)
    c_names: list[str] = []
    c_objects: list[str] = []
    c_callers: list[str] = []
    e_objects: list[str] = []
    e_callees: list[str] = []
    c_counts: list[float] = []
    c_costs: list[float] = []
    for name in sorted(profile.calls):
        for (caller, callee), (count, cost) in sorted(profile.calls[name].items()):
            if caller == callee or (count == 0 and cost == 0):
                continue
            c_names.append(name)
            c_objects.append(caller[0])
            c_callers.append(caller[1])
            e_objects.append(callee[0])
            e_callees.append(callee[1])
            c_counts.append(float(count))
            c_costs.append(float(cost))
    pq.write_table(pa.table({
        "transaction": arrow_arrays.strings(c_names),
        "caller_object": arrow_arrays.strings(c_objects),
        "caller": arrow_arrays.strings(c_callers),
        "callee_object": arrow_arrays.strings(e_objects),
        "callee": arrow_arrays.strings(e_callees),
        "calls": arrow_arrays.numbers(c_counts, pa.float64()),
        "inclusive": arrow_arrays.numbers(c_costs, pa.float64()),
    }), run_dir / CALLS_FILE)
    return len(set(zip(objects, functions)))

"""Where the pathlength went: a comparison's change in instructions per command, function by
function, from its runs' per-function tables (perflab.reduce.functions) -- the record every
report format renders (records/pathlength_diff.py).

Pairs: the two configurations' runs of a block counted the same transactions (the block's draw,
with the same parameters), so a function's change is taken transaction by transaction: its
interval is a t-interval over every paired transaction of every block, at the study's level,
Bonferroni over every function that moved in some transaction (a table of a thousand functions
would otherwise find some "change" in an A/A by chance). Pairing by transaction, not by block,
takes the draw's variety out of the noise: a block with more branch reports changes every
function's count per command, both configurations' alike. A function whose change is the same
in every transaction (deterministic code, a known loop) has an interval of zero width: any
change of it is above the noise; one that wanders with the process's hash seed or addresses
(a dictionary's probes) is above it only beyond that wander. Runs not paired by block
(`perflab compare` of unrelated runs) give the means, without intervals.

Exclusive counts add up: the functions' changes sum to the total change, and so do the
libraries'. Inclusive counts overlap (a caller includes its callees); they are exact, recursion
included (drive/pathlength/functions.py: a function's first activations only).
"""

from __future__ import annotations

import heapq
import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from perflab.records.pathlength_diff import (
    FlameGraph,
    FlameLabel,
    FunctionChange,
    LibraryChange,
    PathlengthDiff,
    TransactionChange,
)
from perflab.records.study import StudyDocument
from perflab.reduce.functions import Context, Key, RunProfile, read_profile
from perflab.reduce.libraries import library_of
from perflab.stats.distributions import t_ppf

#: rows in each of the tables (exclusive, inclusive)
TOP = 20
#: a function whose inclusive count is this share of the total in both is the whole transaction
WHOLE = 0.99
#: the flame graph's frames: at most this many, none narrower than this share of the larger total
FLAME_NODES = 3000
FLAME_SHARE = 0.0005
FLAME_DEPTH = 96


@dataclass(frozen=True)
class Pair:
    block: int | None
    base_run: str
    new_run: str
    base: RunProfile
    new: RunProfile


def study_diffs(doc: StudyDocument, run_dir: Callable[[str], Path], confidence: float | None = None) -> \
        list[PathlengthDiff]:
    """One record per comparison whose runs were counted per function (none for the others)."""
    level = confidence or doc.design.confidence or 0.95
    out = []
    for comparison in doc.comparisons:
        pairs = paired_profiles(doc, comparison.base, comparison.new, run_dir)
        if pairs:
            out.append(pathlength_diff(comparison.base, comparison.new, pairs, level))
    return out


def paired_profiles(doc: StudyDocument, base: str, new: str, run_dir: Callable[[str], Path]) -> list[Pair]:
    """The two configurations' counted runs, paired by block; without blocks, in run order."""
    def profiles(config: str) -> list[tuple[int | None, str, RunProfile]]:
        found = []
        for run in doc.runs_of(config):
            if not run.counts_in("after"):
                continue
            profile = read_profile(run_dir(run.run_id))
            if profile is not None:
                found.append((run.block, run.run_id, profile))
        return found

    a, b = profiles(base), profiles(new)
    by_block = {block: (rid, p) for block, rid, p in b if block is not None}
    pairs = [Pair(block, rid, by_block[block][0], p, by_block[block][1])
             for block, rid, p in a if block is not None and block in by_block]
    if pairs:
        return pairs
    return [Pair(None, ra, rb, pa, pb) for (_x, ra, pa), (_y, rb, pb) in zip(a, b)]


# -- the call graph's cycles -----------------------------------------------------------------------

def cycles(nodes: set[Context], edges: set[tuple[Context, Context]]) -> dict[Context, int]:
    """The strongly connected components of more than one frame (Tarjan's, without recursion):
    each member's cycle number. Inner activations of functions that re-enter each other are one."""
    succ: dict[Context, list[Context]] = defaultdict(list)
    for a, b in edges:
        if a != b:
            succ[a].append(b)
    index: dict[Context, int] = {}
    low: dict[Context, int] = {}
    on_stack: set[Context] = set()
    stack: list[Context] = []
    found: dict[Context, int] = {}
    counter = 0
    number = 0
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            children = succ.get(node, [])
            if i < len(children):
                work.append((node, i + 1))
                child = children[i]
                if child not in index:
                    work.append((child, 0))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            if low[node] == index[node]:
                members = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    members.append(top)
                    if top == node:
                        break
                if len(members) > 1:
                    for m in members:
                        found[m] = number
                    number += 1
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return found


# -- the record -----------------------------------------------------------------------------------

def mean_profile(profiles: Sequence[RunProfile]) -> RunProfile:
    n = len(profiles)
    own: dict[Key, float] = defaultdict(float)
    inner: dict[Key, float] = defaultdict(float)
    incl: dict[Key, float] = defaultdict(float)
    calls: dict[tuple[Context, Context], float] = defaultdict(float)
    files: dict[Key, str] = {}
    for p in profiles:
        for mine, theirs in ((own, p.own), (inner, p.inner), (incl, p.inclusive)):
            for k, v in theirs.items():
                mine[k] += v / n
        for e, v in p.calls.items():
            calls[e] += v / n
        for k, f in p.files.items():
            files.setdefault(k, f)
    per: dict[str, tuple[int, float]] = {}
    for name in sorted({t for p in profiles for t in p.per_transaction}):
        seen = [p.per_transaction[name] for p in profiles if name in p.per_transaction]
        per[name] = (round(sum(c for c, _ in seen) / len(seen)), sum(m for _, m in seen) / len(seen))
    return RunProfile(round(sum(p.transactions for p in profiles) / n), dict(own), dict(inner), dict(incl),
                      dict(calls), files, per)


@dataclass
class _Change:
    """One function's count over the paired transactions: its means and its change's interval."""

    base: float
    new: float
    low: float | None
    high: float | None
    above: bool | None


def _changes(pairs: Sequence[tuple[dict[Key, float], dict[Key, float]]], level: float,
             paired: bool) -> tuple[dict[Key, _Change], int]:
    """Each function's mean count in both over the paired transactions, and its change's
    t-interval over them, Bonferroni over the functions that moved at all (returned beside)."""
    n = len(pairs)
    s_a: dict[Key, float] = defaultdict(float)
    s_b: dict[Key, float] = defaultdict(float)
    s_d2: dict[Key, float] = defaultdict(float)
    for a, b in pairs:
        for k in set(a) | set(b):
            x, y = a.get(k, 0.0), b.get(k, 0.0)
            s_a[k] += x
            s_b[k] += y
            s_d2[k] += (y - x) ** 2
    family = sum(1 for v in s_d2.values() if v > 0)
    quantile = float(t_ppf(1 - (1 - level) / (2 * max(family, 1)), n - 1)) if paired and n >= 2 else None
    out = {}
    for k in s_a:
        base, new = s_a[k] / n, s_b[k] / n
        mean = new - base
        if quantile is None:
            out[k] = _Change(base, new, None, None, None)
            continue
        sd = math.sqrt(max(0.0, (s_d2[k] - n * mean * mean) / (n - 1)))
        half = quantile * sd / math.sqrt(n)
        out[k] = _Change(base, new, mean - half, mean + half, mean - half > 0 or mean + half < 0)
    return out, family


def pathlength_diff(base: str, new: str, pairs: Sequence[Pair], level: float = 0.95) -> PathlengthDiff:
    """The record of one comparison from its paired runs' profiles."""
    paired = all(p.block is not None for p in pairs)
    a_mean = mean_profile([p.base for p in pairs])
    b_mean = mean_profile([p.new for p in pairs])
    files = dict(a_mean.files)
    files.update({k: f for k, f in b_mean.files.items() if k not in files})

    def library(k: Key) -> str:
        return library_of(k[0], k[1], files.get(k, ""))

    # the transactions both runs of a block counted, paired by their number in the pass
    transactions = [(p.base.by_transaction[n], p.new.by_transaction[n]) for p in pairs
                    for n in sorted(set(p.base.by_transaction) & set(p.new.by_transaction))]
    own, family = _changes([(a[1], b[1]) for a, b in transactions], level, paired)
    incl, _ = _changes([(a[2], b[2]) for a, b in transactions], level, paired)

    def table(changes: dict[Key, _Change], leave_out: frozenset[Key] = frozenset()) -> list[FunctionChange]:
        """The functions with the largest change, largest first."""
        top = sorted((k for k in changes if k not in leave_out),
                     key=lambda k: (-abs(changes[k].new - changes[k].base), k))[:TOP]
        return [FunctionChange(object=k[0], function=k[1], library=library(k), base=changes[k].base,
                               new=changes[k].new, delta_low=changes[k].low, delta_high=changes[k].high,
                               above_noise=changes[k].above) for k in top]

    sums = (sum(c.base for c in own.values()), sum(c.new for c in own.values()))
    # the frames every counted instruction runs under (the worker's call into the SUT) say only
    # that the total changed: the inclusive table leaves them out and the notes name them
    everywhere = frozenset(k for k, c in incl.items() if c.base >= WHOLE * sums[0] and c.new >= WHOLE * sums[1])
    exclusive, inclusive = table(own), table(incl, everywhere)
    functions = sorted(own)
    # libraries
    groups: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for k in functions:
        g = groups[library(k)]
        g[0] += own[k].base
        g[1] += own[k].new
        g[2] += 1
    libraries = [LibraryChange(name=name, base=v[0], new=v[1], functions=int(v[2]))
                 for name, v in sorted(groups.items(), key=lambda kv: -abs(kv[1][1] - kv[1][0]))]
    totals, _ = _changes([({("", "all"): sum(a[1].values())}, {("", "all"): sum(b[1].values())})
                          for a, b in transactions], level, paired)
    total = totals.get(("", "all"), _Change(0.0, 0.0, None, None, None))
    missing = (0, math.nan)
    per_transaction = [TransactionChange(name=t, base=a_mean.per_transaction.get(t, missing)[1],
                                         new=b_mean.per_transaction.get(t, missing)[1],
                                         counted=max(a_mean.per_transaction.get(t, missing)[0],
                                                     b_mean.per_transaction.get(t, missing)[0]))
                       for t in sorted(set(a_mean.per_transaction) | set(b_mean.per_transaction))]
    notes = []
    if everywhere:
        names = sorted(everywhere, key=lambda k: (-incl[k].base, k))
        notes.append(f"Left out of the inclusive table: {len(names)} functions that every counted instruction ran under "
                     f"(at least {WHOLE:.0%} of the total in both), which change as the total does: "
                     + ", ".join(k[1] for k in names[:6]) + (", ..." if len(names) > 6 else "") + ".")
    notes += [] if paired else ["The runs were not paired by block (they are not of one study): the means are "
                               "compared without intervals, and their draws of transactions may differ."]
    return PathlengthDiff(
        base=base, new=new, blocks=len(pairs) if paired else 0, runs_base=[p.base_run for p in pairs],
        runs_new=[p.new_run for p in pairs], transactions=sum(p.base.transactions for p in pairs) / len(pairs),
        base_total=total.base, new_total=total.new, total_low=total.low, total_high=total.high,
        paired_transactions=len(transactions), functions_changed=family, confidence=level, exclusive=exclusive,
        inclusive=inclusive, libraries=libraries, per_transaction=per_transaction,
        flame=flame_graph(a_mean, b_mean, library), notes=notes)


# -- the flame graph ------------------------------------------------------------------------------

def _frames(profile: RunProfile) -> dict[Context, float]:
    """Each frame's own instructions: a function's first activations', and its inner ones'."""
    out: dict[Context, float] = {}
    for k, v in profile.own.items():
        inner = profile.inner.get(k, 0.0)
        out[(k[0], k[1], False)] = v - inner
        if inner:
            out[(k[0], k[1], True)] = inner
    return out


def flame_graph(a: RunProfile, b: RunProfile, library: Callable[[Key], str], max_nodes: int = FLAME_NODES,
                share: float = FLAME_SHARE) -> FlameGraph:
    """The differential flame graph of two profiles on their shared call graph. Its frames are a
    function's first activations and its inner ones (callgrind's f and f'2); inner frames that
    call each other in a cycle are condensed into one, so the graph is acyclic. A frame's
    children share its width in proportion to its calls' instructions; the roots are the frames
    whose instructions were not all reached through a recorded call (those running when counting
    began: the backend's main loop, the Python frame that calls the adapter). The largest frames
    are kept first, up to `max_nodes`."""
    frames = (_frames(a), _frames(b))
    nodes_all = set(frames[0]) | set(frames[1]) | {c for e in (*a.calls, *b.calls) for c in e}
    cycle_of = cycles(nodes_all, set(a.calls) | set(b.calls))

    def node_of(c: Context) -> Context | int:
        return cycle_of.get(c, c)

    own: list[dict[Context | int, float]] = [defaultdict(float), defaultdict(float)]
    out: list[dict[Context | int, dict[Context | int, float]]] = [defaultdict(lambda: defaultdict(float))
                                                                  for _ in range(2)]
    incoming: list[dict[Context | int, float]] = [defaultdict(float), defaultdict(float)]
    for side, profile in enumerate((a, b)):
        for c, v in frames[side].items():
            own[side][node_of(c)] += v
        for (x, y), cost in profile.calls.items():
            nx, ny = node_of(x), node_of(y)
            if nx != ny and cost > 0:
                out[side][nx][ny] += cost
                incoming[side][ny] += cost
    incl = [{n: own[s][n] + sum(out[s][n].values()) for n in set(own[s]) | set(out[s])} for s in range(2)]
    members: dict[int, list[Context]] = defaultdict(list)
    for c, number in cycle_of.items():
        members[number].append(c)

    labels: list[FlameLabel] = [FlameLabel(name="all", object="", library="")]
    label_index: dict[Context | int, int] = {}

    def label(n: Context | int) -> int:
        if n not in label_index:
            if isinstance(n, int):
                names = sorted(members[n], key=lambda m: (-(frames[0].get(m, 0.0) + frames[1].get(m, 0.0)), m))
                head = names[0]
                text = f"{head[1]} and {len(names) - 1} more (they call each other)"
            else:
                head, text = n, n[1] + (" (inner)" if n[2] else "")
            labels.append(FlameLabel(name=text, object=head[0], library=library((head[0], head[1]))))
            label_index[n] = len(labels) - 1
        return label_index[n]

    totals = (a.total, b.total)
    floor = share * max(max(totals), 1.0)
    nodes: list[tuple[int, int, float, float]] = [(-1, 0, max(totals[0], 0.0), max(totals[1], 0.0))]
    heap: list[tuple[float, int, int, Context | int, float, float, int, frozenset]] = []
    order = 0

    def push(parent: int, n: Context | int, va: float, vb: float, depth: int, path: frozenset) -> None:
        nonlocal order
        if max(va, vb) >= floor and depth <= FLAME_DEPTH:
            order += 1
            heapq.heappush(heap, (-max(va, vb), order, parent, n, va, vb, depth, path))

    for n in sorted(set(incl[0]) | set(incl[1]), key=str):
        excess = [max(0.0, incl[s].get(n, 0.0) - incoming[s].get(n, 0.0)) for s in range(2)]
        push(0, n, excess[0], excess[1], 1, frozenset())
    while heap and len(nodes) < max_nodes:
        _w, _o, parent, n, va, vb, depth, path = heapq.heappop(heap)
        nodes.append((parent, label(n), va, vb))
        index = len(nodes) - 1
        path = path | {n}
        for child in sorted(set(out[0].get(n, {})) | set(out[1].get(n, {})), key=str):
            if child in path:
                continue
            ca = va * out[0][n].get(child, 0.0) / incl[0][n] if incl[0].get(n, 0.0) > 0 else 0.0
            cb = vb * out[1][n].get(child, 0.0) / incl[1][n] if incl[1].get(n, 0.0) > 0 else 0.0
            push(index, child, ca, cb, depth + 1, path)
    return FlameGraph(labels=labels, nodes=nodes, pruned_below=floor)

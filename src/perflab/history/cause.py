"""Whose change a change point is: the host's or the software's.

The seeds re-ran their base measurements beside every new one, so that a change of the machine
could not pass for a change of the release. A history has the same evidence in other series of
the same host, and the rule is the issue's (docs/history.md, "Host or software"). A change point
of a series is the **host's** when

1. the version is the same on both sides of it (the software did not change, so it cannot be the
   software's);
2. the host's own software changed between the two runs (its kernel, OS or Python);
3. it is in a reference series itself (an A/A study's runs, or a workload named by `--reference`),
   or a reference series of the same host changed at the same time;
4. every other series of the same host that has runs on both sides of it changed at the same time
   (at least two such series): a change common to every workload is the machine's.

Otherwise it is the **software's** when the version differs across it, and **unknown** when the
runs carry no version. "At the same time": the two change points' spans overlap, a span being the
time from the run before the change point's previous run to the run after its first one (one run
of slack either side: a change point is placed to within a run or so).
"""

from __future__ import annotations

from collections import defaultdict

from perflab.history.model import Cause, ChangePoint, Point, Series

HOST_FIELDS = ("kernel", "os", "python")
#: Series of the same host that must all agree before a change common to them is the host's.
MIN_OTHER_SERIES = 2


def span(series: Series, cp: ChangePoint, slack: int = 1) -> tuple[float, float]:
    used = series.analysed()
    low = max(0, cp.index - 1 - slack)
    high = min(len(used) - 1, cp.index + slack)
    times = sorted((used[low].time, used[high].time))
    return times[0], times[1]


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return max(a[0], b[0]) <= min(a[1], b[1])


def _covers(series: Series, when: tuple[float, float]) -> bool:
    times = [p.time for p in series.analysed()]
    return bool(times) and min(times) < when[0] and max(times) > when[1]


def _host_change(before: Point, after: Point) -> str | None:
    changed = [f"{name} {getattr(before.host, name) or '?'} -> {getattr(after.host, name) or '?'}"
               for name in HOST_FIELDS if getattr(before.host, name) != getattr(after.host, name)]
    return "; ".join(changed) if changed else None


def attribute(series: list[Series]) -> None:
    """Set `cause` and `cause_reason` of every change point of `series` (all metrics, all hosts)."""
    by_host: dict[tuple[str, str], list[Series]] = defaultdict(list)
    for s in series:
        by_host[(s.key.host, s.metric)].append(s)
    for s in series:
        used = {p.run_id: p for p in s.analysed()}
        peers = [o for o in by_host[(s.key.host, s.metric)] if o is not s and o.id != s.id]
        for cp in s.change_points:
            before, after = used[cp.before], used[cp.after]
            when = span(s, cp)
            cp.cause, cp.cause_reason = _cause(s, cp, before, after, when, peers)


def _cause(s: Series, cp: ChangePoint, before: Point, after: Point, when: tuple[float, float],
           peers: list[Series]) -> tuple[Cause, str]:
    if cp.before_version and cp.after_version and cp.before_version == cp.after_version:
        return "host", f"the same version on both sides ({cp.after_version}): not the software's"
    host = _host_change(before, after)
    if host:
        return "host", f"the host's software changed between the two runs: {host}"
    if s.reference:
        return "host", "a reference series (an A/A study, or --reference): its software does not change"
    for ref in (p for p in peers if p.reference):
        if any(_overlap(when, span(ref, other)) for other in ref.change_points):
            return "host", f"the reference series {ref.key.workload} ({ref.id}) changed at the same time"
    others = [p for p in peers if not p.reference and _covers(p, when)]
    if len(others) >= MIN_OTHER_SERIES and all(any(_overlap(when, span(o, other)) for other in o.change_points)
                                               for o in others):
        return "host", (f"every other series of this host with runs on both sides ({len(others)}) changed at "
                        "the same time")
    if cp.before_version and cp.after_version:
        return "software", f"version {cp.before_version} -> {cp.after_version}; no sign of the host"
    return "unknown", "the runs carry no version, and no sign of the host"

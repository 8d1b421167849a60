"""Where the CPU went, sampled: a comparison's sampled CPU profiles (drive/profile.py) pooled
over each configuration's runs, as shares with their sampling error (records/pathlength_diff.py).

A share is k / n of the samples; its interval is Wilson's, and a change of share between the two
configurations gets Newcombe's interval built from the two Wilson intervals (hybrid score,
method 10). Samples a millisecond apart are not independent draws and the runs differ in more
than sampling, so the intervals are a floor on the error, stated as such in the report.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq

from perflab.drive.profile import PROFILE_FILE, wilson
from perflab.records.pathlength_diff import ProfileDiff, ShareChange
from perflab.records.study import StudyDocument
from perflab.reduce.libraries import library_of

TOP = 20


def read_samples(run_dir: Path) -> dict[tuple[str, str], int] | None:
    path = run_dir / PROFILE_FILE
    if not path.exists():
        return None
    table = pq.read_table(path, columns=["object", "function", "samples"]).to_pydict()
    return {(str(o), str(f)): int(s) for o, f, s in zip(table["object"], table["function"], table["samples"])}


def newcombe(k1: int, n1: int, k2: int, n2: int) -> tuple[float, float]:
    """The 95% interval of p2 - p1 (Newcombe's hybrid score interval)."""
    p1, p2 = (k1 / n1 if n1 else 0.0), (k2 / n2 if n2 else 0.0)
    l1, u1 = wilson(k1, n1)
    l2, u2 = wilson(k2, n2)
    d = p2 - p1
    return d - math.sqrt((p2 - l2) ** 2 + (u1 - p1) ** 2), d + math.sqrt((u2 - p2) ** 2 + (p1 - l1) ** 2)


def _change(obj: str, fn: str, library: str, k1: int, n1: int, k2: int, n2: int) -> ShareChange:
    low, high = newcombe(k1, n1, k2, n2)
    return ShareChange(object=obj, function=fn, library=library, base=k1 / n1 if n1 else 0.0,
                       new=k2 / n2 if n2 else 0.0, base_samples=k1, new_samples=k2, delta_low=low, delta_high=high)


def profile_diffs(doc: StudyDocument, run_dir: Callable[[str], Path]) -> list[ProfileDiff]:
    """One record per comparison whose runs were sampled."""
    out = []
    for comparison in doc.comparisons:
        pooled: list[dict[tuple[str, str], int]] = []
        runs: list[list[str]] = []
        for config in (comparison.base, comparison.new):
            total: dict[tuple[str, str], int] = defaultdict(int)
            used = []
            for run in doc.runs_of(config):
                samples = read_samples(run_dir(run.run_id)) if run.counts_in("window") else None
                if samples:
                    used.append(run.run_id)
                    for key, k in samples.items():
                        total[key] += k
            pooled.append(total)
            runs.append(used)
        if not runs[0] or not runs[1]:
            continue
        n1, n2 = sum(pooled[0].values()), sum(pooled[1].values())
        keys = set(pooled[0]) | set(pooled[1])
        rows = sorted(keys, key=lambda k: (-abs(pooled[1].get(k, 0) / n2 - pooled[0].get(k, 0) / n1), k))[:TOP]
        functions = [_change(k[0], k[1], library_of(k[0], k[1]), pooled[0].get(k, 0), n1, pooled[1].get(k, 0), n2)
                     for k in rows]
        groups: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for side in (0, 1):
            for (obj, fn), count in pooled[side].items():
                groups[library_of(obj, fn)][side] += count
        libraries = [_change("", "", name, v[0], n1, v[1], n2)
                     for name, v in sorted(groups.items(), key=lambda kv: -(kv[1][0] / n1 + kv[1][1] / n2))]
        out.append(ProfileDiff(base=comparison.base, new=comparison.new, runs_base=runs[0], runs_new=runs[1],
                               base_samples=n1, new_samples=n2, functions=functions, libraries=libraries))
    return out

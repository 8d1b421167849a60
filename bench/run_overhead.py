"""A run's own time outside its window, two source trees side by side.

Every test of the lab tier and every run of a study pays a run's start (workload, SUT workers,
cgroup, monitor) and its end (final sample, samples file, rows, record) on top of the planned
window; this measures that, as `perflab run` and as `perflab study` start it, alternating the
trees A B A B ... so the host's drift reaches both alike.

    python bench/run_overhead.py --tree before=/path/to/old/src --tree after=src --reps 6

Overhead = the command's wall time less the planned time in windows (stabilization +
measurement, per run). The known-cost python SUT (4 ms of CPU per transaction, 150/s, 0.5 s +
2 s), its monitors on, the default placement. Run it on a quiet machine (nothing else running).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from common import python

PLANNED_S = 2.5  # stabilization 0.5 s + measurement 2 s
WORKLOAD = """
name: known-cost
target: {kind: python}
transactions:
  - {name: work, class: nontrivial, call: "perflab.sut.synthetic:work", kwargs: {cpu_ms: 4.0}}
scripts: [{name: s, steps: [work]}]
load: {rate: 150, arrival: poisson}
timing: {stabilization: 0.5s, measurement: 2s}
placement: {workers: 1}
seed: 5
"""
STUDY = """
name: overhead
workload: known-cost.yaml
configurations:
  - name: base
  - name: candidate
blocks: 3
seed: 2
"""
STUDY_RUNS = 6


def _timed(argv: list[str], src: str, cwd: Path) -> float:
    env = {**os.environ, "PYTHONPATH": src}
    begin = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - begin
    if done.returncode not in (0, 1):  # 1: a run or verdict below a threshold, still measured
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr[-2000:]}")
    return wall


def measure(trees: dict[str, str], reps: int) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="perflab-overhead-") as tmp:
        work = Path(tmp)
        (work / "known-cost.yaml").write_text(textwrap.dedent(WORKLOAD).lstrip())
        (work / "study.yaml").write_text(textwrap.dedent(STUDY).lstrip())
        cli = [python(), "-m", "perflab.cli"]
        for rep in range(reps):
            order = list(trees) if rep % 2 == 0 else list(reversed(trees))
            for name in order:
                store = work / f"store-{name}-{rep}"
                wall = _timed([*cli, "run", "known-cost.yaml", "-q", "--store", str(store)], trees[name], work)
                rows.append({"tree": name, "rep": rep, "command": "run", "wall_s": wall,
                             "overhead_per_run_s": wall - PLANNED_S})
                wall = _timed([*cli, "study", "study.yaml", "--store", str(store)], trees[name], work)
                rows.append({"tree": name, "rep": rep, "command": "study", "wall_s": wall,
                             "overhead_per_run_s": (wall - STUDY_RUNS * PLANNED_S) / STUDY_RUNS})
                print(f"rep {rep} {name}: run {rows[-2]['overhead_per_run_s']:.2f} s, "
                      f"study {rows[-1]['overhead_per_run_s']:.2f} s a run", file=sys.stderr)
    return rows


def table(rows: list[dict], trees: list[str]) -> str:
    lines = ["| command | " + " | ".join(f"{t}: overhead a run, median [min, max]" for t in trees) + " |",
             "|---|" + "---|" * len(trees)]
    for command in ("run", "study"):
        cells = []
        for t in trees:
            values = [r["overhead_per_run_s"] for r in rows if r["tree"] == t and r["command"] == command]
            cells.append(f"{statistics.median(values):.2f} s [{min(values):.2f}, {max(values):.2f}] (n={len(values)})")
        lines.append(f"| `perflab {command}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", required=True, help="name=path of a perflab source tree (src/)")
    parser.add_argument("--reps", type=int, default=6)
    parser.add_argument("--out", type=Path, help="write the rows here (JSON)")
    args = parser.parse_args()
    trees = dict(t.split("=", 1) for t in args.tree)
    trees = {k: str(Path(v).resolve()) for k, v in trees.items()}
    rows = measure(trees, args.reps)
    if args.out:
        args.out.write_text(json.dumps({"trees": trees, "planned_s_per_run": PLANNED_S, "rows": rows}, indent=1))
    print(table(rows, list(trees)))


if __name__ == "__main__":
    main()

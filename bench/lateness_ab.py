"""Start lateness of two source trees side by side (bench/findings.md, *Issue 28, item 3*):
closed loop, bench/schedule.py's `perflab_closed(N)`; or, with --open-rate, the open loop of
driver_cost_pairs.py's lateness part (poisson arrivals against nginx). Each run with PYTHONPATH
set to one tree (each holding its built loop), the trees alternated, under the caller's quiet lock:

    flock /work/quiet.lock python bench/lateness_ab.py --tree before=/tmp/before/src \
        --tree after=src --users 10000,100000 --reps 3
    python bench/lateness_ab.py --tree before=/tmp/before/src --tree after=src --open-rate 20000 --reps 3
"""

from __future__ import annotations

import argparse
import json
import os

import schedule
from common import workdir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", action="append", required=True, help="NAME=PATH of a src directory")
    parser.add_argument("--users", default="10000")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--open-rate", type=int, default=0, help="arrivals a second: the open loop instead")
    args = parser.parse_args()
    trees = dict(t.split("=", 1) for t in args.tree)
    if args.open_rate:
        open_loop(trees, args.open_rate, args.reps)
        return
    for rep in range(args.reps):
        for users in (int(u) for u in args.users.split(",")):
            for name, tree in trees.items():
                os.environ["PYTHONPATH"] = os.path.abspath(tree)
                row = schedule.perflab_closed(users)
                run = json.loads((workdir("store") / "runs" / row["run_id"] / "run.json").read_text())
                print(json.dumps({"tree": name, "users": users, "rep": rep, "p50_ms": row["p50_ms"],
                                  "p99_ms": row["p99_ms"], "max_ms": row["max_ms"], "early": row.get("early"),
                                  "driver_util_pct": (run.get("driver") or {}).get("util_pct"),
                                  "run_id": row["run_id"]}), flush=True)


def open_loop(trees: dict[str, str], rate: int, reps: int) -> None:
    import subprocess
    import time

    import driver_cost_pairs as pairs
    from nginx import Nginx

    workload = pairs.open_loop_workload(rate, "10s")
    with Nginx():
        for rep in range(reps):
            for name, tree in trees.items():
                store = workdir("pairs-store") / f"lateness-ab-{time.time_ns()}"
                argv = pairs.perflab_argv(workload, store)
                done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600,
                                      env={**os.environ, "PYTHONPATH": os.path.abspath(tree)},
                                      preexec_fn=pairs._many_files)
                print(json.dumps({"tree": name, "rate": rate, "rep": rep, "exit_code": done.returncode,
                                  **pairs.lateness(store)}), flush=True)


if __name__ == "__main__":
    main()

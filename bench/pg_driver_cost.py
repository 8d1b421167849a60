"""The PostgreSQL driver beside pgbench on the same SQL (issue 28, item 1): CPU per transaction
in the load generator.

The debit-credit workload (examples/postgres/debit-credit.yaml: its users in perflab's compiled
loop, native_pg.py), the same on the Python path (asyncpg; the example with `driver: {core:
python}`) and its pgbench twin (debit-credit-pgbench.yaml: the same statements as pgbench's `-f`
script, pgbench driving), each a perflab run of PostgreSQL 15 on CPU 1 and the driver on CPU 0,
alternated. A run's number is its driver's CPU per transaction over the window, DRIVER SEC /
COMMANDS (T) from `perflab show --json`: perflab's own driver, or pgbench's process (its rusage
over its run).

    python bench/pg_driver_cost.py [REPS] [--tree OTHER/src]   # default 3; --tree: a second
                                                               # perflab source tree beside it
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from common import REPO, log, perflab_cmd, shell_join, summarize

WORKLOADS = {"perflab": REPO / "examples" / "postgres" / "debit-credit.yaml",
             "pgbench": REPO / "examples" / "postgres" / "debit-credit-pgbench.yaml"}
PYTHON_PATH = "perflab (Python path)"


def _python_path_workload(directory: Path) -> Path:
    """The example with its users on the Python path (asyncpg), beside the compiled loop."""
    path = directory / "debit-credit-python.yaml"
    path.write_text(WORKLOADS["perflab"].read_text() + "\ndriver: {core: python}\n")
    return path


def _command(workload: Path) -> str:
    """The command a reader reruns: the example's, for the Python path's copy of it too."""
    if workload.is_relative_to(REPO):
        return shell_join(["perflab", "run", str(workload.relative_to(REPO))])
    return shell_join(["perflab", "run", str(WORKLOADS["perflab"].relative_to(REPO))]) + " with driver: {core: python}"


def _run(workload: Path, store: Path, tree: str | None = None) -> dict[str, Any]:
    env = dict(os.environ)
    if tree:
        env["PYTHONPATH"] = tree
    argv = [*perflab_cmd(), "run", str(workload), "--store", str(store), "--quiet"]
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600)
    run_dir = max((store / "runs").iterdir(), key=lambda d: d.stat().st_mtime)
    shown = subprocess.run([*perflab_cmd(), "show", "--json", str(run_dir), "--store", str(store)],
                           capture_output=True, text=True, check=True, env=env)
    values = json.loads(shown.stdout)["values"]
    tx, driver = values.get("tx_ok"), values.get("driver_sec")
    return {"cpu_us_per_tx": 1e6 * driver / tx if tx and driver is not None else None, "etr_t": values.get("etr_t"),
            "run_id": run_dir.name, "command": _command(workload)}


def main(reps: int, tree: str | None = None) -> dict[str, Any]:
    rows: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="pg-driver-cost-") as tmp:
        store = Path(tmp)
        for rep in range(reps):
            runs = ([(f"perflab ({tree})", WORKLOADS["perflab"], tree)] if tree else []) + \
                   [(name, path, None) for name, path in WORKLOADS.items()] + \
                   [(PYTHON_PATH, _python_path_workload(store), None)]
            for name, path, other in runs:
                log(f"PostgreSQL driver cost: {name}, repetition {rep + 1}/{reps}")
                rows.setdefault(name, []).append(_run(path, store, other))
    out: dict[str, Any] = {}
    for name, reps_ in rows.items():
        out[name] = {"cpu_us_per_tx": summarize(r["cpu_us_per_tx"] for r in reps_),
                     "etr_t": summarize(r["etr_t"] for r in reps_), "command": reps_[0]["command"], "reps": reps_}
    pgbench = rows.get("pgbench", [])

    def ratios(name: str) -> list[float]:  # each repetition's pair
        return [a["cpu_us_per_tx"] / b["cpu_us_per_tx"] for a, b in zip(rows.get(name, []), pgbench)
                if a["cpu_us_per_tx"] and b["cpu_us_per_tx"]]

    out["ratio"] = {"perflab_over_pgbench": summarize(ratios("perflab")),
                    "python_path_over_pgbench": summarize(ratios(PYTHON_PATH))}
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("reps", nargs="?", type=int, default=3)
    parser.add_argument("--tree", help="a second perflab source tree (its src/) measured beside this one")
    args = parser.parse_args()
    result = main(args.reps, args.tree)
    for name, row in result.items():
        if name == "ratio":
            for key, r in row.items():
                print(f"{key}, by repetition: {', '.join(f'{v:.2f}' for v in r['values'])}")
        else:
            c = row["cpu_us_per_tx"]
            print(f"{name:20s} {c['median']:7.1f} us/tx [{c['min']:.1f}-{c['max']:.1f}]")

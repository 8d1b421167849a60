"""Calibrate PostgreSQL's known-cost knob: backend CPU per 1,000 empty PL/pgSQL loop iterations.

Runs a sweep study of a workload with a `knob` parameter (default
examples/postgres/debit-credit-proc.yaml, whose function runs that many empty loop iterations
before its work) over the knob, fits PBT/CMD (S) = a + b * knob by least squares over every valid
run, and prints the knob that adds +2%, +5% and +10% CPU per transaction to the base (knob 0). Results go to
bench/results/knob-postgres.json (docs/accuracy.md, "Known-cost knobs"). Run on a quiet machine.

    .venv/bin/python bench/knob.py [--workload W] [--values 0,1000,4000,10000] [--blocks 3] [--users 4]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
FACTOR = "transactions.tpcb_like.params.knob.value"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", type=Path, default=REPO / "examples/postgres/debit-credit-proc.yaml")
    parser.add_argument("--values", default="0,1000,4000,10000")
    parser.add_argument("--blocks", type=int, default=3)
    parser.add_argument("--users", type=int, default=4)
    parser.add_argument("--store", type=Path, default=Path(tempfile.gettempdir()) / "perflab-knob")
    args = parser.parse_args()
    values = [int(v) for v in args.values.split(",")]
    study = args.store / "knob-study.yaml"
    study.parent.mkdir(parents=True, exist_ok=True)
    study.write_text(json.dumps({
        "name": "pg-knob", "workload": str(args.workload.resolve()),
        "sweep": {"factor": FACTOR, "values": values}, "blocks": args.blocks,
        "load": {"users": args.users}, "timing": {"stagger": "0s", "stabilization": "10s", "measurement": "15s"},
        "metrics": ["pbt_cmd_s", "itr_s", "etr_t", "util_proc_s"]}))
    done = subprocess.run([sys.executable, "-m", "perflab.cli", "study", str(study), "--store", str(args.store)],
                          capture_output=True, text=True, cwd=REPO)
    if done.returncode != 0:
        sys.exit(done.stderr[-3000:])
    doc = json.loads((Path(done.stdout.strip().splitlines()[-1]) / "study.json").read_text())
    # Every valid run, not the points' means: the fit's residuals then show the run-to-run scatter.
    value_of = {p["config"]: p["value"] for p in doc["sweep"]["points"]}
    points = [(value_of[r["config"]], r["metrics"]["pbt_cmd_s"]) for r in doc["runs"]
              if not r["exclusions"] and r["metrics"].get("pbt_cmd_s") and r["config"] in value_of]
    x, y = np.array([p[0] for p in points], float), np.array([p[1] for p in points], float)
    slope, intercept = np.polyfit(x, y, 1)
    residual = y - (intercept + slope * x)
    base = float(np.mean(y[x == 0])) if (x == 0).any() else float(intercept)
    knobs = {f"+{p}%": round(p / 100 * base / slope) for p in (2, 5, 10)}
    result = {"points": points, "ms_per_1000": 1000 * slope, "intercept_ms": intercept, "base_ms": base,
              "max_residual_ms": float(np.abs(residual).max()), "knob_for": knobs, "study": doc["study_id"],
              "workload": str(args.workload), "users": args.users}
    (REPO / "bench" / "results" / "knob-postgres.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

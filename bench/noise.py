"""Where a workload's run-to-run noise comes from: A/A studies under variants, decomposed.

For each variant (workload changes by dotted path, and optionally a load), an A/A study runs
the same configuration twice per block (`perflab study --aa`), interleaved. From study.json:

* within-run: each run's per-interval ITR (S) scatter, as the CV of the run's mean
  (SD / mean / sqrt(intervals)) -- the part of run-to-run noise longer windows would shrink;
* within a block: the two identical runs of a block differ by d = ln ITR_a - ln ITR_b;
  var(ln ITR) within blocks = mean(d^2) / 2;
* between blocks: var(block means) - (within-block variance) / 2, floored at 0: drift of the
  host and of whatever a block's runs share.

A paired comparison pays the within-block part (d's variance is twice it): the CV a study's
interval is made of. Run on a quiet machine (nothing else running). Results go to
bench/results/noise-<name>.json and are printed as a Markdown table for docs/noise.md.

    .venv/bin/python bench/noise.py examples/postgres/debit-credit.yaml --blocks 6 \\
        --variant baseline --variant users=32 --variant target.server.settings.autovacuum=off
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PERFLAB = [sys.executable, "-m", "perflab.cli"]


def parse_variant(text: str) -> tuple[str, dict, dict]:
    """'baseline' | 'users=32' | 'rate=100' | 'a.b.c=value;x.y=value' -> (name, set, load)."""
    if text == "baseline":
        return text, {}, {}
    changes, load = {}, {}
    for part in text.split(";"):
        key, _, raw = part.partition("=")
        value = json.loads(raw) if raw[:1] in "[{\"" or raw.replace(".", "", 1).lstrip("-").isdigit() else raw
        if key in ("users", "rate"):
            load[key] = value
        else:
            changes[key] = value
    return text, changes, load


def study_file(directory: Path, workload: Path, name: str, changes: dict, load: dict, blocks: int,
               timing: dict) -> Path:
    doc = {"name": f"noise-{name}", "workload": str(workload.resolve()),
           "configurations": [{"name": "A", "set": changes}], "blocks": blocks, "seed": 1,
           "metrics": ["itr_s", "pbt_cmd_s", "etr_t", "util_proc_s", "avg_last_t"]}
    if load:
        doc["load"] = load
    if timing:
        doc["timing"] = timing
    path = directory / f"noise-{abs(hash(name)) % 10**8}.yaml"
    path.write_text(json.dumps(doc))  # JSON is YAML
    return path


def decompose(doc: dict) -> dict:
    runs = [r for r in doc["runs"] if not r["exclusions"]]
    by_block: dict[int, list[dict]] = {}
    for r in runs:
        by_block.setdefault(r["block"], []).append(r)
    pairs = [b for b in by_block.values() if len(b) == 2]
    logs = [math.log(r["metrics"]["itr_s"]) for r in runs if r["metrics"].get("itr_s")]
    d = [math.log(a["metrics"]["itr_s"]) - math.log(b["metrics"]["itr_s"]) for a, b in pairs]
    within_block = statistics.fmean(x * x for x in d) / 2 if d else float("nan")
    means = [(math.log(a["metrics"]["itr_s"]) + math.log(b["metrics"]["itr_s"])) / 2 for a, b in pairs]
    between_block = max(0.0, statistics.variance(means) - within_block / 2) if len(means) >= 2 else float("nan")
    within_run = []
    for r in runs:
        values = [row.get("itr_s") for row in r["per_interval"]]
        values = [v for v in values if v]
        if len(values) >= 3:
            within_run.append((statistics.stdev(values) / statistics.fmean(values)) ** 2 / len(values))
    comparison = doc["comparisons"][0]["metrics"] if doc["comparisons"] else []
    itr = next((m for m in comparison if m["key"] == "itr_s"), {})
    return {
        "runs": len(runs), "excluded": len(doc["runs"]) - len(runs), "blocks": len(pairs),
        "itr_s": math.exp(statistics.fmean(logs)) if logs else None,
        "util_proc_s": statistics.fmean(r["metrics"]["util_proc_s"] for r in runs if r["metrics"].get("util_proc_s"))
        if runs else None,
        "cv_total": statistics.stdev(logs) if len(logs) >= 2 else None,
        "cv_between_blocks": math.sqrt(between_block) if between_block == between_block else None,
        "cv_within_block": math.sqrt(within_block) if within_block == within_block else None,
        "cv_within_run": math.sqrt(statistics.fmean(within_run)) if within_run else None,
        "cv_comparison": itr.get("cv"), "verdict": itr.get("verdict"),
        "ratio": itr.get("ratio"), "ci": [itr.get("ci_low"), itr.get("ci_high")],
        "blocks_needed": (doc.get("aa") or {}).get("blocks_needed"),
    }


def pct(x: float | None) -> str:
    return "na" if x is None or x != x else f"{100 * x:.2f}%"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workload", type=Path)
    parser.add_argument("--variant", action="append", default=[], help="baseline | users=N | a.b.c=value;...")
    parser.add_argument("--blocks", type=int, default=6)
    parser.add_argument("--measurement", default=None)
    parser.add_argument("--stabilization", default=None)
    parser.add_argument("--store", type=Path, default=REPO / "perflab-runs" / "noise")
    parser.add_argument("--name", default=None)
    args = parser.parse_args()
    work = args.store / "files"
    work.mkdir(parents=True, exist_ok=True)
    results = {}
    for text in args.variant or ["baseline"]:
        name, changes, load = parse_variant(text)
        path = study_file(work, args.workload, name, changes, load, args.blocks, {})
        command = [*PERFLAB, "study", str(path), "--aa", "--store", str(args.store)]
        if args.measurement:
            command += ["--measurement", args.measurement]
        if args.stabilization:
            command += ["--stabilization", args.stabilization]
        started = time.monotonic()
        done = subprocess.run(command, capture_output=True, text=True, cwd=REPO)
        if done.returncode not in (0, 4):
            print(done.stderr[-3000:], file=sys.stderr)
            continue
        directory = Path(done.stdout.strip().splitlines()[-1])
        doc = json.loads((directory / "study.json").read_text())
        results[name] = {**decompose(doc), "study": str(directory), "minutes": (time.monotonic() - started) / 60}
        print(f"{name}: {json.dumps(results[name])}", flush=True)
    out = REPO / "bench" / "results" / f"noise-{args.name or args.workload.stem}.json"
    out.write_text(json.dumps(results, indent=2))
    print("| variant | ITR (S) | UTIL/PROC (S) | CV total | between blocks | within block | within run | "
          "comparison CV | blocks for ±3% |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, r in results.items():
        print(f"| {name} | {r['itr_s']:.0f} | {r['util_proc_s']:.1f}% | {pct(r['cv_total'])} | "
              f"{pct(r['cv_between_blocks'])} | {pct(r['cv_within_block'])} | {pct(r['cv_within_run'])} | "
              f"{pct(r['cv_comparison'])} | {r['blocks_needed']} |")


if __name__ == "__main__":
    main()

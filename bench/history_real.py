"""A real history with one planted change: N runs of one workload on this machine, a knob raised
from run K on, then `perflab history` -- is the change point found between runs K-1 and K, and
nowhere else? (docs/history.md, "Validation": the real history.)

Each run is a plain `perflab run` of the workload with its knob at 0 (runs before K) or at
`--value` (from K on), labelled `knob=<value>` (the version the history reads), into a store of
its own; the knob's fields are named to the history with `--ignore` (the software under test, not
the configuration), so the runs are one series. Run on a quiet machine: the runs measure it.

    .venv/bin/python bench/history_real.py                 # 40 runs of the SQLite knob, +10% from run 21
    .venv/bin/python bench/history_real.py --smoke         # 8 short runs: the harness works

The defaults: examples/accuracy/sqlite-knob.yaml (the main job's workload on SQLite 3.40.1, each
transaction also counting `knob` rows of a recursive CTE: 279.69 ns a unit beside 0.7256 ms a
transaction, docs/accuracy.md), knob 259 in both transactions -- the accuracy studies' +10%
(+10.76% measured) -- ITR (S) x 0.90. Why 10% and not 3 or 5: solo runs on this host scatter by
3.5% (docs/noise.md §1), and with 20 runs either side the detector places a 10% step within one
run of its place 95% of the time (exactly 82%), a 5% step 58% (simulated: docs/history.md). The
change point counts as found within one run of run K. Results: bench/results/history-real.json and
a Markdown paragraph on stdout.
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PERFLAB = [sys.executable, "-m", "perflab.cli"]
SQLITE_KNOBS = ["transactions.debit_credit.params.knob.value", "transactions.branch_report.params.knob.value"]


def variant(workload: Path, knobs: list[str], value: int, directory: Path) -> Path:
    """The workload file with every knob set to `value`, in `directory` (kept with the results; a
    workload that names files relative to itself would need them there too -- the SQLite knob's
    database is relative to the run's own directory)."""
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    data = yaml.load(workload.read_text())
    for path in knobs:
        node = data
        parts = path.split(".")
        for part in parts[:-1]:
            if isinstance(node, list):
                node = next(item for item in node if item.get("name") == part) if not part.isdigit() else node[int(part)]
            else:
                node = node[part]
        node[parts[-1]] = value
    buffer = io.StringIO()
    yaml.dump(data, buffer)
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / f"{workload.stem}-knob{value}.yaml"
    target.write_text(f"# {workload.name} with its knob at {value} (bench/history_real.py)\n" + buffer.getvalue())
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", type=Path, default=REPO / "examples" / "accuracy" / "sqlite-knob.yaml")
    parser.add_argument("--knob", action="append", help="a knob field (dotted; repeatable); default: the SQLite "
                        "knob of both transactions")
    parser.add_argument("--value", type=int, default=259, help="the knob from run K on (default 259: +10%% CPU)")
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--change-at", type=int, default=20, help="K: the first run with the knob raised (0-based)")
    parser.add_argument("--duration", help="each run's measurement (default: the workload's)")
    parser.add_argument("--store", type=Path, default=Path("/tmp/perflab-history-real"))
    parser.add_argument("--out", type=Path, help="the results (default: bench/results/history-real.json; --smoke: "
                        "/tmp/perflab-history-real-smoke.json)")
    parser.add_argument("--smoke", action="store_true", help="8 runs of 2 s, the change at run 4")
    args = parser.parse_args(argv)
    if args.smoke:
        args.runs, args.change_at, args.duration = 8, 4, args.duration or "2s"
    args.out = args.out or (Path("/tmp/perflab-history-real-smoke.json") if args.smoke
                            else REPO / "bench" / "results" / "history-real.json")
    knobs = args.knob or SQLITE_KNOBS
    if not 3 <= args.change_at <= args.runs - 3:
        parser.error("--change-at must leave 3 runs on each side")
    files = {0: variant(args.workload, knobs, 0, args.out.parent / "history-real"),
             args.value: variant(args.workload, knobs, args.value, args.out.parent / "history-real")}
    started = time.time()
    ids = []
    for i in range(args.runs):
        value = args.value if i >= args.change_at else 0
        cmd = [*PERFLAB, "run", str(files[value]), "--label", f"knob={value}", "--store", str(args.store), "-q"]
        if args.duration:
            cmd += ["--duration", args.duration]
        done = subprocess.run(cmd, capture_output=True, text=True)
        run_id = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else None
        print(f"run {i + 1}/{args.runs} knob={value}: {run_id} exit {done.returncode} "
              f"({time.time() - started:.0f} s)", file=sys.stderr, flush=True)
        if run_id is None:
            print(done.stderr[-2000:], file=sys.stderr)
            return 1
        ids.append(run_id)
    history = [*PERFLAB, "history", "--store", str(args.store), "--json", "--version-from", "label", "--workload",
               json.loads((args.store / "runs" / ids[0] / "run.json").read_text())["workload"]["name"]]
    for knob in knobs:
        history += ["--ignore", knob]
    done = subprocess.run(history, capture_output=True, text=True)
    if done.returncode != 0:
        print(done.stderr, file=sys.stderr)
        return 1
    doc = json.loads(done.stdout)
    series = [s for s in doc["series"] if {p["run_id"] for p in s["points"]} & set(ids)]
    mine = max(series, key=lambda s: len(s["points"]))
    analysed = [p for p in mine["points"] if not p["excluded"]]
    changes = mine["change_points"]
    planted = ids[args.change_at]
    place = {p["run_id"]: i for i, p in enumerate(analysed)}
    at = place.get(planted)
    found = sorted((c for c in changes if at is not None and abs(c["index"] - at) <= 1),
                   key=lambda c: abs(c["index"] - at))[:1]
    others = [c for c in changes if c not in found]
    result = {"workload": str(args.workload), "knobs": knobs, "value": args.value, "runs": ids,
              "change_at": args.change_at, "series": mine["id"], "analysed": len(analysed),
              "excluded": {p["run_id"]: p["excluded"] for p in mine["points"] if p["excluded"]},
              "change_points": changes, "found": bool(found), "exact": bool(found and found[0]["after"] == planted),
              "others": len(others),
              "machine_s": round(time.time() - started), "store": str(args.store)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    if found:
        c = found[0]
        where = "exactly there" if result["exact"] else f"one run off (first run after it: {c['after']})"
        print(f"A real history: {len(ids)} runs of {args.workload.name} ({len(analysed)} analysed), the knob at "
              f"{args.value} from run {args.change_at + 1} ({planted}) on: the change point is found {where} -- "
              f"ITR (S) x{c['ratio']:.4f} [{c['ci_low']:.4f}, {c['ci_high']:.4f}], p {c['p_value']:.3f}, the "
              f"{c['cause']}'s; {len(others)} other change point(s); {result['machine_s'] / 60:.0f} machine minutes.")
    else:
        print(f"NOT FOUND: change points at {[c['after'] for c in changes]}, the knob raised at {planted}")
    return 0 if found else 1


if __name__ == "__main__":
    sys.exit(main())

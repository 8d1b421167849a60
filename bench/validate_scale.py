"""`perflab validate` of generated files of 10,000 entries: under 2 s each (issue 40)?

A benchmark, not a test (bench/README.md): tests/reliability/test_long_lists.py checks what the
messages say about long lists; this times the command a user runs, as a new process (start-up
included), on files generated here:

* workload-flow: 10,000 transactions in flow style and one script of 10,000 steps;
* workload-block: 10,000 transactions and 10,000 scripts in block style (30,000 lines);
* study: 10,000 configurations of a three-transaction workload, each setting the seed
  (every configuration's workload is built and validated);
* each of them again with one name repeated at the end (the error path: the message names it);
* workload-2000-repeat: the issue's case, 2,000 transactions and one repeated name (13 s before).

Each file is validated `--reps` times (wall time of the whole process, the machine quiet
first: common.wait_quiet); the median is held against the limit.

    .venv/bin/python bench/validate_scale.py                 # 10,000 entries, 5 repetitions
    .venv/bin/python bench/validate_scale.py --smoke         # 500 entries, once: proves it works
    .venv/bin/python bench/validate_scale.py --out bench/results/validate_scale.json
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import emit, machine, perflab_cmd, wait_quiet  # noqa: E402

LIMIT_S = 2.0
NOOP = '"perflab.sut.synthetic:noop"'


def workload_flow(n: int, repeat: bool) -> str:
    lines = ["name: big-flow", "target: {kind: python}", "transactions:"]
    lines += [f"  - {{name: t{i}, call: {NOOP}}}" for i in range(n)]
    lines += [f"  - {{name: t{n // 2}, call: {NOOP}}}"] if repeat else []
    lines += ["scripts:", "  - {name: s, steps: [" + ", ".join(f"t{i}" for i in range(n)) + "]}", "load: {users: 2}"]
    return "\n".join(lines) + "\n"


def workload_block(n: int, repeat: bool) -> str:
    lines = ["name: big-block", "target: {kind: python}", "transactions:"]
    for i in range(n):
        lines += [f"  - name: t{i}", f"    call: {NOOP}", f"    class: c{i % 3}"]
    if repeat:
        lines += [f"  - name: t{n // 2}", f"    call: {NOOP}"]
    lines.append("scripts:")
    for i in range(n):
        lines += [f"  - name: s{i}", "    weight: 1", f"    steps: [t{i}]"]
    return "\n".join(lines + ["load: {users: 2}"]) + "\n"


def study(n: int, repeat: bool) -> str:
    lines = ["name: many-configurations", "workload: small.yaml", "configurations:"]
    names = [f"c{i}" for i in range(n)] + ([f"c{n // 2}"] if repeat else [])
    for i, name in enumerate(names):
        lines += [f"  - name: {name}", f"    set: {{seed: {i + 1}}}"]
    return "\n".join(lines) + "\n"


def files(directory: Path, n: int) -> dict[str, Path]:
    (directory / "small.yaml").write_text(workload_flow(3, False))
    made = {}
    for name, make in (("workload-flow", workload_flow), ("workload-block", workload_block), ("study", study)):
        for repeat in (False, True):
            key = f"{name}{'-repeat' if repeat else ''}"
            made[key] = directory / f"{key}.yaml"
            made[key].write_text(make(n, repeat))
    made["workload-2000-repeat"] = directory / "workload-2000-repeat.yaml"
    made["workload-2000-repeat"].write_text(workload_flow(2000, True))
    return made


def time_validate(path: Path, reps: int, quiet: bool) -> dict[str, Any]:
    walls, code, said = [], None, ""
    for _ in range(reps):
        if quiet:
            wait_quiet()
        start = time.perf_counter()
        done = subprocess.run([*perflab_cmd(), "validate", str(path)], capture_output=True, text=True, timeout=600)
        walls.append(time.perf_counter() - start)
        code, said = done.returncode, (done.stdout + done.stderr).strip()
    median = statistics.median(walls)
    return {"file": path.name, "lines": path.read_text().count("\n"), "exit_code": code,
            "message": said if len(said) < 300 else said[:300] + "...", "wall_s": walls, "median_s": median,
            "limit_s": LIMIT_S, "passed": median < LIMIT_S}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="500 entries, once, no waiting for a quiet machine")
    parser.add_argument("--out", type=Path, help="also write the JSON result here")
    args = parser.parse_args(argv)
    if args.smoke:
        args.entries, args.reps = 500, 1
    with tempfile.TemporaryDirectory(prefix="perflab-validate-scale-") as tmp:
        rows = {name: time_validate(path, args.reps, quiet=not args.smoke)
                for name, path in files(Path(tmp), args.entries).items()}
    result = {"entries": args.entries, "reps": args.reps, "rows": rows,
              "passed": all(r["passed"] for r in rows.values()), "machine": machine()}
    return emit(result, args.out)


if __name__ == "__main__":
    sys.exit(main())

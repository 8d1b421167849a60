"""The change-point detector against known truths: series of model runs with planted shifts, through
perflab's E-Divisive and, on the very same series, through Apache Otava.

    python -m perflab.history.validation --series 200 --out docs/history.md

What is measured (docs/history.md, "Validation"):

* **power within 5 runs**: 30 runs of one cost, then 5 runs of a cost 2%, 3% or 5% higher (or the
  same: "none"); the series of the 35 runs' ITR (S) is analysed once, and the shift is detected when
  a change point lies within 2 runs of run 31;
* **false change points per 100 runs**: series of 100 runs of one cost, analysed once (every
  change point found is false), and as a CI job sees them -- analysed after each run from the
  20th on, every change point among the last 5 runs counted once (an alarm);
* at the noise levels this host measured (docs/noise.md): a duet's per-run CV (the ratio to the
  partner run, §5), 1%, a solo SQLite study's ITR (S) CV (docs/release-trend.md) and the solo
  runs' host floor (§1).

A run's value is the model driver's (perflab.drive.model_driver): its cost times the run's factor,
a log-normal noise of the chosen CV drawn from the run's seed -- `Model.factor`, the known truth
of the run, which the stored run's reduction gives back to 0.1% (tests/fast/test_model_driver.py).
Drawing 70,000 runs through the store costs hours on this machine; `--stored N` runs N series of
each cell as stored, reduced runs and checks that each detector finds the same change points in
them as in the factors.

Otava runs in a Python environment of its own (apache-otava pins numpy 2.2.0; `--otava PYTHON`,
default ~/.cache/perflab/otava-venv/bin/python): its default analysis (Hunter: E-Divisive in
windows of 50 with a t-test, p 0.001) and its original E-Divisive with permutations at perflab's
level. Without that environment the table has perflab's columns only.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np

from perflab.history import edivisive

#: (name, per-run CV of ITR (S), where it was measured)
NOISES: tuple[tuple[str, float, str], ...] = (
    ("duet pair", 0.0059, "a duet's ITR (S) relative to its partner run: 0.59% (docs/noise.md §5)"),
    ("1%", 0.01, "between the two"),
    ("solo SQLite", 0.02, "solo runs of the SQLite release study: ITR (S) CV 2% (docs/release-trend.md)"),
    ("solo floor", 0.035, "solo runs on this host: the vCPU's speed between 20 s windows, 3.5% (docs/noise.md §1)"),
)
SHIFTS = (0.0, 0.02, 0.03, 0.05)
PRE, POST = 30, 5
#: A detection: a change point within this many runs of the shift.
TOLERANCE = 2
NULL_RUNS = 100
#: The CI view: analysed after each run from this one on; a change point among the last RECENT runs
#: is an alarm.
FIRST_ANALYSIS, RECENT = 20, 5
DEFAULT_OTAVA = Path.home() / ".cache" / "perflab" / "otava-venv" / "bin" / "python"

WORKLOAD = """
name: validation
target: {kind: python}
transactions:
  - {name: work, class: nontrivial, call: "perflab.sut.synthetic:work", kwargs: {cpu_ms: 2.0}}
scripts: [{name: s, steps: [work]}]
load: {rate: 200, arrival: poisson}
timing: {stabilization: 0.5s, measurement: 1s}
placement: {workers: 1}
seed: 5
"""


class ModelSeries:
    """Series of model runs: a run's value is its ITR (S), 1000 / (cost x the model's factor) --
    or, `stored`, the ITR (S) of the run stored and reduced as any run is."""

    def __init__(self, directory: Path, stored: bool = False):
        from perflab.drive.plan import RunRequest, resolve_plan
        from perflab.store.catalog import Store
        from perflab.workload.loader import load_workload

        self.path = directory / "validation.yaml"
        self.path.write_text(textwrap.dedent(WORKLOAD).lstrip())
        self.workload = load_workload(self.path)
        self.plan = resolve_plan(RunRequest(self.workload, self.path))
        self.store = Store(directory / "store")
        self.stored = stored
        self.count = 0

    def run(self, cost: float, noise: float, seed: int) -> float:
        from perflab.drive.model_driver import Model

        self.count += 1
        model = Model(noise=noise, seed=seed)
        if not self.stored:
            return 1000.0 / (cost * model.factor(self.plan))
        from perflab.drive.model_driver import execute_model_run
        from perflab.drive.plan import RunRequest
        from perflab.reduce.reduce import reduce_run

        w = self.workload.model_copy(deep=True)
        w.transactions[0].kwargs = {**(w.transactions[0].kwargs or {}), "cpu_ms": cost}
        result = execute_model_run(RunRequest(w, self.path), self.store, model=model)
        value = reduce_run(result.run_dir).values.get("itr_s")
        if value is None or not value > 0:
            raise RuntimeError(f"model run {result.run_id} has no ITR (S)")
        return float(value)

    def series(self, noise: float, shift: float, pre: int, post: int, seed: int) -> list[float]:
        return [self.run(2.0 * (1.0 + (shift if i >= pre else 0.0)), noise, seed * 1000 + i) for i in range(pre + post)]


def seed_of(noise: float, shift: float, k: int) -> int:
    """The series' seed: one per (noise, shift, series), the same whether drawn or stored."""
    return 1_000_000 * int(round(noise * 10_000)) + 1_000 * int(round(shift * 100)) + k


def perflab_detector(values: list[float], significance: float) -> list[int]:
    return sorted(f.index for f in edivisive.change_points(np.log(values), significance=significance))


OTAVA_DRIVER = r"""
import json, sys
import numpy as np
from otava.analysis import compute_change_points, compute_change_points_orig
jobs = json.load(sys.stdin)
out = []
for job in jobs:
    values = job["values"]
    if job["method"] == "hunter":
        cps, _ = compute_change_points(list(values), window_len=50, max_pvalue=job["p"])
    else:
        cps, _ = compute_change_points_orig(np.array(values, dtype=float), max_pvalue=job["p"], seed=job["seed"])
    out.append(sorted(int(c.index) for c in cps))
json.dump(out, sys.stdout)
"""


def otava(python: Path, jobs: list[dict]) -> list[list[int]]:
    """Otava's change points of each job (values, method: hunter or orig, p, seed)."""
    done = subprocess.run([str(python), "-c", OTAVA_DRIVER], input=json.dumps(jobs), capture_output=True, text=True,
                          timeout=24 * 3600)
    if done.returncode != 0:
        raise RuntimeError(f"otava failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout)


def detectors(with_otava: bool, significance: float) -> dict[str, tuple[str, float]]:
    chosen = {f"perflab (E-Divisive, permutations, p <= {significance:g})": ("perflab", significance)}
    if with_otava:
        chosen["Otava default (windows of 50, t-test, p 0.001)"] = ("hunter", 0.001)
        chosen[f"Otava original E-Divisive (100 permutations, p {significance:g})"] = ("orig", significance)
    return chosen


def analyse(all_values: list[list[float]], columns: dict[str, tuple[str, float]], otava_python: Path | None) \
        -> dict[str, list[list[int]]]:
    """Each detector's change points of each series."""
    found: dict[str, list[list[int]]] = {}
    for name, (kind, level) in columns.items():
        if kind == "perflab":
            found[name] = [perflab_detector(v, level) for v in all_values]
        else:
            assert otava_python is not None
            found[name] = otava(otava_python, [{"values": [math.log(x) for x in v], "method": kind, "p": level,
                                                "seed": i} for i, v in enumerate(all_values)])
    return found


def incremental_alarms(all_values: list[list[float]], columns: dict[str, tuple[str, float]],
                       otava_python: Path | None) -> dict[str, float]:
    """Alarms per 100 runs when each series is analysed after each run (the CI view)."""
    lengths = list(range(FIRST_ANALYSIS, NULL_RUNS + 1))
    prefixes = [v[:n] for v in all_values for n in lengths]
    found = analyse(prefixes, columns, otava_python)
    out = {}
    for name, cps in found.items():
        alarms = 0
        for s in range(len(all_values)):
            seen: set[int] = set()
            for j, n in enumerate(lengths):
                seen |= {c for c in cps[s * len(lengths) + j] if c >= n - RECENT}
            alarms += len(seen)
        out[name] = 100.0 * alarms / (len(all_values) * NULL_RUNS)
    return out


def run_validation(count: int, otava_python: Path | None, significance: float = edivisive.SIGNIFICANCE,
                   incremental: bool = True, stored: int = 0, progress=print) -> dict:
    columns = detectors(otava_python is not None, significance)
    results: dict = {"series": count, "pre": PRE, "post": POST, "tolerance": TOLERANCE, "null_runs": NULL_RUNS,
                     "significance": significance, "power": [], "null": [], "stored": stored, "stored_agree": {}}
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="perflab-validation-") as tmp:
        model = ModelSeries(Path(tmp))
        runs = None
        if stored:
            (Path(tmp) / "stored").mkdir()
            runs = ModelSeries(Path(tmp) / "stored", stored=True)
        agree = {c: [0, 0] for c in columns}
        for name, noise, source in NOISES:
            for shift in SHIFTS:
                values = [model.series(noise, shift, PRE, POST, seed_of(noise, shift, k)) for k in range(count)]
                found = analyse(values, columns, otava_python)
                detected = {column: sum(any(abs(c - PRE) <= TOLERANCE for c in s) for s in cps) / count
                            for column, cps in found.items()}
                row = {"noise": name, "cv": noise, "source": source, "shift": shift, "detected": detected}
                results["power"].append(row)
                if runs is not None:
                    # the first `stored` series again, as stored and reduced runs: the same answers?
                    again = analyse([runs.series(noise, shift, PRE, POST, seed_of(noise, shift, k))
                                     for k in range(min(stored, count))], columns, otava_python)
                    for column, cps in again.items():
                        agree[column][0] += sum(a == b for a, b in zip(cps, found[column]))
                        agree[column][1] += len(cps)
                progress(f"{name} ({noise:.2%}), shift {shift:.0%}: {detected} ({time.time() - started:.0f} s)")
        name, noise, source = NOISES[-1]
        values = [model.series(noise, 0.0, NULL_RUNS, 0, seed_of(noise, 0.99, k)) for k in range(count)]
        found = analyse(values, columns, otava_python)
        null: dict[str, Any] = {"noise": name, "cv": noise,
                                "static": {c: 100.0 * sum(map(len, cps)) / (count * NULL_RUNS)
                                           for c, cps in found.items()}}
        if incremental:
            null["incremental"] = incremental_alarms(values, columns, otava_python)
        results["null"].append(null)
        progress(f"null: {null} ({time.time() - started:.0f} s)")
        results["stored_agree"] = {c: {"same": a, "of": n} for c, (a, n) in agree.items()}
        results["stored_runs"] = runs.count if runs is not None else 0
    results["columns"] = list(columns)
    results["model_runs"] = model.count
    return results


def oracle_power(cv: float, shift: float, pre: int = PRE, post: int = POST, alpha: float = 0.05) -> float:
    """The power of a two-sided t-test at level alpha told where the shift is (the runs before
    against the runs after): what no detector that must also find the place can beat at that
    level. Normal log values of SD `cv`, a step of ln(1 + shift)."""
    from scipy import stats

    if shift == 0:
        return alpha
    df = pre + post - 2
    delta = math.log(1.0 + shift) / (cv * math.sqrt(1.0 / pre + 1.0 / post))
    critical = float(stats.t.ppf(1.0 - alpha / 2.0, df))
    power = float(stats.nct.sf(critical, df, delta) + stats.nct.cdf(-critical, df, delta))
    if not math.isfinite(power):    # scipy's noncentral t fails far out in the tail: the power is 1 there
        power = float(stats.norm.sf(critical - delta) + stats.norm.cdf(-critical - delta))
    return power


def render(results: dict) -> str:
    """The validation as a Markdown section (between the markers of docs/history.md)."""
    columns = results["columns"]
    n = results["series"]
    lines = [f"Each cell: the share of {n} series of model runs ({results['pre']} runs, then {results['post']} after "
             f"the shift) in which a change point lies within {results['tolerance']} runs of the shift; for a shift of "
             f"0 that share is a false detection there. The same series went through every detector "
             f"({results['model_runs']:,} model runs in all).", "",
             *([f"The first {results['stored']} series of each cell were also run as stored model runs and reduced: "
                "the change points found in them were the same as in the model's factors for "
                + ", ".join(f"{v['same']} of {v['of']} ({c.split(' (')[0]})" for c, v in results['stored_agree'].items())
                + ".", ""] if results.get("stored") else []),
             "| noise (per-run CV of ITR (S)) | shift | " + " | ".join(columns)
             + " | a t-test told where the shift is (the bound) |",
             "|---|---:|" + "---:|" * (len(columns) + 1)]
    for row in results["power"]:
        cells = [f"{row['detected'][c]:.0%}" for c in columns]
        bound = oracle_power(row["cv"], row["shift"], results["pre"], results["post"])
        lines.append(f"| {row['noise']} ({row['cv']:.2%}) | {row['shift']:.0%} | " + " | ".join(cells)
                     + f" | {bound:.0%} |")
    lines += ["", f"False change points in series of {results['null_runs']} runs without a change "
              f"({n} series), per 100 runs:", "",
              "| noise | analysed | " + " | ".join(columns) + " |", "|---|---|" + "---:|" * len(columns)]
    for row in results["null"]:
        lines.append(f"| {row['noise']} ({row['cv']:.2%}) | once, all {results['null_runs']} runs | "
                     + " | ".join(f"{row['static'][c]:.2f}" for c in columns) + " |")
        if "incremental" in row:
            lines.append(f"| {row['noise']} ({row['cv']:.2%}) | after every run (CI): alarms among the last "
                         f"{RECENT} | " + " | ".join(f"{row['incremental'][c]:.2f}" for c in columns) + " |")
    return "\n".join(lines) + "\n"


BEGIN, END = "<!-- validation:begin -->", "<!-- validation:end -->"


def with_section(text: str, section: str) -> str:
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        return head + BEGIN + "\n" + section + END + rest.split(END, 1)[1]
    return text + f"\n{BEGIN}\n{section}{END}\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m perflab.history.validation", description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, default=200, help="series per cell (default 200)")
    parser.add_argument("--stored", type=int, default=0, help="also run this many series of each cell as stored, "
                        "reduced model runs, and check that the detectors agree (slow: about a second a run here)")
    parser.add_argument("--otava", type=Path, default=DEFAULT_OTAVA, help="the Python that has apache-otava")
    parser.add_argument("--no-otava", action="store_true", help="perflab's detector only")
    parser.add_argument("--no-incremental", action="store_true", help="skip the CI view of the null series")
    parser.add_argument("--out", type=Path, help="write the section into this Markdown file (docs/history.md)")
    parser.add_argument("--json", type=Path, help="write the results as JSON here")
    parser.add_argument("--from-json", type=Path, help="run nothing: render the results of an earlier run")
    args = parser.parse_args(argv)
    if args.from_json is not None:
        section = render(json.loads(args.from_json.read_text()))
        if args.out:
            args.out.write_text(with_section(args.out.read_text() if args.out.is_file() else "", section))
        print(section)
        return 0
    python = None if args.no_otava else args.otava
    if python is not None and not os.access(python, os.X_OK):
        print(f"no Otava at {python}: `python3 -m venv ~/.cache/perflab/otava-venv && "
              "~/.cache/perflab/otava-venv/bin/pip install apache-otava==0.8.0`, or --no-otava", file=sys.stderr)
        return 2
    results = run_validation(args.series, python, incremental=not args.no_incremental, stored=args.stored,
                             progress=lambda text: print(text, file=sys.stderr, flush=True))
    section = render(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    if args.out:
        args.out.write_text(with_section(args.out.read_text() if args.out.is_file() else "", section))
    print(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())

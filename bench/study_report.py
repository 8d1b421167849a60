"""The cost of writing a study's reports (report.md, report.html with its charts, report.json)
over many runs: issue 28's goal is 100 runs in 5 s.

The study is made once by the model driver (perflab.drive.model_driver, the fast test tier's
stand-in for real runs: a known-cost SUT, seeded noise), so its 100 runs take seconds to make,
not an hour to drive: two configurations (the second 10 % costlier), 50 interleaved blocks, the
known-cost workload of tests/model_helpers.py. What is timed is what a user waits for after the
last run of `perflab study`, in a new process as `python bench/study_report.py time DIR` runs
it: the imports (matplotlib's among them), reading study.json, and write_reports.

    python bench/study_report.py make [RUNS]     # -> bench/work/report/study-RUNS/<study dir>
    python bench/study_report.py time STUDY_DIR  # one timing: {"whole_s", "write_s", ...} as JSON
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

WORKLOAD = """\
name: known-cost
target: {kind: python}
transactions:
  - {name: work, class: nontrivial, call: "perflab.sut.synthetic:work", kwargs: {cpu_ms: 2.0}}
scripts: [{name: s, steps: [work]}]
load: {rate: 150, arrival: poisson}
timing: {stabilization: 1s, measurement: 4s}
placement: {workers: 1}
seed: 5
"""

STUDY = """\
workload: w.yaml
name: report-{runs}
configurations:
  - name: base
  - name: candidate
    set: {{transactions.work.kwargs.cpu_ms: 2.2}}
blocks: {blocks}
seed: 2
metrics: [itr_s, pbt_cmd_s, etr_t, avg_last_t]
"""


def make_study(runs: int = 100) -> Path:
    """A study of `runs` model-driven runs (made once, then reused); its directory."""
    from common import workdir

    from perflab.drive.model_driver import Model
    from perflab.store.catalog import Store
    from perflab.study.runner import StudyOptions, StudyRunner

    home = workdir("report") / f"study-{runs}"
    done = sorted((home / "store" / "studies").glob("*/study.json")) if home.exists() else []
    if done:
        return done[-1].parent
    home.mkdir(parents=True, exist_ok=True)
    (home / "w.yaml").write_text(WORKLOAD)
    (home / "s.yaml").write_text(STUDY.format(runs=runs, blocks=runs // 2))
    model = Model(noise=0.005, block_noise=0.02, seed=1)  # the fast tier's quiet host
    runner = StudyRunner(home / "s.yaml", Store(home / "store"), StudyOptions(executor=model.executor()))
    runner.run()
    return runner.dir


def time_report(study_dir: Path, out: Path) -> dict[str, float]:
    """Import, read study.json, write the three reports into `out`: seconds of each part.
    Meant to run first thing in a new process (the imports are part of what is timed)."""
    started = time.perf_counter()
    from perflab.records.study import read_study_document
    from perflab.report.write import write_reports

    imported = time.perf_counter()
    doc = read_study_document(study_dir / "study.json")
    read = time.perf_counter()
    write_reports(doc, out)
    done = time.perf_counter()
    return {"whole_s": done - started, "import_s": imported - started, "read_s": read - imported,
            "write_s": done - read, "runs": float(len(doc.runs))}


if __name__ == "__main__":
    if sys.argv[1] == "make":
        print(make_study(int(sys.argv[2]) if len(sys.argv) > 2 else 100))
    elif sys.argv[1] == "time":
        target = Path(sys.argv[3]) if len(sys.argv) > 3 else Path(sys.argv[2]) / "bench-report"
        print(json.dumps(time_report(Path(sys.argv[2]), target)))
    else:
        raise SystemExit(__doc__)

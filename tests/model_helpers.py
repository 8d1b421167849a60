"""Helpers for the fast tier: perflab's own commands, in this process, with the model driver
(perflab.drive.model_driver) standing in for real runs. (A module of its own, like
cli_helpers.py, so every test folder imports it by name.)

    model = Model(noise=0.005)
    result = perflab_model("study", study_file, model=model, store=store)
    assert result.returncode == 0

`perflab_model` runs `perflab.cli.main` as the `perflab` command does -- argument parsing,
InputError to exit 2, the study's reports and exit code -- with the study runner's executor
seam (StudyOptions.executor) set to the model. Commands that drive no runs (compare, capacity,
runs, show) need no model and read the same store.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from unittest import mock

from perflab.drive.model_driver import Model
from perflab.report.write import write_reports as _WRITE_REPORTS

#: The known-cost workload of the fast tier: the synthetic SUT's `work` at 2 ms a transaction,
#: named as the lab tier names it, so a study file runs the same in both tiers.
KNOWN_COST = """
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

#: A closed loop of the same SUT: users who think 20 ms (exponential) between transactions.
KNOWN_COST_USERS = """
name: known-cost-users
target: {kind: python}
transactions:
  - {name: work, class: nontrivial, call: "perflab.sut.synthetic:work", kwargs: {cpu_ms: 2.0}}
scripts: [{name: s, steps: [work]}]
think: {dist: exponential, mean: 0.02}
load: {users: 4}
timing: {stabilization: 1s, measurement: 4s}
placement: {workers: 1}
seed: 5
"""


def write(directory: Path, name: str, text: str) -> Path:
    path = Path(directory) / name
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def perflab_model(*args: object, model: Model | None = None, store: Path | None = None,
                  reports: bool = False) -> subprocess.CompletedProcess:
    """`perflab ARGS` in this process, every run the study runner starts driven by `model`
    (default: a noiseless Model()). -> returncode, stdout, stderr, as cli_helpers.perflab.
    `reports`: write a study's report.html too, as the command does (a second or two of charts
    each); without, report.md and report.json only."""
    from perflab import cli
    from perflab.report import write as report_write
    from perflab.study import runner

    argv = ["perflab", *map(str, args)]
    env = {"PERFLAB_HOME": str(store)} if store is not None else {}
    options = functools.partial(runner.StudyOptions, executor=(model or Model()).executor())
    stdout, stderr = io.StringIO(), io.StringIO()
    code = 0
    with mock.patch.object(sys, "argv", argv), mock.patch.dict(os.environ, env), \
            mock.patch.object(runner, "StudyOptions", options), \
            mock.patch.object(report_write, "write_reports", report_write.write_reports if reports else _no_html), \
            contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            cli.main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return subprocess.CompletedProcess(argv, code, stdout.getvalue(), stderr.getvalue())


def _no_html(doc, directory) -> dict:
    from perflab.report import write as report_write

    return _WRITE_REPORTS(doc, directory, tuple(e for e in report_write.EXPORTERS if e.format != "html"))


def study_of(result: subprocess.CompletedProcess) -> tuple[dict, Path]:
    """study.json of a `perflab study` result, and its directory (the last line of stdout)."""
    assert result.stdout.strip(), result.stderr[-3000:]
    directory = Path(result.stdout.strip().splitlines()[-1])
    return json.loads((directory / "study.json").read_text()), directory


def metric(doc: dict, key: str, comparison: int = 0) -> dict:
    return next(m for m in doc["comparisons"][comparison]["metrics"] if m["key"] == key)

"""`perflab ARGS` driven by the model driver (as model_helpers.perflab_model), SIGKILLed at a
chosen moment: the harness of tests/fast/test_model_resume.py, run as a script in a process of
its own so that the kill is real (nothing in the study runs after it: no handler, no finally).

    python tests/model_kill.py POINT perflab-arguments...

POINT: calibrate:N (at the N-th calibration run), knob:N (at the N-th mixed run of a study's
knob), window:N (inside the N-th measured run: its directory made, nothing stored -- what a kill
inside a window leaves), between:N (as block N is about to start, block N-1 stored), reports
(after report.md is written, before the others), never."""

from __future__ import annotations

import functools
import os
import signal
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
sys.path.insert(0, str(SRC))

from perflab.drive.model_driver import Model, execute_model_run  # noqa: E402

#: The model every test of resume uses (tests/fast/test_model_resume.py compares a resumed study
#: with an uninterrupted one of the same model: its runs are pure functions of their places).
MODEL = Model(noise=0.003, block_noise=0.01, seed=7, knob_us=0.01, pair_k=0.2)


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def killing_executor(request, store, observer=None, *, point: str = "never", counts: dict | None = None):
    """The model's executor, dying at `point` (module doc). Module-level: a duet's children
    unpickle it by name."""
    kind, _, n = point.partition(":")
    counts = counts if counts is not None else {}
    purpose = getattr(request, "purpose", None)
    counts[purpose] = counts.get(purpose, 0) + 1
    if kind == purpose == "calibrate" and counts[purpose] == int(n):
        _die()
    if kind == "knob" and purpose == "knob" and counts[purpose] == int(n):
        _die()
    if kind == "window" and purpose == "measure" and counts[purpose] == int(n):
        from perflab.store.catalog import new_run_id

        store.create_run_dir(new_run_id(request.workload.name))   # set up, then killed in the window
        _die()
    return execute_model_run(request, store, observer, model=MODEL)


def main() -> None:
    point, *args = sys.argv[1:]
    from perflab import cli
    from perflab.report import write as report_write
    from perflab.study import runner

    kind, _, n = point.partition(":")
    counts: dict = {}
    executor = functools.partial(killing_executor, point=point, counts=counts)
    real_options = runner.StudyOptions
    runner.StudyOptions = functools.partial(real_options, executor=executor)  # type: ignore[misc]
    if kind == "between":
        real_pair, real_run = runner.run_pair, runner.StudyRunner._run

        def pair(requests, *a, **kw):
            if requests[0].block == int(n):
                _die()
            return real_pair(requests, *a, **kw)

        def alone(self, config, users, rate, measurement, block, order, purpose):
            if purpose == "measure" and block == int(n):
                _die()
            return real_run(self, config, users, rate, measurement, block, order, purpose)

        runner.run_pair = pair
        runner.StudyRunner._run = alone  # type: ignore[method-assign]
    if kind == "reports":
        real_write = report_write.write_reports

        def write_then_die(doc, directory, exporters=None):
            markdown = tuple(e for e in report_write.EXPORTERS if e.format == "markdown")
            real_write(doc, directory, markdown)
            _die()
            return {}

        report_write.write_reports = write_then_die
    sys.argv = ["perflab", *args]
    cli.main()


if __name__ == "__main__":
    main()

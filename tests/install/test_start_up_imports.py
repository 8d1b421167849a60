"""What every command loads at start-up. scipy.stats costs about a second (it builds its
distribution objects and parses their docstrings), scipy.special a third of one; every
`perflab run` judged its outcome through study/validity.py, which imported scipy.stats for one
normal quantile, and the lab tier starts several hundred runs."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("scipy.stats", "scipy.special", "scipy.optimize", "matplotlib", "statsmodels")


@pytest.mark.parametrize("modules", [
    "perflab.cli.main",                                      # every command's start
    "perflab.outcome, perflab.study.validity, perflab.drive.run",  # what a run imports to judge itself
])
def test_starting_a_command_or_judging_a_run_loads_no_heavy_library(modules):
    code = (f"import sys, {modules}\n"
            f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""


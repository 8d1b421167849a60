"""A plain `pip install perflab` (no extras): every module imports, the embedded default runs,
and a feature whose extra is missing says which one in one line (exit 2, no traceback).

The extras' packages are installed here, so tests/install/without_extras.py refuses them
(every package of [project.optional-dependencies] in pyproject.toml) in a subprocess.
.ci/run checks the same on a real wheel in a clean virtual environment.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SCRIPT = HERE / "without_extras.py"
EXTRAS = set(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"])

#: Modules that are the web application of an extra from their first line: importing them
#: without it raises the one-line MissingExtra (nothing on the plain path imports them).
WHOLLY_OPTIONAL = {
    "perflab.serve.app": "serve",
    "perflab.serve.security": "serve",
    "perflab.sut.known_cost_http": "net",
}


def without_extras(*args: str, cwd: Path = REPO, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=cwd,
                          timeout=timeout, env={**os.environ, "COLUMNS": "200"})


def one_line(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip("\n").splitlines()
    assert len(lines) == 1, done.stderr
    assert done.stdout == ""
    return lines[0]


def test_the_blocker_refuses_every_extra():
    """Else every test below would pass vacuously."""
    code = ("import importlib, sys; sys.path.insert(0, %r); import without_extras as w; w.install(); bad = []\n"
            "for name in ['aiohttp', 'asyncpg', 'httptools', 'pgserver', 'prometheus_client', 'ray']:\n"
            "    try: importlib.import_module(name); bad.append(name)\n"
            "    except ModuleNotFoundError: pass\n"
            "print(bad)" % str(HERE))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "[]", (done.stdout, done.stderr)


def test_every_module_imports_without_the_extras():
    done = without_extras("import-all")
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    assert len(results) > 100   # the walk found the package
    errors = {name: r["detail"] for name, r in results.items() if r["outcome"] == "error"}
    assert errors == {}, "\n\n".join(f"{name}:\n{detail}" for name, detail in errors.items())
    missing = {name: r["detail"] for name, r in results.items() if r["outcome"] == "missing_extra"}
    assert set(missing) == set(WHOLLY_OPTIONAL), missing
    for name, detail in missing.items():
        extra = WHOLLY_OPTIONAL[name]
        assert "\n" not in detail and detail.endswith(f"needs the '{extra}' extra: pip install 'perflab[{extra}]'")


def test_the_extras_named_are_pyprojects():
    assert {"net", "serve", "ray", "all"} <= EXTRAS
    assert set(WHOLLY_OPTIONAL.values()) <= EXTRAS


@pytest.mark.parametrize("args, expected", [
    (["validate", "examples/postgres/debit-credit.yaml"],
     "examples/postgres/debit-credit.yaml:15: target.kind: a postgres target needs the 'net' extra: "
     "pip install 'perflab[net]'"),
    (["validate", "examples/http/shop.yaml"], "target.kind: an http target needs the 'net' extra: "
                                             "pip install 'perflab[net]'"),
    (["validate", "examples/http/known-cost.yaml"], "target.client: the httptools client needs the 'net' extra: "
                                                   "pip install 'perflab[net]'"),
    (["serve", "--store", "."], "perflab serve needs the 'serve' extra: pip install 'perflab[serve]'"),
    (["agent", "--pid-match", "nothing-at-all"], "perflab agent needs the 'net' extra: pip install 'perflab[net]'"),
    (["run", "examples/tcp/echo.yaml", "--drivers", "auto", "--store", "{store}"],
     "drivers: drivers on several hosts (Ray, on this host and every node) needs the 'ray' extra: "
     "pip install 'perflab[ray]'"),
])
def test_a_missing_extra_is_one_line_naming_it(tmp_path, args, expected):
    args = [a.replace("{store}", str(tmp_path / "store")) for a in args]
    line = one_line(without_extras("cli", *args))
    assert line.startswith("error: ") and line.endswith(expected), line
    assert not (tmp_path / "store" / "runs").exists()   # nothing was started


def test_a_sut_hosts_monitor_names_the_extra_at_its_line(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text("name: w\n"
                    "target: {kind: tcp, host: 127.0.0.1, port: 9}\n"
                    "transactions: [{name: t, tcp: {}}]\n"
                    "scripts: [{name: s, steps: [t]}]\n"
                    "load: {users: 1}\n"
                    "monitor: {node_exporter: 'http://127.0.0.1:9/metrics'}\n")
    line = one_line(without_extras("cli", "validate", str(path)))
    assert line == f"error: {path}:6: monitor: a SUT host's monitor needs the 'net' extra: pip install 'perflab[net]'"


@pytest.mark.lab   # a real run (through without_extras.py's `cli`, which tests/tiers.py cannot see)
def test_the_embedded_default_runs_without_the_extras(tmp_path):
    """validate, run (with the machine monitor: remote.py and prometheus.py are on its import
    path), show and the run's HTML report, all with the extras refused."""
    store = tmp_path / "store"
    workload = tmp_path / "w.yaml"
    workload.write_text("""
name: plain
target: {kind: python}
transactions:
  - {name: t, call: "perflab.sut.synthetic:noop"}
scripts: [{name: s, steps: [t]}]
think: 0.01
load: {users: 2}
timing: {measurement: 1s}
placement: {workers: 1}
""")
    assert without_extras("cli", "validate", str(workload)).returncode == 0
    done = without_extras("cli", "run", str(workload), "--quiet", "--store", str(store))
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "complete" in done.stderr
    run_id = done.stdout.strip()
    done = without_extras("cli", "show", run_id, "--store", str(store))
    assert done.returncode == 0 and "ETR" in done.stdout, done.stderr
    done = without_extras("cli", "show", run_id, "--html", "--store", str(store))
    assert done.returncode == 0, done.stderr
    html = Path(done.stdout.strip()).read_text()
    assert html.startswith("<!DOCTYPE html>") and run_id in html

"""Input limits are part of the schema: finite numbers only, bounded loads and durations, in
files and on the command line alike (docs/workloads.md, "Input limits")."""

from __future__ import annotations

import math

import pytest
from reliability_helpers import EXAMPLES, one_line_error, run_main, write

from perflab.drive.plan import RunRequest, resolve_plan
from perflab.errors import InputError
from perflab.workload.loader import load_workload

BASE = """
name: t
target: {kind: python}
transactions:
  - {name: a, call: "perflab.sut.synthetic:noop"}
scripts:
  - {name: s, steps: [a]}
LOAD
TIMING
placement: {workers: 2}
"""


def workload(tmp_path, load="load: {users: 2}", timing="timing: {measurement: 10s}", extra=""):
    return write(tmp_path, BASE.replace("LOAD", load).replace("TIMING", timing) + extra)


@pytest.mark.parametrize("load, timing, extra, field, needle", [
    ("load: {rate: .inf}", "", "", "load.rate", "finite"),
    ("load: {rate: .nan}", "", "", "load.rate", "finite"),
    ("load: {rate: 1e9}", "", "", "load.rate", "at most 100,000 arrivals per second"),
    ("load: {users: 5000001}", "", "", "load.users", "at most 5,000,000 simulated users"),
    ("load: {users: 2}", "timing: {measurement: .nan}", "", "timing.measurement", "finite"),
    ("load: {users: 2}", "timing: {measurement: .inf}", "", "timing.measurement", "finite"),
    ("load: {users: 2}", "timing: {stagger: .nan}", "", "timing.stagger", "finite"),
    ("load: {users: 2}", "timing: {stabilization: .nan}", "", "timing.stabilization", "finite"),
    ("load: {users: 2}", "timing: {measurement: 169h}", "", "timing.measurement", "at most 604,800 seconds"),
    ("load: {users: 2}", "timing: {measurement: " + "9" * 401 + "}", "", "timing.measurement", "too large"),
    ("load: {users: 2}", "", "monitor_interval: 0\n", "monitor_interval", "at least"),
    ("load: {users: 2}", "", "think: {dist: constant, value: .inf}\n", "think", "finite"),
])
def test_a_number_out_of_bounds_is_one_located_error(tmp_path, load, timing, extra, field, needle):
    path = workload(tmp_path, load, timing, extra)
    with pytest.raises(InputError) as info:
        load_workload(path)
    assert info.value.field is not None and info.value.field.startswith(field), info.value
    assert info.value.line is not None
    assert needle in str(info.value) and "\n" not in str(info.value)


def test_too_many_workers_is_refused(tmp_path):
    path = write(tmp_path, BASE.replace("LOAD", "load: {users: 2}").replace("TIMING", "")
                 .replace("workers: 2", "workers: 1025"))
    with pytest.raises(InputError) as info:
        load_workload(path)
    assert info.value.field == "placement.workers" and "at most 1,024" in str(info.value)


def test_the_bounds_themselves_are_accepted(tmp_path):
    w = load_workload(workload(tmp_path, "load: {rate: 100000}", "timing: {measurement: 168h}"))
    assert w.load.rate == 100_000 and w.timing.measurement == 7 * 24 * 3600


def test_an_environment_variable_raises_a_bound(tmp_path, monkeypatch):
    path = workload(tmp_path, "load: {users: 6000000}")
    with pytest.raises(InputError):
        load_workload(path)
    monkeypatch.setenv("PERFLAB_MAX_USERS", "7000000")
    assert load_workload(path).load.users == 6_000_000


def test_a_bad_environment_override_is_one_error(tmp_path, monkeypatch):
    monkeypatch.setenv("PERFLAB_MAX_RATE", "lots")
    code, _out, err = run_main("validate", workload(tmp_path, "load: {rate: 10}"))
    assert "PERFLAB_MAX_RATE" in one_line_error(code, err)


@pytest.mark.parametrize("override, option", [
    ({"rate": math.inf}, "--rate"), ({"rate": math.nan}, "--rate"), ({"rate": 1e9}, "--rate"),
    ({"users": 5_000_001}, "--users"), ({"workers": 5000}, "--workers"), ({"duration": math.nan}, "--duration"),
    ({"duration": 1e12}, "--duration"), ({"stabilization": math.inf}, "--stabilization"),
])
def test_overrides_meet_the_same_limits(tmp_path, override, option):
    w = load_workload(workload(tmp_path))
    with pytest.raises(InputError) as info:
        resolve_plan(RunRequest(w, tmp_path / "w.yaml", **override))
    assert info.value.field == option


@pytest.mark.parametrize("args, option", [
    (["--rate", "inf"], "--rate"), (["--rate", "nan"], "--rate"), (["--rate", "1e9"], "--rate"),
    (["--users", "5000001"], "--users"), (["--workers", "1025"], "--workers"), (["-d", "99999999h"], "--duration"),
])
@pytest.mark.fast   # refused before any run starts (tests/tiers.py)
def test_command_line_overrides_are_refused_before_a_run_starts(tmp_path, store, args, option):
    code, _out, err = run_main("run", workload(tmp_path), *args, "--store", store, "-q")
    assert option in one_line_error(code, err)
    assert not (store / "runs").exists() or not any((store / "runs").iterdir())


@pytest.mark.parametrize("args, option", [
    (["--measurement", "nan"], "--measurement"), (["--stabilization", "200h"], "--stabilization"),
    (["--blocks", "1001"], "--blocks"),
])
@pytest.mark.fast   # refused before any run starts (tests/tiers.py)
def test_study_overrides_are_refused_before_the_study_directory_exists(tmp_path, store, args, option):
    workload(tmp_path)
    study = write(tmp_path, "name: s\nworkload: w.yaml\nconfigurations: [{name: a}, {name: b}]\nblocks: 3\n",
                  "s.yaml")
    code, _out, err = run_main("study", study, *args, "--store", store)
    assert option in one_line_error(code, err)
    assert not (store / "studies").exists()


@pytest.mark.fast   # refused before any run starts (tests/tiers.py)
@pytest.mark.parametrize("factor, values", [("users", "[a, 2]"), ("timing.measurement", "[a, 2]"),
                                            ("rate", "[.inf, 2]"), ("workers", "[2, 5000]"),
                                            ("timing.measurement", "[.nan, 2]")])
def test_sweep_values_are_checked_before_the_study_directory_exists(tmp_path, store, factor, values):
    workload(tmp_path)
    study = write(tmp_path, f"name: s\nworkload: w.yaml\nsweep: {{factor: {factor}, values: {values}}}\nblocks: 1\n",
                  "s.yaml")
    code, _out, err = run_main("study", study, "--store", store)
    line = one_line_error(code, err)
    assert "s.yaml:3:" in line and "sweep" in line
    assert not (store / "studies").exists()


# Found by the fuzzer and probes: each was a traceback, or accepted and failed at run time.
DEBIT_CREDIT = (EXAMPLES / "debit-credit.yaml").read_text()


@pytest.mark.parametrize("old, new, needle", [
    ("aid: {random_int: [1, 100000]}", "aid: {choice: [1, 2], weights: [-1, 2]}", "weights cannot be negative"),
    ("aid: {random_int: [1, 100000]}", "aid: {choice: [1, 2], weights: [0, 0]}", "at least one must be above 0"),
    ("aid: {random_int: [1, 100000]}", "aid: {bogus: 1}", "expected a generator"),
    ("aid: {random_int: [1, 100000]}", "aid: {random_int: [1, 1e999]}", "finite"),
    ("driver: stdlib", "driver: stdlib\n  busy_timeout_ms: 99999999999999999999999", "less than or equal"),
    ("name: debit-credit", "<<: {a: 1}\nname: debit-credit", "unknown field 'a'"),   # a merged key has no line
    ("name: debit-credit", "name: !!float abc", "invalid YAML"),
])
def test_hostile_fields_are_one_line(tmp_path, old, new, needle):
    assert old in DEBIT_CREDIT
    code, _out, err = run_main("validate", write(tmp_path, DEBIT_CREDIT.replace(old, new, 1)))
    assert needle in one_line_error(code, err)


@pytest.mark.parametrize("workload_line, needle", [('workload: "a\\0b"', "embedded null byte"),
                                                   ("workload: " + "x" * 5000, "File name too long"),
                                                   ("workload: /dev/zero", "not a regular file")])
def test_a_study_naming_an_impossible_workload_is_one_line(tmp_path, workload_line, needle):
    study = write(tmp_path, f"name: s\n{workload_line}\nconfigurations: [{{name: a}}, {{name: b}}]\n", "s.yaml")
    code, _out, err = run_main("validate", study)
    assert needle in one_line_error(code, err)


def test_an_inverted_utilization_band_is_refused(tmp_path):
    workload(tmp_path)
    study = write(tmp_path, "name: s\nworkload: w.yaml\nconfigurations: [{name: a}, {name: b}]\n"
                            "gates: {util_band: [90, 5]}\n", "s.yaml")
    code, _out, err = run_main("validate", study)
    assert "s.yaml:4: gates.util_band: expected [low, high]" in one_line_error(code, err)


def test_a_bad_configuration_change_names_the_field_in_one_line(tmp_path):
    workload(tmp_path)
    study = write(tmp_path, "name: s\nworkload: w.yaml\nconfigurations: [{name: a}, {name: b, set: {load: {rate: .inf}}}]\n",
                  "s.yaml")
    code, _out, err = run_main("validate", study)
    line = one_line_error(code, err)
    assert "configurations[1].set.load" in line and "load.open.rate: Input should be a finite number" in line


def test_every_limit_is_documented_with_its_bound_and_variable():
    from perflab import limits

    text = (EXAMPLES.parent / "docs" / "workloads.md").read_text()
    section = text.split("## Input limits", 1)[1].split("\n## ", 1)[0]
    for limit in limits.ALL:
        rows = [line for line in section.splitlines() if f"| {limit.default:,.0f} " in line]
        assert any((limit.env or "| fixed |") in row for row in rows), (limit, rows)

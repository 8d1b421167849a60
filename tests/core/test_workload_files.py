"""Workload files: good ones load; bad ones get one clear message with file:line and exit 2."""

from __future__ import annotations

import json

import pytest
from cli_helpers import perflab, write_workload

from perflab.errors import InputError
from perflab.workload.loader import load_workload
from perflab.workload.thinktime import BactrianThink, EmpiricalThink

GOOD = """
name: t
target: {kind: python}
transactions:
  - {name: a, class: trivial, call: "perflab.sut.synthetic:noop"}
  - {name: b, class: nontrivial, call: "perflab.sut.synthetic:noop"}
scripts:
  - {name: s1, weight: 3, steps: [a, b]}
  - name: s2
    steps:
      - transaction: b
        think: 0.5
think: {dist: exponential, mean: 0.01}
load: {users: 2}
timing: {stagger: 1s, stabilization: 500ms, measurement: 2m}
"""


def test_examples_validate():
    for name in ("debit-credit.yaml", "interactive-mix.yaml"):
        result = perflab("validate", f"examples/{name}")
        assert result.returncode == 0, result.stderr
        assert "ok" in result.stdout


def test_good_file_loads_with_durations_and_shorthands(tmp_path):
    w = load_workload(write_workload(tmp_path, GOOD))
    assert w.timing.stagger == 1.0 and w.timing.stabilization == 0.5 and w.timing.measurement == 120.0
    assert w.scripts[1].steps[0].think.value == 0.5  # a bare number is a constant think time
    assert [s.transaction for s in w.scripts[0].steps] == ["a", "b"]
    assert w.closed and w.load.users == 2


@pytest.mark.parametrize(
    "change, line, needle",
    [
        # wrong type
        (("load: {users: 2}", "load:\n  users: ten"), 14, "users"),
        # unknown field (a typo must not be ignored)
        (("timing: {stagger", "timing: {stager"), 14, "unknown field 'stager'"),
        # a reference to a transaction that does not exist
        (("steps: [a, b]", "steps: [a, c]"), 7, "unknown transaction 'c'"),
        # wrong body for the target
        (('call: "perflab.sut.synthetic:noop"}\n  - {name: b', 'sql: "select 1"}\n  - {name: b'), 4, "`call` body"),
        # a module that cannot be imported
        ('perflab.sut.synthetic:noop"}\n  - {name: b', 4, "not found"),
        # an unknown think-time distribution
        (("think: {dist: exponential", "think: {dist: gaussian"), 12, "gaussian"),
    ],
)
def test_bad_files_exit_2_with_file_line_field(tmp_path, change, line, needle):
    text = GOOD
    if isinstance(change, tuple):
        text = text.replace(*change)
    else:
        text = text.replace(change, 'nosuch.module:fn"}\n  - {name: b', 1)
    assert text != GOOD
    path = write_workload(tmp_path, text)
    result = perflab("validate", path)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert f"{path}:{line}" in result.stderr, result.stderr
    assert needle in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) <= 2  # one clear message


def test_broken_yaml_names_the_line(tmp_path):
    path = write_workload(tmp_path, GOOD.replace("load: {users: 2}", "load: {users: 2\nseed: [1"))
    result = perflab("validate", path)
    assert result.returncode == 2
    assert "invalid YAML" in result.stderr and f"{path}:" in result.stderr
    assert "Traceback" not in result.stderr


def test_missing_file_and_missing_think_file(tmp_path):
    result = perflab("validate", tmp_path / "nope.yaml")
    assert result.returncode == 2 and "file not found" in result.stderr
    path = write_workload(tmp_path, GOOD.replace("think: {dist: exponential, mean: 0.01}",
                                                 "think: {dist: empirical, file: thinks.txt}"))
    result = perflab("validate", path)
    assert result.returncode == 2
    assert f"{path}:12" in result.stderr and "thinks.txt" in result.stderr


def test_empirical_think_file_bad_number_names_its_line(tmp_path):
    (tmp_path / "thinks.txt").write_text("1.5\n2.0\noops\n")
    path = write_workload(tmp_path, GOOD.replace("think: {dist: exponential, mean: 0.01}",
                                                 "think: {dist: empirical, file: thinks.txt}"))
    with pytest.raises(InputError) as info:
        load_workload(path)
    assert "thinks.txt:3" in str(info.value)


def test_schema_is_json_with_the_workload_fields():
    result = perflab("schema")
    assert result.returncode == 0
    schema = json.loads(result.stdout)
    assert {"target", "transactions", "scripts", "load", "timing", "seed"} <= set(schema["properties"])


def test_bactrian_mean_and_two_humps():
    from perflab.workload.rng import UserRandom

    dist = BactrianThink(dist="bactrian")
    assert dist.mean() == 30.0
    assert dist.idle_mean() == pytest.approx((30 - 0.85 * 8) / 0.15)
    rng = UserRandom(1, 0)
    samples = [dist.sample(rng) for _ in range(200_000)]
    mean = sum(samples) / len(samples)
    # the sample mean of 200k draws: standard error well under 1 % of 30 s
    assert mean == pytest.approx(30.0, rel=0.02)
    short = sum(1 for s in samples if s < 30) / len(samples)
    long = sum(1 for s in samples if s > 90) / len(samples)
    assert 0.78 < short < 0.9 and 0.1 < long < 0.17  # an active hump and an idle hump


def test_empirical_resamples_only_observed_values():
    from perflab.workload.rng import UserRandom

    dist = EmpiricalThink(dist="empirical", values=[1.0, 2.0, 7.5])
    rng = UserRandom(5, 1)
    draws = {dist.sample(rng) for _ in range(500)}
    assert draws == {1.0, 2.0, 7.5}
    assert dist.mean() == pytest.approx(3.5)


def test_a_tcp_reply_and_a_response_size_that_disagree_are_bad_input(tmp_path):
    text = """
name: t
target: {kind: tcp, port: 6379, message: "PING\\r\\n", reply: "+PONG\\r\\n", response_size: 5}
transactions: [{name: ping, tcp: {}}]
scripts: [{name: s, steps: [ping]}]
load: {users: 1}
"""
    path = write_workload(tmp_path, text)
    result = perflab("validate", path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "response_size 5 is not the reply's 7 bytes" in result.stderr, result.stderr
    good = load_workload(write_workload(tmp_path, text.replace(", response_size: 5", "")))
    assert good.target.message == "PING\r\n" and good.target.reply == "+PONG\r\n"

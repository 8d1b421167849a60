"""The compiled HTTP loop's random streams and think times are workload/rng.py's and
thinktime.py's to the bit (so a seed means the same users on either path), the recorder keeps
the rows it hands over in blocks exactly as rows added one by one, and the loop is chosen only
for workloads it runs as the Python path would."""

from __future__ import annotations

import textwrap

import numpy as np
import programs
import pytest

from perflab.drive.load import native_http
from perflab.drive.load.recorder import Recorder
from perflab.workload.rng import UserRandom
from perflab.workload.thinktime import ConstantThink, ExponentialThink, LognormalThink, UniformThink

pytestmark = programs.needs_compiled_loop()
MASK = (1 << 64) - 1


def test_the_loop_is_built_where_the_setup_ran():
    """README's test command installs a compiler and Python's headers before it builds the
    environment: there the loop must have been built, or its runs would take the slower path
    unnoticed (the module's marker fails every test here otherwise, naming the reinstall)."""
    assert native_http.NOT_BUILT is None


@pytest.mark.parametrize("seed", [0, 1, 42, -7, 2**63 + 5, 123456789123456789])
def test_stream_states_are_user_randoms(seed):
    h = native_http.http_loop
    for stream in (0, 1, 999, 10**6):
        for sub in (0, 1, 2):
            assert h.rng_state(seed & MASK, stream, sub) == UserRandom(seed, stream, sub).state


THINKS = [ConstantThink(value=0.25), UniformThink(dist="uniform", low=0.5, high=3.0),
          ExponentialThink(dist="exponential", mean=2.0), LognormalThink(dist="lognormal", mean=1.5, sigma=0.7)]


@pytest.mark.parametrize("think", THINKS, ids=lambda t: t.dist)
@pytest.mark.parametrize("residual", [False, True], ids=["whole", "residual"])
def test_think_draws_are_thinktimes_to_the_bit(think, residual):
    spec = native_http._think_spec(think)
    assert spec is not None
    for stream in range(20):
        rng = UserRandom(9, stream, 0)
        drawn = native_http.http_loop.draw(rng.state, *spec, residual, 200)
        expected = [think.sample_residual(rng) if residual else think.sample(rng) for _ in range(200)]
        assert drawn == expected


def _rows(n: int, start: int, rng: np.random.Generator) -> dict:
    ok = rng.random(n) > 0.2
    return {"user": np.arange(start, start + n, dtype=np.int32) % 7, "script": np.zeros(n, np.int16),
            "tx": (np.arange(n) % 2).astype(np.int16), "klass": np.zeros(n, np.int16),
            "intended": 100.0 + rng.random(n), "actual": 100.5 + rng.random(n), "first": 101.0 + rng.random(n),
            "end": 102.0 + rng.random(n), "ok": ok, "think": rng.random(n)}


@pytest.mark.parametrize("spill", [True, False], ids=["spill-file", "in-memory"])
def test_blocks_are_kept_as_rows_added_one_by_one(tmp_path, spill):
    rng = np.random.default_rng(3)
    blocks = [_rows(5, 0, rng), _rows(3, 5, rng), _rows(6000, 8, rng)]

    def recorder(name: str) -> Recorder:
        return Recorder(["s"], ["a", "b"], ["k"], 100.0, spill_path=tmp_path / name if spill else None)

    by_block, by_row = recorder("blocks"), recorder("rows")
    by_row.add(0, 0, 0, 0, 100.0, 100.1, None, 100.2, True, None, 0.5)  # a row of the Python path first
    by_block.add(0, 0, 0, 0, 100.0, 100.1, None, 100.2, True, None, 0.5)
    for b in blocks:
        errors = {int(i): f"error {i} password=secret" for i in np.flatnonzero(~b["ok"])}
        by_block.add_block(b["user"], b["script"], b["tx"], b["klass"], b["intended"], b["actual"], b["first"],
                           b["end"], b["ok"], b["think"], errors)
        for i in range(len(b["ok"])):
            by_row.add(int(b["user"][i]), 0, int(b["tx"][i]), 0, float(b["intended"][i]), float(b["actual"][i]),
                       float(b["first"][i]), float(b["end"][i]), bool(b["ok"][i]),
                       errors.get(i), float(b["think"][i]))
    assert by_block.table().to_pandas().equals(by_row.table().to_pandas())  # NaN equal to NaN
    assert (by_block.completed, by_block.errors, len(by_block)) == (by_row.completed, by_row.errors, len(by_row))
    errors = by_block.table().column("error").to_pylist()
    assert errors.count(None) == by_block.completed and "secret" not in str(errors)  # masked
    n = len(by_block)
    recent = by_block.recent(n - 100, n)  # the live display's view of the last block
    expected = by_row.recent(n - 100, n)
    assert recent.first == expected.first and np.array_equal(recent.ok, expected.ok)
    assert np.array_equal(recent.end, expected.end)
    by_block.close()
    by_row.close()


def _workload(tmp_path, **parts):
    from perflab.workload.loader import load_workload

    text = {"target": 'target: {kind: http, base_url: "http://127.0.0.1:9", client: httptools}',
            "transactions": "transactions: [{name: a, http: {path: /a}}]",
            "think": "think: 0", "load": "load: {users: 2}", "driver": ""}
    text.update(parts)
    path = tmp_path / "w.yaml"
    path.write_text(textwrap.dedent(f"""
        name: w
        {text['target']}
        {text['transactions']}
        scripts: [{{name: s, steps: [a]}}]
        {text['think']}
        {text['load']}
        {text['driver']}
        timing: {{stagger: 0s, stabilization: 0s, measurement: 1s}}
    """))
    return load_workload(path)


@pytest.mark.parametrize("parts,reason", [
    ({}, None),
    # the defaults: httptools where installed, https on the machine's OpenSSL, placeholders filled, open loop
    ({"target": 'target: {kind: http, base_url: "http://127.0.0.1:9"}'}, None),
    ({"target": 'target: {kind: http, base_url: "https://127.0.0.1:9", tls: {verify: false}}'}, None),
    ({"transactions": "transactions: [{name: a, params: {n: {random_int: [1, 9]}}, http: {path: '/a/{n}'}}]"}, None),
    ({"load": "load: {rate: 10}"}, None),
    ({"driver": "driver: {core: python}"}, "driver.core: python"),
    ({"target": 'target: {kind: http, base_url: "http://127.0.0.1:9", client: aiohttp}'}, "client: aiohttp"),
    ({"target": 'target: {kind: http, base_url: "http://127.0.0.1:9", connections: pool}'}, "connections: pool"),
    ({"transactions": "transactions: [{name: a, http: {path: /a, extract: {t: $.t}}}]"}, "values extracted"),
    ({"transactions": "transactions: [{name: a, http: [{path: /a}, {path: /b}]}]"}, "transaction a makes several"),
    ({"transactions": "transactions: [{name: a, params: {n: {choice: ['x#y']}}, http: {path: '/a/{n}'}}]"},
     "transaction a: parameter n has a value the path cannot carry"),
    ({"think": "think: {dist: bactrian, mean: 1}"}, "think time bactrian"),
])
def test_the_loop_is_chosen_only_where_it_runs_as_the_python_path(tmp_path, parts, reason):
    from perflab.drive.adapters.http import HttpExecutor

    w = _workload(tmp_path, **parts)
    users = w.load.users if hasattr(w.load, "users") else None
    rate = w.load.rate if hasattr(w.load, "rate") else None
    choice = native_http.choose_core(w, HttpExecutor(w), users, rate)
    if reason is None:
        assert choice.native == (native_http.NOT_BUILT is None)
    else:
        assert not choice.native and choice.reason is not None and choice.reason.startswith(reason), choice
        assert choice.fingerprint().startswith("python (")


def test_validate_tells_the_core_a_run_will_get_with_what_only_a_run_has_stood_in_for(tmp_path):
    """`perflab validate` says which loop will run the users: a service's {service_port} and a CA
    file the service makes at the run's start do not change it, and a fallback says why."""
    from perflab.drive.load.native_http import core_for
    from perflab.workload.loader import load_workload

    path = tmp_path / "w.yaml"
    path.write_text(textwrap.dedent("""
        name: w
        target: {kind: http, base_url: "https://127.0.0.1:{service_port}", tls: {ca_file: "{run_dir}/cert.pem"}}
        service: {command: ["{python}", -c, pass], ready: {tcp: "{service_port}"}}
        transactions: [{name: a, http: {path: /a}}]
        scripts: [{name: s, steps: [a]}]
        think: 0
        load: {users: 2}
    """))
    choice = core_for(load_workload(path))
    assert choice.known and choice.native == (native_http.NOT_BUILT is None), choice
    path.write_text(path.read_text().replace("tls: {", "client: aiohttp, tls: {"))
    choice = core_for(load_workload(path))
    assert choice.known and not choice.native and choice.sentence().startswith(
        "the Python path runs this workload's users: client: aiohttp")

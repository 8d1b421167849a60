"""A fuzzer over what a user can hand perflab: the example workload and study files mutated
(values replaced by hostile ones, text inserted, cut or repeated) and generated command lines.
Every case runs perflab's entry (`perflab.cli.main`) in-process and must end as bad input is
meant to: exit 0 or 2, at most one line on stderr, no traceback, no hang (10 s per case).

Seeded: hypothesis runs with derandomize=True, so every run tries the same cases and a failure
is a bug, never chance (false-failure probability 0; the only non-deterministic part is the
10 s per-case limit, which a case needing ~20 ms would reach only on a machine stalled for
seconds). Bounded: 400 file cases and 400 command lines, about 25 s in all.

`run` and `study` are stopped where the run would start (execute_run / StudyRunner.run are
replaced by a stub after the plan is resolved): the fuzzer checks what perflab accepts, not
what it measures.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reliability_helpers import EXAMPLES, run_main

FILES = ["debit-credit.yaml", "interactive-mix.yaml", "sqlite-users.yaml", "sqlite-release-study.yaml",
         "sqlite-release-trend.yaml"]
FUZZ = settings(derandomize=True, database=None, deadline=None, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])


class Started(Exception):
    """The run (or study) would start here: the input was accepted."""


def _stub_run(request, store, progress=None):
    from perflab.drive.plan import resolve_plan

    resolve_plan(request)       # every override checked, as the real run does first
    raise SystemExit(0)


def _stub_study(self):
    raise SystemExit(0)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("fuzz")
    for name in FILES:
        shutil.copy(EXAMPLES / name, directory / name)
    (directory / "store").mkdir()
    return directory


def check(code, out: str, err: str, what) -> None:
    assert code is not None, f"hang (10 s): {what!r}"
    assert code in (0, 2), (code, err[-2000:], what)
    assert "Traceback" not in err and "Traceback" not in out, (err[-3000:], what)
    assert len(err.strip("\n").splitlines()) <= 1, (err[-2000:], what)


def perflab(*args, timeout: float = 10.0):
    with mock.patch("perflab.drive.run.execute_run", _stub_run), \
            mock.patch("perflab.study.runner.StudyRunner.run", _stub_study):
        return run_main(*args, timeout=timeout)


# --- hostile values -------------------------------------------------------------------------

scalars = st.one_of(
    st.sampled_from([".inf", "-.inf", ".nan", "1e999", "-1", "0", "-0.0", "1e9", "1e-300", "9" * 401, "'9" + "9" * 30 + "s'",
                     "~", "''", "'[/x]'", "'\\e[2J'", "'1e9s'", "'-5m'", "'0s'", "'.inf'", "'nan'", "!!binary aGk=",
                     "!!python/object:os.system {}", "2026-01-01", "0x7fffffffffffffffff", "true", "[]", "{}",
                     "*nosuch", "&a x", "'%s%s%s'", "'{run_dir}'", "'../../../../etc/passwd'", "'/dev/zero'",
                     "!!float abc", "!!int 0x", "!!set {a, b}", "!!timestamp 2020-01-01", "!!omap [a: 1]",
                     "{<<: {a: 1}}", "{? [a, b] : 1}", "'\\0'", "\"\\0\"", "'\u202e'"]),
    st.integers(min_value=-(10 ** 30), max_value=10 ** 30).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr).map(lambda s: {"inf": ".inf", "-inf": "-.inf",
                                                                            "nan": ".nan"}.get(s, s)),
    st.text(min_size=0, max_size=20).map(lambda s: '"' + s.encode("unicode_escape").decode().replace('"', '\\"') + '"'),
)
values = st.one_of(scalars, st.lists(scalars, max_size=4).map(lambda xs: "[" + ", ".join(xs) + "]"),
                   st.dictionaries(st.sampled_from(["a", "value", "dist", "rate", "users", "kind", "mean"]), scalars,
                                   max_size=3).map(lambda d: "{" + ", ".join(f"{k}: {v}" for k, v in d.items()) + "}"))


def _leaf_lines(text: str) -> list[int]:
    """Lines that hold `key: value` (the places a value can be replaced)."""
    return [i for i, line in enumerate(text.splitlines()) if ":" in line and not line.lstrip().startswith("#")]


@st.composite
def mutated(draw):
    name = draw(st.sampled_from(FILES))
    lines = (EXAMPLES / name).read_text().splitlines()
    kind = draw(st.sampled_from(["value", "value", "value", "insert", "delete", "repeat", "truncate", "bytes"]))
    if kind == "value":   # a field's value replaced by a hostile one
        i = draw(st.sampled_from(_leaf_lines("\n".join(lines))))
        key = lines[i].split(":", 1)[0]
        lines[i] = f"{key}: {draw(values)}"
    elif kind == "insert":
        i = draw(st.integers(0, len(lines)))
        inserted = draw(st.one_of(st.text(max_size=30), st.sampled_from([
            "<<: {a: 1}", "? [a, b]\n: 1", "x: &a [*a]", "--- ", "...", "%YAML 1.1", "set: {load.users: .inf}",
            "sweep: {factor: timing.measurement, values: [.nan, 2]}", "sweep: {factor: users, values: [a, 2]}",
            "blocks: 1", "configurations: []", "gates: {util_band: [5]}", "monitor_interval: 0", "seed: 1e999"])))
        lines.insert(i, draw(st.sampled_from(["  ", "", "- "])) + inserted)
    elif kind == "delete":
        i = draw(st.integers(0, len(lines) - 1))
        del lines[i:i + draw(st.integers(1, 5))]
    elif kind == "repeat":
        i = draw(st.integers(0, len(lines) - 1))
        lines[i:i] = [lines[i]] * draw(st.integers(1, 3))
    elif kind == "truncate":
        text = "\n".join(lines)
        return name, text[:draw(st.integers(0, len(text)))].encode()
    else:  # raw bytes spliced in (invalid UTF-8, NUL, escapes)
        text = "\n".join(lines).encode()
        at = draw(st.integers(0, len(text)))
        return name, text[:at] + draw(st.binary(min_size=1, max_size=8)) + text[at:]
    return name, ("\n".join(lines) + "\n").encode()


@settings(FUZZ, max_examples=400)
@given(case=mutated())
def test_mutated_files_end_in_ok_or_one_line_of_bad_input(workdir, case):
    name, data = case
    path = workdir / ("fuzz-" + name)
    path.write_bytes(data)
    check(*perflab("validate", path), (name, data[:4000]))


# --- command lines --------------------------------------------------------------------------

tokens = st.one_of(
    st.sampled_from(["inf", "nan", "-1", "0", "1e9", "1e999", "9" * 401, "", "--", "-", "**", "/", "/etc", "/dev/null",
                     "/dev/zero", "last", "label:", "label:**", "study:x:y", "a,b", "30s", "5m", "1h", "-5s", "99999h",
                     "3", "0.5", "[/x]", "\x1b[2J", "1-3", "99-1", "x" * 300]),
    st.text(max_size=12).filter(lambda s: "\x00" not in s))
OPTIONS = {
    "run": ["--users", "--rate", "--duration", "-d", "--seed", "--label", "--workers", "--sut-cpus", "--driver-cpus",
            "--threshold", "--driver-count", "--drivers", "--quiet", "--no-monitor", "--bogus"],
    "study": ["--measurement", "--stabilization", "--blocks", "--aa", "--gate", "--no-monitor", "--bogus"],
    "show": ["--json", "--html"], "compare": ["--metric", "--margin", "--confidence", "--family-alpha"],
    "runs": ["--limit", "--rescan", "--json"], "validate": [], "schema": [], "capacity": ["--json"],
    "derive": ["--check"],
}
FLAGS = {"--quiet", "--no-monitor", "--aa", "--gate", "--json", "--html", "--rescan", "--check"}


@st.composite
def command_line(draw, workdir: Path):
    command = draw(st.sampled_from(sorted(OPTIONS)))
    args = [command]
    if command == "run":
        args.append(str(workdir / draw(st.sampled_from(["debit-credit.yaml", "interactive-mix.yaml"]))))
    elif command == "study":
        args.append(str(workdir / "sqlite-release-study.yaml"))
    elif command == "capacity":
        args += [draw(st.sampled_from(["summary", "usl", "mva", "nosuch"])), draw(tokens)]
    elif command != "runs":
        args += draw(st.lists(tokens, max_size=2))
    for _ in range(draw(st.integers(0, 3))):
        option = draw(st.sampled_from(OPTIONS[command] or ["--bogus"]))
        args += [option] if option in FLAGS else [option, draw(tokens)]
    if command not in ("validate", "schema"):
        args += ["--store", str(workdir / "store")]
    return args


@settings(FUZZ, max_examples=400)
@given(data=st.data())
def test_command_lines_end_in_ok_or_one_line_of_bad_input(workdir, data):
    args = data.draw(command_line(workdir))
    check(*perflab(*args), args)

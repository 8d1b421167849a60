"""Every command-line error is one line on stderr and exit 2 -- click's usage errors included --
and never a traceback."""

from __future__ import annotations

import pytest
from reliability_helpers import EXAMPLES, one_line_error, run_main

WORKLOAD = str(EXAMPLES / "debit-credit.yaml")


@pytest.mark.parametrize("args, expected", [
    (["run", "--x"], "perflab run: no such option: --x (perflab run --help)"),
    (["run"], "perflab run: missing argument 'WORKLOAD'. (perflab run --help)"),
    (["nosuch"], "perflab: no such command 'nosuch'. (perflab --help)"),
    (["run", WORKLOAD, "--users", "ten"], "perflab run: invalid value for '--users' / '-u': Input should be a "
                                          "valid integer, unable to parse string as an integer (perflab run --help)"),
    (["capacity", "usl", "--x"], "perflab capacity usl: no such option: --x (perflab capacity usl --help)"),
    (["capacity", "fit"], "perflab capacity: no such command 'fit'. (perflab capacity --help)"),
])
def test_usage_errors_are_one_line(args, expected):
    code, out, err = run_main(*args)
    assert one_line_error(code, err) == expected
    assert out == ""


@pytest.mark.fast   # refused before any run starts (tests/tiers.py)
def test_help_is_still_help():
    code, out, err = run_main("run", "--help")
    assert code == 0 and "--users" in out and err == ""


@pytest.mark.parametrize("ref", ["/", "**", "/etc", "a/**/b", "[", "x" * 5000, "run\x00id", "../.."])
def test_show_of_a_strange_run_reference_is_one_line(store, ref):
    code, _out, err = run_main("show", ref, "--store", store)
    line = one_line_error(code, err)
    assert "RUN" in line


def test_show_still_finds_a_run_by_prefix(store):
    run = store / "runs" / "20260101-000000-x-abcd"
    run.mkdir(parents=True)
    (run / "run.json").write_text("{}")
    from perflab.store.catalog import Store

    assert Store(store).resolve("20260101-000000-x") == run
    with pytest.raises(Exception) as info:
        Store(store).resolve("2026*")
    assert "no run '2026*'" in str(info.value)


@pytest.mark.parametrize("b", ["**", "/", "label:**", "study:**:x"])
def test_compare_with_a_strange_group_is_one_line(store, b):
    run = store / "runs" / "20260101-000000-x-abcd"
    run.mkdir(parents=True)
    (run / "run.json").write_text("{}")
    code, _out, err = run_main("compare", "20260101-000000-x-abcd", b, "--store", store)
    one_line_error(code, err)


@pytest.mark.parametrize("ref", ["**", "/", "x" * 5000, "[", "../.."])
def test_capacity_with_a_strange_study_reference_is_one_line(store, ref):
    code, _out, err = run_main("capacity", "summary", ref, "--store", store)
    assert "STUDY" in one_line_error(code, err)


def test_validate_checks_a_study_file_and_its_workload_without_running():
    code, out, err = run_main("validate", EXAMPLES / "sqlite-release-study.yaml")
    assert code == 0 and err == ""
    assert "study 'sqlite-release', 2 configurations" in out and "workload 'sqlite-users'" in out


def test_validate_reports_a_study_error_at_its_line(tmp_path):
    study = (EXAMPLES / "sqlite-release-study.yaml").read_text().replace("blocks: 4", "blocks: 2")
    path = tmp_path / "s.yaml"
    path.write_text(study.replace("workload: sqlite-users.yaml", f"workload: {EXAMPLES / 'sqlite-users.yaml'}"))
    code, _out, err = run_main("validate", path)
    line = one_line_error(code, err)
    assert "s.yaml:" in line and "blocks" in line and "at least 3" in line


def test_a_usage_error_shows_control_characters_escaped():
    code, _out, err = run_main("show", "a", "\x1b[2J\x07")
    line = one_line_error(code, err)
    assert "\x1b" not in line and "\x07" not in line
    assert line == "perflab show: got unexpected extra argument(s) (\\x1b[2J\\x07) (perflab show --help)"


def test_a_huge_runs_limit_is_a_usage_error_not_a_catalog_error(store):
    code, _out, err = run_main("runs", "--limit", "9" * 401, "--rescan", "--store", store)
    line = one_line_error(code, err)
    assert line.startswith("perflab runs: invalid value for '--limit'") and "catalog" not in line

"""Workload and study files are read safely: alias bombs, deep nesting, control characters,
huge files and files that are not regular files are one line of bad input (exit 2), found
without reading more than the limit -- never a hang, a RecursionError or a traceback."""

from __future__ import annotations

import os

import pytest
from reliability_helpers import EXAMPLES, one_line_error, run_main, write

from perflab.errors import InputError
from perflab.workload.loader import read_yaml


def billion_laughs() -> str:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi"):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def test_the_bomb_is_small():
    assert len(billion_laughs()) < 400   # 9^9 = 387 million strings once expanded


@pytest.mark.parametrize("command", ["validate", "study"])
def test_an_alias_bomb_fails_fast_with_one_line(tmp_path, store, command):
    path = write(tmp_path, billion_laughs())
    code, _out, err = run_main(command, path, "--store", store) if command == "study" else run_main(command, path)
    line = one_line_error(code, err)   # code None (a hang past 10 s) fails here too
    assert "alias" in line and "w.yaml" in line


def test_a_recursive_alias_is_one_line(tmp_path):
    code, _out, err = run_main("validate", write(tmp_path, "name: &a [*a]\n"))
    assert "alias" in one_line_error(code, err)


@pytest.mark.parametrize("opening, closing", [("[", "]"), ("{a: ", "}"), ("- ", "")])
def test_deep_nesting_is_one_line_not_a_recursion_error(tmp_path, opening, closing):
    depth = 250
    if opening == "- ":
        text = "".join("  " * i + "-\n" for i in range(depth)) + "  " * depth + "x\n"
    else:
        text = "name: " + opening * depth + "1" + closing * depth + "\n"
    code, _out, err = run_main("validate", write(tmp_path, text))
    line = one_line_error(code, err)
    assert "nest" in line and "50" in line


def test_nesting_below_the_limit_is_fine():
    data = read_yaml_text("x: " + "[" * 40 + "1" + "]" * 40 + "\n")
    node = data["x"]
    for _ in range(39):
        node = node[0]
    assert node == [1]


def read_yaml_text(text, tmp=[None]):
    import tempfile
    from pathlib import Path

    path = Path(tempfile.mkdtemp()) / "x.yaml"
    path.write_text(text)
    return read_yaml(path)


def test_a_control_character_is_one_line_with_its_line_number(tmp_path):
    text = (EXAMPLES / "debit-credit.yaml").read_text().splitlines(keepends=True)
    text[6] = text[6].rstrip("\n") + "\x07\n"
    code, _out, err = run_main("validate", write(tmp_path, "".join(text)))
    line = one_line_error(code, err)
    assert "w.yaml:7:" in line and "U+0007" in line


@pytest.mark.parametrize("scalar, needle", [("!!float abc", "float"), ("!!int 1.5.3", "int()")])
def test_a_tagged_value_that_cannot_be_built_is_one_line_with_its_line_number(tmp_path, scalar, needle):
    """ruamel's constructors raise a bare ValueError for these, with no position: perflab finds it."""
    text = f"name: x\ndescription: !!str fine\nload:\n  users: {scalar}\n"
    code, _out, err = run_main("validate", write(tmp_path, text))
    line = one_line_error(code, err)
    assert "w.yaml:4:" in line and needle in line


def test_bytes_that_are_not_utf8_are_one_line_with_their_line_number(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_bytes(b"name: x\ndescription: \xff\xfe\n")
    code, _out, err = run_main("validate", path)
    assert "w.yaml:2:" in one_line_error(code, err)


def test_a_file_over_the_limit_is_refused_unread(tmp_path):
    path = tmp_path / "big.yaml"
    with open(path, "wb") as f:           # sparse: 11 MiB that take no disk
        f.truncate(11 * 1024 * 1024)
    code, _out, err = run_main("validate", path)
    line = one_line_error(code, err)
    assert "10,485,760" in line and "PERFLAB_MAX_FILE_BYTES" in line


def test_the_file_limit_is_overridable(tmp_path, monkeypatch):
    path = EXAMPLES / "debit-credit.yaml"
    monkeypatch.setenv("PERFLAB_MAX_FILE_BYTES", "100")
    with pytest.raises(InputError) as info:
        read_yaml(path)
    assert "larger than 100 bytes" in str(info.value)
    monkeypatch.setenv("PERFLAB_MAX_FILE_BYTES", str(path.stat().st_size))
    assert read_yaml(path)["name"] == "debit-credit"


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "w.yaml"
    os.mkfifo(fifo)
    code, _out, err = run_main("validate", fifo, timeout=10)
    assert "not a regular file" in one_line_error(code, err)


@pytest.mark.parametrize("path", ["/dev/zero", "/dev/null", "/tmp"])
def test_devices_and_directories_are_refused(path):
    code, _out, err = run_main("validate", path, timeout=10)
    assert "not a regular file" in one_line_error(code, err)


@pytest.mark.fast   # refused before any run starts (tests/tiers.py)
def test_a_study_naming_a_fifo_as_its_workload_is_refused(tmp_path, store):
    os.mkfifo(tmp_path / "w.yaml")
    study = write(tmp_path, "name: s\nworkload: w.yaml\nconfigurations: [{name: a}, {name: b}]\n", "s.yaml")
    code, _out, err = run_main("study", study, "--store", store, timeout=10)
    assert "not a regular file" in one_line_error(code, err)
    assert not (store / "studies").exists()


@pytest.mark.parametrize("command", [["runs"], ["show", "last"], ["run", str(EXAMPLES / "debit-credit.yaml")]])
def test_a_store_that_is_not_a_directory_is_one_line(command):
    code, _out, err = run_main(*command, "--store", "/dev/null")
    line = one_line_error(code, err)
    assert "--store" in line and "not a directory" in line


@pytest.mark.parametrize("think_file", ["/dev/zero", "fifo"])
def test_an_empirical_think_file_that_is_not_a_regular_file_is_refused(tmp_path, think_file):
    if think_file == "fifo":
        os.mkfifo(tmp_path / "fifo")
    path = write(tmp_path, f"""
        name: t
        target: {{kind: python}}
        transactions: [{{name: a, call: "perflab.sut.synthetic:noop"}}]
        scripts: [{{name: s, steps: [a]}}]
        think: {{dist: empirical, file: {think_file}}}
        load: {{users: 1}}
        """)
    code, _out, err = run_main("validate", path, timeout=10)
    line = one_line_error(code, err)
    assert "w.yaml:5: think.file" in line and "not a regular file" in line


@pytest.mark.parametrize("table", ["/dev/zero", "fifo", "/tmp"])
def test_derive_refuses_a_table_that_is_not_a_regular_file(tmp_path, table):
    if table == "fifo":
        os.mkfifo(tmp_path / "fifo")
        table = str(tmp_path / "fifo")
    code, _out, err = run_main("derive", table, timeout=10)
    assert "not a regular file" in one_line_error(code, err)

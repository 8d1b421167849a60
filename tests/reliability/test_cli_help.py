"""The command line a Python user expects: `--help` without type tags, with whole sentences and
an example for every command; `--store` one option everywhere; `--version`; shell completion.
"""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
from importlib.metadata import version

import pytest
import typer
from reliability_helpers import one_line_error, run_main

import perflab
from perflab.cli import app


def _commands():
    """(path, click command) for every command and group, `perflab` itself first."""
    root = typer.main.get_command(app)
    found = []

    def walk(command, path):
        found.append((path, command))
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            walk(sub, (*path, name))

    walk(root, ())
    return found


COMMANDS = _commands()
LEAVES = [(path, c) for path, c in COMMANDS if not getattr(c, "commands", None)]


def _help(path, monkeypatch, width: int) -> str:
    monkeypatch.setenv("COLUMNS", str(width))
    monkeypatch.delenv("TERMINAL_WIDTH", raising=False)
    code, out, err = run_main(*path, "--help")
    assert code == 0 and err == "", (code, err)
    return out


def _flat(text: str) -> str:
    """Help text as words: Markdown's backticks and the table's borders gone, spaces collapsed."""
    return " ".join(text.replace("`", "").replace("│", " ").split())


def test_the_walk_finds_every_command():
    names = {" ".join(path) for path, _ in COMMANDS}
    assert {"run", "study", "show", "serve", "agent", "capacity", "capacity summary", "capacity whatif"} <= names


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS], ids=lambda p: " ".join(p) or "perflab")
def test_help_has_no_type_tags(path, monkeypatch):
    out = _help(path, monkeypatch, 100)
    tags = re.findall(r"<[a-z][a-z ]*>", out)   # typer's <bool>, <str>, <int range>, <path> ...
    assert tags == [], tags


@pytest.mark.parametrize("path, command", COMMANDS, ids=lambda p: " ".join(p) if isinstance(p, tuple) else "")
def test_help_keeps_every_sentence_whole_and_every_word(path, command, monkeypatch):
    """At a width no paragraph needs to wrap, each paragraph of the command's help is one line
    (a docstring's own line breaks do not break its sentences), and each option's help is there
    word for word (no `[ray]` taken for Rich markup, no `:id:` turned into an emoji)."""
    out = _help(path, monkeypatch, 1000)
    lines = [_flat(line) for line in out.splitlines()]
    for paragraph in inspect.cleandoc(command.help or "").split("\n\n"):
        assert _flat(paragraph) in lines, (paragraph, out)
    flat = _flat(out)
    for param in command.params:
        if getattr(param, "help", None):
            assert _flat(param.help) in flat, (param.name, param.help)


@pytest.mark.parametrize("path, command", LEAVES, ids=lambda p: " ".join(p) if isinstance(p, tuple) else "")
def test_every_command_has_an_example(path, command):
    examples = re.findall(r"Example[^:]*: `([^`]+)`", command.help or "")
    assert examples, f"perflab {' '.join(path)} --help has no 'Example: `perflab ...`'"
    assert all(e.startswith(f"perflab {' '.join(path)}") for e in examples), examples


STORE_COMMANDS = [(path, c) for path, c in LEAVES if any("--store" in getattr(p, "opts", ()) for p in c.params)]


def test_store_is_one_option():
    """One definition: the same help, value name and environment variable everywhere."""
    assert len(STORE_COMMANDS) >= 10
    shapes = {(p.help, p.metavar, p.envvar) for _, c in STORE_COMMANDS for p in c.params if "--store" in p.opts}
    assert shapes == {("run store directory (default ./perflab-runs)", "DIR", "PERFLAB_HOME")}


@pytest.mark.parametrize("path, command", STORE_COMMANDS, ids=lambda p: " ".join(p) if isinstance(p, tuple) else "")
def test_store_is_checked_everywhere(path, command, tmp_path):
    """...and the same check: a file given as the store is one line of bad input."""
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    arguments = ["x"] * sum(1 for p in command.params if p.param_type_name == "argument" and p.required)
    line = one_line_error(*run_main(*path, *arguments, "--store", str(not_a_dir))[::2])
    assert line.endswith(f"--store: {not_a_dir} is not a directory: the run store is a directory"), line


def test_version_is_the_package_metadata():
    code, out, err = run_main("--version")
    assert code == 0 and err == ""
    assert out == f"perflab {version('perflab')}\n"
    assert version("perflab") == perflab.__version__   # pyproject reads it from perflab.__version__


# -- shell completion ------------------------------------------------------------------------


def test_show_completion_prints_the_script_of_the_shell_named():
    code, out, _ = run_main("--show-completion", "bash")
    assert code == 0
    assert "_PERFLAB_COMPLETE=complete_bash" in out and "complete -o default -F _perflab_completion perflab" in out
    code, out, _ = run_main("--show-completion", "zsh")
    assert code == 0 and out.startswith("#compdef perflab")


def test_show_completion_of_an_unknown_shell_is_one_line():
    line = one_line_error(*run_main("--show-completion", "csh")[::2])
    assert "expected a shell: bash, zsh, fish, powershell" in line


def _complete(words: str, cword: int) -> list[str]:
    env = {**os.environ, "_PERFLAB_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": str(cword)}
    done = subprocess.run([sys.executable, "-m", "perflab.cli"], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_completion_protocol_completes_commands_and_options():
    assert _complete("perflab ru", 1) == ["run", "runs"]
    assert _complete("perflab capacity su", 2) == ["summary", "supported"]
    assert _complete("perflab study x --meas", 3) == ["--measurement"]


def test_bash_completes_with_the_script_it_is_shown(tmp_path):
    """The script as a user installs it, run by bash: <TAB> after `perflab ru`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    launcher = bin_dir / "perflab"
    launcher.write_text(f"#!/bin/sh\nexec {sys.executable} -m perflab.cli \"$@\"\n")
    launcher.chmod(0o755)
    code, script, _ = run_main("--show-completion", "bash")
    (tmp_path / "completion.bash").write_text(script)
    test = (f"source {tmp_path / 'completion.bash'}\n"
            "COMP_WORDS=(perflab ru); COMP_CWORD=1\n"
            "_perflab_completion perflab\n"
            'printf "%s\\n" "${COMPREPLY[@]}"\n')
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    done = subprocess.run(["bash", "-c", test], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["run", "runs"]


def test_install_completion_writes_the_script_where_bash_reads_it(tmp_path):
    env = {**os.environ, "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "perflab.cli", "--install-completion", "bash"], capture_output=True,
                          text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    script = tmp_path / ".bash_completions" / "perflab.sh"
    assert "_PERFLAB_COMPLETE=complete_bash" in script.read_text()
    assert str(script) in (tmp_path / ".bashrc").read_text() or ".bash_completions/perflab.sh" in \
        (tmp_path / ".bashrc").read_text()

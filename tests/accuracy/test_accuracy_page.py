"""`perflab accuracy` writes its page at the path it is given, and never into the installed
perflab package (perflab.accuracy.page)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import perflab

import perflab as package
from perflab.accuracy.page import check_output
from perflab.errors import InputError

PACKAGE = Path(package.__file__).resolve().parent


def test_a_path_inside_the_package_is_refused_and_any_other_is_kept(tmp_path):
    for inside in (PACKAGE / "accuracy.md", PACKAGE / "docs" / "accuracy.md", PACKAGE):
        with pytest.raises(InputError, match="inside the installed perflab package") as raised:
            check_output(inside, "--out")
        assert raised.value.field == "--out"
    assert check_output(tmp_path / "docs" / "accuracy.md", "--out") == tmp_path / "docs" / "accuracy.md"
    assert check_output(Path("docs/accuracy.md"), "--out") == Path("docs/accuracy.md")


@pytest.mark.fast   # refused before anything runs
def test_the_command_refuses_the_package_before_it_measures(tmp_path):
    for args in (("--out", str(PACKAGE / "accuracy.md")),
                 ("--studies", "--summary-only", "--results", str(PACKAGE / "studies.jsonl"))):
        done = perflab("accuracy", *args, store=tmp_path / "store")
        assert done.returncode == 2, done.stderr
        assert done.stderr.count("\n") == 1 and "inside the installed perflab package" in done.stderr
    assert not (PACKAGE / "accuracy.md").exists() and not (PACKAGE / "studies.jsonl").exists()
    done = perflab("accuracy", "--studies", "--summary-only", "--results", str(tmp_path / "none.jsonl"),
                   "--out", str(tmp_path / "accuracy.md"), store=tmp_path / "store")
    assert done.returncode == 2 and "no accuracy study results yet" in done.stderr, done.stderr

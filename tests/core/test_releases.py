"""Releases under test by package version: installed once into the cache, put first on the SUT's
import path, recorded in the fingerprint; a study that changes two things at once is refused.

apsw==3.40.1.0 is installed (once, from the index) into perflab's ordinary release cache, so
`make test` on a fresh machine fetches it once and every later run, the demo included, reuses it.
"""

from __future__ import annotations

import json
import textwrap

import pyarrow.parquet as pq
import pytest
from cli_helpers import REPO, load_run, perflab, run_dir_of, write_workload

from perflab.errors import InputError
from perflab.sut import releases

OLD = "apsw==3.40.1.0"

WRITES = """
name: writes
target:
  kind: sqlite
  driver: apsw
  release: {release}
  database: t.db
  pragmas: {{journal_mode: wal, synchronous: normal}}
  setup: ["CREATE TABLE t (k INTEGER PRIMARY KEY, v INTEGER)", "INSERT INTO t VALUES (1, 0)"]
transactions:
  - {{name: bump, class: trivial, sql: "UPDATE t SET v = v + 1 WHERE k = 1"}}
  - {{name: note, class: nontrivial, sql: ["SELECT v FROM t WHERE k = 1", "INSERT INTO t (v) VALUES (:x)"],
      params: {{x: {{random_int: [1, 9]}}}}}}
scripts: [{{name: s, steps: [bump, note]}}]
think: {{dist: exponential, mean: 0.002}}
load: {{users: 4}}
timing: {{stagger: 0, stabilization: 0.5s, measurement: 2s}}
placement: {{workers: 2}}
"""


def test_only_pinned_requirements_name_a_release():
    assert releases.parse_requirement(" apsw == 3.40.1.0 ") == releases.Requirement("apsw", "3.40.1.0")
    assert releases.parse_requirement("Foo_Bar==1.0").directory_name == "foo-bar-1.0"
    for text in ("apsw", "apsw>=3.40", "apsw==3.40.*", "apsw==3.40.1.0; python_version>'3'", ""):
        with pytest.raises(ValueError, match="pinned"):
            releases.parse_requirement(text)


def test_the_cache_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("PERFLAB_RELEASES", str(tmp_path / "mine"))
    assert releases.cache_root() == tmp_path / "mine"
    monkeypatch.delenv("PERFLAB_RELEASES")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert releases.cache_root() == tmp_path / "xdg" / "perflab" / "releases"


def test_a_release_installs_once_and_is_reused(monkeypatch):
    first = releases.ensure(OLD)
    assert first.versions == {"apsw": "3.40.1.0"}
    assert first.path.name == "apsw-3.40.1.0" and (first.path / "apsw").is_dir()
    manifest = json.loads((first.path / releases.MANIFEST).read_text())
    assert manifest["requirement"] == OLD and manifest["versions"] == {"apsw": "3.40.1.0"}

    def no_pip(*args, **kwargs):
        raise AssertionError("a cached release must not run pip again")

    monkeypatch.setattr(releases.subprocess, "run", no_pip)
    again = releases.ensure(OLD)
    assert again.path == first.path and again.versions == first.versions


def test_an_unreachable_index_is_a_clear_error(monkeypatch, tmp_path):
    # Nothing listens on port 9 of this machine: pip's connection is refused at once.
    wheels = tmp_path / "no-wheels"
    wheels.mkdir()
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    monkeypatch.setenv("PIP_RETRIES", "1")  # one retry: pip then names the refused connection
    monkeypatch.setenv("PIP_TIMEOUT", "3")
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    with pytest.raises(InputError) as caught:
        releases.ensure(OLD, root=tmp_path / "cache")
    text = str(caught.value)
    assert "could not be reached" in text and "apsw==3.40.1.0" in text and "PIP_INDEX_URL" in text, text
    # Nothing half-installed is left to be mistaken for the release later.
    assert releases.installed(releases.parse_requirement(OLD), tmp_path / "cache") is None
    assert not [p for p in (tmp_path / "cache").iterdir() if not p.name.endswith(".lock")]


def test_a_run_measures_the_release_it_names_and_sqlite_counts_its_commits(tmp_path, store):
    releases.ensure(OLD)
    path = write_workload(tmp_path, WRITES.format(release=OLD))
    result = perflab("run", path, "-q", store=store)
    assert result.returncode == 0, result.stderr
    run_dir = run_dir_of(store, result.stdout.strip().splitlines()[-1])
    run, tx = load_run(run_dir)
    fingerprint = run["fingerprint"]
    assert fingerprint["sqlite_version"] == "3.40.1" and fingerprint["sqlite_binding"] == "apsw"
    assert fingerprint["binding_version"] == "apsw 3.40.1.0"
    assert fingerprint["sut_release"] == {OLD: {"apsw": "3.40.1.0"}}
    assert run["sut"]["tx_counter"] == "commits"
    # Every transaction writes, so SQLite's commit hook counts exactly the transactions that
    # succeeded: the monitor's last sample is taken after the workers have stopped.
    samples = pq.read_table(run_dir / "samples.parquet").to_pandas()
    assert len(tx) > 200 and samples["sut.commits"].iloc[-1] == tx.ok.sum()


@pytest.mark.fast   # refused before any run starts (tests/tiers.py)
def test_a_study_that_changes_the_binding_and_the_release_is_refused(tmp_path):
    study = tmp_path / "s.yaml"
    study.write_text(textwrap.dedent(f"""
        name: s
        workload: {REPO}/examples/debit-credit.yaml
        configurations:
          - name: old
            set: {{target.driver: stdlib}}
          - name: new
            set: {{target.driver: apsw}}
        blocks: 3
        """).lstrip())
    result = perflab("study", study, "--store", tmp_path / "store")
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert f"{study}:6" in result.stderr, result.stderr  # the line of the configuration
    assert "binding (stdlib sqlite3 -> apsw)" in result.stderr and "two changes at once" in result.stderr
    assert "release: apsw==" in result.stderr


def test_a_release_is_an_apsw_pin_of_an_apsw_target(tmp_path):
    text = WRITES.format(release=OLD).replace("driver: apsw", "driver: stdlib")
    result = perflab("validate", write_workload(tmp_path, text))
    assert result.returncode == 2 and "target" in result.stderr and "bundles" in result.stderr, result.stderr
    result = perflab("validate", write_workload(tmp_path, WRITES.format(release="apsw>=3.40"), "w2.yaml"))
    assert result.returncode == 2 and "pinned" in result.stderr, result.stderr

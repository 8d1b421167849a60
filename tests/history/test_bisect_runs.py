"""`perflab bisect` end to end through the model driver (every study a real study of model runs):
the finding, its steps and files; bad versions files; git revisions built once each; and
`perflab history --confirm` through the same step runner.

Every study here is 4 blocks of two configurations at 0.5% run-to-run noise (the model's): a
ratio's 95% interval is then about +-1.1%, so a step of 9% is WORSE and a step of none is
EQUIVALENT (against +-3%) unless a block's pair strays 5 SD -- below 1e-6 a study. The bisect's
derived remainder is EQUIVALENT then too (its interval: about +-1.6%)."""

from __future__ import annotations

import json
import subprocess
import textwrap

import pytest
from model_helpers import perflab_model

from perflab.drive.model_driver import Model
from perflab.errors import EXIT_OK, EXIT_USAGE
from perflab.report.book.layout import Library

from .history_data import KNOB, history, workload_file

MODEL = Model(noise=0.005)


def study_file(directory, name="known-cost"):
    workload_file(directory, name)
    path = directory / "study.yaml"
    path.write_text(textwrap.dedent(f"""
        name: {name}-versions
        workload: {name}.yaml
        configurations:
          - {{name: a, set: {{{KNOB}: 2.0}}}}
          - {{name: b, set: {{{KNOB}: 2.2}}}}
        blocks: 4
        """).lstrip())
    return path


def versions_file(directory, costs, name="versions.yaml", extra=""):
    lines = ["study: study.yaml", extra, "versions:"]
    lines += [f"  - {{name: v{i + 1}, set: {{{KNOB}: {c}}}}}" for i, c in enumerate(costs)]
    path = directory / name
    path.write_text("\n".join(line for line in lines if line) + "\n")
    return path


def test_a_bisect_names_the_version_and_keeps_every_step(tmp_path):
    study_file(tmp_path)
    path = versions_file(tmp_path, [2.0] * 5 + [2.2] * 4)
    result = perflab_model("bisect", path, model=MODEL, store=tmp_path / "store")
    assert result.returncode == EXIT_OK, result.stderr[-3000:]
    directory = tmp_path / "store" / "bisects" / result.stdout.strip().splitlines()[-1].rsplit("/", 1)[-1]
    doc = json.loads((directory / "bisect.json").read_text())
    assert doc["finding"]["kind"] == "version" and doc["finding"]["version"] == "v6"
    steps = [(s["base_version"], s["new_version"], s["verdict"]) for s in doc["steps"]]
    assert steps == [("v1", "v9", "WORSE"), ("v1", "v5", "EQUIVALENT"), ("v5", "v7", "WORSE"), ("v5", "v6", "WORSE")]
    assert len(steps) == doc["studies_planned"] == 4
    for s in doc["steps"]:
        # each step's interval holds its true ratio (1 or 1/1.1: the model's cost)
        truth = 1 / 1.1 if s["verdict"] == "WORSE" else 1.0
        assert s["ci_low"] < truth * 1.002 and s["ci_high"] > truth * 0.998
        assert (directory / f"step-{s['number']}.yaml").is_file()
        assert (tmp_path / "store" / "studies" / s["study_id"] / "study.json").is_file()
    report = (directory / "report.md").read_text()
    assert "v6 made the change" in report and report.count("| WORSE |") == 3
    # a step's study file runs as it is: the two versions, the study's settings beneath
    step = (directory / "step-4.yaml").read_text()
    assert "name: v5" in step and "name: v6" in step and "2.2" in step


def test_a_gradual_change_exits_0_and_says_so_and_is_kept_beside_its_page(tmp_path):
    study_file(tmp_path)
    path = versions_file(tmp_path, [round(2.0 * 1.025 ** i, 4) for i in range(9)])
    page = tmp_path / "docs" / "trend.md"
    page.parent.mkdir()
    page.write_text("# a page\n")
    result = perflab_model("bisect", path, "--json", "--keep", page, model=MODEL, store=tmp_path / "store")
    assert result.returncode == EXIT_OK, result.stderr[-3000:]
    doc = json.loads(result.stdout)
    assert doc["finding"]["kind"] == "gradual" and len(doc["steps"]) == 2
    # --keep: the bisect's report and record, and each step's study, in the page's reports/
    library = Library.scan(tmp_path / "docs")
    kept = library.find(doc["bisect_id"])
    assert kept is not None and kept.kind == "bisect" and kept.record == kept.directory / "bisect.json"
    assert "gradual" in kept.text()
    for step in doc["steps"]:
        study = library.find(step["study_id"])
        assert study is not None and study.kind == "study" and study.study().study_id == step["study_id"]
        assert step["study_id"] in kept.run_ids()
        assert all(library.holds(run.run_id) for run in study.study().runs)


def test_keep_names_a_page_that_exists(tmp_path):
    study_file(tmp_path)
    path = versions_file(tmp_path, [2.0, 2.2])
    result = perflab_model("bisect", path, "--keep", tmp_path / "nowhere.md", model=MODEL, store=tmp_path / "store")
    assert result.returncode == EXIT_USAGE and "--keep" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "store" / "bisects").exists()


@pytest.mark.parametrize("text,field", [
    ("study: study.yaml\nversions: [v1]\nset: {a: '{version}'}\n", "versions"),
    ("study: study.yaml\nversions: [v1, v1]\nset: {a: '{version}'}\n", "listed twice"),
    ("study: nowhere.yaml\nversions: [v1, v2]\nset: {a: '{version}'}\n", "study"),
    ("study: study.yaml\nversions: [v1, v2]\n", "give `set`"),
    ("study: study.yaml\nversions: [v1, v2]\nset: {a: b}\nstray: 1\n", "stray"),
])
def test_a_bad_versions_file_is_one_line_naming_it(tmp_path, text, field):
    study_file(tmp_path)
    path = tmp_path / "versions.yaml"
    path.write_text(text)
    result = perflab_model("bisect", path, model=MODEL, store=tmp_path / "store")
    assert result.returncode == EXIT_USAGE
    assert "versions.yaml" in result.stderr and field in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "store" / "bisects").exists() or not any((tmp_path / "store" / "bisects").iterdir())


def _git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"})


def test_git_revisions_are_built_once_each_and_named_in_the_step_studies(tmp_path, monkeypatch):
    monkeypatch.setenv("PERFLAB_RELEASES", str(tmp_path / "cache" / "releases"))
    repo = tmp_path / "project"
    repo.mkdir()
    _git(repo, "init", "-q")
    commits = []
    for i in range(3):
        (repo / "version.txt").write_text(f"{i}\n")
        _git(repo, "add", "version.txt")
        _git(repo, "commit", "-q", "-m", f"c{i}")
        commits.append(subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                                      text=True).stdout.strip())
    study_file(tmp_path)
    costs = [2.0, 2.0, 2.2]
    lines = ["study: study.yaml", "git: {repo: project, build: [cp, version.txt, '{build}/built.txt']}",
             "versions:"]
    lines += [f"  - {{name: '{c[:10]}', set: {{{KNOB}: {cost}, target.path: ['{{build}}']}}}}"
              for c, cost in zip(commits, costs)]
    path = tmp_path / "versions.yaml"
    path.write_text("\n".join(lines) + "\n")
    result = perflab_model("bisect", path, "--json", model=MODEL, store=tmp_path / "store")
    assert result.returncode == EXIT_OK, result.stderr[-3000:]
    doc = json.loads(result.stdout)
    assert doc["finding"]["version"] == commits[2][:10]
    builds = sorted(p for p in (tmp_path / "cache" / "builds").iterdir() if p.is_dir())
    assert [b.name for b in builds] == sorted(f"project-{c[:12]}" for c in commits)
    for build, i in ((tmp_path / "cache" / "builds" / f"project-{c[:12]}", i) for i, c in enumerate(commits)):
        assert (build / "built.txt").read_text() == f"{i}\n" and (build / "perflab-build.json").is_file()
    step = (tmp_path / "store" / "bisects" / doc["bisect_id"] / "step-1.yaml").read_text()
    assert str(tmp_path / "cache" / "builds" / f"project-{commits[0][:12]}") in step
    # a revision git does not know is bad input
    path.write_text(path.read_text().replace(commits[1][:10], "0000000000"))
    bad = perflab_model("bisect", path, model=MODEL, store=tmp_path / "store")
    assert bad.returncode == EXIT_USAGE and "0000000000" in bad.stderr


def test_history_confirm_runs_the_deciding_study_and_attaches_its_verdict(tmp_path):
    study_file(tmp_path)
    w = tmp_path / "known-cost.yaml"
    ids = history(tmp_path / "store", w, [2.0] * 8 + [2.2] * 6, versions=["v1"] * 8 + ["v2"] * 6, exact_itr=True)
    versions = versions_file(tmp_path, [2.0, 2.2])
    result = perflab_model("history", "--ignore", KNOB, "--confirm", "--versions", versions, "--blocks", "4", "--json",
                           model=MODEL, store=tmp_path / "store")
    assert result.returncode == EXIT_OK, result.stderr[-3000:]
    (cp,) = json.loads(result.stdout)["series"][0]["change_points"]
    assert cp["after"] == ids[8]
    c = cp["confirmation"]
    assert (c["base"], c["new"], c["verdict"], c["blocks"]) == ("v1", "v2", "WORSE", 4)
    assert c["ci_low"] < 1 / 1.1 < c["ci_high"] or abs(c["ratio"] - 1 / 1.1) < 0.01
    assert (tmp_path / "store" / "studies" / c["study_id"] / "study.json").is_file()


def test_history_confirm_says_why_it_cannot(tmp_path):
    w = workload_file(tmp_path)
    history(tmp_path / "store", w, [2.0] * 8 + [2.2] * 6, versions=["v1"] * 8 + ["v2"] * 6, exact_itr=True)
    result = perflab_model("history", "--ignore", KNOB, "--confirm", "--json", model=MODEL, store=tmp_path / "store")
    (cp,) = json.loads(result.stdout)["series"][0]["change_points"]
    assert cp["confirmation"]["verdict"] is None
    assert "not a release" in cp["confirmation"]["reason"]


def test_history_confirm_of_two_releases_generates_the_study_from_the_runs(tmp_path):
    # Versions of the form name==X are releases: the study is made from the series' own runs (their
    # workload file, load and window) with target.release set to each, arranged as the accuracy
    # table recommends (auto). The model driver runs both releases at the same cost, so the study
    # that decides finds what the model holds: no change (the history's step was planted in the
    # values alone) -- EQUIVALENT, which is what --confirm is for. Its 6 blocks in a duet give
    # about [0.976, 1.019] once widened by the duet's measured bias (the duet's own interval is
    # +-0.4%): leaving the +-3% margin takes a stray of 0.6 points, 6 SD (below 1e-8).
    w = workload_file(tmp_path)
    releases = ["apsw==3.40.1.0"] * 8 + ["apsw==3.54.1.0"] * 6
    history(tmp_path / "store", w, [2.0] * 8 + [2.2] * 6, versions=releases, exact_itr=True)
    result = perflab_model("history", "--ignore", KNOB, "--confirm", "--json", model=MODEL,
                           store=tmp_path / "store")
    assert result.returncode == EXIT_OK, result.stderr[-3000:]
    (cp,) = json.loads(result.stdout)["series"][0]["change_points"]
    c = cp["confirmation"]
    assert (c["base"], c["new"], c["verdict"]) == ("apsw==3.40.1.0", "apsw==3.54.1.0", "EQUIVALENT"), json.dumps(c)
    assert c["arrangement"] in ("duet", "split-duet", "one-at-a-time")
    study = json.loads((tmp_path / "store" / "studies" / c["study_id"] / "study.json").read_text())
    assert [x["changes"]["target.release"] for x in study["configurations"]] == [["apsw==3.40.1.0"],
                                                                                 ["apsw==3.54.1.0"]]
    assert study["design"]["primary_metrics"] == ["itr_s"]

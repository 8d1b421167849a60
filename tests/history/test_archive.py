"""A team's history: runs of two machines exported into archives and imported into one store
(perflab.store.archive, `perflab archive`), the runs whole and checked, the hosts kept apart by
the history, nothing overwritten, and damaged or hostile archives refused."""

from __future__ import annotations

import io
import json
import tarfile

import pytest
from model_helpers import perflab_model

from perflab.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from perflab.history.analysis import HistoryOptions, build_history
from perflab.store.archive import MANIFEST, read_manifest
from perflab.store.catalog import Store

from .history_data import history, workload_file


@pytest.fixture(scope="module")
def machines(tmp_path_factory):
    """Two machines' stores: lab-1 with 6 runs and a study, lab-2 with 5 runs, one workload."""
    root = tmp_path_factory.mktemp("team")
    w = workload_file(root)
    one = history(root / "lab-1", w, [2.0] * 6, fingerprint={"hostname": "lab-1"})
    two = history(root / "lab-2", w, [2.0] * 5, seed=100, fingerprint={"hostname": "lab-2"})
    (root / "study.yaml").write_text("name: team-study\nworkload: known-cost.yaml\nconfigurations:\n"
                                     "  - {name: a}\n  - {name: b, set: {transactions.work.kwargs.cpu_ms: 2.2}}\n"
                                     "blocks: 3\n")
    study = perflab_model("study", root / "study.yaml", store=root / "lab-1")
    assert study.returncode == EXIT_OK, study.stderr[-2000:]
    return root, one, two


def test_two_machines_runs_come_into_one_store_whole_and_the_hosts_stay_apart(machines, tmp_path):
    root, one, two = machines
    a = perflab_model("archive", "export", tmp_path / "lab-1.tar.gz", store=root / "lab-1")
    b = perflab_model("archive", "export", tmp_path / "lab-2.tar", store=root / "lab-2")
    assert a.returncode == b.returncode == EXIT_OK, a.stderr + b.stderr
    manifest = read_manifest(tmp_path / "lab-1.tar.gz")
    assert set(one) <= set(manifest["runs"]) and len(manifest["runs"]) == 6 + 6     # the study's 6 runs too
    assert len(manifest["studies"]) == 1 and manifest["source"]["hostname"]

    team = tmp_path / "team"
    imported = perflab_model("archive", "import", tmp_path / "lab-1.tar.gz", tmp_path / "lab-2.tar", store=team)
    assert imported.returncode == EXIT_OK, imported.stderr
    st = Store(team)
    rows = {r.run_id: r for r in st.rows()}
    assert set(one) | set(two) <= set(rows) and len(rows) == 17
    assert all(r.etr_t is not None and r.path == str(st.run_dir(r.run_id)) for r in rows.values())
    for run_id in one:    # every file as it was, byte for byte
        for name in ("run.json", "transactions.parquet", "samples.parquet"):
            assert (st.run_dir(run_id) / name).read_bytes() == (Store(root / "lab-1").run_dir(run_id) / name).read_bytes()
    assert (team / "studies").is_dir() and len(list((team / "studies").iterdir())) == 1

    doc = build_history(team, HistoryOptions())
    hosts = {s.key.hostname: {p.run_id for p in s.points} for s in doc.series if s.key.load == "100/s"
             and s.key.arrangement == "one-at-a-time" and not any(p.study for p in s.points)}
    assert hosts == {"lab-1": set(one), "lab-2": set(two)}

    again = perflab_model("archive", "import", tmp_path / "lab-2.tar", store=team)
    assert again.returncode == EXIT_OK and "0 runs imported, 5 already here" in again.stderr


def test_a_different_run_under_a_known_id_is_refused_and_the_stored_one_kept(machines, tmp_path):
    root, one, _ = machines
    assert perflab_model("archive", "export", tmp_path / "a.tar", "--run", one[0], store=root / "lab-1").returncode == 0
    team = tmp_path / "team"
    assert perflab_model("archive", "import", tmp_path / "a.tar", store=team).returncode == EXIT_OK
    path = Store(team).run_dir(one[0]) / "run.json"
    data = json.loads(path.read_text())
    data["label"] = "changed here"
    path.write_text(json.dumps(data))
    result = perflab_model("archive", "import", tmp_path / "a.tar", store=team)
    assert result.returncode == EXIT_FAILED
    assert "refused" in result.stderr and "not overwritten" in result.stderr
    assert json.loads(path.read_text())["label"] == "changed here"


def _rewrite(source, target, change):
    """A copy of a tar archive with `change(name, data) -> (name, data) | None` applied to each file."""
    with tarfile.open(source) as tar, tarfile.open(target, "w") as out:
        for member in tar.getmembers():
            data = tar.extractfile(member).read() if member.isfile() else b""
            changed = change(member.name, data)
            if changed is None:
                continue
            name, data = changed
            info = tarfile.TarInfo(name)
            info.size = len(data)
            out.addfile(info, io.BytesIO(data))


def test_a_damaged_file_refuses_its_run_and_leaves_nothing_half_written(machines, tmp_path):
    root, one, _ = machines
    perflab_model("archive", "export", tmp_path / "a.tar", "--run", one[0], "--run", one[1], store=root / "lab-1")

    def damage(name, data):
        if name == f"runs/{one[1]}/transactions.parquet":
            data = data[:100] + bytes([data[100] ^ 1]) + data[101:]
        return name, data

    _rewrite(tmp_path / "a.tar", tmp_path / "damaged.tar", damage)
    team = tmp_path / "team"
    result = perflab_model("archive", "import", tmp_path / "damaged.tar", store=team)
    assert result.returncode == EXIT_FAILED and "checksum" in result.stderr
    assert Store(team).run_dir(one[0]).is_dir() and not Store(team).run_dir(one[1]).exists()
    assert [p.name for p in team.iterdir() if p.name.startswith(".import")] == []
    assert {r.run_id for r in Store(team).rows()} == {one[0]}


@pytest.mark.parametrize("evil", ["../outside", "/etc/evil", "runs/../../outside", "elsewhere/x/y", "runs/x"])
def test_an_archive_with_a_member_outside_the_store_is_refused_before_anything_is_written(machines, tmp_path, evil):
    root, one, _ = machines
    perflab_model("archive", "export", tmp_path / "a.tar", "--run", one[0], store=root / "lab-1")
    _rewrite(tmp_path / "a.tar", tmp_path / "evil.tar",
             lambda name, data: (name, data) if name != MANIFEST else (name, data))
    with tarfile.open(tmp_path / "evil.tar", "a") as tar:
        info = tarfile.TarInfo(evil)
        info.size = 4
        tar.addfile(info, io.BytesIO(b"evil"))
    team = tmp_path / "team"
    result = perflab_model("archive", "import", tmp_path / "evil.tar", store=team)
    assert result.returncode == EXIT_USAGE and "Traceback" not in result.stderr
    assert not (tmp_path / "outside").exists() and not Store(team).run_dir(one[0]).exists()


def test_a_link_in_an_archive_is_refused(machines, tmp_path):
    root, one, _ = machines
    perflab_model("archive", "export", tmp_path / "a.tar", "--run", one[0], store=root / "lab-1")
    with tarfile.open(tmp_path / "a.tar", "a") as tar:
        info = tarfile.TarInfo(f"runs/{one[0]}/link")
        info.type = tarfile.SYMTYPE
        info.linkname = "/etc/passwd"
        tar.addfile(info)
    result = perflab_model("archive", "import", tmp_path / "a.tar", store=tmp_path / "team")
    assert result.returncode == EXIT_USAGE and "not a regular file" in result.stderr


def test_export_chooses_by_workload_and_time_and_refuses_bad_input(machines, tmp_path):
    root, one, _ = machines
    none = perflab_model("archive", "export", tmp_path / "x.tar", "--workload", "no-such", store=root / "lab-1")
    assert none.returncode == EXIT_USAGE and "nothing to export" in none.stderr
    future = perflab_model("archive", "export", tmp_path / "x.tar", "--since", "2999-01-01", store=root / "lab-1")
    assert future.returncode == EXIT_USAGE
    bad = perflab_model("archive", "export", tmp_path / "x.tar", "--since", "yesterday", store=root / "lab-1")
    assert bad.returncode == EXIT_USAGE and "--since" in bad.stderr
    zip_ = perflab_model("archive", "export", tmp_path / "x.zip", store=root / "lab-1")
    assert zip_.returncode == EXIT_USAGE
    (tmp_path / "junk.tar").write_bytes(b"not a tar file at all")
    junk = perflab_model("archive", "import", tmp_path / "junk.tar", store=tmp_path / "team")
    assert junk.returncode == EXIT_USAGE and len(junk.stderr.strip().splitlines()) == 1

"""`perflab run --keep PAGE`: a single run's report stored beside a page, as a page citing the run
needs (issue 39: a run id a page quotes is traceable only when its report is in the repository)."""

from __future__ import annotations

import json

from cli_helpers import noop_workload, perflab, write_workload

from perflab.report.book.cited import NumberPool, quoted_numbers
from perflab.report.book.layout import RUN_JSON, Library


def _checkout(tmp_path):
    """A checkout's shape: a page under docs/, whose reports go to docs/reports/."""
    docs = tmp_path / "checkout" / "docs"
    docs.mkdir(parents=True)
    page = docs / "page.md"
    page.write_text("# A page\n")
    return page


def test_a_run_kept_beside_a_page_is_found_by_its_id_with_its_numbers(tmp_path):
    page = _checkout(tmp_path)
    workload = write_workload(tmp_path, noop_workload("kept-run"))
    result = perflab("run", workload, "--keep", page, "--quiet", store=tmp_path / "st")
    assert result.returncode == 0, result.stderr[-2000:]
    run_id = result.stdout.strip().splitlines()[-1]
    kept = page.parent / "reports" / run_id
    assert f"kept: {kept}" in result.stderr.replace("\n", "")
    library = Library.scan(page.parent)
    stored = library.find(run_id)
    assert stored is not None and stored.kind == "run" and library.holds(run_id)
    record = json.loads((kept / RUN_JSON).read_text())
    assert record["run_id"] == run_id and record["status"] == "complete"
    # The run's own reduction, as `perflab show --json` gives it: the kept record is that run's.
    shown = json.loads(perflab("show", run_id, "--json", store=tmp_path / "st").stdout)["values"]
    assert record["metrics"]["values"]["tx_ok"] == shown["tx_ok"] > 0
    # A page's quote of the run's ETR is checked against the kept report's numbers.
    etr = [q for q in quoted_numbers(stored.text()) if q.value == round(shown["etr_t"], 1)]
    assert etr and NumberPool([shown["etr_t"]]).holds(etr[0])


def test_keep_names_a_page_that_does_not_exist_before_anything_runs(tmp_path):
    workload = write_workload(tmp_path, noop_workload("kept-run"))
    result = perflab("run", workload, "--keep", tmp_path / "missing.md", store=tmp_path / "st")
    assert result.returncode == 2 and "missing.md" in result.stderr and "--keep" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "st" / "runs").is_dir() or not any((tmp_path / "st" / "runs").iterdir())


def test_set_changes_a_field_for_one_run_and_a_bad_change_names_its_path(tmp_path):
    """`perflab run --set PATH=VALUE`: a study configuration's `set:` for one run (how a page's
    single run says "the workload, through apsw"), stored with the run."""
    from cli_helpers import load_run, run_dir_of

    workload = write_workload(tmp_path, noop_workload("set-run"))
    result = perflab("run", workload, "--set", "load.users=3", "--quiet", store=tmp_path / "st")
    assert result.returncode == 0, result.stderr[-2000:]
    run, tx = load_run(run_dir_of(tmp_path / "st", result.stdout.strip().splitlines()[-1]))
    assert run["workload"]["load"]["users"] == 3 and tx["user"].nunique() == 3
    bad = perflab("run", workload, "--set", "scripts.nosuch.steps=[t]", store=tmp_path / "st")
    assert bad.returncode == 2 and "--set" in bad.stderr and "no entry named 'nosuch'" in bad.stderr
    assert "Traceback" not in bad.stderr
    shapeless = perflab("run", workload, "--set", "load.users", store=tmp_path / "st")
    assert shapeless.returncode == 2 and "PATH=VALUE" in shapeless.stderr

"""Issue 14, item 5: a password never reaches run.json, study.json, the reports, the catalog or
the terminal; it is shown as `***`. The run itself still gets the real one.

The seam is the record (perflab.records: every field of run.json and study.json, and the
catalog row made from the run record, is redacted as it is built) plus the text shown or
written into reports (perflab.safe_text). A PostgreSQL run against a port nobody listens on
fails at once and quotes its DSN in the reason: the test greps every file it left."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import perflab, write_workload

from perflab.records.study import as_study_document

SECRETS = ("s3cretDSN", "s3cretKV", "s3cretPG", "s3cretTOKEN", "s3cretAUTH")
DSN = "postgresql://bench:s3cretDSN@127.0.0.1:1/bank"

WORKLOAD = f"""
name: pg-secret
target: {{kind: postgres, dsn: "{DSN}"}}
transactions:
  - {{name: t, sql: "select 1"}}
scripts: [{{name: s, steps: [t]}}]
load: {{users: 1}}
timing: {{measurement: 1s}}
"""


def assert_no_secret(text: str, where: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret} in {where}"


def assert_no_secret_in_files(root: Path) -> None:
    files = [p for p in root.rglob("*") if p.is_file()]
    assert files
    for path in files:
        assert_no_secret(path.read_bytes().decode("utf-8", "replace"), str(path))


def test_redact_text_masks_dsn_and_key_value_passwords():
    from perflab.redact import redact_text

    assert redact_text(f"cannot connect to PostgreSQL at {DSN}: refused") == \
        "cannot connect to PostgreSQL at postgresql://bench:***@127.0.0.1:1/bank: refused"
    assert redact_text("host=h user=u password=s3cretKV dbname=d") == "host=h user=u password=*** dbname=d"
    assert redact_text("password = 's3cret KV' port=5") == "password = *** port=5"
    assert redact_text("env PGPASSWORD=s3cretPG pgbench -c 4") == "env PGPASSWORD=*** pgbench -c 4"
    assert redact_text("{'password': 's3cretKV', 'port': 5}") == "{'password': '***', 'port': 5}"
    assert redact_text('{"api_key": "s3cretTOKEN"}') == '{"api_key": "***"}'
    # nothing to mask: left as it is
    for text in ("postgresql://bench@127.0.0.1/bank", "resp_p95_t < 0.5", "target.token_env: PERFLAB_TOKEN",
                 "a: b = c", "https://example.com/a:b"):
        assert redact_text(text) == text


def _hostile_workload_dict() -> dict:
    return {"name": "pg-secret",
            "target": {"kind": "postgres", "dsn": DSN, "env": {"PGPASSWORD": "s3cretPG", "HOME": "/home/u"},
                       "options": "host=h password=s3cretKV"},
            "transactions": [{"name": "t", "request": {"headers": {"Authorization": "Bearer s3cretAUTH"}}}],
            "monitor": {"agent": "http://sut:9100", "token": "s3cretTOKEN", "token_env": None}}


def test_run_record_and_catalog_never_hold_a_secret(tmp_path):
    from perflab.caveats import as_caveat
    from perflab.records.run import RunRecord, read_run_record
    from perflab.store.atomic import write_json_atomic
    from perflab.store.catalog import Store

    store = Store(tmp_path / "store")
    record = RunRecord(run_id="20261126-000000-pg-secret-0000", workload=_hostile_workload_dict(),
                       label="user=u password=s3cretKV", created="2026-11-26T00:00:00+00:00")
    record.status, record.reason = "failed", f"cannot connect to PostgreSQL at {DSN}: refused"
    record.invalid = [as_caveat(f"run failed: cannot connect to PostgreSQL at {DSN}")]
    record.external = {"argv": ["pgbench", f"--dsn={DSN}"], "env": {"PGPASSWORD": "s3cretPG"}}
    run_dir = store.create_run_dir(record.run_id)
    write_json_atomic(run_dir / "run.json", record.dump())
    store.index(record)
    assert_no_secret_in_files(tmp_path)
    written = json.loads((run_dir / "run.json").read_text())
    assert written["workload"]["target"]["dsn"] == "postgresql://bench:***@127.0.0.1:1/bank"
    assert written["workload"]["target"]["env"] == {"PGPASSWORD": "***", "HOME": "/home/u"}
    assert written["workload"]["monitor"]["token"] == "***"
    assert written["reason"] == "cannot connect to PostgreSQL at postgresql://bench:***@127.0.0.1:1/bank: refused"
    assert_no_secret(repr(read_run_record(run_dir)), "the record read back")


def test_the_workload_the_run_uses_keeps_the_password(tmp_path):
    """Only the record is redacted: the workload model the run connects with is not."""
    from perflab.records.run import RunRecord
    from perflab.workload.loader import load_workload

    workload = load_workload(write_workload(tmp_path, WORKLOAD))
    record = RunRecord(run_id="x", workload=workload.model_dump(mode="json", by_alias=True))
    assert record.workload["target"]["dsn"] == "postgresql://bench:***@127.0.0.1:1/bank"
    assert workload.target.dsn == DSN


def test_a_failed_postgres_run_leaves_no_password_anywhere(tmp_path):
    path = write_workload(tmp_path, WORKLOAD)
    store = tmp_path / "store"
    outputs = []
    r = perflab("run", path, "--no-monitor", "--quiet", "--label", "password=s3cretKV", store=store, timeout=120)
    assert r.returncode == 1, r.stderr
    assert "postgresql://bench:***@127.0.0.1:1/bank" in r.stderr
    outputs.append(r)
    run_id = r.stdout.strip()
    for args in (["runs"], ["runs", "--json"], ["runs", "--rescan"], ["show", run_id], ["show", run_id, "--json"],
                 ["show", run_id, "--html"]):
        r = perflab(*args, store=store)
        assert r.returncode == 0, (args, r.stderr)
        outputs.append(r)
    for r in outputs:
        assert_no_secret(r.stdout + r.stderr, " ".join(map(str, r.args)))
    assert_no_secret_in_files(store)


def test_study_json_and_reports_never_hold_a_secret(tmp_path):
    from report.study_data import make_study

    from perflab.records.study import parse_study_document
    from perflab.report.write import write_reports
    from perflab.store.atomic import write_json_atomic

    study = make_study()
    study["workload"]["target"] = {"kind": "postgres", "dsn": DSN, "env": {"PGPASSWORD": "s3cretPG"}}
    study["workload"]["description"] = "against host=h password=s3cretKV"
    study["study"] = {"workload": _hostile_workload_dict()}
    study["runs"][0]["reason"] = f"cannot connect to PostgreSQL at {DSN}"
    study["warnings"].append(f"a SUT said {DSN}")
    doc = parse_study_document(study)
    write_json_atomic(tmp_path / "study.json", doc.dump())
    paths = write_reports(as_study_document(doc), tmp_path)
    assert set(paths) >= {"markdown", "html", "json"}
    assert_no_secret_in_files(tmp_path)
    assert "postgresql://bench:\\*\\*\\*@127.0.0.1:1/bank" in (tmp_path / "report.md").read_text()


@pytest.mark.parametrize("text", [f"failed: {DSN}", "password=s3cretKV", "{'token': 's3cretTOKEN'}"])
def test_the_terminal_never_shows_a_secret(text):
    from perflab.safe_text import terminal, visible

    for shown in (terminal(text), visible(text)):
        assert_no_secret(shown, "the shown text")
        assert "***" in shown


def test_a_transaction_error_quoting_a_dsn_is_stored_masked(tmp_path):
    """transactions.parquet keeps each failed transaction's error text: a SUT that quotes its
    DSN back (as drivers do in connection errors) must not write the password there either."""
    import pyarrow.parquet as pq

    path = write_workload(tmp_path, f"""
        name: py-secret
        target: {{kind: python}}
        transactions:
          - {{name: t, call: "perflab.sut.synthetic:fail", kwargs: {{message: "cannot reach {DSN}"}}}}
        scripts: [{{name: s, steps: [t]}}]
        think: 0.05
        load: {{users: 2}}
        timing: {{measurement: 1s}}
        placement: {{workers: 1}}
        """)
    store = tmp_path / "store"
    r = perflab("run", path, "--no-monitor", "--quiet", store=store, timeout=120)
    run_dir = next(store.rglob("transactions.parquet")).parent
    errors = [e for e in pq.read_table(run_dir / "transactions.parquet", columns=["error"]).column("error").to_pylist()
              if e is not None]
    assert errors, r.stderr
    assert all("postgresql://bench:***@127.0.0.1:1/bank" in e for e in errors), errors[:3]
    assert_no_secret_in_files(store)

"""Per-operation crypto costs through the python adapter, under two releases of `cryptography`
installed side by side (each run's workers import the one on their path)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from net.net_helpers import EXAMPLES, run_workload

from cases.release_packages import installed_releases
from perflab.sut import crypto_ops

CRYPTO = EXAMPLES / "crypto" / "crypto-ops.yaml"
RELEASES = ("41.0.7", "50.0.2")  # OpenSSL 3.1.4 and 4.0.x inside their wheels
SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture(scope="module")
def releases() -> dict[str, Path]:
    return installed_releases("cryptography", RELEASES)


def test_every_kind_runs_under_both_releases_and_each_release_is_the_one_imported(releases):
    # One operation of every kind in a process whose path starts with the release: the API moved
    # between them (TripleDES went to `decrepit`), and crypto_ops must serve both.
    for version, directory in releases.items():
        code = ("import json; from perflab.sut import crypto_ops as c\n"
                "[c.batch(k, ops=1, expect=%r) for k in c.OPS]\nprint(json.dumps(c.versions()))" % version)
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                              env={**os.environ, "PYTHONPATH": f"{directory}:{SRC}"})
        assert done.returncode == 0, done.stderr[-2000:]
        found = json.loads(done.stdout.strip().splitlines()[-1])
        assert found["cryptography"] == version
        assert found["path"].startswith(str(directory))


def _per_op_ms(tmp_path, release: Path, kind: str, version: str) -> float:
    run, metrics = run_workload(tmp_path, CRYPTO, {"target.path": [str(release)], "timing.stabilization": "0.5s",
                                                   "timing.measurement": "1s",
                                                   "transactions.op.kwargs": {"kind": kind, "expect": version}})
    assert run["status"] == "complete", run["reason"]
    values = metrics.values
    assert values["errors_t"] == 0 and values["tx_ok"] > 0
    return values["pbt_cmd_s"] / crypto_ops.OPS[kind]


def test_a_private_key_operation_costs_many_public_key_ones_under_each_release(tmp_path, releases):
    # The known cost: an RSA-2048 signature uses the 2048-bit private exponent (with CRT), a
    # verification the public exponent 65537 (17 multiplications): some 10-30x cheaper in every
    # OpenSSL. A factor of 3 is asserted, far inside that whatever else loads the machine (16x and
    # 23-29x measured under the two releases; a window of 1 s holds 250-370 transactions of each).
    for version, directory in releases.items():
        sign = _per_op_ms(tmp_path, directory, "rsa-sign:2048", version)
        verify = _per_op_ms(tmp_path, directory, "rsa-verify:2048", version)
        assert sign > 3 * verify, (version, sign, verify)


def test_a_wrong_release_on_the_path_fails_every_transaction(tmp_path, releases):
    wrong = releases[RELEASES[0]]
    run, metrics = run_workload(tmp_path, CRYPTO, {"target.path": [str(wrong)], "timing.measurement": "1s",
                                                   "transactions.op.kwargs": {"kind": "noop", "expect": RELEASES[1]}})
    assert metrics.values["tx_ok"] == 0 and metrics.values["errors_t"] > 0
    errors = set(pq.read_table(metrics.run_dir / "transactions.parquet").column("error").to_pylist())
    assert errors == {f"RuntimeError: cryptography {RELEASES[0]} was imported (from {wrong}/cryptography), "
                      f"not {RELEASES[1]}"}, errors


def test_kinds_name_their_operation_and_size():
    function, kwargs = crypto_ops.parse_kind("rsa-sign:4096")
    assert function is crypto_ops.rsa_sign and kwargs == {"bits": 4096}
    function, kwargs = crypto_ops.parse_kind("aes256-gcm:512")
    assert function is crypto_ops.aes_gcm and kwargs == {"bits": 256, "nbytes": 512}
    with pytest.raises(ValueError, match="unknown crypto operation"):
        crypto_ops.parse_kind("rot13:1024")

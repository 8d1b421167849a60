"""The case studies' files load: every configuration at every sweep value makes a valid workload
(a bad one would be a file:line error before any run)."""

from __future__ import annotations

import programs
import pytest
from net.net_helpers import EXAMPLES

from perflab.study.load import load_study

# Loading checks that a service's program is installed: the TLS studies' nginx.
STUDIES = ["postgres/storage-constrained-study.yaml",
           pytest.param("tls/tls-resumption-study.yaml", marks=programs.needs("nginx")),
           pytest.param("tls/tls-cipher-study.yaml", marks=programs.needs("nginx")),
           "tcp/echo-paths-study.yaml", "batch/copy-release-study.yaml"]


@pytest.mark.parametrize("name", STUDIES)
def test_case_study_files_load(name):
    study, workload, _ = load_study(EXAMPLES / name)
    assert study.sweep is not None and len(study.configurations) >= 2  # release (or path) x a second factor
    assert study.blocks >= 3  # a verdict per level


def test_the_crypto_release_study_names_its_releases_by_requirement(tmp_path):
    text = (EXAMPLES / "crypto" / "crypto-release-study.yaml").read_text()
    text = text.replace("workload: crypto-ops.yaml", f"workload: {EXAMPLES / 'crypto' / 'crypto-ops.yaml'}")
    path = tmp_path / "crypto-release-study.yaml"
    path.write_text(text)
    study, _, _ = load_study(path)
    kinds = study.sweep.values
    from perflab.sut.crypto_ops import OPS

    assert set(kinds) <= set(OPS)  # every kind has its batch size
    assert [c.name for c in study.configurations] == ["cryptography 41.0.7", "cryptography 50.0.2"]
    assert [c.set["target.release"] for c in study.configurations] == [["cryptography==41.0.7"],
                                                                        ["cryptography==50.0.2"]]


def test_the_copy_release_study_runs_the_seed_s_shapes_under_the_release_it_names():
    from perflab.sut.copy_job import parse_shape

    study, _, _ = load_study(EXAMPLES / "batch" / "copy-release-study.yaml")
    assert all(parse_shape(v) for v in study.sweep.values)  # every shape is a valid one
    for configuration in study.configurations:
        (requirement,) = configuration.set["target.release"]
        assert requirement == f"zstandard=={configuration.set['transactions.copy.kwargs.expect']}"

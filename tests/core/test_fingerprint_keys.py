"""The fingerprint's one key table (perflab.records.fingerprint): every key the machine records
is in it, the identities derived from it are the sets perflab has always compared (a bias
bound's host key must not change, or every stored bound is lost), and the reports show its
names, order and formats."""

from __future__ import annotations

from perflab.records import fingerprint as keys
from perflab.records.bias import HOST_IDENTITY, HostIdentity
from perflab.report import view as v
from perflab.sut.fingerprint import machine_fingerprint


def test_every_key_the_machine_records_is_named_in_the_table_as_hardware():
    recorded = set(machine_fingerprint())
    named = {k.key: k for k in keys.KEYS}
    assert recorded - {"python"} <= set(keys.MACHINE_KEYS)
    assert named["python"].part == "software"
    assert len(named) == len(keys.KEYS), "a key is named twice"


def test_the_identities_are_the_sets_perflab_compares():
    assert set(keys.identity("machine")) == {"cpu_model", "cores", "memory_bytes", "kernel", "arch", "processors"}
    assert HOST_IDENTITY == ("cpu_model", "cores", "kernel", "arch", "virtualized")
    assert tuple(HostIdentity.model_fields) == HOST_IDENTITY
    assert set(keys.identity("series-host")) == {"hostname", "cpu_model", "cores", "memory_bytes", "arch"}
    # the bias file's name is a hash of the identity: a fixed machine keeps its key
    host = HostIdentity.of({"cpu_model": "X", "cores": 2, "kernel": "6.1", "arch": "x86_64", "virtualized": True,
                            "memory_bytes": 1, "hostname": "h"})
    assert host.key == HostIdentity(cpu_model="X", cores=2, kernel="6.1", arch="x86_64", virtualized=True).key


def test_a_run_s_rows_follow_the_table():
    fingerprint = {"page_size": 4096, "kernel": "6.1", "cpu_model": "X", "memory_bytes": 2**31,
                   "perf_counters": {"available": False, "reason": "no PMU"}, "zz_extra": 1}
    hardware, software = keys.split_fingerprint({**fingerprint, "placement": "p", "sut_started": "t", "sut_version": "3.4",
                                                 "python": "3.11"})
    assert v.fingerprint_rows(hardware, "hardware") == [
        ("CPU model", "X"), ("memory", "2.0 GiB"), ("kernel", "6.1"), ("CPU counters (I)", "unavailable (no PMU)"),
        ("page size", "4096")]
    assert v.fingerprint_rows(software, "software") == [("SUT version", "3.4"), ("python", "3.11"),
                                                        ("zz extra", "1")]

"""machine_fingerprint() against independent readings of the same facts."""

from __future__ import annotations

import os
import re

from perflab.monitor.sources.perf_counters import probe
from perflab.sut.fingerprint import machine_fingerprint


def test_fingerprint_matches_the_machine():
    fp = machine_fingerprint()
    assert fp["cores"] == os.cpu_count() or fp["cores"] == len(fp["online_cpus"])
    assert fp["memory_bytes"] == os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    assert fp["kernel"] == os.uname().release
    assert fp["cgroup_version"] in ("v1", "v2", "hybrid", None)
    ok, why = probe()
    assert fp["perf_counters"] == {"available": ok, "reason": why}
    assert re.fullmatch(r"[0-9a-f-]{36}", fp["boot_id"] or "")
    assert fp["hostname"] == os.uname().nodename
    assert fp["python"].split()[-1] == "{}.{}.{}".format(*os.sys.version_info[:3])
    assert fp["cpu_model"]

"""Guest vs native against the truth: the SUT really runs inside gVisor's sandbox, and the layer's
cost is measured in the run's rows, not assumed (sut/isolation.py, docs/real-systems.md "Guest vs
native"). Needs root and runsc (.ci/run installs it; skipped where it is not installed)."""

from __future__ import annotations

import json
import os

import pytest
from cli_helpers import load_run, perflab, run_dir_of, write_workload

from perflab.sut.isolation import GVISOR_KERNEL_VERSION
from perflab.tools import find_go_tool

pytestmark = pytest.mark.skipif(find_go_tool("runsc") is None or os.geteuid() != 0,
                                reason="gVisor's runsc is not installed (or not root): .ci/run installs it")

# Each job asks the kernel it runs on for its version and exits 0 only if it is gVisor's Sentry:
# an error in every job if the command ran on the host's kernel.
PROBE = f"""
name: guest-probe
target:
  kind: command
  isolation: {{layer: LAYER}}
transactions:
  - name: probe
    class: batch
    command: [/bin/sh, -c, "grep -q '{GVISOR_KERNEL_VERSION}' /proc/version"]
    timeout: 60s
scripts: [{{name: s, steps: [probe]}}]
load: {{jobs: 6, initiators: 1, timeout: 5m}}
placement: {{workers: 1}}
seed: 1
"""


def _run(tmp_path, store, layer):
    path = write_workload(tmp_path, PROBE.replace("LAYER", layer), f"probe-{layer}.yaml")
    result = perflab("run", path, "-q", store=store, timeout=600)
    runs = sorted(p.name for p in (store / "runs").iterdir() if p.is_dir())  # the store holds this run only
    assert len(runs) == 1, (runs, result.stderr)
    return result, runs[0]


def test_each_job_runs_on_gvisors_kernel_and_the_layers_cpu_is_measured(tmp_path, store):
    result, run_id = _run(tmp_path, store, "gvisor")
    assert result.returncode == 0, result.stderr
    run, tx = load_run(run_dir_of(store, run_id))
    # every job saw the Sentry's /proc/version: the command ran in the sandbox, not on the host
    assert len(tx) == 6 and tx.ok.all(), tx
    assert run["fingerprint"]["isolation"].startswith("gvisor (") and "platform systrap" in run["fingerprint"]["isolation"]
    shown = json.loads(perflab("show", run_id, "--json", store=store).stdout)
    comps = shown["per_component"]
    # the layer's own processes were seen and their CPU counted with the SUT's: the Sentry (the
    # guest's kernel), and runsc, which builds each sandbox
    sentry = comps["sentry"]
    assert (sentry["srv_cp_sec_v"] or 0) + (sentry["srv_virt_sec_v"] or 0) > 0, comps
    assert "runsc" in comps, comps


def test_the_probe_fails_natively_so_it_tells_the_two_apart(tmp_path, store):
    result, run_id = _run(tmp_path, store, "native")
    run, tx = load_run(run_dir_of(store, run_id))
    assert run["fingerprint"]["isolation"] == "native"
    assert len(tx) == 6 and not tx.ok.any(), tx  # grep found the host's kernel, not gVisor's

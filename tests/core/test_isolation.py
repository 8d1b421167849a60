"""Guest vs native (sut/isolation.py): the command line that puts a SUT behind gVisor, the (V)
components that split its CPU, the study's one-field switch between native and guest. No sandbox
is started here (tests/net/test_guest.py runs one)."""

from __future__ import annotations

from pathlib import Path

import pytest

from perflab.errors import SutFailure
from perflab.study.configure import apply_changes, configured_workload
from perflab.study.model import Configuration
from perflab.sut import isolation
from perflab.workload.model import Isolation, Workload

ECHO = Path(__file__).resolve().parents[2] / "examples" / "guest" / "echo-guest.yaml"


def _fake_runsc(tmp_path: Path) -> str:
    runsc = tmp_path / "runsc"
    runsc.write_text("#!/bin/sh\necho 'runsc version test'\n")
    runsc.chmod(0o755)
    return str(runsc)


def test_native_leaves_the_command_as_it_is():
    assert isolation.wrap(["/bin/true", "x"], None) == ["/bin/true", "x"]
    assert isolation.wrap(["/bin/true"], Isolation(layer="native")) == ["/bin/true"]
    assert isolation.prefix(Isolation()) == []
    assert isolation.components(None, {"app": "echo"}) == {"app": "echo"}
    assert isolation.describe(None) == "native" and isolation.describe(Isolation()) == "native"


def test_gvisor_runs_the_command_with_runsc_do_in_the_runs_cgroup(tmp_path, monkeypatch):
    monkeypatch.setattr(isolation, "STATE_ROOT", str(tmp_path / "state"))
    runsc = _fake_runsc(tmp_path)
    argv = isolation.wrap(["/bin/echo", "hi"], Isolation(layer="gvisor", runsc=runsc, options=["--debug"]))
    assert argv[0] == runsc
    # the platform asked for, the host's network, the sandbox left in perflab's cgroup (so its CPU
    # is the SUT's), global flags before `do`, the program after `--`
    assert argv[1:argv.index("do")] == ["--rootless=true", "--platform=systrap", "--network=host",
                                        "--ignore-cgroups", f"--root={tmp_path / 'state'}", "--debug"]
    assert argv[argv.index("do"):] == ["do", "--quiet", "--", "/bin/echo", "hi"]
    assert (tmp_path / "state").is_dir()
    assert isolation.describe(Isolation(layer="gvisor", runsc=runsc)).startswith("gvisor (runsc version test;")


def test_a_missing_runsc_fails_the_run_saying_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setattr(isolation, "find_go_tool", lambda name: None)
    with pytest.raises(SutFailure, match="go install gvisor.dev/gvisor/runsc"):
        isolation.wrap(["/bin/true"], Isolation(layer="gvisor"))
    with pytest.raises(SutFailure, match="runsc was not found"):
        isolation.wrap(["/bin/true"], Isolation(layer="gvisor", runsc=str(tmp_path / "nothing")))


def test_the_layers_processes_come_first_and_the_services_own_rules_stay():
    rules = isolation.components(Isolation(layer="gvisor"), {"server": "echo_server", "sentry": "mine"})
    assert list(rules) == ["sentry", "gofer", "runsc", "server"]
    assert rules["sentry"] == isolation.COMPONENTS["sentry"]  # the layer's name wins
    from perflab.monitor.sources.process_tree import ComponentRules

    classify = ComponentRules(rules).classify
    assert classify("exe", "runsc-sandbox --root=/run/perflab-runsc boot --bundle=/x") == "sentry"
    assert classify("exe", "runsc-gofer --root=/run/perflab-runsc gofer") == "gofer"
    assert classify("runsc", "/root/go/bin/runsc --rootless=false do --quiet -- python echo_server.py") == "runsc"
    assert classify("python3", "python3 /x/echo_server.py 127.0.0.1:17008 50") == "server"
    assert classify("exe", "") == "other"  # systrap's stubs: the program's own instructions


def test_the_gvisor_kernel_is_told_from_a_real_one():
    assert isolation.inside_gvisor("Linux version 4.19.0-gvisor #1 SMP Sun Jan 10 15:06:54 PST 2016\n")
    assert not isolation.inside_gvisor("Linux version 6.18.44 (builder@host) #1 SMP PREEMPT_DYNAMIC")


def test_one_study_switches_the_service_between_native_and_guest():
    from perflab.workload.loader import load_workload

    base = load_workload(ECHO)
    assert base.service is not None and base.service.isolation is not None
    guest = configured_workload(base, Configuration(name="gvisor", set={"service.isolation.layer": "gvisor"}))
    assert guest.service is not None and guest.service.isolation is not None
    assert guest.service.isolation.layer == "gvisor" and guest.service.isolation.platform == "systrap"


def test_a_field_of_an_optional_block_the_base_leaves_out_can_be_set():
    data = {"name": "w", "target": {"kind": "command", "isolation": None}}
    changed = apply_changes(data, {"target.isolation.layer": "gvisor"})
    assert changed["target"]["isolation"] == {"layer": "gvisor"}
    assert data["target"]["isolation"] is None  # the base is not changed
    workload = Workload.model_validate({
        "name": "w", "target": {"kind": "command"},
        "transactions": [{"name": "t", "command": ["/bin/true"]}], "scripts": [{"name": "s", "steps": ["t"]}],
        "load": {"users": 1}})
    guest = configured_workload(workload, Configuration(name="g", set={"target.isolation.layer": "gvisor"}))
    assert guest.target.isolation == Isolation(layer="gvisor")  # type: ignore[union-attr]

"""Two network paths to one echo server: a Unix-domain socket, and TCP over a veth pair between
network namespaces the run creates and removes; CPU per transaction on both sides."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from net.net_helpers import EXAMPLES, run_workload

from perflab.errors import InputError
from perflab.sut.netns import namespaces_permitted
from perflab.workload.loader import load_workload

ECHO = EXAMPLES / "tcp" / "echo.yaml"
SHORT = {"timing.stabilization": "1s", "timing.measurement": "2s"}
PERMITTED, WHY_NOT = namespaces_permitted()
needs_netns = pytest.mark.skipif(not PERMITTED, reason=f"network namespaces not permitted here: {WHY_NOT}")


def _echo_only_on(tmp_path, address: str, target: str, ready: str):
    path = tmp_path / "echo.yaml"
    path.write_text(textwrap.dedent(f"""
        name: echo-path
        service:
          command: ["{{python}}", "{EXAMPLES / 'tcp' / 'echo_server.py'}", "{address}"]
          ready: {ready}
        target: {target}
        transactions: [{{name: echo, tcp: {{}}}}]
        scripts: [{{name: s, steps: [echo]}}]
        load: {{users: 2}}
        timing: {{stagger: 0s, stabilization: 1s, measurement: 2s}}
    """).lstrip())
    return path


def test_echo_over_a_unix_socket_only(tmp_path):
    # The server listens on the Unix socket and nowhere else, so every echo went that way. A
    # socket file, in a short directory: pytest's own is longer than a socket path may be (108).
    short = Path(tempfile.mkdtemp(prefix="perflab-"))
    try:
        sock = short / "echo.sock"
        path = _echo_only_on(tmp_path, f"unix:{sock}", f'{{kind: tcp, unix: "{sock}", message_size: 64}}',
                             f'{{unix: "{sock}"}}')
        run, metrics = run_workload(tmp_path, path)
    finally:
        shutil.rmtree(short)
    assert run["status"] == "complete", run["reason"]
    values = metrics.values
    assert values["errors_t"] == 0 and values["tx_ok"] > 0
    assert values["pbt_cmd_s"] > 0 and values["driver_cpu_cmd"] > 0  # CPU per transaction, both sides
    assert values["connects_cmd"] == 0  # one connection per user, opened before the window


def test_the_example_server_takes_the_unix_path_when_the_target_names_it(tmp_path):
    run, metrics = run_workload(tmp_path, ECHO, {**SHORT, "target.unix": "@perflab-echo-{run_id}"}, users=2)
    assert run["status"] == "complete", run["reason"]
    assert metrics.values["errors_t"] == 0 and metrics.values["tx_ok"] > 0


@needs_netns
def test_echo_over_a_veth_pair_between_namespaces_created_and_removed_by_the_run(tmp_path):
    run, metrics = run_workload(tmp_path, ECHO, {**SHORT, "service.network": {}}, users=2)
    assert run["status"] == "complete", run["reason"]
    values = metrics.values
    assert values["errors_t"] == 0 and values["tx_ok"] > 0
    assert values["pbt_cmd_s"] > 0 and values["driver_cpu_cmd"] > 0
    described = run["fingerprint"]["service_network"]
    namespace, host_if = described.split()[1].rstrip(":"), described.split()[3]
    # The echoes crossed the veth pair: its host end sent at least the 64-byte payload of every
    # transaction in the window (headers come on top, so this is a lower bound, never an estimate).
    samples = pq.read_table(metrics.run_dir / "samples.parquet").to_pandas()
    inside = samples[(samples.t >= run["window"]["start"]) & (samples.t <= run["window"]["end"])]
    sent = inside[f"h.net.{host_if}.tx_bytes"].iloc[-1] - inside[f"h.net.{host_if}.tx_bytes"].iloc[0]
    assert sent >= 64 * values["tx_ok"] * 0.8  # the samples' span is a little shorter than the window
    # ... and the run removed both the namespace and the pair
    assert namespace not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert subprocess.run(["ip", "link", "show", host_if], capture_output=True).returncode != 0


def test_a_run_where_namespaces_are_refused_fails_saying_why(tmp_path, monkeypatch):
    # An `ip` that answers as it does without CAP_SYS_ADMIN (first on PATH for this test only).
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "ip").write_text("#!/bin/sh\necho 'mount --make-shared /run/netns failed: Operation not permitted' >&2\n"
                             "exit 1\n")
    (fake / "ip").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:/usr/bin:/bin")
    run, _ = run_workload(tmp_path, ECHO, {**SHORT, "service.network": {}}, users=1)
    assert run["status"] == "failed"
    assert "network namespaces are not permitted here" in run["reason"], run["reason"]
    assert "Operation not permitted" in run["reason"]


def test_a_target_that_misses_the_namespace_is_an_input_error_with_its_line(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text(ECHO.read_text().replace('host: "{service_address}"', "host: 127.0.0.1")
                    .replace("service:\n", "service:\n  network: {}\n", 1)
                    .replace("{workload_dir}", str(ECHO.parent)))
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if text.strip().startswith("host:"))
    with pytest.raises(InputError) as caught:
        load_workload(path)
    assert str(caught.value).startswith(f"{path}:{line}: target.host")
    assert "169.254.77.2" in str(caught.value)

"""The SUT host of the remote tests: a network namespace running nginx (in a cgroup of its own,
on CPU 1), a node_exporter, a process-exporter and `perflab agent`; perflab drives it from the
root namespace over the lab's bridge. Package-scoped: started once for tests/remote/ and removed
after its last test -- test_distributed, test_remote_monitor and test_remote_outcome share one
SUT host (each starts any agent of its own on a port of its own), instead of a namespace, nginx,
two exporters and an agent started and stopped three times."""

from __future__ import annotations

import json
import os
import secrets
import socket
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import programs
import pytest

from .netlab import Host, NetLab, wait_for

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src"
NGINX = programs.path("nginx")
NODE_EXPORTER = programs.path("node-exporter")
PROCESS_EXPORTER = programs.path("process-exporter")
NGINX_PORT, NODE_PORT, PROCESS_PORT, AGENT_PORT = 8080, 9100, 9256, 8766

needs_nginx = programs.needs("nginx")
needs_exporters = programs.needs("node-exporter", "process-exporter")


def python_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(SRC), os.environ.get("PYTHONPATH")) if p)}


def start_agent(host: Host, port: int, token: str, log: Path, *args: str) -> str:
    """`perflab agent` in `host`; -> its URL once it answers."""
    argv = [sys.executable, "-m", "perflab.cli", "agent", "--listen", f"{host.address}:{port}", "--token", token,
            *args]
    host.start(argv, log=log, env=python_env())
    url = f"http://{host.address}:{port}"

    def up() -> bool:
        request = urllib.request.Request(url + "/clock", headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(request, timeout=1) as answer:
            return answer.status == 200

    try:
        wait_for(up, 30, "perflab agent")
    except TimeoutError as exc:
        raise TimeoutError(f"{exc}; its log: {log.read_text() if log.exists() else ''}") from None
    return url


@dataclass
class SutHost:
    lab: NetLab
    host: Host
    cgroup: object  # perflab.sut.cgroup.SutCgroup holding nginx
    base_url: str
    agent_url: str
    token: str
    node_url: str
    process_url: str
    dir: Path

    def workload(self, path: Path, monitor: str | None, *, users: int = 4, measurement: str = "4s",
                 extra: str = "") -> Path:
        path.write_text("\n".join([
            "name: remote-nginx",
            "target: {kind: http, base_url: '%s', client: httptools}" % self.base_url,
            "transactions: [{name: page, class: trivial, http: [{path: /index.html, expect_body: Welcome}]}]",
            "scripts: [{name: reader, steps: [page]}]",
            f"load: {{users: {users}}}",
            f"timing: {{stagger: 0s, stabilization: 1s, measurement: {measurement}}}",
            *([f"monitor: {monitor}"] if monitor else []),
            extra,
        ]) + "\n")
        return path


@pytest.fixture(scope="package")
def sut_host(tmp_path_factory):
    why = NetLab.available()
    if why is not None:
        pytest.skip(why)
    from perflab.sut.cgroup import SutCgroup

    work = tmp_path_factory.mktemp("sut-host")
    os.chmod(work, 0o755)
    token = secrets.token_urlsafe(24)
    with NetLab() as lab:
        host = lab.host("sut")
        cgroup, reason = SutCgroup.try_create(f"plx-nginx-{os.getpid()}", cpus=[1] if os.cpu_count() > 1 else None)
        if cgroup is None:
            pytest.skip(f"no cgroup for the SUT: {reason}")
        try:
            conf = (REPO / "examples" / "http" / "nginx-nolog.conf").read_text()
            conf = conf.replace("{run_dir}", str(work)).replace("listen 127.0.0.1:18080",
                                                                f"listen {host.address}:{NGINX_PORT}")
            conf = conf.replace("{workload_dir}", str(REPO / "examples" / "http"))
            (work / "nginx.conf").write_text(conf)
            (work / "nginx-tmp").mkdir()
            host.start([NGINX, "-c", str(work / "nginx.conf"), "-e", str(work / "nginx-error.log"),
                        "-g", "daemon off;"], log=work / "nginx.out", preexec_fn=cgroup.add_self)
            base_url = f"http://{host.address}:{NGINX_PORT}"
            wait_for(lambda: urllib.request.urlopen(base_url + "/index.html", timeout=1).status == 200, 30, "nginx")
            node_url = process_url = ""
            if Path(NODE_EXPORTER).exists() and Path(PROCESS_EXPORTER).exists():
                host.start([NODE_EXPORTER, f"--web.listen-address={host.address}:{NODE_PORT}"],
                           log=work / "node-exporter.log")
                (work / "process-exporter.yaml").write_text(
                    'process_names:\n  - name: "{{.Comm}}"\n    comm: [nginx]\n')
                host.start([PROCESS_EXPORTER, "-web.listen-address", f"{host.address}:{PROCESS_PORT}",
                            "-config.path", str(work / "process-exporter.yaml")], log=work / "process-exporter.log")
                node_url = f"http://{host.address}:{NODE_PORT}/metrics"
                process_url = f"http://{host.address}:{PROCESS_PORT}/metrics"
                wait_for(lambda: urllib.request.urlopen(node_url, timeout=2).status == 200, 30, "node_exporter")
                wait_for(lambda: b"nginx" in urllib.request.urlopen(process_url, timeout=2).read(), 30,
                         "process-exporter")
            cgroup_dir = cgroup.dirs.get("cpuacct") or cgroup.dirs.get("unified")
            agent_url = start_agent(host, AGENT_PORT, token, work / "agent.log", "--cgroup", str(cgroup_dir),
                                    "--component", "master=nginx: master", "--component", "workers=nginx: worker")
            yield SutHost(lab, host, cgroup, base_url, agent_url, token, node_url, process_url, work)
        finally:
            lab.close()
            cgroup.remove()


def read_json(url: str, token: str | None = None) -> dict:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=5) as answer:
        return json.loads(answer.read())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

"""TCP echo and HTTP services as the SUT: started per run, driven, stopped; request sequences
with extraction and checks; a service that dies mid-run fails the run."""

from __future__ import annotations

import textwrap

from perflab.workload.service_port import free_port

from .net_helpers import EXAMPLES, needs_nginx, run_workload

ECHO_SERVER = EXAMPLES / "tcp" / "echo_server.py"


def echo_workload(tmp_path, port: int, extra: str = "", mode: str = "round_trip", messages: int = 1) -> object:
    path = tmp_path / "echo.yaml"
    path.write_text(textwrap.dedent(f"""
        name: echo-test
        service:
          command: ["{{python}}", "{ECHO_SERVER}", "{port}"]
          ready: {{tcp: {port}}}
        target: {{kind: tcp, port: {port}, message_size: 128, messages: {messages}, mode: {mode}}}
        transactions: [{{name: echo, tcp: {{}}}}]
        scripts: [{{name: s, steps: [echo]}}]
        load: {{users: 1}}
        timing: {{stagger: 0s, stabilization: 0.5s, measurement: 1.5s}}
        {extra}
    """).lstrip())
    return path


def test_echo_rate_grows_from_one_to_four_connections(tmp_path):
    # One connection waits a full round trip per message; four keep the server busier (4,500 vs
    # 13,300 a second measured: a window of 1.5 s holds thousands of round trips of either).
    rates = {}
    for users in (1, 4):
        path = echo_workload(tmp_path, free_port())
        run, metrics = run_workload(tmp_path, path, users=users)
        assert run["status"] == "complete", run["reason"]
        assert metrics.values["errors_t"] == 0
        assert metrics.values["pbt_cmd_s"] > 0  # the echo server's CPU per transaction
        rates[users] = metrics.values["etr_t"]
    assert rates[4] > rates[1], rates


def test_echo_streaming_several_messages_per_transaction(tmp_path):
    path = echo_workload(tmp_path, free_port(), mode="stream", messages=10)
    run, metrics = run_workload(tmp_path, path, users=2)
    assert run["status"] == "complete", run["reason"]
    assert metrics.values["errors_t"] == 0 and metrics.values["tx_ok"] > 0
    # the first echo byte arrives before the tenth message's echo completes
    assert metrics.values["avg_first_t"] < metrics.values["avg_last_t"]


def test_service_that_exits_mid_run_fails_the_run(tmp_path):
    port = free_port()
    path = tmp_path / "dies.yaml"
    # a server that serves for two seconds, then exits with code 3
    server = tmp_path / "short_server.py"
    server.write_text(textwrap.dedent(f"""
        import asyncio, sys
        exec(open({str(ECHO_SERVER)!r}).read().split("if __name__")[0])
        async def run():
            s = await asyncio.get_running_loop().create_server(Echo, "127.0.0.1", {port})
            await asyncio.sleep(2)
            sys.exit(3)
        asyncio.run(run())
    """))
    path.write_text(echo_workload(tmp_path, port).read_text().replace(f'"{ECHO_SERVER}"', f'"{server}"')
                    .replace("measurement: 1.5s", "measurement: 20s"))
    run, metrics = run_workload(tmp_path, path, users=2)
    assert run["status"] == "failed"
    assert "exited during the run (exit code 3)" in run["reason"], run["reason"]
    assert run["window"]["end"] < run["window"]["planned_end"]


SHOP = EXAMPLES / "http" / "shop.yaml"


@needs_nginx
def test_nginx_shop_request_sequences_with_extraction(tmp_path):
    run, metrics = run_workload(tmp_path, SHOP, users=4, stagger=0, stabilization=0.5, duration=2)
    assert run["status"] == "complete", run["reason"]
    assert run["fingerprint"]["sut_version"].startswith("nginx version")
    v = metrics.values
    # every check passed: the session's $.next and the list's $.items[0].href led to real pages
    assert v["errors_t"] == 0 and v["tx_ok"] > 100
    browse = metrics.per_class["nontrivial"]
    assert browse["avg_first_t"] < browse["avg_last_t"]  # three requests: the first ends well before the last
    assert {"master", "workers"} <= set(metrics.per_component)


@needs_nginx
def test_failed_checks_are_errors_and_the_lean_client_agrees(tmp_path):
    changes = {"transactions.page.http.0.expect_body": "No such text", "target.client": "httptools"}
    run, metrics = run_workload(tmp_path, SHOP, changes, users=2, stagger=0, stabilization=0.5, duration=2)
    assert run["status"] == "complete", run["reason"]
    per_class = metrics.per_class
    assert per_class["trivial"]["errors_t"] > 0 and per_class["trivial"]["tx_ok"] == 0  # the page check fails
    assert per_class["nontrivial"]["errors_t"] == 0 and per_class["nontrivial"]["tx_ok"] > 0  # browse still works

"""TCP echo and HTTP services as the SUT: started per run, driven, stopped; request sequences
with extraction and checks; a service that dies mid-run fails the run."""

from __future__ import annotations

import textwrap

import pyarrow.parquet as pq

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


def line_service(tmp_path, name: str, serve_body: str) -> tuple[int, str]:
    """A TCP service for a run: a script serving each connection with `serve_body` (the body of
    `async def serve(reader, writer)`), and the service block that starts it. -> (port, block)"""
    port = free_port()
    server = tmp_path / f"{name}.py"
    server.write_text(textwrap.dedent("""
        import asyncio

        async def serve(reader, writer):
        {body}

        async def main():
            async with await asyncio.start_server(serve, "127.0.0.1", {port}) as server:
                await server.serve_forever()

        asyncio.run(main())
    """).format(body=textwrap.indent(textwrap.dedent(serve_body).strip(), "    "), port=port))
    return port, f'service: {{command: ["{{python}}", "{server}"], ready: {{tcp: {port}}}}}'


def test_a_message_and_its_expected_reply_a_line_protocol_service(tmp_path):
    """`message` and `reply`: a request a real service answers (Redis's inline PING). A
    transaction whose reply is not the expected one fails, saying what came back."""
    port, service = line_service(tmp_path, "pong_server", """
        while line := await reader.readline():
            writer.write(b"+PONG\\r\\n" if line == b"PING\\r\\n" else b"-ERR unknown\\r\\n")
    """)
    path = tmp_path / "ping.yaml"
    path.write_text(textwrap.dedent(f"""
        name: ping-test
        {service}
        target: {{kind: tcp, port: {port}, message: "PING\\r\\n", reply: "+PONG\\r\\n"}}
        transactions:
          - {{name: ping, tcp: {{}}}}
          - {{name: wrong, tcp: {{message: "PONG\\r\\n", reply: "-ERR unknowN\\r\\n"}}}}
        scripts: [{{name: s, steps: [ping, ping, wrong]}}]
        load: {{users: 2}}
        timing: {{stagger: 0s, stabilization: 0.5s, measurement: 1.5s}}
    """).lstrip())
    for core, changes in (("native", None), ("python", {"driver.core": "python"})):
        run, metrics = run_workload(tmp_path, path, changes)
        assert run["status"] == "complete", run["reason"]
        assert run["fingerprint"]["driver_core"].startswith(core), run["fingerprint"]["driver_core"]
        ping, wrong = metrics.per_transaction["ping"], metrics.per_transaction["wrong"]
        assert ping["tx_ok"] > 100 and ping["errors_t"] == 0
        assert wrong["tx_ok"] == 0 and wrong["errors_t"] > 0
        # two pings per wrong one, each user in turn (the script's order)
        assert abs(ping["tx_ok"] - 2 * wrong["errors_t"]) <= 4
        table = pq.read_table(metrics.run_dir / "transactions.parquet", columns=["error"])
        errors = {e for e in table.column("error").to_pylist() if e is not None}
        assert errors == {"the reply is not the expected b'-ERR unknowN\\r\\n'"}, (core, errors)


def test_a_reply_cut_short_by_the_server_is_an_error_on_both_paths(tmp_path):
    """A server that answers part of the reply and closes: each such transaction fails with the
    same words on the compiled loop and the Python engine, and the next one connects anew."""
    port, service = line_service(tmp_path, "half_server", """
        await reader.readline()
        writer.write(b"+PO")  # three of the reply's seven bytes
        await writer.drain()
        writer.close()
    """)
    path = tmp_path / "half.yaml"
    path.write_text(textwrap.dedent(f"""
        name: half-test
        {service}
        target: {{kind: tcp, port: {port}, message: "PING\\r\\n", reply: "+PONG\\r\\n"}}
        transactions: [{{name: ping, tcp: {{}}}}]
        scripts: [{{name: s, steps: [ping]}}]
        think: 0.01
        load: {{users: 2}}
        timing: {{stagger: 0s, stabilization: 0.5s, measurement: 1.5s}}
    """).lstrip())
    for core, changes in (("native", None), ("python", {"driver.core": "python"})):
        run, metrics = run_workload(tmp_path, path, changes)
        assert run["fingerprint"]["driver_core"].startswith(core), run["fingerprint"]["driver_core"]
        # (the Python engine waits 0.2 s after each to see whether the service is down)
        assert metrics.values["tx_ok"] == 0 and metrics.values["errors_t"] > 3, (core, run["status"], run["reason"],
                                                                                  metrics.values["errors_t"])
        table = pq.read_table(metrics.run_dir / "transactions.parquet", columns=["error"])
        assert set(table.column("error").to_pylist()) == {
            "IncompleteReadError: the server closed the connection before the whole reply"}, core

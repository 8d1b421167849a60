"""The compiled loop's open loop and its requests with placeholders, beside the Python path: the
same arrivals at the same intended times with the same scripts (the schedule's own stream), the
in-flight bound dropping and recording what is past it, and the same bytes on the wire for the
same parameter draws."""

from __future__ import annotations

import socket
import time

import numpy as np
import programs
import pytest

from .native_harness import Server, drive, http_workload, read_request

pytestmark = [*programs.needs_compiled_loop(), pytest.mark.lab]


def ok_server(delay: float = 0.0, record: bool = False):
    def handler(conn: socket.socket, s: Server) -> None:
        buffer = bytearray()
        while (request := read_request(conn, buffer)) is not None:
            if record:
                with s.lock:
                    s.requests.append(request)
            if delay:
                time.sleep(delay)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")

    return handler


@pytest.fixture
def server():
    servers: list[Server] = []

    def start(handler) -> Server:
        servers.append(Server(handler))
        return servers[-1]

    yield start
    for s in servers:
        s.stop()


TXS = """
- {name: a, http: {path: /a}}
- {name: b, http: {path: /b}}
"""
SCRIPTS = "- {name: s1, weight: 3, steps: [a]}\n- {name: s2, steps: [b, a]}"


def test_the_same_arrivals_at_the_same_times_with_the_same_scripts_as_the_python_path(tmp_path, server):
    """Poisson arrivals at 300/s: each arrival's number, intended start (from t0) and script are
    the Python engine's to the bit, and its steps after the first think as the Python path's do."""
    s = server(ok_server())
    path = http_workload(tmp_path, s.port, TXS, SCRIPTS, think="0.004", load="{rate: 300, arrival: poisson}")
    runs = {}
    for core in ("auto", "python"):
        outcome, table, _ = drive(path, window=0.6, core=core)
        assert outcome.status == "complete" and outcome.dropped == 0
        assert table["ok"].all(), set(table["error"].dropna())
        firsts = table[table["think"].isna()].sort_values("user")
        runs[core] = firsts
    native, python = runs["auto"], runs["python"]
    n = min(len(native), len(python))
    assert n >= 120  # about 180 arrivals in 0.6 s
    assert list(native["user"][:n]) == list(python["user"][:n]) == list(range(n))
    assert list(native["script"][:n]) == list(python["script"][:n])
    assert (native["intended_start"].to_numpy()[:n] == python["intended_start"].to_numpy()[:n]).all()
    # each arrival starts at or after its intended time, never before
    assert (native["actual_start"] >= native["intended_start"]).all()


def test_lateness_and_response_count_from_the_schedule_and_in_flight_is_bounded(tmp_path, server):
    """A server that takes 150 ms per request, arrivals at 200/s and at most 8 in flight: the
    arrivals past the bound are dropped and recorded as such (the Python path's words); those
    issued keep their intended time from the schedule, so each response time holds the wait."""
    s = server(ok_server(delay=0.15))
    path = http_workload(tmp_path, s.port, "- {name: a, http: {path: /a}}", "- {name: s, steps: [a]}",
                         load="{rate: 200, arrival: constant, max_in_flight: 8}")
    outcome, table, _ = drive(path, window=0.5)
    dropped = table[table["error"].fillna("").str.startswith("dropped")]
    assert set(dropped["error"]) == {"dropped: 8 transactions already in flight"}
    assert outcome.dropped == len(dropped) >= 50  # about 100 arrivals, at most 8 every 150 ms issued
    done = table[table["ok"]]
    assert 8 <= len(done) <= 8 * 5
    gaps = sorted(table["intended_start"])
    assert max(abs(b - a - 1 / 200) for a, b in zip(gaps, gaps[1:])) < 1e-9  # constant arrivals: the schedule's
    assert ((done["end"] - done["intended_start"]) >= 0.15).all()


@pytest.mark.parametrize("load", ["{users: 1}", "{rate: 200, arrival: constant}"])
def test_placeholders_send_the_bytes_the_python_path_sends(tmp_path, server, load):
    """A path, a header, a plain body and a JSON body filled with drawn parameters -- a number
    whole and inside a string, a weighted choice of a string, a number, a bool and null, a
    sequence -- are the same bytes on either path for the same seed."""
    txs = """
    - name: post
      params:
        n: {random_int: [1, 1000000]}
        c: {choice: [x y, 7, true, null, "é\\"q"], weights: [1, 2, 3, 1, 1]}
        k: {sequence: 10, step: 3}
      http: {method: POST, path: "/items/{n}?k={k}", headers: {X-C: "{c}"}, json: {n: "{n}", s: "id-{n}-{c}", c: "{c}", k: ["{k}"]}}
    - name: text
      params: {m: {choice: [a, b]}}
      http: {method: PUT, path: /t, body: "m={m}&x={m}"}
    """
    scripts = "- {name: s, steps: [post, text]}"
    sent = {}
    s = server(ok_server(record=True))
    path = http_workload(tmp_path, s.port, txs, scripts, think="0.002", load=load)
    for core in ("auto", "python"):
        s.requests.clear()
        _, table, _ = drive(path, window=0.4, core=core)
        assert table["ok"].all(), set(table["error"].dropna())
        sent[core] = sorted(s.requests) if load.startswith("{rate") else list(s.requests)
    n = min(len(sent["auto"]), len(sent["python"]))
    assert n >= 20
    if load.startswith("{rate"):  # arrivals draw from their own streams, sequences from a shared counter
        common = set(sent["auto"]) & set(sent["python"])
        assert len(common) >= n // 2
    else:
        assert sent["auto"][:n] == sent["python"][:n]
    assert any(b'"c": true' in r for r in sent["auto"]) and any(b'"c": "x y"' in r for r in sent["auto"])


@pytest.mark.parametrize("load, wake", [("{rate: 3000, arrival: poisson}", "auto"),
                                        ("{rate: 3000, arrival: poisson}", "tick"), ("{users: 4}", "tick")])
def test_on_the_grid_the_timer_fires_once_a_millisecond_at_most(tmp_path, server, load, wake):
    """An open loop's arrivals by default (`wake: auto`), and think ends too with `wake: tick`: the
    compiled loop arms its timer on whole milliseconds of the monotonic clock, so it fires at most
    once per grid point however many fall due -- about 3 a millisecond here, each of which `exact`
    fires for -- and nothing starts before its intended time: the wait for the grid is lateness,
    recorded. Deterministic: a timerfd armed at distinct grid points cannot fire more often than
    they pass."""
    s = server(ok_server())
    path = http_workload(tmp_path, s.port, "- {name: a, http: {path: /a}}", "- {name: s, steps: [a]}",
                         think="0.001", load=load)
    path.write_text(path.read_text().replace("measurement: 1s", f"measurement: 1s, wake: {wake}"))
    outcome, table, engine = drive(path, window=0.5)
    assert outcome.status == "complete" and table["ok"].all(), set(table["error"].dropna())
    assert len(table) >= 600  # (an exact wake would fire about once for each)
    assert (table["actual_start"] >= table["intended_start"]).all()  # never early
    span_ms = 1e3 * table["end"].max()  # from t0 to the last response
    assert engine.core.timer_wakes <= span_ms + 2, (engine.core.timer_wakes, span_ms, len(table))

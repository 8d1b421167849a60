"""Workload files for network targets and external drivers: bad input is one clear message."""

from __future__ import annotations

import textwrap

import pytest

from perflab.errors import InputError
from perflab.workload.loader import load_workload

PG = """
name: pg
target: {kind: postgres, server: {bin: /usr/lib/postgresql/15/bin}}
transactions:
  - name: t
    sql: SELECT :x::int
    params: {x: {random_int: [1, 9]}}
scripts: [{name: s, steps: [t]}]
load: {users: 2}
"""


def write(tmp_path, text):
    path = tmp_path / "w.yaml"
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def test_pgbench_refuses_think_time_with_the_line(tmp_path):
    path = write(tmp_path, PG + "think: {dist: exponential, mean: 0.1}\ndriver: {kind: pgbench}\n")
    with pytest.raises(InputError) as info:
        load_workload(path)
    assert info.value.line == 9 and "think time" in info.value.message


def test_pgbench_drives_postgres_only(tmp_path):
    text = PG.replace("target: {kind: postgres, server: {bin: /usr/lib/postgresql/15/bin}}",
                      "target: {kind: tcp, port: 9}").replace("sql: SELECT :x::int", "tcp: {}")
    with pytest.raises(InputError) as info:
        load_workload(write(tmp_path, text + "driver: {kind: pgbench}\n"))
    assert info.value.field == "driver.kind" and "postgres" in info.value.message


def test_server_or_dsn_and_missing_server_binary(tmp_path):
    with pytest.raises(InputError) as info:
        load_workload(write(tmp_path, PG.replace("server: {bin: /usr/lib/postgresql/15/bin}",
                                                 "server: {bin: /nonexistent/bin}")))
    assert info.value.line == 2 and "no PostgreSQL server in /nonexistent/bin" in info.value.message
    with pytest.raises(InputError) as info:
        load_workload(write(tmp_path, PG.replace("server: {bin: /usr/lib/postgresql/15/bin}", "database: x")))
    assert "target.server" in info.value.message and "target.dsn" in info.value.message


def test_http_extract_and_probe_validation(tmp_path):
    base = """
    name: h
    target: {kind: http, base_url: "http://127.0.0.1:1"}
    transactions:
      - name: t
        http:
          - {path: /, extract: {a: {json: "x.y"}}}
    scripts: [{name: s, steps: [t]}]
    load: {users: 1}
    """
    with pytest.raises(InputError) as info:
        load_workload(write(tmp_path, base))
    assert info.value.line == 6 and "JSON path starts with $" in info.value.message
    ok = base.replace('{json: "x.y"}', '"$.y"') + 'service: {command: [nonexistent-server-x], ready: {tcp: 1}}\n'
    with pytest.raises(InputError) as info:
        load_workload(write(tmp_path, ok))
    assert info.value.field == "service.command" and "not found" in info.value.message


def test_sql_parameters_become_positional():
    from perflab.drive.adapters.postgres import positional

    assert positional("SELECT :a::int + :b, :a, x::text") == ("SELECT $1::int + $2, $1, x::text", ["a", "b"])


def test_json_path_subset():
    from perflab.drive.adapters.http_request import CheckFailed, json_path

    doc = {"items": [{"href": "/a"}, {"id": 2}], "x y": {"z": 1}}
    assert json_path(doc, "$.items[1].id") == 2
    assert json_path(doc, "$['x y'].z") == 1
    with pytest.raises(CheckFailed):
        json_path(doc, "$.items[5]")

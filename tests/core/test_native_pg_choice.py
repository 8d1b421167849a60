"""The compiled loop runs PostgreSQL users only where it runs them as the Python path would
(native_pg.py's pg_reason), and its pieces of the protocol are the protocol's: the startup
message, a server's error worded as asyncpg words it, parameters rendered as the server reads them."""

from __future__ import annotations

import struct
import textwrap

import pytest

from perflab.drive.load import native_http, native_pg

SERVER = "target: {kind: postgres, server: {bin: /usr/lib/postgresql/15/bin}, connections: per_user, prepared: true}"
PARAMS = "{n: {random_int: [1, 10]}}"


def _workload(tmp_path, target=SERVER, params=PARAMS, sql="SELECT :n::int", driver=""):
    from perflab.workload.loader import load_workload

    path = tmp_path / "w.yaml"
    path.write_text(textwrap.dedent(f"""
        name: w
        {target}
        transactions: [{{name: a, sql: ["{sql}"], params: {params}}}]
        scripts: [{{name: s, steps: [a]}}]
        think: 0
        load: {{users: 2}}
        {driver}
        timing: {{stagger: 0s, stabilization: 0s, measurement: 1s}}
    """))
    return load_workload(path)


@pytest.mark.parametrize("parts,reason", [
    ({}, None),
    ({"params": "{n: {choice: [1, 2.5, x], weights: [1, 2, 3]}}"}, None),
    ({"params": "{n: {sequence: 5, step: 2}}"}, None),
    ({"driver": "driver: {core: python}"}, "driver.core: python"),
    ({"target": SERVER.replace("per_user", "pool")}, "connections: pool"),
    ({"target": SERVER.replace("prepared: true", "prepared: false")}, "prepared: false"),
    ({"target": "target: {kind: postgres, dsn: 'postgresql://u@127.0.0.1:5/d'}"}, "an existing server"),
    ({"target": SERVER.replace("15/bin", "15/bin, settings: {ssl: 'on'}")}, "ssl: on"),
    ({"params": "{n: {value: true}}"}, "transaction a: parameter n"),
    ({"params": "{n: {choice: [1, null]}}"}, "transaction a: parameter n"),
    ({"params": "{n: {random_int: [0, 9007199254740992]}}"}, "transaction a: parameter n"),
    ({"sql": "SELECT :m::int"}, "transaction a: a statement names parameters it does not give (m)"),
])
def test_the_loop_is_chosen_only_where_it_runs_as_the_python_path(tmp_path, parts, reason):
    from perflab.drive.adapters.postgres import PostgresExecutor

    w = _workload(tmp_path, **parts)
    executor = PostgresExecutor(w, "postgresql://postgres@127.0.0.1:9/perflab")
    choice = native_http.choose_core(w, executor, 2)
    if reason is None:
        assert choice.native == (native_http.NOT_BUILT is None), choice
    else:
        assert not choice.native and choice.reason is not None and choice.reason.startswith(reason), choice


def test_the_startup_message_is_protocol_3_with_the_user_and_database():
    message = native_pg.startup_message("postgres", "perflab")
    (length, version) = struct.unpack("!ii", message[:8])
    assert length == len(message) and version == 3 << 16
    pairs = message[8:].split(b"\0")
    assert pairs[-2:] == [b"", b""]  # the list ends with an empty name
    fields = dict(zip(pairs[0:-2:2], pairs[1:-2:2]))
    assert fields == {b"user": b"postgres", b"database": b"perflab", b"application_name": b"perflab",
                      b"client_encoding": b"UTF8"}


def test_a_servers_error_is_worded_as_asyncpg_words_it():
    fields = b"SERROR\0VERROR\0C23505\0Mduplicate key value violates unique constraint \"t_pkey\"\0" \
             b"DKey (k)=(1) already exists.\0\0"
    assert native_pg.server_error_text(fields) == \
        'UniqueViolationError: duplicate key value violates unique constraint "t_pkey"\nDETAIL:  Key (k)=(1) already exists.'
    assert native_pg.server_error_text(b"C22012\0Mdivision by zero\0\0") == "DivisionByZeroError: division by zero"
    assert native_pg.server_error_text(b"Mno code\0\0").startswith("UnknownPostgresError: no code")
    assert native_pg.server_error_text(b"SFATAL\0C57P01\0Mterminating connection\0\0", closed=True) == \
        "ConnectionDoesNotExistError: connection was closed in the middle of operation: terminating connection"


@pytest.mark.parametrize("value,text", [(7, b"7"), (-2**63, b"-9223372036854775808"), (2.5, b"2.5"), (0.1, b"0.1"),
                                        ("héllo", "héllo".encode()), (True, None), (None, None), ("a\0b", None),
                                        ([1], None)])
def test_a_value_is_sent_as_the_text_python_prints(value, text):
    """The text a PostgreSQL parameter travels as is str() in UTF-8 (params.c's ENC_TEXT), and only
    the values the server can parse by its parameter's type without a guess are sent."""
    from perflab.drive.load.native_params import ENC_TEXT, texts

    assert native_pg._sendable(value) == (text is not None)
    if text is not None:
        assert texts(value)[ENC_TEXT] == text

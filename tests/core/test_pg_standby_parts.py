"""The standby's parts that need no server: the two systems told apart by their processes'
titles (the (V) components), and postgresql.conf as perflab appends to it."""

from __future__ import annotations

from pathlib import Path

from perflab.monitor.sources.process_tree import ComponentRules
from perflab.sut.pg_conf import append_settings, conf_value
from perflab.sut.pg_standby import node_components

BIN = "/usr/lib/postgresql/15/bin/postgres"


def test_each_process_of_either_server_belongs_to_its_system():
    rules = ComponentRules(node_components(Path("/r/pgdata"), Path("/r/pgdata-standby"), "standby"))
    titles = {
        f"{BIN} -D /r/pgdata": "primary",                    # the postmasters keep their command lines
        f"{BIN} -D /r/pgdata-standby": "standby",
        "postgres: primary: checkpointer": "primary",
        "postgres: primary: postgres perflab 127.0.0.1(41234) idle": "primary",
        "postgres: primary: walsender postgres 169.254.78.2(50000) streaming 0/3000148": "primary",
        "postgres: standby: startup recovering 000000010000000000000003": "standby",
        "postgres: standby: walreceiver streaming 0/3000148": "standby",
        "postgres: checkpointer": "other",                   # a server without a cluster_name is neither
    }
    for title, system in titles.items():
        assert rules.classify("postgres", title) == system, title


def test_settings_are_appended_under_a_header_and_quoted_as_postgresql_reads_them(tmp_path):
    conf = tmp_path / "postgresql.conf"
    conf.write_text("port = 5432\n")
    append_settings(conf, {"port": 6000, "hot_standby": True, "primary_conninfo": "host=h application_name=it's"},
                    "perflab: the standby")
    assert conf.read_text() == ("port = 5432\n\n# perflab: the standby\nport = 6000\nhot_standby = on\n"
                                "primary_conninfo = 'host=h application_name=it''s'\n")
    assert conf_value(False) == "off" and conf_value(0.5) == "0.5" and conf_value("") == "''"

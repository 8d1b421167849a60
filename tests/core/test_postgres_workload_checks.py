"""A PostgreSQL workload's own fields refused with one line naming file, line and field (exit 2):
the WAL device (target.server.wal_device), the standby (target.server.standby) and what it
cannot go with."""

from __future__ import annotations

import pytest
from cli_helpers import perflab, write_workload

GOOD = """
name: t
target:
  kind: postgres
  server:
    bin: /usr/lib/postgresql/15/bin
    settings:
      synchronous_commit: "on"
    wal_device: {backing: memory, size: 1G}
transactions:
  - {name: a, class: trivial, sql: ["SELECT 1"]}
scripts:
  - {name: s, steps: [a]}
load: {users: 1}
"""


def test_the_good_file_validates(tmp_path):
    result = perflab("validate", write_workload(tmp_path, GOOD))
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    ("change", "line", "needle"),
    [
        (("backing: memory", "backing: tape"), 8, "backing"),
        (("size: 1G", "size: 1M"), 8, "size"),
        (("size: 1G", "size: lots"), 8, "expected a size"),
        (("size: 1G", "size: 1G, dir: /tmp"), 8, "dir"),
    ],
)
def test_bad_wal_device_exits_2_naming_file_line_and_field(tmp_path, change, line, needle):
    text = GOOD.replace(*change)
    assert text != GOOD
    path = write_workload(tmp_path, text)
    result = perflab("validate", path)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert f"{path}:{line}" in result.stderr, result.stderr
    assert needle in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) <= 2


STANDBY = GOOD.replace("    wal_device: {backing: memory, size: 1G}\n",
                       "    standby: {name: replica, network: {address: 169.254.78.2/30, peer_address: 169.254.78.1/30}}\n")


def test_a_standby_validates(tmp_path):
    result = perflab("validate", write_workload(tmp_path, STANDBY.replace(
        'synchronous_commit: "on"', 'synchronous_commit: remote_apply\n      synchronous_standby_names: replica')))
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        (STANDBY.replace("name: replica", "name: Replica-1"), 8, "name"),
        (STANDBY.replace("name: replica", "name: primary"), 8, "the primary's name"),
        (STANDBY.replace("169.254.78.1/30", "169.254.79.1/30"), 8, "two addresses of one network"),
        (STANDBY.replace("standby: {", "measure_restart: true\n    standby: {"), 4, "measure_restart with a standby"),
        (GOOD.replace('synchronous_commit: "on"', "synchronous_standby_names: s1"), 4, "there is none"),
    ],
)
def test_bad_standby_exits_2_naming_file_line_and_field(tmp_path, text, line, needle):
    path = write_workload(tmp_path, text)
    result = perflab("validate", path)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert f"{path}:{line}" in result.stderr, result.stderr
    assert needle in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) <= 2

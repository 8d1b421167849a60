"""A PostgreSQL hot standby of the run's primary, on a host of its own as far as the network goes.

The seeds measured the cost of keeping two copies in step -- IMS coupling-facility structure
duplexing (002_e28377aadc48f3c4.txt, section 8: +7.1% to +31.9% pathlength), data sharing -- as
per-system rows beside the transaction's response time. Today that is a streaming-replication
standby, and `synchronous_commit` (off, local, on, remote_write, remote_apply) with
`synchronous_standby_names` says how long a commit waits for it.

How it is made, per run (perflab starts both servers):

1. before the primary starts: a network namespace with a veth pair (netns.py): the standby's end
   inside, the primary's in perflab's namespace. The primary listens on loopback (the driver) and
   on its veth address (the standby), and its pg_hba lets the pair's network in;
2. once the primary is loaded and checkpointed: `pg_basebackup` of it (over loopback, a
   replication slot of its own so the primary keeps the WAL the standby still needs) into a
   directory beside the primary's (`<run>/pgdata-standby`), with the standby's settings appended
   -- its own port, its veth address, `cluster_name` and `application_name` (its name),
   hot_standby, primary_conninfo over the veth pair;
3. its postmaster started inside the namespace, in the run's cgroup, on the SUT's CPUs: its
   processes are SUT processes, told apart from the primary's by their titles
   (`postgres: <name>: ...`) -- the node components (`NODE_COMPONENTS`), whose (V) rows are the
   seeds' per-system CPU per command;
4. the run waits until the primary sees it streaming; then the primary is given its
   `synchronous_standby_names` (held back until now: a primary that names a standby not yet
   there makes every commit wait, the load's and CREATE DATABASE's too) and reloads, and the run
   waits until the primary calls the standby synchronous before the load starts;
5. after the run: the standby stopped (fast), the primary stopped, the namespace removed.

What the network is: a veth pair between two network stacks of one kernel -- a real link (two
interfaces, a route, the packet crossing from one stack to the other) with no wire: the
round trip is tens of microseconds, far less than between two machines.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from perflab.errors import SutFailure
from perflab.extras import require
from perflab.sut.netns import NetworkNamespace
from perflab.sut.pg_conf import append_settings
from perflab.sut.service import ServiceProcess
from perflab.workload.model import PostgresStandby as StandbySpec
from perflab.workload.service_port import free_port

SLOT = "perflab_standby"
# The primary's settings written only once its standby streams (step 4 above).
DEFERRED = ("synchronous_standby_names",)


def node_components(primary_dir: Path, standby_dir: Path, name: str) -> dict[str, str]:
    """The two systems as (V) components: each server's processes by their titles (cluster_name
    prefixes every background process's and backend's title) and its postmaster by its command
    line (which keeps its data directory)."""
    return {
        "standby": rf"postgres: {re.escape(name)}: |/postgres -D {re.escape(str(standby_dir))}$",
        "primary": rf"postgres: primary: |/postgres -D {re.escape(str(primary_dir))}$",
    }


class Standby:
    """One run's standby of a PostgresServer (the primary)."""

    def __init__(self, spec: StandbySpec, primary: Any, run_id: str):
        self.spec, self.primary = spec, primary
        self.netns = NetworkNamespace(spec.network, run_id + ":standby")
        self.address = str(ipaddress.ip_interface(spec.network.address).ip)
        self.primary_address = str(ipaddress.ip_interface(spec.network.peer_address).ip)
        self.network = str(ipaddress.ip_interface(spec.network.address).network)
        # Beside the primary's: where the server's user can reach (the run directory or /var/tmp).
        self.data_dir = primary.data_dir.with_name(primary.data_dir.name + "-standby")
        self.port = free_port()
        self.process: ServiceProcess | None = None

    # -- before the primary starts ------------------------------------------------------------

    def prepare_primary(self) -> dict[str, Any]:
        """The namespace and veth pair; the primary's listen address and pg_hba lines for it. ->
        the primary's settings this needs."""
        self.netns.create()
        hba = self.primary.data_dir / "pg_hba.conf"
        lines = [f"host replication all {self.network} trust"]  # the standby streams; nothing else comes in
        text = hba.read_text()
        with open(hba, "a") as f:
            for line in lines:
                if line not in text:
                    f.write(line + "\n")
        return {"listen_addresses": f"{self.primary.host},{self.primary_address}", "cluster_name": "primary"}

    # -- once the primary is loaded -------------------------------------------------------------

    def start(self) -> dict[str, Any]:
        program = self.primary.bin / "pg_basebackup"
        if not program.exists():
            raise SutFailure(f"no pg_basebackup in {self.primary.bin}: a standby needs it")
        self.data_dir.mkdir(mode=0o700)  # pg_basebackup fills an empty directory the server's user owns
        self.primary.account.chown(self.data_dir)
        self._basebackup(program)
        conninfo = (f"host={self.primary_address} port={self.primary.port} user={self.primary.SUPERUSER} "
                    f"application_name={self.spec.name}")
        settings: dict[str, Any] = {"port": self.port, "listen_addresses": f"127.0.0.1,{self.address}",
                                    "unix_socket_directories": "", "cluster_name": self.spec.name,
                                    "hot_standby": True, "primary_conninfo": conninfo, "primary_slot_name": SLOT,
                                    **self.spec.settings}
        append_settings(self.data_dir / "postgresql.conf", settings, "perflab: the standby")
        (self.data_dir / "standby.signal").touch()
        self.primary.account.chown_tree(self.data_dir)
        self.process = ServiceProcess("PostgreSQL standby", [str(self.primary.bin / "postgres"), "-D",
                                                             str(self.data_dir)],
                                      self.primary.run_dir / "standby.log", account=self.primary.account,
                                      cpus=self.primary.cpus, cgroup=self.primary.cgroup, netns=self.netns,
                                      env={**os.environ, "LC_ALL": "C"})
        self.process.start()
        deferred = {k: v for k, v in self.primary.spec.settings.items() if k in DEFERRED}
        state = asyncio.run(self._wait_streaming(deferred))
        return {"postgres_standby": f"{self.spec.name}: {self.netns.describe()}, port {self.port}, {state}"}

    def _basebackup(self, program: Path) -> None:
        done = subprocess.run([str(program), "-D", str(self.data_dir), "-h", self.primary.host, "-p",
                               str(self.primary.port), "-U", self.primary.SUPERUSER, "-X", "stream", "-C", "-S", SLOT,
                               "-c", "fast", "--no-sync"],
                              capture_output=True, text=True, preexec_fn=self.primary.account.demote, timeout=1800,
                              env={**os.environ, "LC_ALL": "C"})
        if done.returncode != 0:
            raise SutFailure(f"pg_basebackup of the primary failed: {(done.stderr or done.stdout).strip()[-600:]}")

    def wait_streaming(self) -> str:
        """Until the primary, started again, sees the standby streaming once more (its walreceiver
        connects anew after a retry interval, 5 s by default); -> the state it reached."""
        return asyncio.run(self._wait_streaming({}))

    async def _wait_streaming(self, deferred: dict[str, Any]) -> str:
        """Until the primary sees the standby streaming, then (given `deferred`, its
        synchronous_standby_names) as a synchronous standby; or the standby exits or times out."""
        asyncpg = require("asyncpg", extra="net", feature="a postgres target")
        conn = await asyncpg.connect(self.primary.dsn, timeout=30)
        try:
            deadline = time.monotonic() + self.spec.ready_timeout
            wants_sync = False
            while True:
                row = await conn.fetchrow("SELECT state, sync_state FROM pg_stat_replication "
                                          "WHERE application_name = $1", self.spec.name)
                streaming = row is not None and row["state"] == "streaming"
                if streaming and deferred:
                    append_settings(self.primary.data_dir / "postgresql.conf", deferred,
                                    "perflab: once the standby streams")
                    await conn.execute("SELECT pg_reload_conf()")
                    wants_sync, deferred = any(str(v).strip() for v in deferred.values()), {}
                elif streaming and (not wants_sync or row["sync_state"] in ("sync", "quorum")):
                    return f"streaming, {row['sync_state']}"
                if self.process is not None and self.process.proc is not None and self.process.proc.poll() is not None:
                    raise SutFailure("the PostgreSQL standby exited while starting" + self.process.log_tail())
                if time.monotonic() > deadline:
                    seen = "not connected" if row is None else f"{row['state']}, {row['sync_state']}"
                    raise SutFailure(f"the PostgreSQL standby was not streaming within {self.spec.ready_timeout:g} s "
                                     f"({seen})" + (self.process.log_tail() if self.process else ""))
                await asyncio.sleep(0.1)
        finally:
            await conn.close()

    # -- during and after the run -----------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def failure(self) -> str | None:
        return self.process.failure() if self.process is not None else None

    def stop(self) -> str | None:
        """The standby first (fast shutdown), its data removed unless kept; the namespace after."""
        note = self.process.stop(signal.SIGINT, timeout=60.0) if self.process is not None else None
        if not self.primary.spec.keep_data:
            shutil.rmtree(self.data_dir, ignore_errors=True)
        return note

    def remove_network(self) -> None:
        self.netns.remove()


"""PostgreSQL as the system under test: a fresh server in the run directory for each run.

initdb into the run directory, postgresql.conf settings, the postmaster started directly (not
through pg_ctl, so its pid is ours to watch and its processes start inside the cgroup) as a
`ServiceProcess` (service.py), the database created and loaded, `SELECT version()` for the
fingerprint, a fast shutdown after.

Templates (`target.server.template`, on by default): the first run of a given server, settings
and load builds the loaded cluster as usual, then stops it, keeps a copy of its data directory
in perflab's cache, and starts again from it; every later run copies the template instead of
running initdb and the load. Every run then starts from the same physical data (the same page
layout, the same freshly vacuumed tables), and a study saves the reload (pgbench -i -s 8:
about 10 s a run). The template's key covers everything that shapes the data: the server's
version, the settings, the database, the pgbench scale and options, the setup SQL.

The log volume (`target.server.wal_device`): pg_wal moved onto a block device of the run's own
(wal_device.py) before the server starts, so the kernel's counters of that device are the WAL's
alone; the template keeps its WAL in its own directory, whatever device a run put it on.

A standby (`target.server.standby`, pg_standby.py): its network namespace made before this
server starts (which then listens on the veth pair too), the standby made and started once this
server is loaded (`start_standby`), stopped before it.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from perflab.errors import SutFailure
from perflab.extras import missing_extra, require
from perflab.sut.pg_conf import append_settings
from perflab.sut.pg_standby import DEFERRED, Standby, node_components
from perflab.sut.service import Account, ServiceProcess, describe_exit, tcp_probe
from perflab.sut.wal_device import WalDevice
from perflab.workload.model import PostgresServer as PostgresServerSpec
from perflab.workload.service_port import free_port

# Title rules for PostgreSQL's processes (first match wins; see monitor/sources/process_tree.py).
# Backends are titled "postgres: <user> <db> <host>(<port>) <state>"; the postmaster keeps its
# command line.
POSTGRES_COMPONENTS = {
    "checkpointer": r"postgres: (\S+: )?checkpointer",
    "bgwriter": r"postgres: (\S+: )?background writer",
    "walwriter": r"postgres: (\S+: )?walwriter",
    "autovacuum": r"postgres: (\S+: )?autovacuum",
    "backends": r"postgres: .*\(\d+\)",
    "postmaster": r"/postgres(\s|$)",
}


def postgres_bin(spec: str) -> Path:
    """`pgserver` -> the binaries bundled in the pgserver wheel; else the directory given."""
    if spec == "pgserver":
        # Only its files are used, not its daemon management, so it is found, not imported.
        import importlib.util

        found = importlib.util.find_spec("pgserver")
        if found is None or not found.submodule_search_locations:
            raise SutFailure(str(missing_extra("net", "PostgreSQL from the pgserver wheel")))
        return Path(list(found.submodule_search_locations)[0]) / "pginstall" / "bin"
    return Path(spec)


def postgres_version(bin_dir: Path) -> str:
    done = subprocess.run([str(bin_dir / "postgres"), "--version"], capture_output=True, text=True, timeout=30)
    return done.stdout.strip()


class PostgresServer:
    """A fresh PostgreSQL cluster in the run directory, for one run."""

    SUPERUSER = "postgres"

    def __init__(self, spec: PostgresServerSpec, database: str, run_dir: Path, run_id: str,
                 cpus: list[int] | None, cgroup: Any, max_connections: int = 300):
        self.spec, self.database, self.run_dir = spec, database, run_dir
        self.bin = postgres_bin(spec.bin)
        for program in ("initdb", "postgres"):
            if not (self.bin / program).exists():
                raise SutFailure(f"no {program} in {self.bin} (target.server.bin)")
        self.account = Account.resolve(spec.user)
        self.port = free_port()
        self.host = "127.0.0.1"
        self.data_dir, self.data_note = self._data_dir(run_id)
        self.max_connections = max_connections
        self.cpus, self.cgroup = cpus, cgroup
        #: a command line before the postmaster's (valgrind, for the counted pass: drive/pathlength/server.py)
        self.wrapper: list[str] = []
        self.process = self._new_process()
        self.version: str | None = None
        self.wal_device = WalDevice(spec.wal_device, run_id) if spec.wal_device is not None else None
        self.standby = Standby(spec.standby, self, run_id) if spec.standby is not None else None
        if spec.components:
            self.components = dict(spec.components)
        elif self.standby is not None:  # two systems: each one's processes are a component (V)
            self.components = node_components(self.data_dir, self.standby.data_dir, self.standby.spec.name)
        else:
            self.components = dict(POSTGRES_COMPONENTS)

    def _new_process(self) -> ServiceProcess:
        """The postmaster (not started): the first, or the next after a stop or a crash."""
        return ServiceProcess("PostgreSQL server", [*self.wrapper, str(self.bin / "postgres"), "-D", str(self.data_dir)],
                              self.run_dir / "postgres.log", account=self.account, cpus=self.cpus, cgroup=self.cgroup,
                              env={**os.environ, "LC_ALL": "C"})

    def _data_dir(self, run_id: str) -> tuple[Path, str | None]:
        # initdb into the run directory; when the server's user cannot reach it (a private
        # temporary directory), into /var/tmp with a link from the run directory.
        inside = self.run_dir / "pgdata"
        if self.account.can_reach(self.run_dir):
            return inside, None
        outside = Path("/var/tmp/perflab-pgdata") / run_id
        outside.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(outside.parent, 0o755)
        inside.symlink_to(outside)
        return outside, f"data directory {outside} (the server's user cannot enter the run directory)"

    @property
    def dsn(self) -> str:
        return f"postgresql://{self.SUPERUSER}@{self.host}:{self.port}/{self.database}"

    @property
    def pid(self) -> int:
        return self.process.pid

    def _as_server_user(self, argv: list[str], what: str, timeout: float = 300) -> str:
        done = subprocess.run(argv, capture_output=True, text=True, preexec_fn=self.account.demote, timeout=timeout,
                              env={**os.environ, "LC_ALL": "C"})
        if done.returncode != 0:
            raise SutFailure(f"{what} failed ({describe_exit(done.returncode)}): {(done.stderr or done.stdout).strip()[-800:]}")
        return done.stdout

    def start(self, load_key: dict[str, Any] | None = None) -> dict[str, Any]:
        """Start the server: from the template when there is one for `load_key` (what the run
        will load; None: no template), else from initdb. `from_template` tells the caller
        whether the database is loaded already."""
        self.template = template_dir(self.bin, self.spec, self.database, load_key) if (
            self.spec.template and load_key is not None) else None
        template = self.template
        self.from_template = template is not None and (template / "PG_VERSION").exists()
        if template is not None and self.from_template:
            _copy_tree(template, self.data_dir)
            self.account.chown_tree(self.data_dir)
            self._drop_pages_charged_elsewhere()
        else:
            self.data_dir.mkdir(mode=0o700)
            self.account.chown(self.data_dir)
            self._as_server_user([str(self.bin / "initdb"), "-D", str(self.data_dir), "-U", self.SUPERUSER, "-A",
                                  "trust", "-E", "UTF8", "--locale=C", "--no-sync"], "initdb")
        if self.wal_device is not None:
            self.wal_device.create()  # removed by stop(), which the caller calls whatever happened here
            self.wal_device.adopt(self.data_dir, self.account)
        replication = self.standby.prepare_primary() if self.standby is not None else {}
        settings = self._write_settings(replication)
        self._start_process()
        facts = {"sut_version": self.version, "postgres_bin": str(self.bin), "postgres_port": self.port,
                 "postgres_settings": {k: str(v) for k, v in settings.items()},
                 "postgres_data": "template copy" if self.from_template else "initdb"}
        if self.data_note:
            facts["postgres_data_note"] = self.data_note
        if self.wal_device is not None:
            facts["postgres_wal_device"] = self.wal_device.describe()
        return facts

    def start_standby(self) -> dict[str, Any]:
        """Once this server is loaded: its standby made and started, streaming (facts for the
        fingerprint); nothing without one."""
        return self.standby.start() if self.standby is not None else {}

    @property
    def pids(self) -> list[int]:
        """The postmasters: this server's, and its standby's when it runs."""
        standby = self.standby.pid if self.standby is not None else None
        return [self.pid] + ([standby] if standby is not None and standby > 0 else [])

    def device_counters(self) -> Any:
        """What the monitor samples of the WAL device (dev.* columns), or None without one."""
        if self.wal_device is None or self.wal_device.name is None:
            return None
        from perflab.monitor.sources.diskstats import DeviceSpec

        return DeviceSpec(self.wal_device.name)

    def _drop_pages_charged_elsewhere(self) -> None:
        """Under a memory limit, drop the data directory's pages from the page cache. A copy made
        by perflab (from the template, or to save one) leaves them cached and charged to
        perflab's own cgroup, not the server's: the server would then read past its limit for
        free (no refaults, no reads). Dropped, it reads them in under its own limit."""
        if getattr(self.process.cgroup, "memory_limit_bytes", None) is not None:
            _drop_cached_pages(self.data_dir)

    def _write_settings(self, replication: dict[str, Any]) -> dict[str, Any]:
        """Append this run's settings to postgresql.conf (the last line of a setting wins, so a
        template's copy gets this run's port). `replication`: what a standby needs of this server
        (its listen addresses, cluster_name)."""
        settings: dict[str, Any] = {
            "listen_addresses": self.host, "port": self.port, "unix_socket_directories": "",
            "max_connections": self.max_connections, "logging_collector": False,
            **replication, **self.spec.settings,
        }
        # With a standby, what names it waits until it streams (pg_standby.DEFERRED); the
        # fingerprint still gives every setting the run had.
        written = {k: v for k, v in settings.items() if self.standby is None or k not in DEFERRED}
        append_settings(self.data_dir / "postgresql.conf", written, "perflab")
        return settings

    def save_template(self) -> None:
        """After the load: stop, keep a copy of the data directory as the template, start again
        -- so this run, too, starts from the template's data. Two runs building the same
        template at once: the second to finish finds it there and keeps its own data."""
        if self.template is None or self.from_template:
            return
        note = self.process.stop(signal.SIGINT, timeout=60.0)
        if note:
            raise SutFailure(f"PostgreSQL did not stop cleanly to save its template: {note}")
        self.template.parent.mkdir(parents=True, exist_ok=True)
        with open(self.template.parent / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (self.template / "PG_VERSION").exists():
                staging = self.template.with_name(self.template.name + f".{os.getpid()}.tmp")
                shutil.rmtree(staging, ignore_errors=True)
                _copy_tree(self.data_dir, staging)
                (staging / "postmaster.pid").unlink(missing_ok=True)
                wal = staging / "pg_wal"
                if wal.is_symlink():  # on this run's WAL device: the template keeps a copy of its own
                    target = wal.readlink()
                    wal.unlink()
                    _copy_tree(target, wal)
                os.replace(staging, self.template)
        self._drop_pages_charged_elsewhere()
        self.process = self._new_process()
        self._start_process()

    def restart_under(self, wrapper: list[str]) -> None:
        """A fast shutdown, then the postmaster started again on its data with `wrapper` before its
        command line (valgrind: drive/pathlength/server.py), ready for queries."""
        self.shut_down()
        self.wrapper = list(wrapper)
        self.process = self._new_process()
        self._start_process()

    def _start_process(self) -> None:
        self.process.start()
        self.process.wait_ready(tcp_probe(self.host, self.port), self.spec.ready_timeout)
        self._wait_accepting()

    def _wait_accepting(self) -> None:
        """The port opens before recovery ends; wait until a query works, then create the database."""
        import asyncio

        asyncpg = require("asyncpg", extra="net", feature="a postgres target")

        async def setup() -> str:
            deadline = time.monotonic() + self.spec.ready_timeout
            while True:
                try:
                    conn = await asyncpg.connect(host=self.host, port=self.port, user=self.SUPERUSER,
                                                 database="postgres", timeout=5)
                    break
                except (TimeoutError, OSError, asyncpg.PostgresError) as exc:
                    if time.monotonic() > deadline or self.process.exited():
                        raise SutFailure(f"PostgreSQL did not accept connections: {exc}"
                                         + self.process.log_tail()) from None
                    await asyncio.sleep(0.1)
            try:
                exists = await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", self.database)
                if not exists:
                    await conn.execute(f'CREATE DATABASE "{self.database}"')
                return await conn.fetchval("SELECT version()")
            finally:
                await conn.close()

        self.version = asyncio.run(setup())

    # -- restarts (pg_restart.py) ---------------------------------------------------------------

    def crash(self) -> None:
        """SIGKILL to the postmaster's whole session at once, as a machine's processes die; return
        once none of them runs (a zombie holds no shared memory: the next start may begin)."""
        proc = self.process.proc
        if proc is None or proc.poll() is not None:
            raise SutFailure("PostgreSQL was not running when it was to be crashed" + self.process.log_tail())
        self.process.stopping = True
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 30
        while _session_running(proc.pid):
            if time.monotonic() > deadline:
                raise SutFailure(f"PostgreSQL's processes (session {proc.pid}) outlived SIGKILL by 30 s")
            time.sleep(0.005)

    def shut_down(self) -> None:
        """A fast shutdown (SIGINT: roll back, checkpoint, exit), kept running nothing."""
        note = self.process.stop(signal.SIGINT, timeout=60.0)
        if note:
            raise SutFailure(note)

    def start_again(self) -> float:
        """Start the stopped or crashed server on its data; -> seconds from its start to its first
        answered query (recovery, when there is one to do, included)."""
        import asyncio

        from perflab.sut.pg_restart import first_answer

        self.process = self._new_process()
        loop = asyncio.new_event_loop()
        try:
            began = time.monotonic()
            self.process.start()
            alive = self.process.proc.poll if self.process.proc is not None else (lambda: 0)
            loop.run_until_complete(first_answer(self.host, self.port, self.SUPERUSER, self.spec.ready_timeout,
                                                 lambda: alive() is None))
            return time.monotonic() - began
        finally:
            loop.close()

    def pgbench_init(self, scale: int, options: list[str]) -> None:
        program = self.bin / "pgbench" if (self.bin / "pgbench").exists() else shutil.which("pgbench")
        if program is None:
            raise SutFailure("pgbench is not installed")
        done = subprocess.run([str(program), "-i", "-q", "-s", str(scale), *options, "-h", self.host,
                               "-p", str(self.port), "-U", self.SUPERUSER, self.database],
                              capture_output=True, text=True, timeout=3600)
        if done.returncode != 0:
            raise SutFailure(f"pgbench -i failed: {done.stderr.strip()[-800:]}")

    def failure(self) -> str | None:
        return self.process.failure() or (self.standby.failure() if self.standby is not None else None)

    def stop(self) -> str | None:
        # SIGINT is PostgreSQL's fast shutdown: roll back, checkpoint, exit. The standby first: a
        # primary that waits for it would otherwise wait for its shutdown checkpoint's reply.
        notes = [self.standby.stop() if self.standby is not None else None]
        notes.append(self.process.stop(signal.SIGINT, timeout=60.0))
        if self.standby is not None:
            self.standby.remove_network()
        note = "; ".join(n for n in notes if n) or None
        if not self.spec.keep_data:
            shutil.rmtree(self.data_dir, ignore_errors=True)
            if self.data_dir != self.run_dir / "pgdata":
                (self.run_dir / "pgdata").unlink(missing_ok=True)
        if self.wal_device is not None:
            try:
                self.wal_device.remove()  # the WAL goes with it, kept data or not: it was the device's
            except SutFailure as exc:
                note = f"{note}; {exc}" if note else str(exc)
        return note


def template_dir(bin_dir: Path, spec: PostgresServerSpec, database: str, load_key: dict[str, Any]) -> Path:
    """Where the template of this server, settings and load lives in perflab's cache."""
    version = postgres_version(bin_dir)
    shape = {"version": version, "bin": str(bin_dir), "settings": spec.settings, "database": database,
             "load": load_key, "layout": 1}
    if spec.standby is not None:  # its pg_hba lines and listen address are in the copy
        shape["standby"] = spec.standby.network.model_dump()
    key = json.dumps(shape, sort_keys=True, default=str)
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    root = Path(os.environ.get("PERFLAB_CACHE") or Path.home() / ".cache" / "perflab") / "pg-templates"
    return root / digest


def _session_running(sid: int) -> bool:
    """Whether a process of session `sid` still runs (zombies do not count)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()  # after "pid (comm)": state ppid pgrp session ...
        if int(fields[3]) == sid and fields[0] != "Z":
            return True
    return False


def _copy_tree(source: Path, target: Path) -> None:
    """A data directory copied with its modes (PostgreSQL refuses a data directory others can read)."""
    done = subprocess.run(["cp", "-a", "--reflink=auto", str(source), str(target)], capture_output=True, text=True)
    if done.returncode != 0:
        raise SutFailure(f"copying the data directory failed: {done.stderr.strip()[-400:]}")


def _drop_cached_pages(root: Path) -> None:
    """Write back and drop every file's pages under `root` from the page cache (per file: no
    system-wide drop_caches, which would disturb everything else on the machine)."""
    for path in root.rglob("*"):
        if not path.is_file() or path.is_symlink():
            continue
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fdatasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


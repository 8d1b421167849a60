"""The target models: what a workload's `target:` says, one model per kind (`kind: sqlite`,
`kind: http`...), with the parts only a target has (a PostgreSQL server, its standby, TLS
options, an isolation layer).

Which kinds exist, and what perflab does with each, is said once in workload/kinds.py, which
names every model here; workload/model.py's `Target` is the union of the registered ones.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from perflab.workload.fields import Duration, Strict, parse_bytes, parse_duration


class TargetModel(Strict):
    """What every target model has: its kind. A workload's `target` is one of the registered
    models (workload/kinds.py), told apart by it; code that needs a kind's own fields narrows
    with isinstance, and code that needs what a kind *does* asks the registry."""

    kind: str

    @classmethod
    def where(cls, data: dict[str, Any]) -> str:
        """Where the target is, in words, from its record (run.json's workload): a caveat names it."""
        return str(data.get("kind"))


class SqliteTarget(TargetModel):
    kind: Literal["sqlite"]
    driver: Literal["stdlib", "apsw"] = Field(default="stdlib", description="stdlib sqlite3 or apsw (newer SQLite)")
    database: str = Field(default="sut.db", description="database file; relative paths are inside the run directory")
    setup: list[str] = Field(default_factory=list, description="SQL run once before the run (schema, data)")
    pragmas: dict[str, str | int] = Field(default_factory=dict)
    busy_timeout_ms: int = Field(default=30000, ge=0, le=2**31 - 1)
    release: str | None = Field(default=None, description="the release under test by pinned pip requirement "
                                "(driver apsw): apsw==3.40.1.0 bundles SQLite 3.40.1; installed once into "
                                "perflab's release cache (perflab.sut.releases)")

    @model_validator(mode="after")
    def _release_of_binding(self) -> SqliteTarget:
        if self.release is not None:
            from perflab.workload.requirement import parse_requirement

            name = parse_requirement(self.release).name.lower()
            if self.driver != "apsw" or name != "apsw":
                raise ValueError("a release names the apsw wheel that bundles the SQLite under test "
                                 "(driver: apsw, release: apsw==3.40.1.0); the stdlib module links the "
                                 "system's SQLite")
        return self


class PythonTarget(TargetModel):
    kind: Literal["python"]
    path: list[str] = Field(default_factory=list, description="directories added to sys.path (relative to the workload)")
    setup: str | None = Field(default=None, description="module:function called once in each worker at start")
    release: list[str] = Field(default_factory=list, description="packages under test by pinned pip requirement "
                               "(name==version), installed once into perflab's release cache and imported first")

    @field_validator("release", mode="before")
    @classmethod
    def _one_or_more(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v

    @field_validator("release")
    @classmethod
    def _pinned(cls, v: list[str]) -> list[str]:
        from perflab.workload.requirement import parse_requirement

        for text in v:
            parse_requirement(text)
        return v


class Isolation(Strict):
    """The layer the SUT runs behind (sut/isolation.py): `native` (none) or a modern hypervisor's
    analog -- gVisor's runsc, a user-space kernel that takes every system call of the program (the
    seeds' VM/ESA guests, whose privileged operations CP handled). A study that sets
    `target.isolation.layer` (or `service.isolation.layer`) compares guest and native in one study."""

    layer: Literal["native", "gvisor"] = Field(default="native", description="native: the program runs as it is; "
                                               "gvisor: inside a gVisor sandbox (`runsc do`, host root file system "
                                               "read-only below an in-memory overlay)")
    platform: Literal["systrap", "ptrace", "kvm"] = Field(default="systrap", description="gVisor's platform: how the "
                                                          "Sentry intercepts the program's system calls (systrap: "
                                                          "seccomp traps, no KVM needed)")
    runsc: str | None = Field(default=None, description="the runsc binary (default: on PATH, else where `go install` "
                              "puts it)")
    network: Literal["host", "none"] = Field(default="host", description="host: the sandbox uses the host's network "
                                             "stack (a service is reached on loopback as natively); none: no network")
    options: list[str] = Field(default_factory=list, description="more runsc global flags (e.g. --debug)")


class CommandTarget(TargetModel):
    kind: Literal["command"]
    cwd: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    valgrind: bool = Field(default=False, description="count instructions per transaction with valgrind (slow)")
    isolation: Isolation | None = Field(default=None, description="run every command behind an isolation layer "
                                        "(gVisor), or native (the default)")


class WalDevice(Strict):
    """PostgreSQL's write-ahead log on a block device of the run's own (sut/wal_device.py): a loop
    device perflab makes, formats (ext4) and mounts before the server starts, and removes after it
    stops. Its kernel counters (/proc/diskstats: operations, flushes, busy time) are the log
    volume's rows, as the seeds' VMPRF reported a DASD volume's. Needs root."""

    backing: Literal["memory", "disk"] = Field(description="where the device's blocks live: `memory` (a file on "
                                               "/dev/shm: a write or a flush returns once it is in memory, as a "
                                               "3990's fast write returned once the record was in NVS) or `disk` "
                                               "(a file on the machine's disk, written around the page cache: a "
                                               "flush waits for the disk)")
    size: int = Field(default=2 << 30, ge=64 << 20, le=1 << 40, description="the device's size (e.g. 2G): room for "
                      "max_wal_size and more")
    directory: str | None = Field(default=None, description="where the backing file is made (default: /dev/shm for "
                                  "memory, /var/tmp for disk)")

    @field_validator("size", mode="before")
    @classmethod
    def _size(cls, v: Any) -> int:
        return parse_bytes(v)


class PostgresServer(Strict):
    """A PostgreSQL server perflab starts fresh for every run (initdb into the run directory)."""

    bin: str = Field(description="directory of initdb/postgres (e.g. /usr/lib/postgresql/15/bin), or `pgserver`: "
                                 "the 16.x server bundled in the pgserver wheel")
    settings: dict[str, str | int | float | bool] = Field(default_factory=dict, description="postgresql.conf settings")
    user: str = Field(default="postgres", description="OS user the server runs as when perflab runs as root")
    keep_data: bool = Field(default=False, description="keep the data directory after the run (the log is always kept)")
    template: bool = Field(default=True, description="load the data once (initdb, pgbench -i, setup SQL) into a cached "
                           "template and start every run from a copy of it: the same physical data in every run, and "
                           "no reload per run (docs/noise.md)")
    components: dict[str, str] | None = Field(default=None, description="component -> regex on process titles "
                                              "(default: backends, checkpointer, bgwriter, walwriter, autovacuum, ...)")
    ready_timeout: Duration = 60.0
    wal_device: WalDevice | None = Field(default=None, description="put pg_wal on a block device of the run's own "
                                         "(memory- or disk-backed): the log volume's own I/O rows")
    measure_restart: bool = Field(default=False, description="when the load ends, crash the server (SIGKILL to all "
                                  "its processes) and time its recovery against the WAL since the last checkpoint, "
                                  "then a clean restart (sut/pg_restart.py): the Restart rows")
    standby: PostgresStandby | None = Field(default=None, description="a streaming-replication standby of this "
                                            "server, in a network namespace of its own (sut/pg_standby.py): "
                                            "synchronous_commit and synchronous_standby_names say how commits wait "
                                            "for it")

    @field_validator("ready_timeout", mode="before")
    @classmethod
    def _timeout(cls, v: Any) -> float:
        return parse_duration(v)

    @model_validator(mode="after")
    def _standby(self) -> PostgresServer:
        names = str(self.settings.get("synchronous_standby_names", "")).strip()
        if names and self.standby is None:
            raise ValueError("settings.synchronous_standby_names names a standby but there is none: every commit "
                             "would wait for it forever (add `standby:`, or leave synchronous_standby_names out)")
        if self.standby is not None and self.measure_restart:
            raise ValueError("measure_restart with a standby is not supported: the restart is timed on a server "
                             "alone (leave one of them out)")
        return self


class PgbenchInit(Strict):
    scale: int = Field(default=1, ge=1, description="pgbench -i -s: 100,000 accounts per unit")
    options: list[str] = Field(default_factory=list, description="more pgbench -i options, e.g. [--unlogged-tables]")


class PostgresTarget(TargetModel):
    kind: Literal["postgres"]
    server: PostgresServer | None = Field(default=None, description="start this server for each run (or give dsn)")
    dsn: str | None = Field(default=None, description="an existing server instead: postgresql://user@host:port/db")
    database: str = "perflab"
    pgbench_init: PgbenchInit | None = Field(default=None, description="create pgbench's tables before the run")
    setup: list[str] = Field(default_factory=list, description="SQL run once before the run (schema, data)")
    connections: Literal["per_user", "pool"] = Field(default="per_user",
                                                     description="a connection per simulated user, or a shared pool")
    pool_size: int | None = Field(default=None, ge=1, le=100_000,
                                  description="pool connections (default: placement.workers or 8)")
    prepared: bool = Field(default=True, description="prepare each statement once per connection")
    counters: bool = Field(default=True, description="sample pg_stat_database (sut.xact_commit, blks_read, blks_hit)")
    backend_cpu: bool = Field(default=False, description="measure each transaction's CPU in its backend process "
                              "(/proc/<pid>/schedstat before and after; a server perflab starts on this host, a "
                              "connection per user, the Python path): the transactions' `cpu` column, as an "
                              "in-process SUT's worker gives it")

    @classmethod
    def where(cls, data: dict[str, Any]) -> str:
        dsn = str(data.get("dsn") or "postgres")
        return dsn.split("@")[-1] if "@" in dsn else dsn  # never a password

    @model_validator(mode="after")
    def _server_or_dsn(self) -> PostgresTarget:
        if (self.server is None) == (self.dsn is None):
            raise ValueError("give target.server (perflab starts PostgreSQL) or target.dsn (an existing server)")
        return self


class TlsOptions(Strict):
    """How the driver speaks TLS to an https:// target (the seeds' SSL studies: handshake cost by
    cipher suite, with and without session reuse)."""

    verify: bool = Field(default=True, description="check the server's certificate and host name (against ca_file, "
                                                   "else the system's CAs)")
    ca_file: str | None = Field(default=None, description="PEM file of the CA (a self-signed server's own "
                                "certificate); {run_dir} and {workload_dir} are replaced")
    version: Literal["1.2", "1.3"] | None = Field(default=None, description="speak only this TLS version (default: "
                                                  "1.2 or 1.3, whichever the server prefers)")
    ciphers: str | None = Field(default=None, description="OpenSSL cipher list the client offers, e.g. "
                                "ECDHE-RSA-AES128-GCM-SHA256 (TLS 1.2 suites: needs version: '1.2')")
    session_resumption: bool = Field(default=False, description="offer the user's last TLS session when it opens a "
                                     "new connection (client: httptools)")

    @model_validator(mode="after")
    def _ciphers(self) -> TlsOptions:
        if self.ciphers is None:
            return self
        # Python's ssl module sets the TLS 1.2 cipher list only (OpenSSL's SSL_CTX_set_cipher_list);
        # TLS 1.3 suites would be negotiated whatever this says, so a study would compare nothing.
        if self.version != "1.2":
            raise ValueError("ciphers selects TLS 1.2 suites: add version: '1.2' (TLS 1.3 suites are chosen by the "
                             "server, e.g. nginx's ssl_conf_command Ciphersuites)")
        import ssl

        try:
            ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).set_ciphers(self.ciphers)
        except ssl.SSLError:
            raise ValueError(f"OpenSSL {ssl.OPENSSL_VERSION.split()[1]} knows no cipher in {self.ciphers!r} "
                             f"(`openssl ciphers -v 'ALL:eNULL:@SECLEVEL=0'` lists them)") from None
        return self


class HttpTarget(TargetModel):
    kind: Literal["http"]
    base_url: str = Field(description="e.g. http://127.0.0.1:8080 or https://127.0.0.1:8443")
    client: Literal["aiohttp", "httptools"] | None = Field(
        default=None, description="a lean HTTP/1.1 client on httptools (the default where it is installed: the "
        "'net' extra; the compiled loop runs its users), or aiohttp")
    connections: Literal["per_user", "pool", "per_transaction"] = Field(
        default="per_user", description="a kept-alive connection per user, a shared pool (pool_size), or a new "
                                        "connection for every transaction (to measure connection and TLS handshake "
                                        "cost)")
    pool_size: int | None = Field(default=None, ge=1, le=100_000)
    timeout: Duration = 30.0
    headers: dict[str, str] = Field(default_factory=dict)
    tls: TlsOptions | None = Field(default=None, description="TLS options of an https:// base_url (default: verify "
                                   "against the system's CAs)")

    @field_validator("timeout", mode="before")
    @classmethod
    def _timeout(cls, v: Any) -> float:
        return parse_duration(v)

    @classmethod
    def where(cls, data: dict[str, Any]) -> str:
        return str(data.get("base_url"))

    def chosen_client(self) -> Literal["aiohttp", "httptools"]:
        """The client the driver uses: the one given, else httptools where it is installed."""
        if self.client is not None:
            return self.client
        import importlib.util

        return "httptools" if importlib.util.find_spec("httptools") is not None else "aiohttp"

    @field_validator("base_url")
    @classmethod
    def _url(cls, v: str) -> str:
        if not re.match(r"^https?://[^/]+", v):
            raise ValueError("expected http://host:port or https://host:port")
        return v.rstrip("/")


class TcpTarget(TargetModel):
    kind: Literal["tcp"]
    host: str = Field(default="127.0.0.1", description="address; {service_address} is the service's (127.0.0.1, "
                      "or its network namespace's)")
    port: int | None = Field(default=None, ge=1, le=65535, description="TCP port (or give unix)")
    unix: str | None = Field(default=None, description="a Unix-domain socket path, used instead of host and port "
                             "when given (a path without the TCP/IP stack); @name is Linux's abstract namespace; "
                             "{run_dir}, {run_id} and {workload_dir} are replaced")
    message_size: int = Field(default=64, ge=1, le=64 << 20, description="bytes per message")
    messages: int = Field(default=1, ge=1, le=1_000_000, description="messages per transaction")
    mode: Literal["round_trip", "stream"] = Field(
        default="round_trip", description="round_trip: send one, wait for its echo; stream: send all, then read all")
    response_size: int | None = Field(default=None, ge=0, le=64 << 20, description="bytes expected back per message (default: "
                                      "message_size, an echo)")
    message: str | None = Field(
        default=None, min_length=1, max_length=1 << 20,
        description="the message's text, sent as UTF-8 (YAML's double-quoted escapes give control characters: "
                    "\"PING\\r\\n\"), instead of message_size bytes of printable filler: a request a real "
                    "service answers (Redis's inline PING)")
    reply: str | None = Field(
        default=None, max_length=1 << 20,
        description="the reply expected to each message, as UTF-8 text: that many bytes are read and a different "
                    "reply is an error (\"+PONG\\r\\n\"); without it, response_size bytes are read, and an echo "
                    "(as many bytes as were sent) must equal the message")

    @classmethod
    def where(cls, data: dict[str, Any]) -> str:
        return f"tcp {data.get('host')}:{data.get('port')}"

    @model_validator(mode="after")
    def _port_or_unix(self) -> TcpTarget:
        if self.port is None and self.unix is None:
            raise ValueError("give port (TCP) or unix (a Unix-domain socket path)")
        if self.reply is not None and self.response_size is not None and self.response_size != len(self.reply.encode()):
            raise ValueError(f"response_size {self.response_size} is not the reply's {len(self.reply.encode())} bytes: "
                             f"give one of them")
        return self


class ServiceNetwork(Strict):
    """The service in a network namespace of its own, reached over a veth pair that perflab creates
    before the server starts and removes after it stops (a second path to the server besides
    loopback). Needs root. The defaults are link-local: never routed beyond the pair."""

    address: str = Field(default="169.254.77.2/30", description="the server's end, inside its namespace "
                         "(the target's host)")
    peer_address: str = Field(default="169.254.77.1/30", description="the driver's end, in perflab's namespace")
    mtu: int | None = Field(default=None, ge=68, le=65535, description="both ends' MTU (default: the kernel's, 1500)")

    @model_validator(mode="after")
    def _addresses(self) -> ServiceNetwork:
        import ipaddress

        try:
            ends = [ipaddress.ip_interface(a) for a in (self.address, self.peer_address)]
        except ValueError as exc:
            raise ValueError(f"expected an address with its prefix, e.g. 169.254.77.2/30: {exc}") from None
        if ends[0].network != ends[1].network or ends[0].ip == ends[1].ip:
            raise ValueError("address and peer_address must be two addresses of one network (e.g. "
                             "169.254.77.2/30 and 169.254.77.1/30)")
        if ends[0].ip.is_loopback:
            raise ValueError("a loopback address stays on lo: give the veth pair addresses of its own")
        return self


class PostgresStandby(Strict):
    """A hot standby perflab makes of the primary (pg_basebackup) once the primary is loaded, and
    starts in a network namespace of its own, streaming from the primary over a veth pair: the
    second system of the seeds' duplexing and data-sharing measurements. Needs root."""

    network: ServiceNetwork = Field(default_factory=lambda: ServiceNetwork(address="169.254.78.2/30",
                                                                           peer_address="169.254.78.1/30"),
                                    description="the veth pair: `address` the standby's end (in its namespace), "
                                                "`peer_address` the primary's (in perflab's namespace)")
    name: str = Field(default="standby", pattern=r"^[a-z][a-z0-9_]{0,30}$",
                      description="its application_name (what synchronous_standby_names can name) and cluster_name")
    settings: dict[str, str | int | float | bool] = Field(default_factory=dict, description="postgresql.conf "
                                                          "settings of the standby's own (hot_standby_feedback...)")
    ready_timeout: Duration = 120.0

    @field_validator("ready_timeout", mode="before")
    @classmethod
    def _timeout(cls, v: Any) -> float:
        return parse_duration(v)

    @field_validator("name")
    @classmethod
    def _not_the_primary(cls, v: str) -> str:
        if v == "primary":  # the primary's cluster_name: the two systems' processes would look alike
            raise ValueError("`primary` is the primary's name: give the standby another")
        return v



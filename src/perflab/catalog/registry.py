"""THE metric registry: the one place where every metric perflab reports, and every row of the
seed reports that perflab recomputes, is defined.

Each entry has a stable key (JSON, APIs), the seed-style printed label, unit, source suffix,
the row group the seeds put it in, a description, its formula(s) over other keys, display
decimals and which direction is better. Raw measurements are entries too; their `measurement`
says how they are taken. Formulas follow ../../../../shared/spec/metrics.md and the verified
definitions of vmesa-methodology.md section 2 (2.3–2.6).

Two kinds of entry:

* Origin.PERFLAB — measured (or derived) for every perflab run; `perflab show` prints them,
  `na` where unmeasured.
* Origin.SEED — rows only the seed lab could measure (RTM, VMPRF, SFS counters, guests, ...).
  perflab never prints them for its own runs, but `perflab derive` recomputes them from
  published tables with exactly these formulas.

Rules every formula obeys: per-command rows are divided by the externally counted rate
ETR (T) (the seeds do this even for RTM's rows); `na` propagates (a formula with an unknown
input is unknown, never guessed); ratio rows are relative to the base (first) configuration
and say so with `relative_to`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from perflab.catalog.metric import (
    ANY,
    BATCH,
    INSTVER,
    SERVER,
    SFS,
    SUMMARY,
    ZOS,
    Alias,
    Direction,
    F,
    Formula,
    Metric,
    Origin,
    Registry,
    S,
    Span,
    Value,
    normalize_label,
)

__all__ = [
    "REGISTRY",
    "ROLES",
    "PHRASES",
    "COMPONENT_COMPARED",
    "CLASS_KEYS",
    "class_key",
    "base_key",
    "Metric",
    "Formula",
    "Alias",
    "Direction",
    "Origin",
    "Registry",
    "Value",
    "GROUPS",
    "SEED_GROUPS",
    "normalize_label",
    "mean_of",
    "compose",
    "delta",
    "percent_change",
]

HIGHER, LOWER, NONE = Direction.HIGHER, Direction.LOWER, Direction.NONE
AFTER = Span.AFTER   # measured after the window (the restart rows)
SEED = Origin.SEED

# The row groups, in the order the seed tables print them (plus perflab's own "Measurement"
# block of raw window totals, which every other row is traced back to).
GROUPS = ("Environment", "Measurement", "Response Time", "Throughput", "Proc. Usage", "Processor Util.",
          "Storage", "Paging", "I/O", "Batch", "Restart", "Replication", "Servers")
# Groups that only seed tables have.
SEED_GROUPS = ("PRIVOPs", "SFS Counters", "Server Capacity", "Communications", "Capacity")


def _perflab(key: str, label: str, unit: str, source: str, group: str, description: str, *formulas: Formula,
             **kw: Any) -> Metric:
    return Metric(key, label, unit, source, group, description, tuple(formulas), **kw)


def _seed(key: str, label: str, unit: str, source: str, group: str, description: str, *formulas: Formula,
          **kw: Any) -> Metric:
    kw.setdefault("origin", SEED)
    return Metric(key, label, unit, source, group, description, tuple(formulas), **kw)


def _aliases(*labels: str | tuple[str, str]) -> tuple[Alias, ...]:
    return tuple(Alias(a) if isinstance(a, str) else Alias(a[0], a[1]) for a in labels)


# ------------------------------------------------------------------------------------------
# Formulas over a variable number of values (summary tables). They live here, beside the
# per-row formulas, so no caller keeps arithmetic of its own. Written with + and / only so
# they work on floats and on rounding intervals alike.

def mean_of(values: Sequence[Any]) -> Any:
    """A transition's ITRR symbol: the arithmetic mean of its measurement pairs' ITRRs
    (methodology 1.8: R5 = avg(pairs 1, 2), R1E = avg(pairs 9–12))."""
    total = values[0]
    for value in values[1:]:
        total = total + value
    return total / len(values)


def compose(factors: Sequence[Any]) -> Any:
    """Multi-step migration ITRR: the product of the per-step ITRRs, and hardware × software
    ("1.30 × 1.08 = 1.40", methodology 1.8)."""
    product = factors[0]
    for factor in factors[1:]:
        product = product * factor
    return product


def delta(new: Any, old: Any) -> Any:
    """Absolute change, later configuration minus earlier ("decreased by 0.290 seconds")."""
    return new - old


def percent_change(new: Any, old: Any) -> Any:
    """Relative change in percent of the earlier configuration ("(35%)")."""
    return 100 * (new - old) / old


# ------------------------------------------------------------------------------------------

_METRICS: list[Metric] = [
    # -- Environment ------------------------------------------------------------------------
    _perflab("release", "RELEASE", "", "", "Environment",
             "The compared attribute: release, configuration or label of the run.", text=True, context=ANY,
             aliases=_aliases("VM RELEASE"), measurement="run.json label (else the workload name)"),
    _perflab("run_id", "RUN ID", "", "", "Environment", "Measurement identifier.", text=True, context=ANY,
             measurement="run.json run_id"),
    _perflab("users", "USERS", "users", "", "Environment",
             "Simulated logged-on users (closed loop).", context=ANY, exact_count=True, decimals=0,
             measurement="run.json config.users; na in open loop"),
    _perflab("rate", "RATE", "tx/s", "", "Environment", "Intended arrival rate (open loop).", context=ANY,
             measurement="run.json config.rate; na in closed loop"),
    _perflab("processors", "PROCESSORS", "CPUs", "", "Environment",
             "Processors online to the system under test: the divisor of UTIL/PROC (S).", context=ANY,
             exact_count=True, decimals=0,
             measurement="len(config.sut_cpus); all CPUs of the machine when the SUT is not pinned"),
    _perflab("processors_h", "PROCESSORS (H)", "CPUs", "H", "Environment",
             "Processors the whole-machine (H) figures are summed over: the SUT's and the driver's CPUs. "
             "In the seeds the hardware monitor covered every online processor, so when it is not "
             "measured it equals PROCESSORS.", context=ANY, exact_count=True, decimals=0, fallback="processors",
             measurement="len(config.sut_cpus ∪ config.driver_cpus); all CPUs when neither is given"),
    _perflab("real_storage", "REAL STORAGE", "MB", "", "Environment",
             "Memory available to the system under test.", context=ANY, decimals=0,
             aliases=_aliases("Real Storage"),
             measurement="run.json config.real_storage_bytes (the SUT cgroup's memory limit) / 2^20; else "
                         "fingerprint.memory_bytes / 2^20"),
    _seed("exp_storage", "EXP. STORAGE", "MB", "", "Environment", "Configured expanded storage.", context=ANY,
          aliases=_aliases("Expanded Storage")),
    _seed("vtams", "VTAMs", "", "", "Environment", "Number of VTAM server machines.", context=ANY,
          exact_count=True, decimals=0),
    _seed("vscss", "VSCSs", "", "", "Environment", "Number of external VSCS server machines.", context=ANY,
          exact_count=True, decimals=0),

    # -- Measurement: raw totals over the window, the inputs of everything below ------------
    _perflab("window_s", "WINDOW", "s", "", "Measurement",
             "Length of the measurement window (stagger and stabilization excluded).", decimals=3,
             measurement="run.json window.end − window.start"),
    _perflab("tx_ok", "COMMANDS (T)", "tx", "T", "Measurement",
             "Transactions completed without error in the window: the count ETR (T) is made of.",
             decimals=0, measurement="transactions.parquet rows with ok = true and end within the window"),
    _perflab("errors_t", "ERRORS (T)", "tx", "T", "Measurement",
             "Transactions that ended in an error within the window; not counted in ETR (T).",
             decimals=0, direction=LOWER, measurement="transactions.parquet rows with ok = false, end in window"),
    _perflab("tx_offered", "OFFERED (T)", "tx", "T", "Measurement",
             "Transactions whose intended start falls in the window: the arrivals offered (open loop), "
             "whether they completed, failed, were dropped or were still running at its end.",
             decimals=0, measurement="transactions.parquet rows with intended_start within the window"),
    _perflab("disk_busy_s", "DISK BUSY SEC", "s", "H", "Measurement",
             "Seconds of the window in which the busiest block device had I/O in flight.", decimals=3,
             measurement="samples h.disk.<dev>.busy_ms (/proc/diskstats io_ticks), the largest over devices"),
    _perflab("sut_tx", "SUT TRANSACTIONS", "tx", "", "Measurement",
             "Transactions the SUT counted itself during the window.", decimals=0,
             measurement="difference of the SUT's transaction counter (samples column sut.<name>, named by "
                         "run.json sut.tx_counter, else sut.xact_commit / sut.transactions / sut.commits) "
                         "at the window edges; na when the SUT has no such counter"),
    _perflab("cp_sec_h", "CP SEC (H)", "CPU-s", "H", "Measurement",
             "Kernel (system + irq + softirq) CPU-seconds of the run's processors in the window.", decimals=3,
             measurement="/proc/stat via samples h.cpu<N>.{system,irq,softirq}, summed over PROCESSORS (H)"),
    _perflab("emul_sec_h", "EMUL SEC (H)", "CPU-s", "H", "Measurement",
             "User (user + nice) CPU-seconds of the run's processors in the window.", decimals=3,
             measurement="/proc/stat via samples h.cpu<N>.{user,nice}, summed over PROCESSORS (H)"),
    _perflab("busy_sec_h", "BUSY SEC (H)", "CPU-s", "H", "Measurement",
             "Busy CPU-seconds of the run's processors (iowait, steal and idle are not busy).",
             F("cp_sec_h + emul_sec_h"), decimals=3),
    _perflab("cp_sec_s", "CP SEC (S)", "CPU-s", "S", "Measurement",
             "System CPU-seconds of the SUT's processes in the window.", decimals=3,
             measurement="samples s.cpu_sys (SUT cgroup, else process tree + reaped children)"),
    _perflab("emul_sec_s", "EMUL SEC (S)", "CPU-s", "S", "Measurement",
             "User CPU-seconds of the SUT's processes in the window.", decimals=3,
             measurement="samples s.cpu_user (SUT cgroup, else process tree + reaped children)"),
    _perflab("busy_sec_s", "BUSY SEC (S)", "CPU-s", "S", "Measurement",
             "CPU-seconds of the SUT's processes in the window.", F("cp_sec_s + emul_sec_s"), decimals=3),
    _perflab("harness_sec", "HARNESS SEC (V)", "CPU-s", "V", "Measurement",
             "CPU-seconds perflab's own worker code spent inside the SUT's processes for the window's "
             "transactions, outside the SUT's calls: reading and decoding requests, encoding and writing "
             "replies, waking up. It is part of BUSY SEC (S): the SUT's processes are perflab's workers.",
             decimals=3,
             measurement="sum of transactions.harness_cpu (the worker thread's CPU clock, "
                         "CLOCK_THREAD_CPUTIME_ID, outside the SUT's call) over the transactions that finished "
                         "in the window; na unless every one of them has it (in-process adapters)"),
    _perflab("sut_sec_s", "SUT SEC (S)", "CPU-s", "S", "Measurement",
             "CPU-seconds of the SUT alone: its processes' CPU less perflab's worker code in them.",
             F("busy_sec_s - harness_sec"), decimals=3),
    _perflab("busy_sec_hs", "SUT PROC BUSY SEC (H)", "CPU-s", "H", "Measurement",
             "Busy CPU-seconds of the processors given to the SUT, whoever used them: the SUT, or other "
             "programs sharing them.", decimals=3,
             measurement="/proc/stat via samples h.cpu<N>.{user,nice,system,irq,softirq}, summed over the SUT's "
                         "CPUs (config.sut_cpus)"),
    _perflab("lock_waits", "LOCK WAITS", "waits", "", "Measurement",
             "Times the SUT's processes waited for a lock another of them held (SQLite: the write lock).",
             decimals=0, measurement="difference of samples sut.busy_waits (SQLite's busy handler, counted by "
                                     "the apsw adapter) at the window edges",
             sampled=S("sut.busy_waits")),
    _perflab("lock_wait_sec", "LOCK WAIT SEC", "s", "", "Measurement",
             "Seconds the SUT's processes slept waiting for those locks, summed over processes.", decimals=3,
             measurement="difference of samples sut.busy_wait_us / 10^6",
             sampled=S("sut.busy_wait_us", factor=1e-6)),
    _perflab("checkpoints", "CHECKPOINTS", "", "", "Measurement",
             "WAL checkpoints the SUT ran in the window.", decimals=0,
             measurement="difference of samples sut.checkpoints (the apsw adapter's WAL hook)",
             sampled=S("sut.checkpoints")),
    _perflab("checkpoint_sec", "CHECKPOINT SEC", "s", "", "Measurement",
             "Seconds the SUT's processes spent in WAL checkpoints (copying pages, and the fsyncs that leave "
             "the processor idle).", decimals=3, measurement="difference of samples sut.checkpoint_us / 10^6",
             sampled=S("sut.checkpoint_us", factor=1e-6)),
    _perflab("driver_sec", "DRIVER SEC", "CPU-s", "T", "Measurement",
             "CPU-seconds of the driver process in the window.", decimals=3,
             measurement="samples driver.{cpu_user,cpu_sys}; else run.json driver.cpu_s",
             sampled=S(("driver.cpu_user", "driver.cpu_sys"), need_all=True)),
    _perflab("monitor_sec", "MONITOR SEC", "CPU-s", "T", "Measurement",
             "CPU-seconds of perflab's monitor process in the window (reported, never charged to the SUT).",
             decimals=3, measurement="samples monitor.{cpu_user,cpu_sys}",
             sampled=S(("monitor.cpu_user", "monitor.cpu_sys"), need_all=True)),
    _perflab("driver_processors", "DRIVER PROCESSORS", "CPUs", "T", "Measurement",
             "Processors the driver may run on: the divisor of DRIVER CPU.", exact_count=True, decimals=0,
             measurement="len(config.driver_cpus); 1 when the driver is not pinned (its event loop runs on "
                         "one core at a time, so one saturated core is what limits it)"),
    _perflab("instructions_i", "INSTRUCTIONS (I)", "instr", "I", "Measurement",
             "Instructions executed for the window's transactions.", decimals=0,
             measurement="the counted pass when the workload has `pathlength` (pathlength.parquet: each "
                         "transaction name's mean count under valgrind times the window's completed transactions "
                         "of that name); else samples i.instructions (perf_event); else the sum of "
                         "transactions.instructions (a command target's valgrind mode) over the window's completed "
                         "transactions", counted=True),
    _perflab("cycles_i", "CYCLES (I)", "cycles", "I", "Measurement", "CPU cycles in the window.", decimals=0,
             measurement="samples i.cycles (perf_event)",
             sampled=S("i.cycles")),
    _perflab("page_reads", "PAGE READS", "pages", "", "Measurement",
             "Pages read in from storage in the window, system-wide.", decimals=0,
             measurement="/proc/vmstat pgmajfault via samples h.vm.pgmajfault (every swap-in that a process "
                         "waits for is also a major fault, so pswpin is not added again); h.vm.pswpin when "
                         "pgmajfault is absent",
             sampled=S("h.vm.pgmajfault", "h.vm.pswpin")),
    _perflab("page_writes", "PAGE WRITES", "pages", "", "Measurement",
             "Pages written out to swap in the window, system-wide.", decimals=0,
             measurement="/proc/vmstat pswpout via samples h.vm.pswpout",
             sampled=S("h.vm.pswpout")),
    _perflab("minflt_s", "MINFLT (S)", "faults", "S", "Measurement", "Minor faults of the SUT in the window.",
             decimals=0, measurement="samples s.minflt",
             sampled=S("s.minflt")),
    _perflab("majflt_s", "MAJFLT (S)", "faults", "S", "Measurement",
             "Major faults of the SUT in the window: faults on mapped pages (program text, mapped files) that "
             "had to be read from storage. A read() that misses the page cache is not a fault: see REFAULTS.",
             decimals=0, measurement="samples s.cgroup_pgmajfault (the SUT cgroup's memory.stat: exited processes "
                                     "included), else s.majflt (the process tree)",
             sampled=S("s.cgroup_pgmajfault", "s.majflt")),
    _perflab("refaults_s", "REFAULTS (S)", "pages", "S", "Measurement",
             "Page-cache pages the SUT read back in shortly after memory pressure had evicted them (the kernel "
             "recognises them by their workingset shadow entries), in the window. With no swap, the page cache "
             "is what a memory limit takes away: this is what the SUT re-reads because of it.", decimals=0,
             measurement="samples s.cgroup_refault_file + s.cgroup_refault_anon (memory.stat workingset_refault_* "
                         "of the SUT cgroup; s.cgroup_refault on kernels before 5.9); na without a SUT cgroup "
                         "with memory accounting",
             sampled=S(("s.cgroup_refault_file", "s.cgroup_refault_anon"), "s.cgroup_refault")),
    _perflab("refaults_h", "REFAULTS (H)", "pages", "H", "Measurement",
             "Page-cache refaults of the whole machine in the window (every process, not only the SUT).",
             decimals=0, measurement="/proc/vmstat workingset_refault_file + workingset_refault_anon via samples "
                                     "h.vm.* (h.vm.workingset_refault on kernels before 5.9)",
             sampled=S(("h.vm.workingset_refault_file", "h.vm.workingset_refault_anon"), "h.vm.workingset_refault")),
    _perflab("blks_read", "BLKS READ", "blocks", "", "Measurement",
             "Blocks the SUT's database asked the operating system for in the window: misses of its own buffer "
             "cache, served by the page cache or the disk (PostgreSQL: pg_stat_database.blks_read).", decimals=0,
             measurement="samples sut.blks_read (the SUT's own counter); na for SUTs that do not count them",
             sampled=S("sut.blks_read")),
    _perflab("blks_hit", "BLKS HIT", "blocks", "", "Measurement",
             "Blocks the SUT's database found in its own buffer cache in the window (pg_stat_database.blks_hit).",
             decimals=0, measurement="samples sut.blks_hit",
             sampled=S("sut.blks_hit")),
    _perflab("connects_t", "CONNECTS (T)", "conns", "T", "Measurement",
             "Connections the driver opened to the SUT in the window.", decimals=0,
             measurement="driver.connects: the driver's own count (HTTP and TCP targets), read by the driver "
                         "itself at the window's edges (run.json driver.window_counts), else the monitor's "
                         "samples of it; na for other targets and external drivers",
             sampled=S("driver.connects", whole=True, driver=True)),
    _perflab("handshakes_t", "TLS HANDSHAKES (T)", "handshakes", "T", "Measurement",
             "TLS handshakes the driver completed in the window, full and resumed.", decimals=0,
             measurement="driver.tls_handshakes, read like CONNECTS (T) (https targets; 0 for plain http)",
             sampled=S("driver.tls_handshakes", whole=True, driver=True)),
    _perflab("resumed_t", "TLS RESUMED (T)", "handshakes", "T", "Measurement",
             "TLS handshakes in the window that resumed an earlier session (no certificate, no key exchange "
             "with TLS 1.2 session ids; a pre-shared key with TLS 1.3 tickets).", decimals=0,
             measurement="driver.tls_resumed, read like CONNECTS (T) (the lean client's "
                         "SSLObject.session_reused; aiohttp never offers a session: 0)",
             sampled=S("driver.tls_resumed", whole=True, driver=True)),
    _perflab("disk_ios", "DISK IOS", "ops", "H", "Measurement",
             "Block-device read and write operations in the window (whole disks).", decimals=0,
             measurement="/proc/diskstats via samples h.disk.<dev>.{reads,writes}, summed over devices"),
    _perflab("disk_bytes", "DISK BYTES", "bytes", "H", "Measurement",
             "Bytes read and written by block devices in the window.", decimals=0,
             measurement="samples h.disk.<dev>.{read_bytes,write_bytes}, summed over devices"),
    _perflab("io_bytes_s", "IO BYTES (S)", "bytes", "S", "Measurement",
             "Bytes the SUT's processes read and wrote through storage in the window.", decimals=0,
             measurement="samples s.read_bytes + s.write_bytes (/proc/<pid>/io)",
             sampled=S(("s.read_bytes", "s.write_bytes"), need_all=True)),
    _perflab("syscalls_io_s", "SYSCALL IO (S)", "calls", "S", "Measurement",
             "Read and write system calls of the SUT in the window.", decimals=0,
             measurement="samples s.syscr + s.syscw (/proc/<pid>/io)",
             sampled=S(("s.syscr", "s.syscw"), need_all=True)),
    _perflab("net_bytes", "NET BYTES", "bytes", "H", "Measurement",
             "Network bytes received and sent in the window, all interfaces including loopback.", decimals=0,
             measurement="/proc/net/dev via samples h.net.<iface>.{rx_bytes,tx_bytes}"),
    # the write-ahead log, as the server counts it (PostgreSQL: pg_stat_wal and the insert position)
    _perflab("wal_lsn_bytes", "WAL LSN BYTES", "bytes", "", "Measurement",
             "Bytes the write-ahead log grew by in the window: the advance of its insert position, which counts "
             "every byte the log takes (record headers and alignment, page headers).", decimals=0,
             measurement="difference of samples sut.wal_lsn (pg_current_wal_lsn() in bytes: exact when sampled)",
             sampled=S("sut.wal_lsn")),
    _perflab("wal_bytes", "WAL BYTES", "bytes", "", "Measurement",
             "Bytes of WAL records the server generated in the window, by its own accounting (the sum of the "
             "records' lengths, without their alignment or the pages' headers).", decimals=0,
             measurement="difference of samples sut.wal_bytes (pg_stat_wal.wal_bytes, published by each process "
                         "at most once a second)",
             sampled=S("sut.wal_bytes")),
    _perflab("wal_records", "WAL RECORDS", "records", "", "Measurement", "WAL records generated in the window.",
             decimals=0, measurement="difference of samples sut.wal_records (pg_stat_wal)",
             sampled=S("sut.wal_records")),
    _perflab("wal_fpi", "WAL FPI", "pages", "", "Measurement",
             "Full-page images written to the WAL in the window: a page's first change after a checkpoint logs the "
             "whole page (full_page_writes).", decimals=0, measurement="difference of samples sut.wal_fpi",
             sampled=S("sut.wal_fpi")),
    _perflab("wal_writes", "WAL WRITES", "writes", "", "Measurement",
             "Times the server wrote WAL buffers out to the kernel in the window.", decimals=0,
             measurement="difference of samples sut.wal_write (pg_stat_wal)",
             sampled=S("sut.wal_write")),
    _perflab("wal_syncs", "WAL SYNCS", "syncs", "", "Measurement",
             "Times the server forced the WAL to storage (fdatasync or fsync) in the window.", decimals=0,
             measurement="difference of samples sut.wal_sync (pg_stat_wal; 0 with an open_* wal_sync_method)",
             sampled=S("sut.wal_sync")),
    _perflab("wal_sync_sec", "WAL SYNC SEC", "s", "", "Measurement",
             "Seconds the server spent waiting for those syncs.", decimals=3,
             measurement="difference of samples sut.wal_sync_time / 1000 (pg_stat_wal, ms; counted only with "
                         "track_wal_io_timing on, else na)",
             sampled=S("sut.wal_sync_time", factor=1e-3)),
    _perflab("wal_write_sec", "WAL WRITE SEC", "s", "", "Measurement",
             "Seconds the server spent writing WAL buffers out to the kernel; with an open_* wal_sync_method each "
             "write waits until durable, so the syncs' wait is here.", decimals=3,
             measurement="difference of samples sut.wal_write_time / 1000 (pg_stat_wal, ms; counted only with "
                         "track_wal_io_timing on, else na)",
             sampled=S("sut.wal_write_time", factor=1e-3)),
    _perflab("commits_t", "COMMITS (T)", "commits", "T", "Measurement",
             "COMMITs the driver sent and saw answered in the window (transactions of several statements).",
             decimals=0, measurement="driver.commits, read by the driver at the window's edges (run.json "
                                     "driver.window_counts), else the monitor's samples of it",
             sampled=S("driver.commits", driver=True)),
    _perflab("commit_sec_t", "COMMIT SEC (T)", "s", "T", "Measurement",
             "Seconds the driver waited for those COMMITs to be answered.", decimals=3,
             measurement="driver.commit_us / 10^6, read like COMMITS (T)",
             sampled=S("driver.commit_us", factor=1e-6, driver=True)),
    # the SUT's own block device (a WAL device perflab made for the run): the kernel's counters
    _perflab("dev_ios", "DEV IOS (S)", "ops", "S", "Measurement",
             "Operations the SUT's own device completed in the window: reads, writes and cache flushes.",
             decimals=0, measurement="samples dev.{reads,writes,flushes} (/proc/diskstats of the device perflab made "
                                     "for the SUT: target.server.wal_device)",
             sampled=S(("dev.reads", "dev.writes", "dev.flushes"))),
    _perflab("dev_flushes", "DEV FLUSHES (S)", "flushes", "S", "Measurement",
             "Cache flushes the SUT's own device completed in the window: the kernel's count of the fsyncs that "
             "reached storage (a journal commit of its file system flushes too).", decimals=0,
             measurement="samples dev.flushes (/proc/diskstats, kernels 5.5+)",
             sampled=S("dev.flushes")),
    _perflab("dev_bytes", "DEV BYTES (S)", "bytes", "S", "Measurement",
             "Bytes the SUT's own device read and wrote in the window.", decimals=0,
             measurement="samples dev.{read_bytes,write_bytes}",
             sampled=S(("dev.read_bytes", "dev.write_bytes"))),
    _perflab("dev_busy_sec", "DEV BUSY SEC (S)", "s", "S", "Measurement",
             "Seconds of the window the SUT's own device had an operation in flight.", decimals=3,
             measurement="samples dev.busy_ms / 1000 (io_ticks)",
             sampled=S("dev.busy_ms", factor=1e-3)),
    _perflab("dev_io_sec", "DEV IO SEC (S)", "s", "S", "Measurement",
             "Seconds the SUT's own device's operations took, summed over operations (queue and service).",
             decimals=3, measurement="samples dev.{read_ms,write_ms,flush_ms} / 1000",
             sampled=S(("dev.read_ms", "dev.write_ms", "dev.flush_ms"), factor=1e-3, need_all=True)),

    # -- Response Time ----------------------------------------------------------------------
    _perflab("avg_first_t", "AVG FIRST (T)", "s", "T", "Response Time",
             "Mean time from intended start to the first response (where the adapter sees it).",
             decimals=3, direction=LOWER,
             measurement="mean of first_response − intended_start over the window's completed transactions"),
    _perflab("avg_last_t", "AVG LAST (T)", "s", "T", "Response Time",
             "External response time: mean time from intended start to completion "
             "(coordinated-omission safe).", decimals=3, direction=LOWER,
             measurement="mean of end − intended_start over the window's completed transactions"),
    *[_perflab(f"resp_p{q}_t", f"RESP P{q} (T)", "s", "T", "Response Time",
               f"{q}th percentile of the external response time (nearest rank: an observed value).",
               decimals=3, direction=LOWER,
               measurement=f"nearest-rank p{q} of end − intended_start, completed transactions in the window")
      for q in (50, 90, 95, 99)],
    _perflab("resp_max_t", "RESP MAX (T)", "s", "T", "Response Time",
             "Longest external response time in the window: the slow outlier the percentiles can hide.",
             decimals=3, direction=LOWER,
             measurement="max of end − intended_start, completed transactions in the window"),
    _perflab("avg_service_t", "AVG SERVICE (T)", "s", "T", "Response Time",
             "Mean service time: from the actual send to completion (excludes schedule lag).",
             decimals=3, direction=LOWER, measurement="mean of end − actual_start"),
    _perflab("commit_ms_t", "COMMIT TIME (T)", "ms", "T", "Response Time",
             "Mean time the driver waited for a COMMIT to be answered: the commit's own response time, which "
             "holds the wait for the log to be forced (synchronous_commit on) or for a standby's reply.",
             F("1000 * commit_sec_t / commits_t"), decimals=3, direction=LOWER),
    _perflab("service_p90_t", "SERVICE P90 (T)", "s", "T", "Response Time",
             "90th percentile of the service time (nearest rank).", decimals=3, direction=LOWER,
             measurement="nearest-rank p90 of end − actual_start"),
    _seed("triv_int", "TRIV INT", "s", "", "Response Time",
          "RTM mean internal response time of trivial transactions.", decimals=3, direction=LOWER),
    _seed("nontriv_int", "NONTRIV INT", "s", "", "Response Time",
          "RTM mean internal response time of non-trivial transactions.", decimals=3, direction=LOWER),
    _seed("tot_int", "TOT INT", "s", "", "Response Time",
          "RTM mean internal response time of all transactions (weights of TRIV/NONTRIV not printed).",
          decimals=3, direction=LOWER),
    _seed("tot_int_adj", "TOT INT ADJ", "s", "", "Response Time",
          "Internal response time normalized to the TPNS command rate (used in all the seeds' analysis).",
          F("tot_int * etr_ratio"), decimals=3, direction=LOWER),
    _seed("network_delay", "VTAM+NETWORK DELAY", "s", "", "Response Time",
          "External minus internal response: the VTAM and network share of response time (prose, L1728).",
          F("avg_last_t - tot_int_adj"), decimals=3, direction=LOWER),

    # -- Throughput -------------------------------------------------------------------------
    _perflab("avg_think_t", "AVG THINK (T)", "s", "T", "Throughput",
             "Mean realized think time, over every think that started in the window -- including those still "
             "running at its end, so long thinks are not cut off (the seeds' short-window bias).", decimals=2,
             measurement="mean of transactions.think over the rows whose think began in the window "
                         "(intended_start − think), whatever became of their transaction, and of thinks.parquet's "
                         "thinks begun in the window (still running when the run stopped); runs without "
                         "thinks.parquet: the thinks of the window's completed transactions"),
    _perflab("etr", "ETR", "tx/s", "", "Throughput",
             "The SUT's own transaction rate (the seeds' RTM count); na where the SUT does not count them.",
             F("sut_tx / window_s"), decimals=2, direction=HIGHER),
    _perflab("etr_t", "ETR (T)", "tx/s", "T", "Throughput",
             "External throughput: transactions completed without error per second of the window. Every "
             "per-command row is divided by it.", F("tx_ok / window_s"), decimals=2, direction=HIGHER,
             aliases=(Alias(r"ETR \((?!T\)).* per s(ec|econd)?\)", ZOS, pattern=True),)),
    _perflab("etr_ratio", "ETR RATIO", "", "", "Throughput",
             "Internal/external count ratio; far from its usual value it flags distorted internal counting.",
             F("etr / etr_t"), decimals=3),
    _perflab("itr_h", "ITR (H)", "tx/s", "H", "Throughput",
             "Internal throughput rate: transactions per second at 100% busy of all processors (H).",
             F("etr_t / (util_proc_h / 100)"), decimals=2, direction=HIGHER, aliases=(Alias("ITR", ZOS),)),
    _perflab("itr_s", "ITR (S)", "tx/s", "S", "Throughput",
             "Internal throughput rate of the SUT alone: = 1000 · PROCESSORS / PBT/CMD (S).",
             F("etr_t / (util_proc_s / 100)"), decimals=2, direction=HIGHER),
    _perflab("itrr_h", "ITRR (H)", "", "H", "Throughput", "ITR (H) relative to the base (first) configuration.",
             relative_to="itr_h", decimals=3, direction=HIGHER,
             aliases=(Alias("itr_ratio", SUMMARY), Alias("ITR Ratio", SUMMARY))),
    _perflab("itrr_s", "ITRR (S)", "", "S", "Throughput", "ITR (S) relative to the base (first) configuration.",
             relative_to="itr_s", decimals=3, direction=HIGHER),
    _perflab("error_pct_t", "ERROR RATE (T)", "%", "T", "Throughput",
             "Share of the window's finished transactions that ended in an error.",
             F("100 * errors_t / (tx_ok + errors_t)"), decimals=2, direction=LOWER),
    _perflab("achieved_pct_t", "ACHIEVED/OFFERED (T)", "%", "T", "Throughput",
             "Transactions finished in the window per arrival offered in it: below 100 the SUT fell behind "
             "(its queue grew); the open-loop steadiness gate.",
             F("100 * (tx_ok + errors_t) / tx_offered"), decimals=1),
    _perflab("little_etr_t", "LITTLE ETR (T)", "tx/s", "T", "Throughput",
             "Closed-loop check (Little's law): USERS / (AVG THINK (T) + AVG LAST (T)); should equal ETR (T). "
             "In mixed work, of the users' own transactions (not the jobs beside them).",
             F("users / (avg_think_t + avg_last_t)"), decimals=2),
    _perflab("little_dev", "LITTLE DEV", "%", "T", "Throughput",
             "Relative difference of the Little's-law rate from ETR (T).",
             F("100 * (little_etr_t - etr_t) / etr_t"), decimals=1),
    _seed("itr", "ITR", "tx/s", "", "Throughput",
          "RTM's internal throughput rate, computed inside the monitor: RTM transactions per processor-busy "
          "second, not scaled by processors. Only approximately reproducible (≤ 1%; +3.5% on VM/XA-era runs).",
          F("100 * etr / total", approx=0.01, note="RTM computes it internally"), decimals=2, direction=HIGHER),
    _seed("emul_itr", "EMUL ITR", "tx/s", "", "Throughput",
          "RTM transactions per emulation-busy second, computed inside the monitor (approximate).",
          F("1000 * etr_ratio / emul_cmd", approx=0.01, note="RTM computes it internally"), decimals=2,
          direction=HIGHER),
    _seed("itrr", "ITRR", "", "", "Throughput", "RTM ITR relative to the base (first) configuration.",
          relative_to="itr", decimals=3, direction=HIGHER),

    # -- Proc. Usage ------------------------------------------------------------------------
    _perflab("pbt_cmd_h", "PBT/CMD (H)", "ms", "H", "Proc. Usage",
             "Processor busy time per command, whole machine (the run's processors).",
             F("10 * total_h / etr_t"),
             F("cp_cmd_h + emul_cmd_h", approx=0.001,
               note="the seeds' hardware monitor had a small third component: the sum falls 0.002–0.023 ms short"),
             decimals=3, direction=LOWER),
    _perflab("cp_cmd_h", "CP/CMD (H)", "ms", "H", "Proc. Usage",
             "Kernel (system + irq + softirq) time per command, whole machine.",
             F("1000 * cp_sec_h / tx_ok"), decimals=3, direction=LOWER),
    _perflab("emul_cmd_h", "EMUL/CMD (H)", "ms", "H", "Proc. Usage",
             "User (user + nice) time per command, whole machine.",
             F("1000 * emul_sec_h / tx_ok"), decimals=3, direction=LOWER),
    _perflab("pbt_cmd_s", "PBT/CMD (S)", "ms", "S", "Proc. Usage",
             "CPU time of the SUT's processes per command.", F("10 * total_s / etr_t"), decimals=3,
             direction=LOWER),
    _perflab("sut_cmd_s", "SUT/CMD (S)", "ms", "S", "Proc. Usage",
             "CPU time per command of the SUT alone: PBT/CMD (S) less perflab's worker (HARNESS SEC (V)).",
             F("1000 * sut_sec_s / tx_ok"), decimals=3, direction=LOWER),
    _perflab("cp_cmd_s", "CP/CMD (S)", "ms", "S", "Proc. Usage", "SUT system time per command.",
             F("1000 * cp_sec_s / tx_ok"), decimals=3, direction=LOWER),
    _perflab("emul_cmd_s", "EMUL/CMD (S)", "ms", "S", "Proc. Usage", "SUT user time per command.",
             F("1000 * emul_sec_s / tx_ok"), decimals=3, direction=LOWER),
    _perflab("cpu_connect_s", "CPU/CONNECT (S)", "ms", "S", "Proc. Usage",
             "SUT CPU time per connection the driver opened. With a new TLS connection per transaction it is "
             "the handshake's cost plus the transaction's (the seeds' SSL handshake CPU per connection).",
             F("1000 * busy_sec_s / connects_t"), decimals=3, direction=LOWER),
    _perflab("driver_cpu_cmd", "DRIVER CPU/CMD", "ms", "T", "Proc. Usage",
             "The driver's CPU time per command: the client side's cost of a transaction (the seeds' CPU per "
             "transaction on the sending side).", F("1000 * driver_sec / tx_ok"), decimals=4, direction=LOWER),
    _perflab("instr_cmd_i", "INSTR/CMD (I)", "instr", "I", "Proc. Usage",
             "Instructions per command: the pathlength (counted by valgrind in a pass after the window, "
             "workload `pathlength`, where the machine has no counter).", F("instructions_i / tx_ok"), decimals=0,
             direction=LOWER, counted=True),
    _perflab("cpi_i", "CPI (I)", "", "I", "Proc. Usage", "Cycles per instruction.",
             F("cycles_i / instructions_i"), decimals=2, direction=LOWER),
    _seed("pbt_cmd", "PBT/CMD", "ms", "", "Proc. Usage",
          "RTM processor time per command, normalized to ETR (T) (never to RTM's own ETR).",
          F("10 * total / etr_t"), F("cp_cmd + emul_cmd"), decimals=3, direction=LOWER),
    _seed("cp_cmd", "CP/CMD", "ms", "", "Proc. Usage", "RTM CP time per command.", decimals=3, direction=LOWER),
    _seed("emul_cmd", "EMUL/CMD", "ms", "", "Proc. Usage", "RTM emulation time per command.", decimals=3,
          direction=LOWER),

    # -- Processor Util. --------------------------------------------------------------------
    _perflab("total_h", "TOTAL (H)", "%", "H", "Processor Util.",
             "Processor busy percent summed over the run's processors (a 2-way at 90% shows 180).",
             F("100 * busy_sec_h / window_s"), decimals=2),
    _perflab("util_proc_h", "UTIL/PROC (H)", "%", "H", "Processor Util.", "TOTAL (H) per processor.",
             F("total_h / processors_h"), decimals=2, aliases=(Alias("LPAR CPU%", ZOS),)),
    _perflab("total_s", "TOTAL (S)", "%", "S", "Processor Util.",
             "CPU percent of the SUT's processes, summed over processors.",
             F("100 * busy_sec_s / window_s"), decimals=2),
    _perflab("util_proc_s", "UTIL/PROC (S)", "%", "S", "Processor Util.",
             "TOTAL (S) per processor of the SUT.", F("total_s / processors"), decimals=2),
    _perflab("tvr_h", "TVR (H)", "", "H", "Processor Util.",
             "Total : virtual (user) time ratio. The seeds' values follow (CP + EMUL) / EMUL: PBT/CMD (H) "
             "includes the hardware monitor's small third component, and with it one printed TVR(H) "
             "(Table 31, Y24R2161: 22.850 / 15.386 = 1.4851 printed 1.48) is out of rounding. In perflab "
             "busy time is exactly CP + EMUL, so both forms are the same number.",
             F("(cp_cmd_h + emul_cmd_h) / emul_cmd_h"),
             F("pbt_cmd_h / emul_cmd_h", approx=0.001, note="PBT/CMD (H) includes the monitor's third component"),
             decimals=2, direction=LOWER, aliases=_aliases("TVR(H)")),
    _perflab("tvr_s", "TVR (S)", "", "S", "Processor Util.", "Total : user time ratio of the SUT.",
             F("pbt_cmd_s / emul_cmd_s"), decimals=2, direction=LOWER, aliases=_aliases("TVR(S)")),
    _perflab("harness_pct", "HARNESS SHARE (V)", "%", "V", "Processor Util.",
             "perflab's worker code's share of the SUT processes' CPU (HARNESS SEC (V) / BUSY SEC (S)): what "
             "PBT/CMD (S) and ITR (S) carry that SUT/CMD (S) does not.",
             F("100 * harness_sec / busy_sec_s"), decimals=1),
    _perflab("other_util_h", "OTHER UTIL (H)", "%", "H", "Processor Util.",
             "Busy percent of the SUT's processors used by anything but the SUT (other programs on the "
             "machine, the driver when it shares them): processor time the SUT could not have. It may read "
             "a little below 0: /proc/stat counts the CPUs' time in ticks, the cgroup the SUT's in "
             "nanoseconds, and the two disagree by a percent or two; within that it means none.",
             F("100 * (busy_sec_hs - busy_sec_s) / window_s / processors"), decimals=1, direction=LOWER),
    _perflab("lock_wait_pct", "LOCK WAIT", "%", "", "Processor Util.",
             "Time the SUT's processes slept on a lock another of them held, percent of the window (summed "
             "over processes): with several processes on one processor, the write lock serializes them.",
             F("100 * lock_wait_sec / window_s"), decimals=1, direction=LOWER),
    _perflab("checkpoint_pct", "CHECKPOINT", "%", "", "Processor Util.",
             "Time the SUT's processes spent in WAL checkpoints, percent of the window.",
             F("100 * checkpoint_sec / window_s"), decimals=1, direction=LOWER),
    _perflab("driver_cpu", "DRIVER CPU", "%", "T", "Processor Util.",
             "The driver's own CPU share of its processors; a saturated driver makes the run invalid.",
             F("100 * driver_sec / window_s / driver_processors"), decimals=1, direction=LOWER,
             measurement="when the driver's CPU seconds are unknown: run.json driver.util_pct"),
    _perflab("monitor_cpu", "MONITOR CPU", "%", "T", "Processor Util.",
             "The monitors' own CPU, percent of one core: what measuring cost the machine.",
             F("100 * monitor_sec / window_s"), decimals=2, direction=LOWER),
    _seed("total", "TOTAL", "%", "", "Processor Util.",
          "RTM processor busy percent summed over processors (integer resolution).", decimals=2),
    _seed("util_proc", "UTIL/PROC", "%", "", "Processor Util.", "RTM TOTAL per processor.",
          F("total / processors"), decimals=2),
    _seed("tvr", "TVR", "", "", "Processor Util.", "RTM total : virtual ratio.", F("pbt_cmd / emul_cmd"),
          decimals=2, direction=LOWER),

    # -- Storage ----------------------------------------------------------------------------
    _perflab("wkset_s", "WKSET (S)", "MB", "S", "Storage",
             "Mean resident set of the SUT over the window (PSS where available, else RSS).", decimals=1,
             direction=LOWER, measurement="mean of samples s.pss_bytes (else s.rss_bytes) in the window"),
    _seed("wkset_v", "WKSET (V)", "pages", "V", "Storage", "Mean user working set (VMPRF).", decimals=0),
    _seed("pgblpgs", "PGBLPGS", "pages", "", "Storage", "Pageable pages available (K = ×1024).", decimals=0),
    _seed("pgblpgs_user", "PGBLPGS/USER", "pages", "", "Storage", "Pageable pages per logged-on user.",
          F("pgblpgs / users"), decimals=1, direction=HIGHER),
    _seed("freepgs", "FREEPGS", "pages", "", "Storage", "Pages of CP free storage (control blocks).", decimals=0),
    _seed("free_util", "FREE UTIL", "", "", "Storage", "Undefined in the surviving text.", decimals=2),
    _seed("shrpgs", "SHRPGS", "pages", "", "Storage", "Shared pages.", decimals=0),

    # -- Paging -----------------------------------------------------------------------------
    _perflab("reads_sec", "READS/SEC", "pages/s", "", "Paging", "Page-ins from storage per second.",
             F("page_reads / window_s"), decimals=1, direction=LOWER),
    _perflab("writes_sec", "WRITES/SEC", "pages/s", "", "Paging", "Page-outs to storage per second.",
             F("page_writes / window_s"), decimals=1, direction=LOWER),
    _perflab("page_cmd", "PAGE/CMD", "pages", "", "Paging", "Paging from and to storage per command.",
             F("(reads_sec + writes_sec) / etr_t"), decimals=3, direction=LOWER),
    _perflab("minflt_cmd_s", "MINFLT/CMD (S)", "faults", "S", "Paging", "Minor faults of the SUT per command.",
             F("minflt_s / tx_ok"), decimals=2, direction=LOWER),
    _perflab("majflt_cmd_s", "MAJFLT/CMD (S)", "faults", "S", "Paging", "Major faults of the SUT per command.",
             F("majflt_s / tx_ok"), decimals=3, direction=LOWER),
    _perflab("refault_cmd_s", "REFAULTS/CMD (S)", "pages", "S", "Paging",
             "Page-cache refaults of the SUT per command: pages it had to read again because memory was short "
             "(the storage-constrained analog of the seeds' PAGE/CMD on a machine without swap).",
             F("refaults_s / tx_ok"), decimals=3, direction=LOWER),
    _perflab("refault_cmd_h", "REFAULTS/CMD (H)", "pages", "H", "Paging",
             "Page-cache refaults of the whole machine per command.", F("refaults_h / tx_ok"), decimals=3,
             direction=LOWER),
    _seed("avg_elist_v", "AVG ELIST SIZE (V)", "users", "V", "Paging",
          "Average eligible-list size: an indicator of storage constraint.", decimals=0, direction=LOWER),
    _seed("xstor_in_sec", "XSTOR IN/SEC", "pages/s", "", "Paging", "Expanded-storage page-ins per second.",
          decimals=0),
    _seed("xstor_out_sec", "XSTOR OUT/SEC", "pages/s", "", "Paging", "Expanded-storage page-outs per second.",
          decimals=0),
    _seed("xstor_cmd", "XSTOR/CMD", "pages", "", "Paging", "Expanded-storage paging per command.",
          F("(xstor_in_sec + xstor_out_sec) / etr_t"), decimals=3, direction=LOWER),
    _seed("fast_clr_cmd", "FAST CLR/CMD", "", "", "Paging", "Undefined in the surviving text.", decimals=3),
    _seed("pg_cmd", "PAGE+XSTOR/CMD", "pages", "", "Paging",
          "Contention for real storage: all paging per command (Table 3's 'Base Pg/cmd' of the base run).",
          F("page_cmd + xstor_cmd"), decimals=3, direction=LOWER,
          aliases=(Alias("Base Pg/cmd", SUMMARY), Alias("base_pg_per_cmd", SUMMARY))),

    # -- Batch: a job stream (load: {jobs, initiators}); a job is one command ----------------
    _perflab("elapsed_t", "ELAPSED (T)", "s", "T", "Batch",
             "Elapsed time of the job stream: from the first job's start to the last job's end (the window).",
             F("window_s"), decimals=3, direction=LOWER),
    _perflab("jobs_hour_t", "JOBS/HOUR (T)", "jobs/h", "T", "Batch", "Jobs completed per hour of elapsed time.",
             F("3600 * tx_ok / window_s"), decimals=1, direction=HIGHER),
    _perflab("cpu_job_s", "CPU/JOB (S)", "s", "S", "Batch", "SUT CPU seconds per job (user + system).",
             F("busy_sec_s / tx_ok"), decimals=4, direction=LOWER),

    # -- Restart: the server crashed when the load ended, recovered, then restarted cleanly -----
    # (target.server.measure_restart; sut/pg_restart.py). IMS V8's emergency and normal restart.
    _perflab("wal_ckpt_bytes", "WAL SINCE CKPT BYTES", "bytes", "", "Measurement",
             "Bytes of write-ahead log between the last checkpoint's redo point and the insert position when the "
             "server was crashed: what its recovery has to replay.", decimals=0,
             measurement="run.json sut.restart.wal_since_checkpoint (pg_control_checkpoint().redo_lsn and "
                         "pg_current_wal_insert_lsn(), read after a synchronous commit flushed the log)", span=AFTER),
    _perflab("redo_bytes", "REDO BYTES", "bytes", "", "Measurement",
             "Bytes of write-ahead log the recovery replayed, by its log: from where redo started to the start of "
             "the last record replayed.", decimals=0,
             measurement="run.json sut.restart.redo_bytes (the server log's 'redo starts at' and 'redo done at')", span=AFTER),
    _perflab("wal_ckpt_mb", "WAL SINCE CKPT", "MB", "", "Restart",
             "Megabytes (10^6 bytes) of write-ahead log since the last checkpoint when the server crashed.",
             F("wal_ckpt_bytes / 1000000"), decimals=1, span=AFTER),
    _perflab("restart_t", "RESTART TIME (T)", "s", "T", "Restart",
             "Emergency restart: from starting the crashed server to its first answered query -- start-up, redo "
             "and the end-of-recovery checkpoint it waits for.", decimals=3, direction=LOWER,
             measurement="run.json sut.restart.restart_s (perflab's clock; the server polled every 5 ms)", span=AFTER),
    # RESTART TIME (T) in parts that sum to it: the log's stamps of each step, and perflab's clock
    # beyond the log's span (sut/pg_restart.py restart_parts).
    _perflab("restart_launch_t", "RESTART LAUNCH (T)", "s", "T", "Restart",
             "The part of RESTART TIME (T) outside the server's log: starting the process until its first log line, "
             "and from 'ready to accept connections' to the first answered query.", decimals=3, direction=LOWER,
             measurement="run.json sut.restart.restart_launch_s (restart_s less the log's span, first line to ready)",
             span=AFTER),
    _perflab("restart_init_s", "RESTART INIT", "s", "", "Restart",
             "The part of RESTART TIME (T) before redo: the log's first line to 'redo starts' (the control file, the "
             "checkpoint record, the WAL opened).", decimals=3, direction=LOWER,
             measurement="run.json sut.restart.restart_init_s (the log's %m stamps)", span=AFTER),
    _perflab("restart_redo_s", "RESTART REDO", "s", "", "Restart",
             "The part of RESTART TIME (T) in redo: 'redo starts' to 'redo done' by the log's stamps (REDO TIME is the "
             "log's own elapsed, to the hundredth).", decimals=3, direction=LOWER,
             measurement="run.json sut.restart.restart_redo_s (the log's %m stamps)", span=AFTER),
    _perflab("restart_ckpt_s", "RESTART CKPT", "s", "", "Restart",
             "The part of RESTART TIME (T) from 'redo done' to the end-of-recovery checkpoint complete.", decimals=3,
             direction=LOWER, measurement="run.json sut.restart.restart_checkpoint_s (the log's %m stamps)", span=AFTER),
    _perflab("restart_ready_s", "RESTART READY", "s", "", "Restart",
             "The part of RESTART TIME (T) from the checkpoint complete to 'ready to accept connections'.", decimals=3,
             direction=LOWER, measurement="run.json sut.restart.restart_ready_s (the log's %m stamps)", span=AFTER),
    _perflab("redo_s", "REDO TIME", "s", "", "Restart",
             "The recovery's redo, as the server's log times it.", decimals=3, direction=LOWER,
             measurement="run.json sut.restart.redo_s (the log's 'redo done at ... elapsed: N s'; 0 when 'redo is "
                         "not required')", span=AFTER),
    _perflab("redo_cpu_s", "REDO CPU", "s", "", "Restart",
             "Processor time of the redo (the startup process, user + system), as the server's log says.",
             decimals=3, direction=LOWER,
             measurement="run.json sut.restart.redo_cpu_s (the log's 'CPU: user: N s, system: N s')", span=AFTER),
    _perflab("redo_mb_sec", "REDO MB/SEC", "MB/s", "", "Restart",
             "Replay rate: megabytes of write-ahead log replayed per second of redo; na when the log's elapsed time "
             "rounds to 0.00 s (its resolution is a hundredth of a second).",
             F("redo_bytes / redo_s / 1000000"), decimals=1, direction=HIGHER, span=AFTER),
    _perflab("recovery_ckpt_s", "RECOVERY CKPT TIME", "s", "", "Restart",
             "The end-of-recovery checkpoint (writing what redo dirtied), as the server's log times it.",
             decimals=3, direction=LOWER,
             measurement="run.json sut.restart.recovery_checkpoint_s (the log's 'checkpoint complete: ... total=N s' "
                         "after 'checkpoint starting: end-of-recovery'; needs log_checkpoints)", span=AFTER),
    # -- Replication: a primary's view of its standby (target.server.standby) -------------------
    *[_perflab(f"{kind}_lag_ms", f"{kind.upper()} LAG", "ms", "", "Replication",
               f"How long the standby took to {verb} recent WAL after the primary flushed it, as the primary timed "
               f"it: the mean over the window's samples.", decimals=3, direction=LOWER,
               measurement=f"mean of samples sut.{kind}_lag_s (pg_stat_replication.{kind}_lag, the largest over "
                           f"standbys) x 1000; na without a standby, or in samples where the primary reports none",
               sampled=S(f"sut.{kind}_lag_s", factor=1000.0, gauge=True))
      for kind, verb in (("write", "write"), ("flush", "flush"), ("replay", "apply"))],
    _perflab("replay_lag_bytes", "REPLAY LAG BYTES", "bytes", "", "Replication",
             "WAL the standby had yet to apply: the mean over the window's samples.", decimals=0, direction=LOWER,
             measurement="mean of samples sut.replay_lag_bytes (pg_current_wal_lsn() - pg_stat_replication.replay_lsn, "
                         "the largest over standbys)",
             sampled=S("sut.replay_lag_bytes", gauge=True)),
    _perflab("startup_t", "START-UP TIME (T)", "s", "T", "Restart",
             "Normal restart: after a clean shutdown, from starting the server to its first answered query.",
             decimals=3, direction=LOWER, measurement="run.json sut.restart.startup_s (perflab's clock)", span=AFTER),

    # -- I/O --------------------------------------------------------------------------------
    _perflab("vio_rate", "VIO RATE", "ops/s", "", "I/O", "Block-device I/O operations per second.",
             F("disk_ios / window_s"), decimals=1),
    _perflab("vio_cmd", "VIO/CMD", "ops", "", "I/O", "I/O operations per command.", F("vio_rate / etr_t"),
             decimals=3, direction=LOWER),
    _perflab("io_bytes_cmd", "IO BYTES/CMD", "bytes", "", "I/O", "Device bytes read and written per command.",
             F("disk_bytes / tx_ok"), decimals=0, direction=LOWER),
    _perflab("disk_mb_sec", "MB/SEC", "MB/s", "", "I/O", "Block-device megabytes (10^6 bytes) read and written per "
             "second.", F("disk_bytes / window_s / 1000000"), decimals=2),
    _perflab("disk_busy_pct", "DISK BUSY %", "%", "", "I/O",
             "Share of the window the busiest block device had I/O in flight (/proc/diskstats io_ticks): the "
             "seeds' channel and DASD utilization analog.", F("100 * disk_busy_s / window_s"), decimals=1),
    _perflab("cpu_ms_mb_s", "CPU MS/MB (S)", "ms", "S", "I/O",
             "SUT CPU milliseconds per megabyte read and written by block devices (the seeds' CPU per DASD I/O, "
             "by bytes).", F("1000 * busy_sec_s / (disk_bytes / 1000000)"), decimals=3, direction=LOWER),
    _perflab("io_bytes_cmd_s", "IO BYTES/CMD (S)", "bytes", "S", "I/O",
             "Bytes the SUT read and wrote through storage per command.", F("io_bytes_s / tx_ok"), decimals=0,
             direction=LOWER),
    _perflab("syscall_io_cmd_s", "SYSCALL IO/CMD (S)", "calls", "S", "I/O",
             "Read and write system calls of the SUT per command.", F("syscalls_io_s / tx_ok"), decimals=2,
             direction=LOWER),
    _perflab("net_bytes_cmd", "NET BYTES/CMD", "bytes", "", "I/O", "Network bytes per command.",
             F("net_bytes / tx_ok"), decimals=0, direction=LOWER),
    _perflab("blks_read_cmd", "BLKS READ/CMD", "blocks", "", "I/O",
             "Database blocks read from the operating system per command (buffer-cache misses).",
             F("blks_read / tx_ok"), decimals=3, direction=LOWER),
    _perflab("buffer_hit_pct", "BUFFER HIT %", "%", "", "I/O",
             "Share of the database's block requests its own buffer cache served.",
             F("100 * blks_hit / (blks_hit + blks_read)"), decimals=2, direction=HIGHER),
    _perflab("connects_cmd", "CONNECTS/CMD (T)", "conns", "T", "I/O",
             "Connections the driver opened per command: 0 with kept-alive connections, 1 with a new connection "
             "per transaction.", F("connects_t / tx_ok"), decimals=3),
    _perflab("handshakes_cmd", "HANDSHAKES/CMD (T)", "handshakes", "T", "I/O",
             "TLS handshakes per command, full and resumed.", F("handshakes_t / tx_ok"), decimals=3),
    _perflab("resumed_pct", "RESUMED % (T)", "%", "T", "I/O",
             "Share of the TLS handshakes that resumed a session.", F("100 * resumed_t / handshakes_t"),
             decimals=1),
    # the log: IMS's OLDS bandwidth and WADS writes, VM/ESA's DASD (fast write) volume rows
    _perflab("wal_bytes_cmd", "WAL BYTES/CMD", "bytes", "", "I/O",
             "Write-ahead log per command: the bytes the log grew by (its insert position's advance).",
             F("wal_lsn_bytes / tx_ok"), decimals=0, direction=LOWER),
    _perflab("log_mb_sec", "LOG MB/SEC", "MB/s", "", "I/O",
             "Logging bandwidth: megabytes (10^6 bytes) of write-ahead log per second (IMS's OLDS MB/s).",
             F("wal_lsn_bytes / window_s / 1000000"), decimals=2),
    _perflab("fpi_cmd", "FPI/CMD", "pages", "", "I/O",
             "Full-page images logged per command: what full_page_writes adds to the log.", F("wal_fpi / tx_ok"),
             decimals=3, direction=LOWER),
    _perflab("fsync_cmd", "FSYNC/CMD", "syncs", "", "I/O",
             "WAL syncs per command: 1 when every commit forces the log itself, less when commits share a sync "
             "(group commit) or none waits (synchronous_commit off).", F("wal_syncs / tx_ok"), decimals=3,
             direction=LOWER),
    _perflab("wal_sync_ms", "WAL SYNC TIME", "ms", "", "I/O",
             "Mean time one WAL sync took: the log device's write response (IMS's WADS I/O response time).",
             F("1000 * wal_sync_sec / wal_syncs"), decimals=3, direction=LOWER),
    _perflab("wal_write_ms", "WAL WRITE TIME", "ms", "", "I/O",
             "Mean time one WAL write took; with wal_sync_method open_datasync or open_sync it includes the wait "
             "for the device (WAL SYNC TIME is then 0 syncs).", F("1000 * wal_write_sec / wal_writes"), decimals=3,
             direction=LOWER),
    _perflab("flush_cmd_s", "FLUSH/CMD (S)", "flushes", "S", "I/O",
             "Cache flushes of the SUT's own device per command, as the kernel counted them.",
             F("dev_flushes / tx_ok"), decimals=3, direction=LOWER),
    _perflab("dev_rate_s", "DEV RATE (S)", "ops/s", "S", "I/O",
             "Operations per second on the SUT's own device (reads, writes, flushes): the seeds' DASD Rate.",
             F("dev_ios / window_s"), decimals=1),
    _perflab("dev_busy_pct_s", "DEV BUSY % (S)", "%", "S", "I/O",
             "Share of the window the SUT's own device was busy: the seeds' DASD Pct Busy.",
             F("100 * dev_busy_sec / window_s"), decimals=1, direction=LOWER),
    _perflab("dev_resp_s", "DEV RESP (S)", "ms", "S", "I/O",
             "Mean time an operation on the SUT's own device took, queue included: the seeds' DASD Resp.",
             F("1000 * dev_io_sec / dev_ios"), decimals=3, direction=LOWER),
    _perflab("dev_bytes_cmd_s", "DEV BYTES/CMD (S)", "bytes", "S", "I/O",
             "Bytes read and written on the SUT's own device per command.", F("dev_bytes / tx_ok"), decimals=0,
             direction=LOWER),
    _seed("mdsk_cmd", "MDSK/CMD", "", "", "I/O", "Minidisk I/Os per command (370-Feature runs; undefined).",
          decimals=3),
    _seed("mdc_reads", "MDC READS", "/s", "", "I/O", "Minidisk-cache reads per second.", decimals=0),
    _seed("mdc_writes", "MDC WRITES", "/s", "", "I/O", "Minidisk-cache writes per second.", decimals=0),
    _seed("mdc_mods", "MDC MODS", "/s", "", "I/O", "Minidisk-cache modifications per second.", decimals=0),
    _seed("mdc_hit_ratio", "MDC HIT RATIO", "", "", "I/O", "Minidisk-cache hit ratio (denominator not printed).",
          decimals=2, direction=HIGHER),
    _seed("vfio_cmd", "VIRT FILE IO/CMD", "", "", "I/O",
          "Virtual file I/Os per command (prose, L2968): DIAG A4 + DIAG A8 (+ SFS I/O requests).",
          F("diag_a4_cmd + diag_a8_cmd + io_cmd_q", optional=("io_cmd_q",)), decimals=2),

    # -- PRIVOPs (seed only) ----------------------------------------------------------------
    _seed("privop_cmd", "PRIVOP/CMD", "", "", "PRIVOPs", "Unassisted privileged operations per command.",
          decimals=3),
    _seed("privop_cmd_r", "PRIVOP/CMD (R)", "", "R", "PRIVOPs", "As PRIVOP/CMD; suffix (R) undefined.", decimals=3),
    _seed("diag_cmd", "DIAG/CMD", "", "", "PRIVOPs", "DIAGNOSE instructions per command.", decimals=3),
    _seed("diag_cmd_r", "DIAG/CMD (R)", "", "R", "PRIVOPs", "As DIAG/CMD; suffix (R) undefined.", decimals=3),
    *[_seed(f"diag_{code.lower()}_cmd", f"DIAG {code}/CMD", "", "", "PRIVOPs",
            f"DIAGNOSE X'{code}' per command.", decimals=3)
      for code in ("08", "10", "58", "98", "A4", "A8", "214")],
    _seed("sie_cmd", "SIE/CMD", "", "", "PRIVOPs", "SIE instructions per command.", decimals=3),
    _seed("sie_intcpt_cmd", "SIE INTCPT/CMD", "", "", "PRIVOPs", "SIE intercepts per command.", decimals=3),
    _seed("free_totl_cmd", "FREE TOTL/CMD", "", "", "PRIVOPs", "Undefined [inferred: free-storage requests].",
          decimals=3),

    # -- Servers (V): per SUT component / per server machine --------------------------------
    _perflab("srv_cp_sec_v", "CP CPU SEC (V)", "CPU-s", "V", "Servers",
             "System CPU-seconds of one SUT component in the window.", per_component=True, decimals=3,
             measurement="samples v.<component>.cpu_sys"),
    _perflab("srv_virt_sec_v", "VIRT CPU SEC (V)", "CPU-s", "V", "Servers",
             "User CPU-seconds of one SUT component in the window.", per_component=True, decimals=3,
             measurement="samples v.<component>.cpu_user"),
    _perflab("srv_cpu_sec_v", "CPU SEC (V)", "CPU-s", "V", "Servers",
             "CPU-seconds of one SUT component in the window, where only the total is measured (the "
             "\"perflab worker\" component: HARNESS SEC (V)).", per_component=True, decimals=3,
             measurement="HARNESS SEC (V) for the perflab worker component"),
    _perflab("srv_tot_cpu_cmd_v", "TOT CPU/CMD (V)", "ms", "V", "Servers", "Component CPU time per command.",
             F("srv_cp_cpu_cmd_v + srv_virt_cpu_cmd_v"), F("1000 * srv_cpu_sec_v / tx_ok"), per_component=True,
             decimals=4, direction=LOWER),
    _perflab("srv_cp_cpu_cmd_v", "CP CPU/CMD (V)", "ms", "V", "Servers", "Component system time per command.",
             F("1000 * srv_cp_sec_v / tx_ok"), per_component=True, decimals=4, direction=LOWER),
    _perflab("srv_virt_cpu_cmd_v", "VIRT CPU/CMD (V)", "ms", "V", "Servers", "Component user time per command.",
             F("1000 * srv_virt_sec_v / tx_ok"), per_component=True, decimals=4, direction=LOWER),
    _perflab("srv_wkset_v", "WKSET (V)", "MB", "V", "Servers",
             "Component working set (the seeds print 4 KB pages; perflab MB).", per_component=True, decimals=1,
             measurement="mean of samples v.<component>.pss_bytes (else rss_bytes) in the window"),
    _seed("srv_diag_98_cmd_v", "DIAG 98/CMD (V)", "", "V", "Servers", "DIAGNOSE X'98' (VTAM I/O) per command.",
          per_component=True, decimals=3),
    _seed("fp_req_cmd_q", "FP REQ/CMD (Q)", "", "Q", "Servers", "File-pool requests per command.",
          F("total_fp_requests"), decimals=3, aliases=_aliases("FP REQ/CMD(Q)")),
    _seed("io_cmd_q", "IO/CMD (Q)", "", "Q", "Servers", "SFS I/O requests per command.",
          F("total_io_requests"), decimals=3, aliases=_aliases("IO/CMD(Q)")),
    _seed("io_time_cmd_q", "IO TIME/CMD (Q)", "s", "Q", "Servers", "SFS I/O time per command.",
          F("total_bio_request_time / 1000"), decimals=3, direction=LOWER, aliases=_aliases("IO TIME/CMD(Q)")),
    _seed("sfs_time_cmd_q", "SFS TIME/CMD (Q)", "s", "Q", "Servers", "Total SFS time per command.",
          F("fp_request_service_time / 1000"), decimals=3, direction=LOWER, aliases=_aliases("SFS TIME/CMD(Q)")),
    _seed("sfs_share_int", "SFS SHARE OF INT", "", "Q", "Servers",
          "Share of internal response spent in SFS (prose, L1581).", F("sfs_time_cmd_q / tot_int_adj"),
          decimals=2),

    # -- Batch: MVS (per second) and VSE (per minute) guests --------------------------------
    _seed("jobs", "Num. of Batch Jobs", "jobs", "", "Batch", "Jobs in the job stream.", context=BATCH,
          exact_count=True, decimals=0),
    _seed("initiators", "Num. of Initiators", "", "", "Batch", "MVS initiators.", context=BATCH,
          exact_count=True, decimals=0),
    _seed("elapsed_s", "Elapsed Seconds", "s", "", "Batch", "Elapsed time of the job stream (or of the test).",
          context=BATCH, decimals=3, aliases=(Alias("Elapsed time (s)", ZOS),)),
    _seed("busy_pct", "Processor Busy %", "%", "", "Batch", "Processor utilization over the elapsed time.",
          context=BATCH, decimals=2),
    _seed("processor_sec", "Processor Seconds", "s", "", "Batch", "Processor-busy seconds.",
          F("elapsed_s * busy_pct / 100"), context=BATCH, decimals=3, direction=LOWER),
    _seed("itr_job_s", "Int Throughput (ITR)", "jobs/s", "", "Batch", "MVS ITR: jobs per processor-busy second.",
          F("jobs / processor_sec"), F("etr_job_s * elapsed_s / processor_sec"), context=BATCH, decimals=3,
          direction=HIGHER),
    _seed("etr_job_s", "Ext Throughput (ETR)", "jobs/s", "", "Batch", "MVS ETR: jobs per elapsed second.",
          F("jobs / elapsed_s"), context=BATCH, decimals=3, direction=HIGHER),
    _seed("itr_pct_native", "ITR % of Native", "%", "", "Batch", "ITR as percent of native MVS (the base column).",
          relative_to="itr_job_s", relative_scale=100.0, context=BATCH, decimals=1, direction=HIGHER),
    _seed("etr_pct_native", "ETR % of Native", "%", "", "Batch", "ETR as percent of native MVS (the base column).",
          relative_to="etr_job_s", relative_scale=100.0, context=BATCH, decimals=1, direction=HIGHER),
    _seed("itr_job_min", "ITR", "jobs/min", "", "Batch", "VSE ITR: jobs per processor-busy minute.",
          F("60 * jobs / processor_sec"), F("etr_job_min * elapsed_s / processor_sec"), context=BATCH,
          decimals=3, direction=HIGHER),
    _seed("etr_job_min", "ETR", "jobs/min", "", "Batch", "VSE ETR: jobs per elapsed minute.",
          F("60 * jobs / elapsed_s"), context=BATCH, decimals=3, direction=HIGHER),
    _seed("itrr_job", "ITRR", "", "", "Batch", "VSE ITR relative to the base column of its comparison.",
          relative_to="itr_job_min", context=BATCH, decimals=2, direction=HIGHER),
    _seed("etrr_job", "ETRR", "", "", "Batch", "VSE ETR relative to the base column of its comparison.",
          relative_to="etr_job_min", context=BATCH, decimals=2, direction=HIGHER),
    _seed("tv_ratio_batch", "T/V ratio", "", "", "Batch", "Total : virtual processor time.", context=BATCH,
          decimals=2, direction=LOWER),
    _seed("dasd_ios", "DASD reads & writes", "ops", "", "Batch", "DASD I/O operations of the job stream.",
          context=BATCH, decimals=0),
    _seed("dasd_io_rate", "DASD I/O per second", "ops/s", "", "Batch", "DASD I/O rate.",
          F("dasd_ios / elapsed_s"), context=BATCH, decimals=1),
    _seed("cpu_ms_per_io", "CPU MSEC/DASD I/O", "ms", "", "Batch",
          "Processor time per DASD I/O; differences give the CCW fast-path saving (0.31 ms, Table 30).",
          F("1000 * processor_sec / dasd_ios"), context=BATCH, decimals=3, direction=LOWER),
    _seed("io_int_rate", "I/O Interrupt Rate", "/s", "", "Batch", "I/O interrupts per second.", context=BATCH,
          decimals=2),
    _seed("io_int_job", "I/O Interrupts/Tran", "", "", "Batch", "I/O interrupts per job.",
          F("io_int_rate * elapsed_s / jobs"), context=BATCH, decimals=2),
    *[_seed(f"frames_{area}", f"Total Frames {name} - Avg", "frames", "", "Batch",
            f"MVS average frames in {name}.", context=BATCH, decimals=0)
      for area, name in (("sqa", "SQA"), ("lpa", "LPA"), ("csa", "CSA"), ("lsqa", "LSQA"),
                         ("priv", "Priv Area"), ("unused", "Unused"))],
    _seed("fixed_nucleus", "Fixed Frames Nucleus", "frames", "", "Batch", "MVS nucleus frames (all fixed).",
          context=BATCH, decimals=0),
    _seed("frames_total", "Total Frames Total - Avg", "frames", "", "Batch", "MVS total frames: areas + nucleus.",
          F("frames_sqa + frames_lpa + frames_csa + frames_lsqa + frames_priv + frames_unused + fixed_nucleus"),
          context=BATCH, decimals=0),
]

# -- SFS counters (Appendix B): QUERY FILEPOOL STATUS per TPNS command ----------------------
_SFS_RAW = [
    ("close_file_requests", "Close File Requests"), ("commit_requests", "Commit Requests"),
    ("connect_requests", "Connect Requests"), ("delete_file_requests", "Delete File Requests"),
    ("lock_requests", "Lock Requests"), ("open_new_requests", "Open File New Requests"),
    ("open_read_requests", "Open File Read Requests"), ("open_replace_requests", "Open File Replace Requests"),
    ("open_write_requests", "Open File Write Requests"), ("query_fp_requests", "Query File Pool Requests"),
    ("query_space_requests", "Query User Space Requests"), ("read_file_requests", "Read File Requests"),
    ("refresh_dir_requests", "Refresh Directory Requests"), ("rename_requests", "Rename Requests"),
    ("rollback_requests", "Rollback Requests"), ("unlock_requests", "Unlock Requests"),
    ("write_file_requests", "Write File Requests"),
    ("fp_request_service_time", "File Pool Request Service Time"),
    ("local_fp_requests", "Local File Pool Requests"), ("begin_luws", "Begin LUWs"),
    ("agent_holding_time", "Agent Holding Time (msec)"), ("sac_calls", "SAC Calls"),
    ("catalog_lock_conflicts", "Catalog Lock Conflicts"), ("total_lock_conflicts", "Total Lock Conflicts"),
    ("lock_wait_time", "Lock Wait Time (msec)"),
    ("file_blocks_read", "File Blocks Read"), ("file_blocks_written", "File Blocks Written"),
    ("catalog_blocks_read", "Catalog Blocks Read"), ("catalog_blocks_written", "Catalog Blocks Written"),
    ("cmdsk_blocks_read", "Control Minidisk Blocks Read"), ("cmdsk_blocks_written", "Control Minidisk Blocks Written"),
    ("log_blocks_written", "Log Blocks Written"),
    ("bio_read_file", "BIO Requests to Read File Block"), ("bio_write_file", "BIO Requests to Write File Blocks"),
    ("bio_read_catalog", "BIO Requests to Read Catalog Blocks"),
    ("bio_write_catalog", "BIO Requests to Write Catalog Blocks"),
    ("bio_read_cmdsk", "BIO Requests to Read Cntrl Mdsk Blks"),
    ("bio_write_cmdsk", "BIO Requests to Write Cntrl Mdsk Blks"), ("bio_write_log", "BIO Requests to Write Log Blocks"),
    ("total_bio_request_time", "Total BIO Request Time (msec)"),
    ("io_read_file", "I/O Requests to Read File Blocks"), ("io_write_file", "I/O Requests to Write File Blocks"),
    ("io_read_catalog", "I/O Requests to Read Catalog Blocks"),
    ("io_write_catalog", "I/O Requests to Write Catalog Blocks"),
    ("io_read_cmdsk", "I/O Requests to Read Cntrl Mdsk Blks"),
    ("io_write_cmdsk", "I/O Requests to Write Cntrl Mdsk Blks"), ("io_write_log", "I/O Requests to Write Log Blocks"),
    ("get_logname_requests", "Get Logname Requests"), ("get_luwid_requests", "Get LUWID Requests"),
    ("crr_request_service_time", "CRR Request Service Time (msec)"), ("log_io_requests", "Log I/O Requests"),
    ("deadlocks", "Deadlocks (delta)"), ("deadlock_rollbacks", "Rollbacks Due to Deadlock (delta)"),
    ("rollback_requests_delta", "Rollback Requests (delta)"), ("luw_rollbacks", "LUW Rollbacks (delta)"),
    ("checkpoints_taken", "Checkpoints Taken (delta)"), ("checkpoint_duration", "Checkpoint Duration (sec)"),
    ("seconds_between_checkpoints", "Seconds Between Checkpoints"),
]
_METRICS += [_seed(key, label, "", "Q", "SFS Counters",
                   f"{label}: QUERY FILEPOOL STATUS counter, (end − begin) of the interval per TPNS command "
                   f"(summed over the file-pool and CRR servers).", context=SFS, decimals=4)
             for key, label in _SFS_RAW]


def _sum(*keys: str, optional: tuple[str, ...] = ()) -> Formula:
    # Rows that are zero in every run are omitted from an SFS block, so some terms are optional.
    return F(" + ".join(keys + optional), optional=optional)


_METRICS += [
    _seed("total_fp_requests", "Total File Pool Requests", "", "Q", "SFS Counters", "All file-pool requests.",
          _sum("close_file_requests", "open_read_requests", "read_file_requests", "write_file_requests",
               optional=("commit_requests", "connect_requests", "delete_file_requests", "lock_requests",
                         "open_new_requests", "open_replace_requests", "open_write_requests", "query_fp_requests",
                         "query_space_requests", "refresh_dir_requests", "rename_requests", "rollback_requests",
                         "unlock_requests")),
          context=SFS, decimals=4),
    _seed("total_dasd_block_transfers", "Total DASD Block Transfers", "", "Q", "SFS Counters",
          "Blocks read and written, all block types.",
          _sum("file_blocks_read", "file_blocks_written", "catalog_blocks_read", "catalog_blocks_written",
               optional=("cmdsk_blocks_read", "cmdsk_blocks_written", "log_blocks_written")),
          context=SFS, decimals=4),
    _seed("total_bio_requests", "Total BIO Requests", "", "Q", "SFS Counters", "Block I/O requests, all types.",
          _sum("bio_read_file", "bio_write_file", "bio_read_catalog", "bio_write_catalog",
               optional=("bio_read_cmdsk", "bio_write_cmdsk", "bio_write_log")),
          context=SFS, decimals=4),
    _seed("total_io_requests", "Total I/O Requests", "", "Q", "SFS Counters", "I/O requests, all types.",
          _sum("io_read_file", "io_write_file", "io_read_catalog", "io_write_catalog",
               optional=("io_read_cmdsk", "io_write_cmdsk", "io_write_log")),
          context=SFS, decimals=4),
    _seed("total_crr_requests", "Total CRR Requests", "", "Q", "SFS Counters", "CRR requests.",
          F("get_logname_requests + get_luwid_requests"), context=SFS, decimals=4),
    _seed("agents_held", "Agents Held", "agents", "Q", "SFS Counters", "Mean agents held (Little's law).",
          F("agent_holding_time * etr_t / 1000"), context=SFS, decimals=1),
    _seed("agents_in_call", "Agents In-call", "agents", "Q", "SFS Counters", "Mean agents in a call.",
          F("fp_request_service_time * etr_t / 1000"), context=SFS, decimals=1),
    _seed("avg_luw_time", "Avg LUW Time (msec)", "ms", "Q", "SFS Counters", "Mean logical-unit-of-work time.",
          F("agent_holding_time / begin_luws"), context=SFS, decimals=1, direction=LOWER),
    _seed("avg_fp_request_time", "Avg File Pool Request Time (msec)", "ms", "Q", "SFS Counters",
          "Mean file-pool request time.", F("fp_request_service_time / total_fp_requests"), context=SFS,
          decimals=1, direction=LOWER),
    _seed("avg_lock_wait_time", "Avg Lock Wait Time (msec)", "ms", "Q", "SFS Counters", "Mean lock wait.",
          F("lock_wait_time / total_lock_conflicts"), context=SFS, decimals=1, direction=LOWER),
    _seed("sac_per_fp_request", "SAC Calls / FP Request", "", "Q", "SFS Counters", "SAC calls per request.",
          F("sac_calls / total_fp_requests"), context=SFS, decimals=2),
    _seed("bio_request_time", "BIO Request Time (msec)", "ms", "Q", "SFS Counters", "Mean block I/O request time.",
          F("total_bio_request_time / total_bio_requests"), context=SFS, decimals=2, direction=LOWER),
    _seed("blocking_factor", "Blocking Factor (Blocks/BIO)", "", "Q", "SFS Counters", "Blocks per BIO request.",
          F("total_dasd_block_transfers / total_bio_requests"), context=SFS, decimals=2),
    _seed("chaining_factor", "Chaining Factor (Blocks/IO)", "", "Q", "SFS Counters", "Blocks per I/O request.",
          F("total_dasd_block_transfers / total_io_requests"), context=SFS, decimals=2),
    _seed("checkpoint_util", "Checkpoint Utilization", "%", "Q", "SFS Counters", "Time spent checkpointing.",
          F("100 * checkpoint_duration / seconds_between_checkpoints"), context=SFS, decimals=1),

    # -- Server capacity (DASD fast write study) and server states, per server -------------
    _seed("cpu_secs", "CPU Secs", "s", "V", "Server Capacity", "Server CPU seconds in the interval.",
          context=SERVER, per_component=True, decimals=0),
    _seed("cpu_msec_sec", "CPU Msec/Sec", "ms/s", "V", "Server Capacity", "Server CPU ms per elapsed second.",
          F("1000 * cpu_secs / elapsed_s"), context=SERVER, per_component=True, decimals=1),
    _seed("dasd_rate_total", "Rate (total)", "ops/s", "", "Server Capacity", "DASD I/O rate of the server.",
          context=SERVER, per_component=True, decimals=1),
    _seed("dasd_resp", "Resp", "ms", "", "Server Capacity", "DASD response time per I/O.", context=SERVER,
          per_component=True, decimals=1, direction=LOWER),
    _seed("dasd_resp_msec_sec", "DASD Resp Msec/Sec", "ms/s", "", "Server Capacity",
          "DASD response time accumulated per elapsed second.", F("dasd_rate_total * dasd_resp"), context=SERVER,
          per_component=True, decimals=1),
    _seed("busy_msec_sec", "Busy Msec/Sec", "ms/s", "", "Server Capacity",
          "Time a synchronous server is busy per second (CPU + DASD); /1000 = minimum servers needed.",
          F("cpu_msec_sec + dasd_resp_msec_sec"), context=SERVER, per_component=True, decimals=1),
    _seed("pct_true_dormant", "Pct True Dormnt", "%", "", "Server Capacity", "Percent of time truly dormant.",
          context=SERVER, per_component=True, decimals=1),
    _seed("pct_true_nondormant", "Pct True Non-Dormnt", "%", "", "Server Capacity",
          "Percent of time truly non-dormant.", context=SERVER, per_component=True, decimals=1),
    _seed("pct_test_idle", "Pct Test Idle", "%", "", "Server Capacity",
          "Percent of non-dormant time in test idle.", context=SERVER, per_component=True, decimals=1),
    _seed("active_msec_sec", "Active Msec/Sec", "ms/s", "", "Server Capacity",
          "Time a server is active per second.",
          F("1000 - 10 * pct_true_dormant - 10 * pct_true_nondormant * pct_test_idle / 100"), context=SERVER,
          per_component=True, decimals=0),
    _seed("min_servers", "MIN SERVERS", "servers", "", "Server Capacity",
          "Lower bound on the servers a synchronous service needs.", F("busy_msec_sec / 1000"), context=SERVER,
          per_component=True, decimals=2),
    _seed("running_pct", "Running", "%", "V", "Server Capacity", "Percent of true non-dormant time running.",
          context=SERVER, per_component=True, decimals=1),
    _seed("page_wait_pct", "Page Wait", "%", "V", "Server Capacity", "Percent of true non-dormant time in page wait.",
          context=SERVER, per_component=True, decimals=1),
    _seed("server_util_pct", "Utilization", "%", "V", "Server Capacity", "Running + page wait.",
          F("running_pct + page_wait_pct"), context=SERVER, per_component=True, decimals=1),

    # -- Communications (INSTVER: ISFC / PWSCS sweep) ----------------------------------------
    _seed("message_size", "MESSAGE SIZE (Bytes)", "bytes", "", "Communications", "CPI-C message size.",
          context=INSTVER, exact_count=True, decimals=0),
    _seed("time_per_iteration", "TIME PER ITERATION (ms)", "ms", "", "Communications", "Time per iteration.",
          context=INSTVER, decimals=2, direction=LOWER),
    _seed("transfer_rate", "TRANSFER RATE (Kb/sec)", "KB/s", "", "Communications",
          "Transfer rate: message bytes per millisecond = KB per second.", F("message_size / time_per_iteration"),
          context=INSTVER, decimals=2, direction=HIGHER),

    # -- Capacity: the summary tables' ITRR symbols and compositions -------------------------
    _seed("itrr_transition", "ITRR SYMBOL", "", "", "Capacity",
          "Per-transition ITRR (R5, R1E...): mean_of() the transition's measurement-pair ITRRs.",
          context=SUMMARY, decimals=2, direction=HIGHER),
    _seed("itrr_release", "RELEASE ITRR", "", "", "Capacity",
          "Multi-step migration ITRR: compose() (the product of) its transitions' symbols.",
          context=SUMMARY, decimals=2, direction=HIGHER, aliases=(Alias("itrr_printed", SUMMARY),)),
]


# -- roles and phrases: what reports, studies, gates and charts ask the registry for -------------

#: Short noun phrases for the rows prose talks about. The descriptions above are full
#: definitions ("CPU time of the SUT's processes per command."), too long for a sentence; the
#: seeds' prose used names like "internal throughput (ITR (H))". Keys without a phrase are
#: named by their label alone.
PHRASES = {
    "itr_s": "internal throughput", "itr_h": "internal throughput",
    "itrr_s": "internal throughput ratio", "itrr_h": "internal throughput ratio",
    "etr_t": "external throughput", "etr": "the SUT's own transaction rate",
    "etr_ratio": "the internal/external count ratio",
    "avg_last_t": "external response time", "avg_first_t": "time to first response",
    "resp_p50_t": "median response time", "resp_p90_t": "90th percentile response time",
    "resp_p95_t": "95th percentile response time", "resp_p99_t": "99th percentile response time",
    "resp_max_t": "longest response time",
    "avg_service_t": "service time", "service_p90_t": "90th percentile service time",
    "avg_think_t": "think time", "error_pct_t": "the error rate", "errors_t": "errors",
    "pbt_cmd_s": "processor busy time per command", "pbt_cmd_h": "processor busy time per command",
    "sut_cmd_s": "the SUT's own processor time per command",
    "harness_pct": "perflab's worker share of the SUT processes' CPU",
    "cp_cmd_s": "kernel (CP) time per command", "cp_cmd_h": "kernel (CP) time per command",
    "emul_cmd_s": "user (emulation) time per command", "emul_cmd_h": "user (emulation) time per command",
    "instr_cmd_i": "pathlength", "cpi_i": "cycles per instruction",
    "total_s": "processor utilization", "total_h": "processor utilization",
    "util_proc_s": "processor utilization", "util_proc_h": "processor utilization",
    "tvr_s": "the total-to-user time ratio", "tvr_h": "the total-to-user time ratio",
    "driver_cpu": "the driver's CPU use", "wkset_s": "the working set",
    "reads_sec": "page reads per second", "writes_sec": "page writes per second",
    "page_cmd": "paging per command", "minflt_cmd_s": "minor faults per command",
    "vio_rate": "the I/O rate", "vio_cmd": "I/Os per command", "io_bytes_cmd": "device bytes per command",
    "io_bytes_cmd_s": "bytes read and written per command", "syscall_io_cmd_s": "I/O system calls per command",
    "net_bytes_cmd": "network bytes per command",
    "majflt_cmd_s": "major faults per command", "refault_cmd_s": "page-cache refaults per command",
    "refault_cmd_h": "page-cache refaults per command", "blks_read_cmd": "database blocks read per command",
    "buffer_hit_pct": "the buffer-cache hit ratio", "connects_cmd": "connections opened per command",
    "handshakes_cmd": "TLS handshakes per command", "resumed_pct": "the share of resumed TLS sessions",
    "cpu_connect_s": "the server's CPU time per connection", "driver_cpu_cmd": "the driver's CPU time per command",
    "srv_tot_cpu_cmd_v": "component CPU time per command", "srv_cp_cpu_cmd_v": "component kernel time per command",
    "srv_virt_cpu_cmd_v": "component user time per command", "srv_wkset_v": "component working set",
}

#: Metric roles, each an ordered preference list (the first a run measured is used):
#: capacity -- the headline of a comparison and the default primary (gated) metric: the SUT's
#:     own ITR is the less noisy; cost -- the processor time per command that explains the
#:     capacity key at the same position (ITR = 1000 · PROCESSORS / PBT/CMD); response,
#:     throughput, utilization -- the other rows General Observations speak of; compared -- what a
#:     release report compares by default (capacity first, then cost, throughput, response);
#:     sweep -- the columns of a sweep table and its curves; run_columns -- the per-run table;
#:     summary -- the headline rows printed after `perflab run`; batch -- what a job stream's
#:     study compares by default (elapsed time and CPU per job first).
ROLES: dict[str, tuple[str, ...]] = {
    "capacity": ("itr_s", "itr_h"),
    "cost": ("pbt_cmd_s", "pbt_cmd_h"),
    "response": ("avg_last_t",),
    "throughput": ("etr_t",),
    "utilization": ("util_proc_s", "util_proc_h"),
    "compared": ("itr_s", "itr_h", "pbt_cmd_s", "sut_cmd_s", "emul_cmd_s", "cp_cmd_s", "pbt_cmd_h", "etr_t", "etr", "etr_ratio",
                 "avg_last_t", "resp_p90_t", "avg_first_t", "util_proc_s", "util_proc_h", "harness_pct", "wkset_s", "vio_cmd",
                 "minflt_cmd_s", "io_bytes_cmd_s", "instr_cmd_i"),
    "sweep": ("etr_t", "itr_s", "itr_h", "util_proc_s", "util_proc_h", "avg_last_t", "resp_p90_t", "pbt_cmd_s"),
    "run_columns": ("etr_t", "itr_s", "itr_h", "util_proc_s", "avg_last_t"),
    "batch": ("elapsed_t", "cpu_job_s", "jobs_hour_t", "emul_cmd_s", "cp_cmd_s", "vio_rate", "disk_mb_sec",
              "cpu_ms_mb_s", "disk_busy_pct"),
    "summary": ("etr_t", "avg_last_t", "resp_p90_t", "pbt_cmd_s", "util_proc_s", "itr_s", "pbt_cmd_h", "itr_h",
                "driver_cpu", "monitor_cpu", "errors_t"),
    # response times: in a concurrent design (a duet) they depend on how the CPU was shared, so
    # they are described there, never given a verdict (perflab.study.compare)
    "response_rows": ("avg_first_t", "avg_last_t", "resp_p50_t", "resp_p90_t", "resp_p95_t", "resp_p99_t", "resp_max_t",
                      "avg_service_t", "service_p90_t"),
    # machine-wide rows that are not (H): system-wide paging and the block devices and network
    # interfaces of the whole machine. With every (H) row they are `REGISTRY.machine_wide`: in a
    # concurrent design both runs of a block count in them.
    "machine_wide": ("reads_sec", "writes_sec", "page_cmd", "page_reads", "page_writes", "vio_rate", "vio_cmd",
                     "io_bytes_cmd", "disk_mb_sec", "disk_busy_pct", "disk_busy_s", "disk_ios", "disk_bytes",
                     "net_bytes", "net_bytes_cmd"),
}
#: Per-component (V) rows, compared per component: the seeds' VTAM and SFS server rows.
COMPONENT_COMPARED = ("srv_tot_cpu_cmd_v", "srv_wkset_v")
#: Rows reported per transaction class (the run report's class table). A study compares one as
#: `<metric>.<class>` (avg_last_t.online: the online class's AVG LAST (T)) when its `metrics` or
#: `gate_metrics` name it: mixed work's two questions are each a per-class row.
CLASS_KEYS = ("tx_ok", "errors_t", "etr_t", "error_pct_t", "avg_first_t", "avg_last_t", "resp_p50_t",
              "resp_p90_t", "resp_p95_t", "resp_p99_t", "avg_service_t", "avg_think_t")


def class_key(key: str) -> tuple[str, str] | None:
    """(metric, class) of a per-class key (`avg_last_t.online`), None for any other key."""
    metric, sep, klass = str(key).partition(".")
    return (metric, klass) if sep and metric in CLASS_KEYS and klass else None


def base_key(key: str) -> str:
    """The metric a key is an instance of: `srv_wkset_v:checkpointer` and `avg_last_t.online` are
    rows of srv_wkset_v and avg_last_t."""
    split = class_key(key)
    return split[0] if split is not None else str(key).split(":", 1)[0]

REGISTRY = Registry(_METRICS, GROUPS + SEED_GROUPS, PHRASES, ROLES)

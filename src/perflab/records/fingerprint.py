"""The keys of a run's fingerprint (run.json's `fingerprint`), in one table.

pyperf keeps its metadata the same way: one entry per key, with how it is shown. Each key here
says which part of a report shows it (the machine, the software under test, or neither: the
run's own state), its name there (the table's order is the reports' order), how its value is printed,
and which identities it belongs to:

* `machine` -- two runs whose values differ ran on different machines or kernels: a comparison
  of them measures the hardware too (`perflab compare` and the study report say so);
* `bias-host` -- a host's bias bound (records/bias.py: `<store>/bias/<host>.json`) is applied
  only on a host of the same values: the processor, its count, the kernel build, the
  architecture and whether a hypervisor is there (memory, hostname and boot id may differ);
* `series-host` -- a history series (perflab history) never spans two hosts of different values.

A key a run records and this table does not name belongs to the software under test (the SUT's
version, its server binary, its settings), shown after the named ones, by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

#: Where a report shows a key: the machine (the seeds' hardware configuration), the software
#: under test, or neither -- a state of the run (its placement, shown on its own line; when a
#: server perflab did not start last started).
Part = Literal["hardware", "software", "run"]
#: How a value is printed (perflab.report.view.fingerprint_value): as text, as GiB, or as a
#: probe's {available, reason}.
Format = Literal["text", "bytes", "availability"]
Identity = Literal["machine", "bias-host", "series-host"]


@dataclass(frozen=True)
class FingerprintKey:
    key: str
    name: str
    part: Part
    format: Format = "text"
    identities: tuple[Identity, ...] = ()


def _hw(key: str, name: str, *identities: Identity, format: Format = "text") -> FingerprintKey:
    return FingerprintKey(key, name, "hardware", format, identities)


def _sw(key: str, name: str) -> FingerprintKey:
    return FingerprintKey(key, name, "software")


#: Every key perflab names, in the reports' order.
KEYS: tuple[FingerprintKey, ...] = (
    _hw("cpu_model", "CPU model", "machine", "bias-host", "series-host"),
    _hw("cores", "cores online", "machine", "bias-host", "series-host"),
    _hw("online_cpus", "online CPUs"),
    # a study's (from its runs' plans), not the machine's: the processors the SUT was given
    _hw("processors", "processors given to the SUT", "machine"),
    _hw("memory_bytes", "memory", "machine", "series-host", format="bytes"),
    _hw("memory_limit_bytes", "memory limit", format="bytes"),
    _hw("real_storage_bytes", "real storage (SUT)", format="bytes"),   # a study's, as processors
    _hw("kernel", "kernel", "machine", "bias-host"),
    _hw("kernel_version", "kernel version"),
    _hw("arch", "arch", "machine", "bias-host", "series-host"),
    _hw("os", "OS"),
    _hw("virtualized", "virtualized", "bias-host"),
    _hw("cgroup_version", "cgroup version"),
    _hw("perf_counters", "CPU counters (I)", format="availability"),
    FingerprintKey("placement", "placement", "run"),
    # when a server the study does not start last started (pg_postmaster_start_time): its state
    FingerprintKey("sut_started", "server started", "run"),
    _hw("hostname", "hostname", "series-host"),
    _hw("boot_id", "boot id"),
    _hw("clock_ticks_per_s", "clock ticks per s"),
    _hw("page_size", "page size"),
    _sw("sut_version", "SUT version"),
    _sw("adapter", "adapter"),
    _sw("sqlite_driver", "SQLite driver"),
    _sw("driver", "driver"),
    _sw("python", "python"),
    _sw("perflab", "perflab"),
)
BY_KEY = {k.key: k for k in KEYS}
#: The keys a machine records of itself (perflab.sut.fingerprint.machine_fingerprint): the
#: report's hardware part. processors and real_storage_bytes come from a run's plan.
MACHINE_KEYS = tuple(k.key for k in KEYS if k.part == "hardware" and k.key not in ("processors",
                                                                                    "real_storage_bytes"))


def identity(name: Identity) -> tuple[str, ...]:
    """The keys of one identity, in the table's order."""
    return tuple(k.key for k in KEYS if name in k.identities)


def order(part: Part) -> tuple[str, ...]:
    return tuple(k.key for k in KEYS if k.part == part)


def display_name(key: str) -> str:
    """A key's name in a report: the table's, else the key in words."""
    named = BY_KEY.get(key)
    return named.name if named is not None else key.replace("_", " ")


def value_format(key: str) -> Format:
    named = BY_KEY.get(key)
    return named.format if named is not None else "text"


#: The keys of the run's own state: neither the machine's nor the software's.
RUN_KEYS = order("run")


def split_fingerprint(fingerprint: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(hardware, software) parts of a run's fingerprint; the run's own state (its placement,
    when an existing server last started) belongs to neither."""
    hardware = {k: v for k, v in fingerprint.items() if k in MACHINE_KEYS}
    software = {k: v for k, v in fingerprint.items() if k not in MACHINE_KEYS and k not in RUN_KEYS}
    return hardware, software

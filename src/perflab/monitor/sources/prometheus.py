"""Prometheus exporters' text format -> perflab's sample columns (the SUT host's (H), (S), (V)).

A SUT perflab does not start runs on a host of its own; an exporter there (Debian's
prometheus-node-exporter, prometheus-process-exporter, or any Prometheus endpoint the user
already runs) publishes the same kernel counters perflab reads locally. The text is parsed
by prometheus_client's parser (never by hand) and mapped to the columns of
docs/architecture.md, so reduction does not know where a column came from:

    node_cpu_seconds_total{cpu="N",mode="M"}            -> h.cpuN.M   (user nice system idle iowait irq softirq steal)
    node_vmstat_{pgfault,pgmajfault,pswpin,pswpout}     -> h.vm.*
    node_disk_{reads,writes}_completed_total{device}    -> h.disk.<dev>.{reads,writes}
    node_disk_{read,written}_bytes_total{device}        -> h.disk.<dev>.{read_bytes,write_bytes}
    node_disk_io_time_seconds_total{device}             -> h.disk.<dev>.busy_ms
    node_network_{receive,transmit}_{bytes,packets}_total{device} -> h.net.<iface>.*
    node_memory_{MemTotal,MemAvailable}_bytes           -> h.mem.{total_bytes,available_bytes} (gauges)
    namedprocess_namegroup_*{groupname=G}               -> v.G.* and their sum s.* (process-exporter)

node_exporter reads the same /proc files with the same units (its CPU seconds are /proc/stat's
ticks / USER_HZ, `user` including guest time as here), so the remote (H) rows are the local
ones taken from another place. What it cannot give: per-process (S) rows (a process-exporter
can, by process group), reaped children's CPU (process-exporter sees live processes only: a
process that starts and ends between two scrapes is lost) and PSS.

Disk devices: node_exporter already leaves out partitions, loop and ram devices; dm-*, md*,
zram, sr and nbd are left out here too, for the reason diskstats.py gives (stacked devices
count the same I/O twice; zram is memory).
"""

from __future__ import annotations

import math
import re

from perflab.extras import require

CPU_MODES = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
VMSTAT = ("pgfault", "pgmajfault", "pswpin", "pswpout")
_SKIP_DISKS = re.compile(r"^(dm-|md|zram|loop|ram|sr|nbd|fd)\d*")
_DISK = {"node_disk_reads_completed": "reads", "node_disk_writes_completed": "writes",
         "node_disk_read_bytes": "read_bytes", "node_disk_written_bytes": "write_bytes"}
_NET = {"node_network_receive_bytes": "rx_bytes", "node_network_transmit_bytes": "tx_bytes",
        "node_network_receive_packets": "rx_packets", "node_network_transmit_packets": "tx_packets"}
# process-exporter's per-group counters -> the process tree's field names (process_tree.py)
_GROUP_COUNTERS = {"namedprocess_namegroup_major_page_faults": "majflt",
                   "namedprocess_namegroup_minor_page_faults": "minflt",
                   "namedprocess_namegroup_read_bytes": "read_bytes",
                   "namedprocess_namegroup_write_bytes": "write_bytes"}
_GROUP_GAUGES = {"namedprocess_namegroup_num_procs": "nprocs", "namedprocess_namegroup_num_threads": "threads"}


def _name(text: str) -> str:
    """A device or group name usable inside a dotted column name."""
    return re.sub(r"[^A-Za-z0-9_:-]", "_", text)


def _samples(text: str):
    """(metric name without the _total suffix, labels, value) for every finite sample."""
    parser = require("prometheus_client.parser", extra="net",
                     feature="reading a Prometheus exporter (monitor.node_exporter)")
    try:
        families = list(parser.text_string_to_metric_families(text))
    except (ValueError, TypeError, IndexError) as exc:
        raise NotPrometheus(f"the answer is not Prometheus text ({exc}): not an exporter's metrics page") from None
    for family in families:
        for sample in family.samples:
            if not math.isfinite(sample.value):
                continue
            name = sample.name[:-6] if sample.name.endswith("_total") else sample.name
            yield name, sample.labels, float(sample.value)


class NotPrometheus(ValueError):
    """A page that is not the Prometheus text format (a web server's page, an agent's JSON)."""


def node_exporter_columns(text: str) -> dict[str, float]:
    """The (H) columns in a node_exporter scrape, plus `remote.wall_time` (node_time_seconds)."""
    out: dict[str, float] = {}
    for name, labels, value in _samples(text):
        if name == "node_cpu_seconds":
            mode, cpu = labels.get("mode"), labels.get("cpu", "")
            if mode in CPU_MODES and cpu.isdigit():
                out[f"h.cpu{cpu}.{mode}"] = value
        elif name.startswith("node_vmstat_") and name[12:] in VMSTAT:
            out[f"h.vm.{name[12:]}"] = value
        elif name in _DISK or name == "node_disk_io_time_seconds":
            device = labels.get("device", "")
            if not device or _SKIP_DISKS.match(device):
                continue
            prefix = f"h.disk.{_name(device)}."
            if name == "node_disk_io_time_seconds":
                out[prefix + "busy_ms"] = value * 1000.0
            else:
                out[prefix + _DISK[name]] = value
        elif name in _NET:
            device = labels.get("device", "")
            if device:
                out[f"h.net.{_name(device)}.{_NET[name]}"] = value
        elif name == "node_memory_MemTotal_bytes":
            out["h.mem.total_bytes"] = value
        elif name == "node_memory_MemAvailable_bytes":
            out["h.mem.available_bytes"] = value
        elif name == "node_time_seconds":
            out["remote.wall_time"] = value
    return out


def process_exporter_columns(text: str, groups: list[str] | None = None) -> dict[str, float]:
    """(S) and (V) columns from a process-exporter scrape: each group (or each of `groups`) is a
    component `v.<group>.*`; `s.*` is their sum, so the SUT is the groups named."""
    per_group: dict[str, dict[str, float]] = {}
    wanted = set(groups) if groups else None
    for name, labels, value in _samples(text):
        group = labels.get("groupname")
        if group is None or (wanted is not None and group not in wanted):
            continue
        row = per_group.setdefault(group, {})
        if name == "namedprocess_namegroup_cpu_seconds":
            mode = labels.get("mode")
            if mode in ("user", "system"):
                row["cpu_user" if mode == "user" else "cpu_sys"] = value
        elif name in _GROUP_COUNTERS:
            row[_GROUP_COUNTERS[name]] = value
        elif name in _GROUP_GAUGES:
            row[_GROUP_GAUGES[name]] = value
        elif name == "namedprocess_namegroup_memory_bytes":
            if labels.get("memtype") == "resident":
                row["rss_bytes"] = value
            elif labels.get("memtype") == "proportionalResident":
                row["pss_bytes"] = value
        elif name == "namedprocess_namegroup_context_switches":
            kind = labels.get("ctxswitchtype")
            if kind in ("voluntary", "nonvoluntary"):
                row["ctx_vol" if kind == "voluntary" else "ctx_invol"] = value
    out: dict[str, float] = {}
    total: dict[str, float] = {}
    for group, row in sorted(per_group.items()):
        for field, value in row.items():
            out[f"v.{_name(group)}.{field}"] = value
            total[field] = total.get(field, 0.0) + value
    if wanted is not None and set(per_group) != wanted:
        # A named group that is absent would make the sum a different SUT: no s.* at all.
        return out
    out.update({f"s.{field}": value for field, value in total.items()})
    return out


def cpus_in(columns: dict[str, float]) -> list[int]:
    """The processors a scrape showed (h.cpu<N>.user)."""
    return sorted(int(m.group(1)) for k in columns if (m := re.match(r"^h\.cpu(\d+)\.user$", k)))

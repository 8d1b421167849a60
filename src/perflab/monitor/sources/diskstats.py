"""Block-device I/O from /proc/diskstats (H): `h.disk.<dev>.{reads,writes,read_bytes,write_bytes,busy_ms}`.

Which devices: whole disks backed by a device, i.e. those with /sys/block/<dev>/device
(sda, vda, nvme0n1, xvda, mmcblk0). That rule leaves out
  - partitions (not in /sys/block at all): their I/O is already in the disk's line;
  - loop, ram and zram devices: memory or files, not storage (swap to zram shows up in
    h.vm.pswpin/pswpout instead);
  - dm-* and md* devices: stacked on top of physical disks, so counting them as well would
    count the same I/O twice.
The set is fixed when the source opens, so columns are stable for the whole run.

One device by name (`DeviceSpec`, a counter spec for the monitor): a device perflab made for the
SUT alone (the WAL device, sut/wal_device.py), whatever its kind, as `dev.*` columns -- the same
fields plus the cache flushes it completed (`flushes`, kernels 5.5+: the kernel's own count of
the fsyncs that reached the device) and the milliseconds spent on each kind of operation (the
device's response time). Being the SUT's own, it is not part of the machine's h.disk rows.
"""

from __future__ import annotations

import os

from . import SourceUnavailable
from .procfs import read_bytes

SECTOR_BYTES = 512  # /proc/diskstats counts 512-byte sectors whatever the device's block size


def physical_disks(sys_block: str = "/sys/block") -> list[str]:
    try:
        names = sorted(os.listdir(sys_block))
    except OSError:
        return []
    return [n for n in names if os.path.exists(os.path.join(sys_block, n, "device"))]


class DiskstatsSource:
    name = "diskstats"

    def __init__(self, path: str = "/proc/diskstats", devices: list[str] | None = None) -> None:
        self._path = path
        self._devices = set(devices if devices is not None else physical_disks())
        if read_bytes(path) is None:
            raise SourceUnavailable(f"cannot read {path}")
        if not self._devices:
            raise SourceUnavailable("no physical block devices in /sys/block")

    def read(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for line in (read_bytes(self._path) or b"").splitlines():
            f = line.split()
            if len(f) < 14:
                continue
            dev = f[2].decode()
            if dev not in self._devices:
                continue
            # After major, minor, name: reads, reads merged, sectors read, ms reading,
            # writes, writes merged, sectors written, ms writing, in flight, io_ticks (ms busy)...
            p = f"h.disk.{dev.replace('.', '_')}."  # keep column names splittable on '.'
            out[p + "reads"] = float(f[3])
            out[p + "writes"] = float(f[7])
            out[p + "read_bytes"] = float(int(f[5]) * SECTOR_BYTES)
            out[p + "write_bytes"] = float(int(f[9]) * SECTOR_BYTES)
            out[p + "busy_ms"] = float(f[12])
        return out

    def close(self) -> None:
        pass


# /proc/diskstats after major, minor, name (Documentation/admin-guide/iostats.rst): field index
# -> column. Fields 15-18 (discards) came with 4.18, 19-20 (flushes) with 5.5; a shorter line
# leaves those columns out rather than reading them as zero.
DEVICE_FIELDS = {3: "reads", 6: "read_ms", 7: "writes", 10: "write_ms", 12: "busy_ms", 18: "flushes",
                 19: "flush_ms"}
DEVICE_SECTORS = {5: "read_bytes", 9: "write_bytes"}


def device_line(text: bytes, device: str) -> dict[str, float]:
    """One device's counters from /proc/diskstats text (dev.* column names); {} when absent."""
    for line in text.splitlines():
        f = line.split()
        if len(f) < 14 or f[2].decode() != device:
            continue
        out = {f"dev.{name}": float(f[i]) for i, name in DEVICE_FIELDS.items() if i < len(f)}
        out.update({f"dev.{name}": float(int(f[i]) * SECTOR_BYTES) for i, name in DEVICE_SECTORS.items()})
        return out
    return {}


class DeviceSpec:
    """CounterSpec (picklable): one named block device's counters, `dev.*`."""

    def __init__(self, device: str, path: str = "/proc/diskstats") -> None:
        self.device, self.path = device, path

    def open(self) -> DeviceSource:
        return DeviceSource(self.device, self.path)


class DeviceSource:
    name = "device"

    def __init__(self, device: str, path: str = "/proc/diskstats") -> None:
        self._device, self._path = device, path
        if not device_line(read_bytes(path) or b"", device):
            raise SourceUnavailable(f"no device {device} in {path}")

    def read(self) -> dict[str, float]:
        return device_line(read_bytes(self._path) or b"", self._device)

    def close(self) -> None:
        pass

"""A block device of the run's own for PostgreSQL's write-ahead log: the log volume.

Why a device of its own: the seeds measured the log (IMS's OLDS and WADS, VM/ESA's minidisk
volumes with and without DASD fast write) as a volume with its own rate, busy time and response
time. On this machine the WAL would otherwise share the root file system with everything else,
and the kernel's per-device counters (/proc/diskstats: operations, flushes, time busy) would
count every program's I/O. A loop device that only pg_wal lives on makes those counters the
log's alone -- in particular the count of cache flushes the device completed, which is the
kernel's count of the fsyncs that reached storage.

Two speeds, as the seeds' DASD with and without fast write:

* `memory`: the loop device's file is on /dev/shm (tmpfs). A write or a flush completes once it
  is in memory, as a 3990's fast write completed once the record was in nonvolatile storage --
  but memory here is not nonvolatile: this is the speed of fast write, not its safety;
* `disk`: the file is on the machine's disk, the loop device opened with direct I/O (no page cache
  between the log and the disk), so a flush waits for the disk's own cache flush.

    device = WalDevice(spec, run_id)   # spec: target.server.wal_device
    device.create()                    # SutFailure when this machine does not permit it
    device.adopt(data_dir, account)    # data_dir/pg_wal moved onto it (a symlink left behind)
    ...                                # the server runs; DeviceSpec(device.name) for the monitor
    device.remove()                    # after the server stopped

Needs root (losetup, mkfs, mount). The file system is ext4 with its inode tables and journal
written out when it is made (no lazy initialization writing behind the run's back).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from perflab.errors import SutFailure
from perflab.workload.model import WalDevice as WalDeviceSpec

DEFAULT_DIRECTORY = {"memory": "/dev/shm", "disk": "/var/tmp"}
MOUNT_ROOT = Path("/run/perflab-wal")


def _run(argv: list[str], what: str, timeout: float = 120) -> str:
    program = shutil.which(argv[0]) or (f"/usr/sbin/{argv[0]}" if Path(f"/usr/sbin/{argv[0]}").exists() else None)
    if program is None:
        raise SutFailure(f"target.server.wal_device needs `{argv[0]}` (util-linux, e2fsprogs)")
    done = subprocess.run([program, *argv[1:]], capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise SutFailure(f"{what} failed: {(done.stderr or done.stdout).strip()[-400:]}")
    return done.stdout.strip()


class WalDevice:
    """One run's loop device, its file system and its mount point."""

    def __init__(self, spec: WalDeviceSpec, run_id: str):
        self.spec = spec
        tag = hashlib.sha1(run_id.encode()).hexdigest()[:10]
        directory = Path(spec.directory or DEFAULT_DIRECTORY[spec.backing])
        self.backing_file = directory / f"perflab-wal-{tag}.img"
        self.mount_point = MOUNT_ROOT / tag
        self.loop: str | None = None  # /dev/loopN once attached
        self.mounted = False
        self.direct_io = False

    @property
    def name(self) -> str | None:
        """The kernel's name of the device (loop3): its line in /proc/diskstats."""
        return None if self.loop is None else Path(self.loop).name

    @property
    def wal_dir(self) -> Path:
        return self.mount_point / "pg_wal"

    def describe(self) -> str:
        mode = "direct I/O" if self.direct_io else "buffered"
        return (f"pg_wal on {self.loop} (ext4, {self.spec.size >> 20} MiB, {self.spec.backing}: "
                f"{self.backing_file}, {mode})")

    def create(self) -> None:
        if os.geteuid() != 0:
            raise SutFailure("target.server.wal_device needs root (losetup, mkfs, mount)")
        try:
            self.backing_file.parent.mkdir(parents=True, exist_ok=True)
            with open(self.backing_file, "wb") as f:
                f.truncate(self.spec.size)
                if self.spec.backing == "disk":
                    os.posix_fallocate(f.fileno(), 0, self.spec.size)  # the space is the disk's now, not later
            self._attach()
            _run(["mkfs.ext4", "-q", "-F", "-m", "0", "-E", "lazy_itable_init=0,lazy_journal_init=0,nodiscard",
                  self.loop or ""], "mkfs.ext4 on the WAL device")
            self.mount_point.mkdir(parents=True, exist_ok=True)
            _run(["mount", "-o", "noatime", self.loop or "", str(self.mount_point)], "mounting the WAL device")
            self.mounted = True
        except (OSError, subprocess.TimeoutExpired) as exc:
            self.remove()
            raise SutFailure(f"making the WAL device failed: {exc}") from None
        except SutFailure:
            self.remove()
            raise

    def _attach(self) -> None:
        # A disk-backed device bypasses the page cache of its file, so that the device's writes
        # and flushes are the disk's; a file system that refuses direct I/O (tmpfs) gets buffered.
        if self.spec.backing == "disk":
            try:
                self.loop = _run(["losetup", "--find", "--show", "--direct-io=on", str(self.backing_file)],
                                 "losetup")
                self.direct_io = True
                return
            except SutFailure:
                pass
        self.loop = _run(["losetup", "--find", "--show", str(self.backing_file)], "losetup")

    def adopt(self, data_dir: Path, account) -> None:
        """Move the data directory's pg_wal onto the device and leave a symlink in its place
        (what initdb --waldir makes), everything owned by the server's user."""
        source = data_dir / "pg_wal"
        if source.is_symlink():
            source.unlink()
            raise SutFailure(f"{source} is a symlink already: a template saved with its WAL elsewhere")
        shutil.move(str(source), str(self.wal_dir))
        os.symlink(self.wal_dir, source)
        account.chown(self.mount_point)
        account.chown_tree(self.wal_dir)
        # What the move wrote goes to the device now, not during the measurement.
        _run(["sync", "-f", str(self.wal_dir)], "sync of the WAL device")

    def remove(self) -> None:
        """Unmount, detach and delete (idempotent; what cannot be removed is left and named)."""
        problems = []
        if self.mounted:
            done = subprocess.run(["umount", str(self.mount_point)], capture_output=True, text=True, timeout=120)
            if done.returncode == 0:
                self.mounted = False
            else:
                problems.append(f"umount {self.mount_point}: {done.stderr.strip()}")
        if not self.mounted:
            try:
                self.mount_point.rmdir()
            except OSError:
                pass
        if self.loop is not None and not self.mounted:
            done = subprocess.run(["losetup", "-d", self.loop], capture_output=True, text=True, timeout=60)
            if done.returncode == 0:
                self.loop = None
            else:
                problems.append(f"losetup -d {self.loop}: {done.stderr.strip()}")
        if self.loop is None and not self.mounted:
            self.backing_file.unlink(missing_ok=True)
        if problems:
            raise SutFailure("the WAL device was not fully removed: " + "; ".join(problems))

"""A control group for the system under test: exact CPU accounting, a memory limit, a CPU set.

Why a cgroup: the kernel charges a cgroup with every nanosecond its processes run, including
processes that were born and reaped between two monitor samples, so the SUT's CPU time is exact
(process-tree accounting loses the last moments of processes reaped outside the tree; see
monitor/sources/process_tree.py). It is also how the seeds' "storage-constrained" runs are
reproduced: a memory limit makes the SUT page.

    cg, why = SutCgroup.try_create("run-20261122-a1b2", cpus=[1], memory_limit_bytes=512 << 20)
    if cg is None: ...                      # `why` says why this machine allows none
    subprocess.Popen(cmd, preexec_fn=cg.add_self)   # or cg.add_pid(pid) before it forks
    spec.sut_cgroup = cg.path_for_monitor
    ...
    cg.remove()

Where it is created: under the cgroup perflab itself runs in, in each hierarchy
(`<mount>/<own cgroup>/perflab/<name>`), so limits that apply to perflab (a container's, a
session's) keep applying to the SUT. cgroup v1 is used when its cpuacct controller is mounted
(including the hybrid layout, where the v2 hierarchy has no controllers); otherwise cgroup v2.

Moving a process moves that process only: its existing children stay where they are, later
children are born inside. Add the SUT's root before it starts its workers.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

V1_CONTROLLERS = frozenset(
    {"cpu", "cpuacct", "cpuset", "memory", "blkio", "io", "pids", "devices", "freezer",
     "net_cls", "net_prio", "perf_event", "hugetlb", "rdma", "misc"}
)
GROUP_DIR = "perflab"


@dataclass(frozen=True)
class Hierarchy:
    """One mounted cgroup hierarchy."""

    version: int  # 1 or 2
    mount: Path  # where it is mounted
    root: str  # the cgroup path the mount shows as its top ("/" unless a bind or namespace)
    controllers: frozenset[str]  # v1: from the mount options; v2: cgroup.controllers at the top


def hierarchies(mountinfo: str = "/proc/self/mountinfo") -> list[Hierarchy]:
    out: list[Hierarchy] = []
    try:
        text = Path(mountinfo).read_text()
    except OSError:
        return out
    for line in text.splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        fstype, options = tail[0], tail[2]
        root, mount = _unescape(fields[3]), Path(_unescape(fields[4]))
        if fstype == "cgroup":
            ctrls = frozenset(o for o in options.split(",") if o in V1_CONTROLLERS)
            if ctrls:
                out.append(Hierarchy(1, mount, root, ctrls))
        elif fstype == "cgroup2":
            try:
                ctrls = frozenset((mount / "cgroup.controllers").read_text().split())
            except OSError:
                ctrls = frozenset()
            out.append(Hierarchy(2, mount, root, ctrls))
    return out


def _unescape(s: str) -> str:  # mountinfo escapes space, tab, newline, backslash as \ooo
    return s.encode().decode("unicode_escape") if "\\" in s else s


def cgroup_dirs_of_pid(pid: int | str = "self") -> dict[str, str]:
    """The directories of the cgroups a process is in: controller -> dir, v2 under "unified".

    Useful to monitor a SUT started by someone else (a systemd service, a container):
    pass the result as MonitorSpec.sut_cgroup.
    """
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return {}
    by_key: dict[str, str] = {}
    for line in lines:
        _, ctrls, path = line.split(":", 2)
        by_key[ctrls or "unified"] = path
    out: dict[str, str] = {}
    for h in hierarchies():
        if h.version == 2:
            unified = by_key.get("unified")
            if unified is not None:
                out["unified"] = str(_dir_in(h, unified))
            continue
        for key, path in by_key.items():
            if key != "unified" and set(key.split(",")) & h.controllers:
                for c in h.controllers:
                    out[c] = str(_dir_in(h, path))
    return out


def _dir_in(h: Hierarchy, cgroup_path: str) -> Path:
    rel = cgroup_path
    if h.root != "/" and rel.startswith(h.root):
        rel = rel[len(h.root):]
    return h.mount / rel.lstrip("/")


def _write(path: Path, value: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def _read(path: Path) -> str:
    return path.read_text().strip()


class CgroupUnavailable(Exception):
    pass


class SutCgroup:
    """A cgroup created for one run; `remove()` it at the end."""

    def __init__(self, version: int, dirs: dict[str, Path], origins: dict[str, Path]) -> None:
        self.version = version
        self.dirs = dirs  # controller (v1) or "unified" (v2) -> the SUT cgroup's directory
        self._origins = origins  # same keys -> perflab's own cgroup, where leftovers go back
        self._removed = False

    # -- creation -----------------------------------------------------------------------------

    @classmethod
    def try_create(
        cls,
        name: str,
        cpus: list[int] | None = None,
        memory_limit_bytes: int | None = None,
        *,
        version: int | None = None,
    ) -> tuple[SutCgroup | None, str | None]:
        """(cgroup, None) or (None, reason).

        version: None picks v1 when its cpuacct controller is mounted, else v2; 1 or 2 forces
        one (on a hybrid machine, v2 gives CPU accounting without v1's tick-sampled split).
        """
        if not name or "/" in name or name.startswith("."):
            return None, f"invalid cgroup name {name!r}"
        hs = hierarchies()
        v1 = {c: h for h in hs if h.version == 1 for c in h.controllers}
        v2 = next((h for h in hs if h.version == 2), None)
        try:
            if "cpuacct" in v1 and version in (None, 1):
                return cls._create_v1(name, v1, cpus, memory_limit_bytes), None
            if v2 is not None and version in (None, 2):
                return cls._create_v2(name, v2, cpus, memory_limit_bytes), None
        except CgroupUnavailable as e:
            return None, str(e)
        except OSError as e:
            return None, f"cannot create cgroup: {e}"
        wanted = f"cgroup v{version}" if version else "cgroup hierarchy with CPU accounting"
        return None, f"no {wanted} is mounted"

    @classmethod
    def _create_v1(cls, name, v1: dict[str, Hierarchy], cpus, memory_limit_bytes) -> SutCgroup:
        wanted = {"cpuacct"}
        if memory_limit_bytes is not None:
            wanted.add("memory")
        if cpus is not None:
            wanted.add("cpuset")
        missing = sorted(wanted - set(v1))
        if missing:
            raise CgroupUnavailable(f"cgroup v1 controller(s) not mounted: {', '.join(missing)}")
        if "memory" in v1:
            wanted.add("memory")  # memory accounting (usage, cache) is worth having anyway
        own = cgroup_dirs_of_pid("self")
        dirs: dict[str, Path] = {}
        origins: dict[str, Path] = {}
        created: list[Path] = []
        try:
            for controller in sorted(wanted):
                if controller not in own:
                    raise CgroupUnavailable(f"perflab's own {controller} cgroup is unknown")
                origin = Path(own[controller])
                shared = next((d for c, d in dirs.items() if v1[c] is v1[controller]), None)
                if shared is not None:  # co-mounted controllers (cpu,cpuacct) share a directory
                    dirs[controller], origins[controller] = shared, origin
                    continue
                group = origin / GROUP_DIR
                _make_dir(group, created)
                if controller == "cpuset":
                    _init_cpuset(group, origin)
                target = group / name
                _make_dir(target, created, empty=True)
                dirs[controller], origins[controller] = target, origin
            if cpus is not None:
                _set_cpuset(dirs["cpuset"], origins["cpuset"], cpus)
            if memory_limit_bytes is not None:
                _write(dirs["memory"] / "memory.limit_in_bytes", str(int(memory_limit_bytes)))
        except (CgroupUnavailable, OSError):
            for d in reversed(created):
                _rmdir_quietly(d)
            raise
        return cls(1, dirs, origins)

    @classmethod
    def _create_v2(cls, name, h: Hierarchy, cpus, memory_limit_bytes) -> SutCgroup:
        # cgroup v2 forbids processes in a cgroup whose controllers are delegated to children
        # (except at the top), so the group is made at the top of the mount, not under
        # perflab's own (occupied) cgroup.
        needed = set()
        if memory_limit_bytes is not None:
            needed.add("memory")
        if cpus is not None:
            needed.add("cpuset")
        missing = sorted(needed - h.controllers)
        if missing:
            raise CgroupUnavailable(f"cgroup v2 controller(s) not available: {', '.join(missing)}")
        enable = sorted(needed | ({"memory"} & h.controllers))
        top = h.mount
        group = top / GROUP_DIR
        created: list[Path] = []
        try:
            _make_dir(group, created)
            for d in (top, group):
                if enable:
                    _write(d / "cgroup.subtree_control", " ".join("+" + c for c in enable))
            target = group / name
            _make_dir(target, created, empty=True)
            if cpus is not None:
                _write(target / "cpuset.cpus", ",".join(str(c) for c in cpus))
            if memory_limit_bytes is not None:
                _write(target / "memory.max", str(int(memory_limit_bytes)))
        except OSError as e:
            for d in reversed(created):
                _rmdir_quietly(d)
            if e.errno == errno.EBUSY:
                raise CgroupUnavailable(
                    f"cannot delegate controllers under {top} (processes in an inner cgroup)"
                ) from e
            raise
        own = cgroup_dirs_of_pid("self").get("unified")
        return cls(2, {"unified": target}, {"unified": Path(own) if own else top})

    # -- use ----------------------------------------------------------------------------------

    def add_pid(self, pid: int) -> None:
        """Move a process (all its threads) into the cgroup; its future children follow."""
        for d in self._distinct_dirs():
            _write(d / "cgroup.procs", str(pid))

    def add_self(self) -> None:
        """Move the calling process in: usable as subprocess.Popen(preexec_fn=cg.add_self)."""
        self.add_pid(os.getpid())

    def pids(self) -> list[int]:
        d = self.dirs.get("cpuacct") or next(iter(self.dirs.values()))
        try:
            return sorted(int(p) for p in _read(d / "cgroup.procs").split())
        except OSError:
            return []

    @property
    def path_for_monitor(self) -> str | dict[str, str]:
        """What MonitorSpec.sut_cgroup takes: the v2 directory, or controller -> v1 directory."""
        if self.version == 2:
            return str(self.dirs["unified"])
        return {c: str(d) for c, d in self.dirs.items()}

    @property
    def memory_limit_bytes(self) -> int | None:
        try:
            if self.version == 2:
                raw = _read(self.dirs["unified"] / "memory.max")
            else:
                raw = _read(self.dirs["memory"] / "memory.limit_in_bytes")
        except (KeyError, OSError):
            return None
        return None if raw == "max" or int(raw) >= (1 << 62) else int(raw)

    def remove(self) -> None:
        """Move any remaining processes back to perflab's own cgroup and delete the group."""
        if self._removed:
            return
        for key, d in self.dirs.items():
            origin = self._origins[key]
            for _ in range(50):
                try:
                    procs = _read(d / "cgroup.procs").split()
                except OSError:
                    break
                for pid in procs:
                    try:
                        _write(origin / "cgroup.procs", pid)
                    except OSError:
                        pass  # exited meanwhile
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)  # a process was exiting or being added: try again
            _rmdir_quietly(d.parent)  # the shared `perflab` group, if no other run uses it
        self._removed = True

    def _distinct_dirs(self) -> list[Path]:
        seen: list[Path] = []
        for d in self.dirs.values():
            if d not in seen:
                seen.append(d)
        return seen

    def __repr__(self) -> str:
        return f"SutCgroup(v{self.version}, {self.path_for_monitor!r})"


#: An empty SUT cgroup of a run perflab cannot look up (another store's) is removed once it is
#: this old: no live run leaves its cgroup empty for long (its SUT joins right after it is made).
STALE_AGE_S = 600.0


def stale_candidates() -> list[Path]:
    """Every run's SUT cgroup directory on this machine (`<perflab's cgroup>/perflab/<run id>`
    in each v1 hierarchy, `<mount>/perflab/<run id>` in v2): up to three per run."""
    groups: list[Path] = []
    own = cgroup_dirs_of_pid("self")
    for h in hierarchies():
        if h.version == 2:
            groups.append(h.mount / GROUP_DIR)
        else:
            origin = next((own[c] for c in sorted(h.controllers) if c in own), None)
            if origin is not None:
                groups.append(Path(origin) / GROUP_DIR)
    found: list[Path] = []
    for group in dict.fromkeys(groups):
        try:
            found += [d for d in group.iterdir() if d.is_dir()]
        except OSError:
            continue
    return found


def remove_stale(run_is_live: Callable[[str], bool | None]) -> list[Path]:
    """Remove the SUT cgroups left by runs that are over (a SIGKILLed perflab cannot remove its
    own). A directory goes when no process is in it and `run_is_live(its name)` is False, or
    None (a run this store does not know) and the directory is older than STALE_AGE_S. Returns
    what was removed; a directory that cannot be removed is left (never an error)."""
    removed: list[Path] = []
    now = time.time()
    for d in stale_candidates():
        try:
            if _read(d / "cgroup.procs"):
                continue
            live = run_is_live(d.name)
            if live or (live is None and now - d.stat().st_mtime < STALE_AGE_S):
                continue
            d.rmdir()
        except OSError:
            continue
        removed.append(d)
        _rmdir_quietly(d.parent)
    return removed


def _make_dir(path: Path, created: list[Path], *, empty: bool = False) -> None:
    """A cgroup directory, made and remembered in `created` (removed again if the rest of the
    set-up fails), or kept when it is there already; with `empty` (the run's own cgroup), one
    left behind holding processes is refused: another run is using it."""
    if path.exists():
        if empty and _read(path / "cgroup.procs"):
            raise CgroupUnavailable(f"{path} already exists and has processes")
        return
    path.mkdir()
    created.append(path)


def _init_cpuset(group: Path, parent: Path) -> None:
    # A new v1 cpuset starts with no CPUs and no memory nodes, and nothing can join it until
    # both are set; the intermediate group gets everything its parent has.
    if not _read(group / "cpuset.cpus"):
        _write(group / "cpuset.cpus", _read(parent / "cpuset.cpus"))
    if not _read(group / "cpuset.mems"):
        _write(group / "cpuset.mems", _read(parent / "cpuset.mems"))


def _set_cpuset(target: Path, parent: Path, cpus: list[int]) -> None:
    allowed = parse_cpu_list(_read(parent / "cpuset.cpus"))
    outside = sorted(set(cpus) - allowed)
    if outside:
        raise CgroupUnavailable(f"CPUs {outside} are not in perflab's cpuset {sorted(allowed)}")
    _write(target / "cpuset.cpus", ",".join(str(c) for c in sorted(set(cpus))))
    _write(target / "cpuset.mems", _read(parent / "cpuset.mems"))


def parse_cpu_list(text: str) -> set[int]:
    """'0-3,8' -> {0, 1, 2, 3, 8} (the kernel's list format)."""
    out: set[int] = set()
    for part in text.split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def _rmdir_quietly(d: Path) -> None:
    try:
        d.rmdir()
    except OSError:
        pass

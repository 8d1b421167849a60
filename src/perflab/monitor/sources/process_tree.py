"""The system under test as a tree of processes (S), split into named components (V).

The SUT is its root processes (the pids the driver started or was given) plus every descendant.
Columns:

    s.{cpu_user,cpu_sys,minflt,majflt,syscr,syscw,read_bytes,write_bytes,rchar,wchar,
       ctx_vol,ctx_invol}                     cumulative
    s.{rss_bytes,pss_bytes,threads,nprocs}    gauges
    v.<component>.<same fields>               per component, when components are configured

How cumulative totals are kept exact and monotone while processes come and go
-------------------------------------------------------------------------------
* CPU time, faults and I/O of a process include its *reaped children*: /proc/<pid>/stat has
  cutime/cstime/cminflt/cmajflt, and the kernel adds a reaped child's I/O accounting to its
  parent's /proc/<pid>/io. A command run by a SUT worker usually starts and ends between two
  samples; it is never seen alive, and only this inclusion counts it. That is why every tracked
  process contributes "own + reaped children".
* A tracked process that disappears keeps contributing its last seen value ("carry"), so totals
  never go backwards.
* But if it was reaped by a tracked parent, that parent's children fields now include it too.
  To avoid counting it twice, the parent gets an *offset* equal to the child's last seen value,
  subtracted from the parent's own contribution. The parent's jump is the child's final value,
  at least its last seen value, so the parent's contribution still never decreases.
* Context switches have no "children" field, so they are carried, never offset. They are also
  per thread (/proc/<pid>/status shows the main thread only), so multi-threaded processes are
  read thread by thread and exited threads are carried the same way.

Known, small losses (avoid them with a cgroup, whose accounting is exact: see cgroup.py)
* CPU, faults and I/O a process spends after the last sample that saw it alive, when it is
  reaped by a process outside the tree (a root reaped by the driver, an orphan reaped by init):
  at most one interval's worth for that process. When a tracked parent reaps it, the tail is
  counted, but in the parent's component.
* Children of a component move into their parent's component when reaped (a short-lived
  postgres backend reaped by the postmaster appears under the postmaster's component).
* Context switches of processes never seen alive.
* The read order (parents before children) can, for one sample, miss a child reaped between
  the parent's read and the child's; the output is held at its running maximum so that sample
  shows no increase rather than a decrease, and the next sample is exact again.

Components: each rule is a regular expression searched in the process name (comm) and in its
command line (which servers such as postgres rewrite to "postgres: checkpointer"). The first
matching rule wins; processes matching none go to `other`. A process is classified on each of
its first three sightings (a forked backend shows its parent's command line until it renames
itself) and then keeps its component; when it moves, what it accumulated so far stays with the
old component and only later growth counts in the new one.
"""

from __future__ import annotations

import errno
import math
import os
import re
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterable

from .procfs import (
    CLK_TCK,
    PAGE_SIZE,
    PidStat,
    parse_io,
    parse_pid_stat,
    pread_all,
    read_bytes,
    read_pid_stat,
    status_ctx_switches,
)

COUNTERS = (
    "cpu_user",
    "cpu_sys",
    "minflt",
    "majflt",
    "syscr",
    "syscw",
    "read_bytes",
    "write_bytes",
    "rchar",
    "wchar",
    "ctx_vol",
    "ctx_invol",
)
GAUGES = ("rss_bytes", "pss_bytes", "threads", "nprocs")

OTHER = "other"
"""Component of processes that match no rule (present only when rules are configured)."""

_N = len(COUNTERS)
_IX = {name: i for i, name in enumerate(COUNTERS)}
_CTX = (_IX["ctx_vol"], _IX["ctx_invol"])
_INCLUDES_REAPED = tuple(i for i in range(_N) if i not in _CTX)
_IO_INDEX = tuple(_IX[k] for k in ("rchar", "wchar", "syscr", "syscw", "read_bytes", "write_bytes"))
_CLASSIFY_SIGHTINGS = 3


class ComponentRules:
    """Ordered rules: component name -> regex searched in comm and cmdline."""

    def __init__(self, rules: dict[str, str] | None) -> None:
        self.rules: list[tuple[str, re.Pattern[str]]] = []
        for name, pattern in (rules or {}).items():
            if not name or "." in name or name == OTHER:
                raise ValueError(
                    f"component name {name!r}: must be non-empty, without '.', and not {OTHER!r}"
                )
            self.rules.append((name, re.compile(pattern)))

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.rules] + ([OTHER] if self.rules else [])

    def classify(self, comm: str, cmdline: str) -> str:
        for name, rx in self.rules:
            if rx.search(comm) or rx.search(cmdline):
                return name
        return OTHER


def _zeros() -> list[float]:
    return [0.0] * _N


class _Proc:
    """One tracked process: its last reading and its bookkeeping."""

    __slots__ = (
        "pid", "start", "ppid", "comm", "component", "sightings", "last", "offset", "base",
        "ctx_threads", "ctx_exited", "rss", "pss", "pss_read_at", "threads", "zombie", "fds",
    )

    def __init__(self, pid: int, st: PidStat) -> None:
        self.pid = pid
        self.start = st.starttime
        self.ppid = st.ppid
        self.comm = st.comm
        self.component = OTHER
        self.sightings = 0
        self.last = _zeros()  # cumulative values as last read (children-inclusive where the kernel is)
        self.offset = _zeros()  # last values of tracked children this process reaped
        self.base = _zeros()  # value when it joined its current component
        self.ctx_threads: dict[int, tuple[int, int]] = {}
        self.ctx_exited = [0, 0]
        self.rss = 0.0
        self.pss = math.nan
        self.pss_read_at = -math.inf
        self.threads = 0
        self.zombie = False
        self.fds: dict[str, int] = {}  # open /proc/<pid>/<file> descriptors, re-read with pread

    def read(self, name: str) -> bytes | None:
        """/proc/<pid>/<name> through a cached descriptor: pread on an open fd costs less than
        half of open+read+close, and the monitor does this for every file of every process."""
        fd = self.fds.get(name)
        if fd is None:
            try:
                fd = os.open(f"/proc/{self.pid}/{name}", os.O_RDONLY | os.O_CLOEXEC)
            except OSError as e:
                if e.errno == errno.EMFILE:  # out of descriptors: read without caching
                    return read_bytes(f"/proc/{self.pid}/{name}")
                return None
            self.fds[name] = fd
        return pread_all(fd)

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)
        self.fds.clear()

    def contribution(self) -> list[float]:
        last, off, base = self.last, self.offset, self.base
        return [last[i] - off[i] - base[i] for i in range(_N)]


class ProcessTreeSource:
    """Cumulative counters and memory of a process tree, in total (s.*) and per component (v.*)."""

    name = "process_tree"

    def __init__(
        self,
        roots: Iterable[int] = (),
        components: dict[str, str] | None = None,
        *,
        cpu_entity: str | None = None,
        pss_refresh_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """
        roots: pids of the SUT's root processes (descendants are found each sample).
        components: name -> regex, see the module doc.
        cpu_entity: None writes s.cpu_user/s.cpu_sys; a name such as "tree" writes
            s.tree.cpu_user/s.tree.cpu_sys instead, for when a cgroup provides s.cpu_* exactly.
        pss_refresh_s: reading smaps_rollup walks the page tables (~170 us for a small
            process, milliseconds for a large server), so PSS is re-read at most this often;
            between reads a process keeps its last PSS.
        """
        self._rules = ComponentRules(components)
        self._procs: dict[int, _Proc] = {}
        self._pending_roots: dict[int, int] = {}
        self._carry: dict[str, list[float]] = defaultdict(_zeros)
        self._peak: dict[str, float] = {}
        self._pss_refresh_s = pss_refresh_s
        self._clock = clock
        cpu_prefix = f"s.{cpu_entity}." if cpu_entity else "s."
        self._s_names = [
            (cpu_prefix if f in ("cpu_user", "cpu_sys") else "s.") + f for f in COUNTERS
        ]
        self.add_roots(roots)

    # -- membership ---------------------------------------------------------------------------

    def add_roots(self, pids: Iterable[int]) -> None:
        """Track these processes (and their descendants) from the next sample on."""
        for pid in pids:
            if pid in self._procs or pid in self._pending_roots:
                continue
            st = read_pid_stat(pid)
            if st is not None:  # remember its start time: a reused pid is not our root
                self._pending_roots[pid] = st.starttime

    @property
    def pids(self) -> list[int]:
        return sorted(p for p, rec in self._procs.items() if not rec.zombie)

    # -- sampling -----------------------------------------------------------------------------

    def read(self) -> dict[str, float]:
        now = self._clock()
        procs = self._procs
        alive: dict[int, _Proc] = {}
        vanished: dict[int, _Proc] = {}
        known_children: dict[int, list[int]] = defaultdict(list)
        rec: _Proc | None
        for pid, rec in procs.items():
            known_children[rec.ppid].append(pid)

        # Parents before children (see the module doc for why this order).
        queue = deque(pid for pid, rec in procs.items() if rec.ppid not in procs)
        queue.extend(self._pending_roots)
        visited: set[int] = set()
        while queue:
            pid = queue.popleft()
            if pid in visited:
                continue
            visited.add(pid)
            rec = procs.get(pid)
            if rec is not None:
                data = rec.read("stat")
                st = parse_pid_stat(data) if data else None
            else:
                st = read_pid_stat(pid)
            if rec is not None and (st is None or st.starttime != rec.start):
                rec.close()
                vanished[pid] = procs.pop(pid)
                queue.extend(known_children.get(pid, ()))
                rec = None
                if st is not None and st.ppid not in alive:
                    continue  # the pid was reused by a process outside the tree
            if st is None:
                self._pending_roots.pop(pid, None)
                continue
            if rec is None:
                expected_start = self._pending_roots.pop(pid, None)
                if expected_start is not None and expected_start != st.starttime:
                    continue  # the root exited before we first saw it; pid reused
                rec = procs[pid] = _Proc(pid, st)
            self._update(rec, st, now)
            alive[pid] = rec
            queue.extend(known_children.get(pid, ()))
            queue.extend(self._read_children(rec, st.num_threads))

        for rec in vanished.values():
            self._retire(rec, vanished, alive)
        return self._columns(alive)

    def _update(self, rec: _Proc, st: PidStat, now: float) -> None:
        last = rec.last
        last[0] = (st.utime + st.cutime) / CLK_TCK
        last[1] = (st.stime + st.cstime) / CLK_TCK
        last[2] = float(st.minflt + st.cminflt)
        last[3] = float(st.majflt + st.cmajflt)
        data = rec.read("io")
        io = parse_io(data) if data else None
        if io is not None:  # unreadable io (a zombie, a permission change) keeps the last values
            for i, value in zip(_IO_INDEX, io):
                last[i] = float(value)
        vol, invol = self._ctx_switches(rec, st.num_threads)
        last[_CTX[0]] = float(vol)
        last[_CTX[1]] = float(invol)

        rec.ppid = st.ppid
        rec.comm = st.comm
        rec.zombie = st.state in ("Z", "X")
        rec.threads = 0 if rec.zombie else st.num_threads
        rec.rss = 0.0 if rec.zombie else float(st.rss_pages * PAGE_SIZE)
        if rec.zombie:
            rec.pss = 0.0
        elif now - rec.pss_read_at >= self._pss_refresh_s:
            rec.pss = _read_pss(rec)
            rec.pss_read_at = now
        if self._rules.rules and rec.sightings < _CLASSIFY_SIGHTINGS:
            self._classify(rec)
        rec.sightings += 1

    def _ctx_switches(self, rec: _Proc, num_threads: int) -> tuple[int, int]:
        if num_threads <= 1:
            tids = [rec.pid]
        else:
            try:
                tids = [int(t) for t in os.listdir(f"/proc/{rec.pid}/task")]
            except OSError:
                tids = list(rec.ctx_threads)
        current: dict[int, tuple[int, int]] = {}
        for tid in tids:
            data = rec.read("status") if tid == rec.pid else read_bytes(
                f"/proc/{rec.pid}/task/{tid}/status")
            counts = status_ctx_switches(data) if data else None
            if counts is None:
                counts = rec.ctx_threads.get(tid)  # unreadable now: keep its last value
            if counts is not None:
                current[tid] = counts
        for tid, (v, n) in rec.ctx_threads.items():
            if tid not in current:  # the thread exited: keep what it did
                rec.ctx_exited[0] += v
                rec.ctx_exited[1] += n
        rec.ctx_threads = current
        vol = rec.ctx_exited[0] + sum(c[0] for c in current.values())
        invol = rec.ctx_exited[1] + sum(c[1] for c in current.values())
        return vol, invol

    def _read_children(self, rec: _Proc, num_threads: int) -> list[int]:
        # /proc/<pid>/task/<tid>/children lists the children each thread forked; reading only
        # the tree's own files is far cheaper than scanning every process's ppid.
        pid = rec.pid
        data = rec.read(f"task/{pid}/children")
        kids = [int(k) for k in data.split()] if data else []
        if num_threads > 1:
            try:
                tids = os.listdir(f"/proc/{pid}/task")
            except OSError:
                tids = []
            for tid in tids:
                if tid != str(pid):
                    data = read_bytes(f"/proc/{pid}/task/{tid}/children")
                    if data:
                        kids.extend(int(k) for k in data.split())
        return kids

    def _classify(self, rec: _Proc) -> None:
        raw = read_bytes(f"/proc/{rec.pid}/cmdline") or b""
        cmdline = raw.replace(b"\0", b" ").strip().decode("utf-8", "replace")
        component = self._rules.classify(rec.comm, cmdline)
        if component != rec.component:
            if rec.sightings > 0:  # keep what it accumulated where it was; count growth here
                carry = self._carry[rec.component]
                for i, v in enumerate(rec.contribution()):
                    carry[i] += v
                rec.base = [rec.last[i] - rec.offset[i] for i in range(_N)]
            rec.component = component

    def _retire(self, rec: _Proc, vanished: dict[int, _Proc], alive: dict[int, _Proc]) -> None:
        carry = self._carry[rec.component]
        for i, v in enumerate(rec.contribution()):
            carry[i] += v
        # Who reaped it? Its parent, if the parent is tracked; when the parent vanished in the
        # same interval, the nearest live tracked ancestor received both through its children
        # fields. That ancestor's jump must not count this process again.
        parent, hops = rec.ppid, 0
        while parent in vanished and hops < 256:
            parent, hops = vanished[parent].ppid, hops + 1
        ancestor = alive.get(parent)
        if ancestor is not None:
            for i in _INCLUDES_REAPED:
                ancestor.offset[i] += rec.last[i]

    # -- output -------------------------------------------------------------------------------

    def _columns(self, alive: dict[int, _Proc]) -> dict[str, float]:
        totals: dict[str, list[float]] = {c: list(v) for c, v in self._carry.items()}
        gauges: dict[str, list[float]] = {}
        for rec in alive.values():
            t = totals.setdefault(rec.component, _zeros())
            for i, v in enumerate(rec.contribution()):
                t[i] += v
            g = gauges.setdefault(rec.component, [0.0, 0.0, 0.0, 0.0])
            g[0] += rec.rss
            g[1] += rec.pss
            g[2] += rec.threads
            g[3] += 0 if rec.zombie else 1

        out: dict[str, float] = {}
        s_tot, s_g = _zeros(), [0.0, 0.0, 0.0, 0.0]
        for comp in set(totals) | set(gauges):
            for i, v in enumerate(totals.get(comp, ())):
                s_tot[i] += v
            for i, v in enumerate(gauges.get(comp, ())):
                s_g[i] += v
        self._emit(out, self._s_names, s_tot, s_g, ["s." + g for g in GAUGES])
        for comp in self._rules.names:
            p = f"v.{comp}."
            self._emit(
                out,
                [p + f for f in COUNTERS],
                totals.get(comp, _zeros()),
                gauges.get(comp, [0.0, 0.0, 0.0, 0.0]),
                [p + g for g in GAUGES],
            )
        return out

    def _emit(self, out, counter_names, counters, gauge_values, gauge_names) -> None:
        peak = self._peak
        for name, value in zip(counter_names, counters):
            value = max(value, peak.get(name, 0.0))  # see "read order" in the module doc
            peak[name] = value
            out[name] = value
        for name, value in zip(gauge_names, gauge_values):
            out[name] = float(value)

    def close(self) -> None:
        for rec in self._procs.values():
            rec.close()


def _read_pss(rec: _Proc) -> float:
    """PSS in bytes from smaps_rollup; NaN when unreadable, 0 for a process without memory."""
    data = rec.read("smaps_rollup")
    if data is None:
        return math.nan
    at = data.find(b"\nPss:")
    if at < 0:
        return 0.0 if not data.strip() else math.nan
    end = data.find(b"\n", at + 1)
    try:
        kib = int(data[at + 5 : end if end > 0 else None].split()[0])
    except (ValueError, IndexError):
        return math.nan
    return float(kib * 1024)

"""Drivers on several hosts: the load split across driver processes that Ray places on the
nodes of a cluster, one transactions table merged from them (docs/distributed.md).

Why: one driver process saturates long before a server farm does (the seeds drove their SUT
from several TPNS machines). perflab's own driver runs in each process (ray_driver.py); this
module is the coordinator, on the host where `perflab run` runs:

1. before the run (`DriverCluster.connect`, any failure is bad input and no run is stored):
   connect to the cluster (Ray Client, `ray://HEAD:10001`), place `count` drivers -- one per
   node while there are nodes enough (a STRICT_SPREAD placement group), each pinned to its CPU
   when asked -- and measure each one's clock against this host's (NTP-style, the shortest of
   several round trips: offset and error bound recorded per driver);
2. the run: t0 is set a moment ahead, each driver is told t0 on its own clock and its share
   (closed loop: a block of the users, their streams and logon times as in a single driver's
   run; open loop: rate / count, an independent Poisson stream each), and every second the
   coordinator takes the transactions each recorded since the last time;
3. the ending: the tables merge into one transactions.parquet with a `driver` column. A driver
   that stops answering (its process or its node gone) fails the run with the reason, the others
   are stopped, and everything reported so far is kept. Each driver's own CPU over the window is
   gated on its own: one saturated driver makes the run invalid.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from perflab import caveats
from perflab.drive.load.deadline import deadlines_of
from perflab.drive.load.engine import STOP_GRACE_S, stop_wait_s
from perflab.drive.plan import RunPlan
from perflab.errors import InputError
from perflab.extras import require
from perflab.records.run import DriverHostRecord

CLOCK_TRIES = 7
CONNECT_TRIES = 3
#: How long the head's Ray Client port may take to accept a connection before the cluster is
#: called unreachable (ray.init itself retries for about 30 s).
REACH_TIMEOUT_S = 3.0
#: How long a placement group may wait for its CPUs: a cluster with room places at once; one
#: without would wait forever, and the run should say so in seconds.
PLACE_TIMEOUT_S = 5.0
START_LEAD_S = 1.0  # t0 this far ahead of the start command: every driver has it before t0
DRAIN_INTERVAL_S = 1.0
CALL_TIMEOUT_S = 30.0
END_SLACK_S = 30.0  # beyond the engine's own grace for the last transactions


def import_ray():
    return require("ray", extra="ray", feature="drivers on several hosts (Ray, on this host and every node)",
                   field="drivers")


def check_reachable(address: str, timeout_s: float = REACH_TIMEOUT_S) -> None:
    """A ray://HOST:PORT whose port does not accept a TCP connection within `timeout_s` is
    unreachable: one line now, not ray.init's half-minute of retries."""
    import socket

    if not address.startswith("ray://"):
        return
    host, _, port = address[len("ray://"):].rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            return
    except (OSError, ValueError) as exc:
        why = "no answer" if isinstance(exc, socket.timeout) else (getattr(exc, "strerror", None) or str(exc))
        raise InputError(f"cannot reach the Ray cluster at {address}: {why} within {timeout_s:g} s (is the head "
                         f"started with its client server on that port?)", field="drivers.ray") from None


@dataclass(frozen=True)
class RecentRows:
    """Rows [first, first + len(ok)) of the drained transactions (drive/live.py reads these)."""

    first: int
    ok: np.ndarray
    intended: np.ndarray
    end: np.ndarray


class DrainedRows:
    """The transactions the drivers reported so far, seen as the live display sees a local run's
    recorder: counts, the rows since a mark, an error's text."""

    def __init__(self) -> None:
        self.completed = 0
        self.errors = 0
        self._ok: list[np.ndarray] = []
        self._intended: list[np.ndarray] = []
        self._end: list[np.ndarray] = []
        self._errors: dict[int, str] = {}
        self._n = 0

    def add(self, table: pa.Table) -> None:
        ok = table.column("ok").to_numpy(zero_copy_only=False).astype(bool)
        self._ok.append(ok)
        self._intended.append(table.column("intended_start").to_numpy(zero_copy_only=False).astype(float))
        self._end.append(table.column("end").to_numpy(zero_copy_only=False).astype(float))
        if "error" in table.column_names:
            for i in np.flatnonzero(~ok):
                self._errors[self._n + int(i)] = str(table.column("error")[int(i)].as_py())
        self.completed += int(ok.sum())
        self.errors += int((~ok).sum())
        self._n += len(ok)

    def __len__(self) -> int:
        return self._n

    def recent(self, a: int, b: int) -> RecentRows:
        ok = np.concatenate(self._ok) if self._ok else np.zeros(0, bool)
        intended = np.concatenate(self._intended) if self._intended else np.zeros(0)
        end = np.concatenate(self._end) if self._end else np.zeros(0)
        return RecentRows(a, ok[a:b], intended[a:b], end[a:b])

    def error_at(self, index: int) -> str | None:
        return self._errors.get(index)


@dataclass
class ClusterView:
    """What a run's observers read of an engine (phases, recorder, users, rate), for a run whose
    engines run on the cluster's nodes: the terminal's progress line and live.json of `perflab
    serve` show a Ray run as they show a local one."""

    phases: Any
    users: int | None
    rate: float | None
    recorder: DrainedRows = field(default_factory=DrainedRows)


@dataclass
class Driver:
    index: int
    actor: Any
    node: str | None
    pid: int | None
    cpus: list[int]
    offset: float
    error: float
    users: int | None = None
    rate: float | None = None
    first_user: int = 0
    tables: list[pa.Table] = field(default_factory=list)
    outcome: dict[str, Any] | None = None
    lost: str | None = None
    reported_until: float | None = None  # the end of its last transaction reported, seconds since t0


def _split(total: int, parts: int) -> list[int]:
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


class DriverCluster:
    """The drivers of one run, placed and clock-synchronized before it starts."""

    def __init__(self, ray, drivers: list[Driver], group, address: str) -> None:
        self.ray = ray
        self.drivers = drivers
        self.group = group
        self.address = address

    # -- before the run --------------------------------------------------------------------

    @classmethod
    def connect(cls, plan: RunPlan) -> DriverCluster:
        ray = import_ray()
        spec = plan.drivers
        assert spec is not None  # a cluster is connected for a plan with drivers (drive/run.py)
        address = "auto" if spec.ray == "auto" else spec.ray
        check_reachable(address)
        last: Exception | None = None
        for _ in range(CONNECT_TRIES):
            try:
                ray.init(address=address, logging_level="ERROR", log_to_driver=False)
                break
            except ConnectionAbortedError as exc:
                # The head's client proxy forks a server per client; under load that server
                # sometimes dies as it starts ("SpecificServer startup failed"): ask again.
                last = exc
            except Exception as exc:
                last = exc
                break
        if not ray.is_initialized():
            why = str(last).strip().splitlines()[-1] if str(last).strip() else ""
            raise InputError(f"cannot reach the Ray cluster at {spec.ray}: {type(last).__name__}: {why}",
                             field="drivers.ray") from None
        try:
            return cls._place(ray, plan)
        except BaseException:
            ray.shutdown()
            raise

    @classmethod
    def _place(cls, ray, plan: RunPlan) -> DriverCluster:
        from ray.util.placement_group import placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        from perflab import __version__
        from perflab.drive.remote.ray_driver import DriverProcess

        spec = plan.drivers
        assert spec is not None  # as in connect
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        count = spec.count or len(nodes)
        if plan.users is not None:
            count = min(count, plan.users)  # every driver has at least one user
        strategy = "STRICT_SPREAD" if spec.spread and count <= len(nodes) else "SPREAD"
        free = float(ray.available_resources().get("CPU", 0.0))
        if count > free:
            raise InputError(f"the Ray cluster has {free:g} free CPU(s) over {len(nodes)} alive node(s): {count} "
                             f"driver(s) need one each (ask for fewer with drivers.count, or add nodes)",
                             field="drivers.count")
        group = placement_group([{"CPU": 1}] * count, strategy=strategy)
        ready, _ = ray.wait([group.ready()], timeout=PLACE_TIMEOUT_S)
        if not ready:
            from ray.util.placement_group import remove_placement_group

            remove_placement_group(group)
            raise InputError(f"the Ray cluster cannot place {count} driver(s) with one CPU each ({strategy} over "
                             f"{len(nodes)} alive node(s))", field="drivers.count")
        actor_class = ray.remote(DriverProcess)
        workload = plan.workload.model_dump(mode="json", by_alias=True)
        drivers: list[Driver] = []
        users = _split(plan.users, count) if plan.users is not None else [None] * count
        first = 0
        try:
            for i in range(count):
                cpus = [spec.cpus[i % len(spec.cpus)]] if spec.cpus else []
                actor = actor_class.options(
                    num_cpus=1, max_concurrency=16,
                    scheduling_strategy=PlacementGroupSchedulingStrategy(group, placement_group_bundle_index=i),
                ).remote(i, workload, cpus or None)
                info = ray.get(actor.info.remote(), timeout=CALL_TIMEOUT_S)
                if info["perflab"] != __version__:
                    raise InputError(f"driver {i} on {info['node']} runs perflab {info['perflab']}, this host "
                                     f"{__version__}: install the same perflab on every node", field="drivers")
                offset, error = cls._clock(ray, actor)
                driver = Driver(i, actor, info["node"], info["pid"], cpus, offset, error, users=users[i],
                                rate=None if plan.rate is None else plan.rate / count, first_user=first)
                first += users[i] or 0
                drivers.append(driver)
        except Exception as exc:
            cluster = cls(ray, drivers, group, spec.ray)
            cluster.close(shutdown=False)
            if isinstance(exc, InputError):
                raise
            raise InputError(f"cannot start the drivers on the Ray cluster: {type(exc).__name__}: {exc}",
                             field="drivers") from None
        return cls(ray, drivers, group, spec.ray)

    @staticmethod
    def _clock(ray, actor) -> tuple[float, float]:
        """(its clock minus ours, error bound) from the try with the shortest round trip."""
        best: tuple[float, float] | None = None
        for _ in range(CLOCK_TRIES):
            t1 = time.monotonic()
            theirs = ray.get(actor.clock.remote(), timeout=CALL_TIMEOUT_S)
            t2 = time.monotonic()
            candidate = ((t2 - t1) / 2, theirs - (t1 + t2) / 2)
            if best is None or candidate[0] < best[0]:
                best = candidate
        assert best is not None  # CLOCK_TRIES >= 1
        return best[1], best[0]

    def start_time(self) -> float:
        return time.monotonic() + START_LEAD_S

    # -- the run ---------------------------------------------------------------------------

    def describe(self, sut: str) -> str:
        """Where the load came from, for the report's placement line."""
        nodes = sorted({d.node or "?" for d in self.drivers})
        pinned = " (each pinned to one CPU)" if any(d.cpus for d in self.drivers) else ""
        return f"{len(self.drivers)} driver(s) on Ray, node(s) {', '.join(nodes)}{pinned}; {sut}"

    def window_end(self, planned: float) -> float:
        """The end of a run cut short: when every driver's reports still covered it -- a driver
        lost mid-run reported up to its last drain, the others went on a second or so longer,
        and a window past the lost one's last report would count its users as idle."""
        covered = [d.reported_until for d in self.drivers if d.reported_until is not None]
        return min([planned, *covered]) if covered else planned

    def drive(self, plan: RunPlan, t0: float, dsn: str | None, failure: Callable[[], str | None] | None,
              on_tick: Callable[[Any, float], None] | None = None):
        """Run every driver's share; -> (status, reason). Transactions: `table()` afterwards.
        `on_tick(view, elapsed)`: after every round of drains, what the drivers reported so far
        (a `ClusterView`), for the run's observers."""
        view = ClusterView(plan.phases, plan.users, plan.rate)
        phases = {"stagger": plan.phases.stagger, "stabilization": plan.phases.stabilization,
                  "measurement": plan.phases.measurement}
        count = len(self.drivers)
        for d in self.drivers:
            share = {"index": d.index, "count": count, "first_user": d.first_user, "all_users": plan.users}
            d.actor.run.remote(t0 + d.offset, phases, share, d.users, d.rate, plan.seed,
                               max(1, plan.workers // count), dsn)
        status, reason = "complete", None
        stop: list[str] = []
        previous = {sig: signal.signal(sig, lambda s, _f: stop.append(
            "interrupted by SIGINT (Ctrl-C)" if s == signal.SIGINT else "interrupted by SIGTERM"))
            for sig in (signal.SIGINT, signal.SIGTERM)}
        told = False
        try:
            # Only drains, every second: each returns its driver's new transactions and, at its
            # end, its outcome (ray.wait on the running calls does not honour its timeout under
            # Ray Client, which would hold every report back to the end).
            # A driver's engine waits for its transactions in flight up to their deadline after
            # the window (engine.stop_wait_s), then reports its end.
            wait = max(STOP_GRACE_S, stop_wait_s(deadlines_of(plan.workload))) + END_SLACK_S
            deadline = t0 + plan.phases.window_end + wait
            while not all(d.outcome is not None or d.lost for d in self.drivers):
                time.sleep(DRAIN_INTERVAL_S)
                for d in self.drivers:
                    added = self._drain(d)
                    if added is not None:
                        view.recorder.add(added)
                if on_tick is not None:
                    try:
                        on_tick(view, time.monotonic() - t0)
                    except Exception:  # a display that fails must not stop the run
                        on_tick = None
                    if d.outcome is None and not d.lost and time.monotonic() > deadline:
                        d.lost = f"no end reported {wait:g} s after the window's end"
                lost = [d for d in self.drivers if d.lost]
                why = None
                if lost and status == "complete":
                    d = lost[0]
                    assert d.lost is not None  # the filter above
                    status, why = "failed", caveats.driver_lost(d.index, d.node, d.lost).text
                elif stop and status == "complete":
                    status, why = "interrupted", stop[0]
                elif failure is not None and status == "complete" and (gone := failure()):
                    status, why = "failed", gone
                if why is not None and not told:
                    reason, told = why, True
                    for other in self.drivers:
                        if not other.lost and other.outcome is None:
                            method = other.actor.interrupt if status == "interrupted" else other.actor.fail
                            method.remote(why)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        for d in self.drivers:
            outcome = d.outcome or {}
            if status == "complete" and outcome.get("status") not in (None, "complete"):
                status, reason = outcome["status"], f"driver {d.index}: {outcome.get('reason')}"
        return status, reason

    def _drain(self, d: Driver) -> pa.Table | None:
        """The driver's new rows (also kept in `d.tables`), None when there are none."""
        if d.lost:
            return None
        try:
            table, outcome = self.ray.get(d.actor.drain.remote(), timeout=CALL_TIMEOUT_S)
        except Exception as exc:
            d.lost = _why_lost(exc)
            return None
        if outcome is not None and d.outcome is None:
            d.outcome = outcome
        if table is not None and table.num_rows:
            table = table.append_column("driver", pa.array([d.index] * table.num_rows, pa.int16()))
            d.tables.append(table)
            ends = pc.max(table.column("end")).as_py()
            if ends is not None:
                d.reported_until = max(d.reported_until or 0.0, float(ends))
            return table
        return None

    # -- the ending ------------------------------------------------------------------------

    def table(self) -> pa.Table | None:
        """Every driver's transactions in one table (sorted by completion), with `driver`."""
        tables = [t for d in self.drivers for t in d.tables]
        if not tables:
            return None
        merged = pa.concat_tables(tables).unify_dictionaries().combine_chunks()
        return merged.take(pc.sort_indices(merged, [("end", "ascending")]))

    def records(self) -> list[DriverHostRecord]:
        out = []
        for d in self.drivers:
            outcome = d.outcome or {}
            cpu, wall = outcome.get("cpu_s"), outcome.get("window_wall_s")
            util = 100.0 * cpu / wall if cpu is not None and wall and wall == wall and wall > 0 else None
            out.append(DriverHostRecord(
                index=d.index, node=d.node, pid=d.pid, cpus=d.cpus, users=d.users, rate=d.rate,
                clock_offset_s=d.offset, clock_error_s=d.error, cpu_s=cpu if cpu == cpu else None,
                window_wall_s=wall if wall == wall else None, util_pct=util,
                saturated=util is not None and util >= caveats.DRIVER_SATURATION_PCT,
                dropped=outcome.get("dropped"), transactions=sum(t.num_rows for t in d.tables),
                hung=int(outcome.get("hung") or 0), lost=d.lost))
        return out

    def close(self, shutdown: bool = True) -> None:
        """The drivers, their placement group and the connection, released (idempotent)."""
        ray = self.ray
        for d in self.drivers:
            try:
                ray.kill(d.actor)
            except Exception:
                pass
        try:
            from ray.util.placement_group import remove_placement_group

            if self.group is not None:
                remove_placement_group(self.group)
        except Exception:
            pass
        self.group = None
        if shutdown:
            ray.shutdown()


def _why_lost(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    first = next((line for line in text if line.strip()), "")
    return f"{type(exc).__name__}: {first[:300]}"

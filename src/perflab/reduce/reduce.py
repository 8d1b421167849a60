"""Reduction: one run directory in, every metric of the catalog out.

`reduce_run` reads run.json, transactions.parquet and (when present) samples.parquet, takes the
raw window totals (the registry's Measurement group and the response rows), and lets the
registry derive everything else. Nothing here computes a metric of its own: it measures, then
asks the registry. The result is a `RunMetrics`: values by key (na = None), the response rows
per transaction class, per-interval series for charts, per-component server rows, and the
run's caveats as values (`warnings`).

Reduction is a pure function of the stored files: re-reducing a run gives identical numbers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from perflab import caveats as cav
from perflab.catalog.registry import CLASS_KEYS, REGISTRY
from perflab.caveats import Caveat
from perflab.records.run import PATHLENGTH_FILE, RunRecord, read_run_record
from perflab.reduce.pathlength import counted_instructions
from perflab.reduce.response import grouped_response_rows, harness_total, instructions_total, per_bucket, response_rows
from perflab.reduce.samples import CP_FIELDS, EMUL_FIELDS, Samples
from perflab.reduce.transactions import WindowTransactions, read_run_transactions, read_window_transactions
from perflab.reduce.window import Window, bucket_width, coverage, timeline_edges
from perflab.values import finite
from perflab.workload.kinds import KINDS

# Rows reported per transaction class and per time bucket.
# CLASS_KEYS: perflab.catalog.registry (a study compares them per class)
#: Rows per transaction name: a load tester's per-request table (count, failures, rate, mean,
#: percentiles, max), each a registry key computed by the registry as the run's own row is.
TRANSACTION_KEYS = ("tx_ok", "errors_t", "error_pct_t", "etr_t", "avg_last_t", "resp_p50_t", "resp_p90_t",
                    "resp_p95_t", "resp_p99_t", "resp_max_t")
#: Response time percentiles per time bucket (the run report's response chart draws them).
INTERVAL_PERCENTILES = (50, 90, 99)
INTERVAL_KEYS = ("tx_ok", "errors_t", "etr_t", "avg_last_t", "resp_p50_t", "resp_p90_t", "resp_p99_t", "total_h",
                 "util_proc_h", "total_s", "util_proc_s", "itr_s", "itr_h", "pbt_cmd_s", "pbt_cmd_h")

MB = float(1 << 20)
#: The (V) component that is perflab's own worker code inside the SUT's processes.
HARNESS_COMPONENT = "perflab worker"
#: Standard errors of Little's-law check a window may deviate by before it gets a caveat.
LITTLE_SIGMAS = 3.0


@dataclass
class RunMetrics:
    run_id: str
    status: str
    window: Window
    values: dict[str, float | None]
    attributes: dict[str, str | None] = field(default_factory=dict)
    per_class: dict[str, dict[str, float | None]] = field(default_factory=dict)
    per_interval: list[dict[str, float | None]] = field(default_factory=list)
    per_component: dict[str, dict[str, float | None]] = field(default_factory=dict)
    caveats: list[Caveat] = field(default_factory=list)
    # Rows per transaction name (TRANSACTION_KEYS), over the window.
    per_transaction: dict[str, dict[str, float | None]] = field(default_factory=dict)
    # The per-interval rows of the whole run, from t0 to its last transaction (reduce_run's
    # `timeline`): the same keys and bucket edges as per_interval, extended before and after
    # the window, so a chart shows the ramp-up and marks the window. Empty unless asked for.
    timeline: list[dict[str, float | None]] = field(default_factory=list)
    interval_s: float | None = None
    run_dir: Path | None = None
    record: RunRecord | None = None

    @property
    def warnings(self) -> list[str]:
        """The caveats' sentences, for people."""
        return [c.text for c in self.caveats]

    def __getitem__(self, key: str) -> float | None:
        return self.values[key]

    def get(self, key: str) -> float | None:
        return self.values.get(key)

    @property
    def label(self) -> str | None:
        return self.attributes.get("release")

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict keyed by the catalog's keys (na = null)."""
        return {
            "run_id": self.run_id,
            "status": self.status,
            "window": {"start": self.window.start, "end": self.window.end, "duration_s": self.window.duration},
            "attributes": dict(self.attributes),
            "values": {k: _json_number(v) for k, v in self.values.items()},
            "per_class": {c: {k: _json_number(v) for k, v in row.items()} for c, row in self.per_class.items()},
            "per_component": {c: {k: _json_number(v) for k, v in row.items()}
                              for c, row in self.per_component.items()},
            "interval_s": self.interval_s,
            "per_interval": [{k: _json_number(v) for k, v in row.items()} for row in self.per_interval],
            "per_transaction": {c: {k: _json_number(v) for k, v in row.items()}
                                for c, row in self.per_transaction.items()},
            "timeline": [{k: _json_number(v) for k, v in row.items()} for row in self.timeline],
            "warnings": list(self.warnings),
            "caveats": [c.model_dump(mode="json") for c in self.caveats],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunMetrics:
        window = data.get("window") or {}
        return cls(run_id=data.get("run_id", ""), status=data.get("status", ""),
                   window=Window(float(window.get("start", 0.0)), float(window.get("end", 0.0))),
                   values=dict(data.get("values") or {}), attributes=dict(data.get("attributes") or {}),
                   per_class=dict(data.get("per_class") or {}), per_interval=list(data.get("per_interval") or []),
                   per_component=dict(data.get("per_component") or {}),
                   per_transaction=dict(data.get("per_transaction") or {}),
                   timeline=list(data.get("timeline") or []),
                   caveats=[cav.as_caveat(c) for c in data.get("caveats") or data.get("warnings") or []],
                   interval_s=data.get("interval_s"))


def _json_number(value: float | None) -> float | None:
    return value if value is None or math.isfinite(value) else None


def reduce_run(run_dir: Path, interval_s: float | None = None, timeline: bool = False) -> RunMetrics:
    """Every metric of one run over its measurement window. Raises InputError for a missing or
    malformed run.json / parquet file. `timeline`: also the per-interval rows of the whole run
    (RunMetrics.timeline; it reads every transaction a second time, so only reports ask).

    The steps: the record and its window; the transactions and the samples in the window; the
    raw totals (the environment, the transactions', the samples', the run record's); the
    registry's formulas over them; the breakdowns (per class, transaction, component, interval);
    the run's caveats."""
    run_dir = Path(run_dir)
    run_path = run_dir / "run.json"
    run = read_run_record(run_path)
    window = Window.from_record(run.window, run_path)
    monitor_interval = _number(run.monitor.interval_s if run.monitor is not None else None)
    warnings = _record_caveats(run)
    tx = _read_transactions(run_dir, run, window, warnings)
    grouped = _grouped_rows(tx, window) if tx is not None else None   # begun now: threads for a large window
    samples, covered = _read_samples(run_dir, window, monitor_interval, warnings)
    h_cpus, measured = _environment(run, window, samples)
    if tx is not None:
        _transaction_totals(tx, measured, warnings)
    if samples is not None and covered:
        _sample_totals(samples, window, h_cpus, run, measured, warnings)
        warnings += _sample_notes(samples, window, run.sut.host if run.sut is not None else None)
    if tx is not None:
        warnings += _pathlength(run, run_dir, tx, measured)
    if measured.get("driver_sec") is None:
        _driver_from_run(run, measured)
    _restart_values(run, measured)
    warnings += _spill_notes(run)

    values_all = REGISTRY.evaluate(measured)
    values = {key: values_all.get(key) for key in REGISTRY.perflab_keys()}

    per_class, per_transaction = grouped() if grouped is not None else ({}, {})
    per_component = _per_component(samples, window, values_all) if samples is not None and covered else {}
    if values_all.get("harness_sec") is not None:
        per_component[HARNESS_COMPONENT] = _harness_component(values_all)
    width = bucket_width(window, monitor_interval, interval_s)
    per_interval = _per_interval(tx, samples if covered else None, window.bucket_edges(width), h_cpus, measured)
    rows_of_run: list[dict[str, float | None]] = []
    if timeline:
        every = read_run_transactions(run_dir / "transactions.parquet") if tx is not None else None
        last = float(np.nanmax(every.end)) if every is not None and every.count else window.end
        rows_of_run = _per_interval(every, samples, timeline_edges(window, width, last), h_cpus, measured)

    warnings += _run_caveats(run, values, tx, window, warnings, samples is not None and covered)
    attributes: dict[str, str | None] = {"release": run.label or run.workload_name, "run_id": run.run_id or run_dir.name}
    return RunMetrics(run_id=str(attributes["run_id"]), status=run.status, window=window, values=values,
                      attributes=attributes, per_class=per_class, per_interval=per_interval,
                      per_component=per_component, caveats=_unique(warnings), interval_s=width, run_dir=run_dir,
                      record=run, per_transaction=per_transaction, timeline=rows_of_run)


# -- the steps of reduce_run ----------------------------------------------------------------

def _record_caveats(run: RunRecord) -> list[Caveat]:
    """What run.json already says: why the run is invalid, and that it did not complete."""
    warnings: list[Caveat] = list(run.invalid)
    if run.status != "complete" and not any(c.code is cav.Code.RUN_NOT_COMPLETE for c in warnings):
        warnings.insert(0, cav.run_not_complete(run.status, run.reason))
    return warnings


def _read_transactions(run_dir: Path, run: RunRecord, window: Window,
                       warnings: list[Caveat]) -> WindowTransactions | None:
    tx_path = run_dir / "transactions.parquet"
    if not tx_path.exists():
        warnings.append(cav.transactions_missing())
        return None
    return read_window_transactions(tx_path, window, run_dir / "thinks.parquet", with_users=_mixed_work(run))


def _read_samples(run_dir: Path, window: Window, monitor_interval: float | None,
                  warnings: list[Caveat]) -> tuple[Samples | None, bool]:
    """The monitor's samples, and whether they cover the window (notes saying where not)."""
    samples_path = run_dir / "samples.parquet"
    if not samples_path.exists():
        warnings.append(cav.samples_missing())
        return None, False
    samples = Samples.read(samples_path)
    samples.interval = monitor_interval
    covered, notes = coverage(samples.t, window, monitor_interval)
    warnings += [cav.note(cav.Code.SAMPLES_COVERAGE, n) for n in notes]
    return samples, covered


def _environment(run: RunRecord, window: Window, samples: Samples | None) -> tuple[list[int], dict[str, float | None]]:
    """The (H) rows' processors, and the totals the run's plan and machine give: the window,
    the load, the processors, the SUT's real storage."""
    config, fingerprint = run.config, run.fingerprint
    sut_cpus = [int(c) for c in config.sut_cpus]
    driver_cpus = [int(c) for c in config.driver_cpus]
    machine_cpus = samples.cpus() if samples is not None else []
    all_cpus = len(machine_cpus) or _number(fingerprint.get("cpus")) or _number(fingerprint.get("cores"))
    h_cpus = sorted(set(sut_cpus) | set(driver_cpus)) or machine_cpus
    host = run.sut.host if run.sut is not None else None
    if host is not None:
        # The SUT's own host: its h.* columns are that host's; the driver's CPUs are elsewhere.
        h_cpus = sorted(set(sut_cpus)) or machine_cpus
    measured: dict[str, float | None] = {
        "window_s": window.duration,
        "users": _number(config.users),
        "rate": _number(config.rate),
        "processors": float(len(sut_cpus)) if sut_cpus else all_cpus,
        "processors_h": float(len(h_cpus)) if (sut_cpus or driver_cpus) and h_cpus else all_cpus,
        "driver_processors": float(len(driver_cpus) or 1),
        # the SUT's memory limit (cgroup) when the configuration set one, else the machine's memory
        "real_storage": (_number(config.real_storage_bytes)
                         or _number(host.memory_bytes if host is not None else fingerprint.get("memory_bytes"))
                         or 0.0) / MB or None,
    }
    return h_cpus, measured


def _transaction_totals(tx: WindowTransactions, measured: dict[str, float | None], warnings: list[Caveat]) -> None:
    measured.update(response_rows(tx))
    measured["tx_offered"] = float(tx.offered)
    measured["harness_sec"] = harness_total(tx)
    measured["instructions_i"], note = instructions_total(tx)
    if note:
        warnings.append(cav.note(cav.Code.INSTRUCTIONS, note))


def _sample_notes(samples: Samples, window: Window, host: Any) -> list[Caveat]:
    """What the samples leave unread, and -- on a SUT host of its own -- its monitor's gaps and
    where the rows came from."""
    notes: list[Caveat] = []
    if samples.uncovered and host is not None and host.lost_at is not None:
        # The notes say which quantity; the caveat says why (the monitor's own account).
        notes.append(cav.monitor_lost(host.monitor, host.url, host.lost_at, host.lost_reason, samples.uncovered))
    else:
        notes += [cav.note(cav.Code.COUNTER_UNREAD, n) for n in samples.notes]
    if host is not None:
        inside = [(max(float(g["from"]), window.start), min(float(g["to"]), window.end), g.get("reason"))
                  for g in host.gaps if g.get("to") is not None and g.get("from") is not None
                  and float(g["to"]) > window.start and float(g["from"]) < window.end]
        if inside:
            notes.append(cav.monitor_gap(host.monitor, host.url, inside))
        notes.append(cav.remote_source(host.monitor, host.url, host.hostname, host.clock_offset_s,
                                       host.clock_error_s, host.clock_drift_s, host.samples, host.failures))
    return notes


def _spill_notes(run: RunRecord) -> list[Caveat]:
    """The driver's own writes into the run directory (its spilled transactions)."""
    notes: list[Caveat] = []
    if run.driver is not None and run.driver.spilled_bytes:
        notes.append(cav.note(cav.Code.DRIVER_SPILLED,
                              f"the driver wrote {run.driver.spilled_bytes / 1e6:.1f} MB of its own to the run "
                              f"directory during the run (its transactions, spilled): the device rows (MB/SEC, "
                              f"VIO RATE, DISK BUSY %) include them; a store on another device keeps them apart"))
    if run.driver is not None and run.driver.spill_error:
        notes.append(cav.note(cav.Code.DRIVER_SPILLED,
                              f"the driver stopped spilling its transactions ({run.driver.spill_error}): it kept "
                              f"the rest in memory"))
    return notes


def _run_caveats(run: RunRecord, values: dict[str, float | None], tx: WindowTransactions | None, window: Window,
                 already: list[Caveat], sampled: bool) -> list[Caveat]:
    """The caveats of the reduced values (`_caveats`), with Little's law checked on the users'
    own cycle in mixed work (and its two rows set from it), and what the monitor could not see."""
    config = run.config
    little = values
    if tx is not None and tx.user is not None and config.users:
        # Mixed work: Little's law holds for the users' own cycle, not for the jobs beside them.
        little = _users_little(values, tx, float(config.users), window)
        values["little_etr_t"], values["little_dev"] = little.get("little_etr_t"), little.get("little_dev")
    out = _caveats(values, run, already, tx.thinks if tx is not None else None, little)
    if config.real_storage_bytes and sampled and values.get("refaults_s") is None:
        out.append(cav.refaults_unmeasured())
    if (unmonitored := _unmonitored(run)) is not None:
        out.append(cav.sut_unmonitored(unmonitored))
    return out


# -- helpers --------------------------------------------------------------------------------


def _pathlength(run: RunRecord, run_dir: Path, tx: WindowTransactions,
                measured: dict[str, float | None]) -> list[Caveat]:
    """INSTRUCTIONS (I) from the counted pass when the run had one (it is what the workload asked
    for, so it stands before a hardware counter's or the valgrind mode's); a note either way."""
    record = run.pathlength
    if record is None:
        return []
    path = run_dir / PATHLENGTH_FILE
    if record.status != "counted" or not path.exists():
        return [cav.note(cav.Code.INSTRUCTIONS,
                         f"pathlength was not counted ({record.status}: {record.reason or 'no pathlength.parquet'}):"
                         f" INSTR/CMD (I) is not the counted pass's")]
    total, note = counted_instructions(path, tx)
    measured["instructions_i"] = total
    return [cav.note(cav.Code.INSTRUCTIONS, note)]


_number = finite


def _unique(items: list[Caveat]) -> list[Caveat]:
    seen: dict[str, Caveat] = {}
    for item in items:
        seen.setdefault(item.text, item)  # the same sentence once, whoever raised it
    return list(seen.values())


def _sample_totals(samples: Samples, window: Window, h_cpus: list[int], run: RunRecord,
                   measured: dict[str, float | None], warnings: list[Caveat]) -> None:
    """The window totals of every sampled quantity, into `measured` (absent columns stay na)."""
    # (H): the processors the run uses.
    cp = samples.cpu_fields(h_cpus, CP_FIELDS, "system") if h_cpus else None
    emul = samples.cpu_fields(h_cpus, EMUL_FIELDS, "user") if h_cpus else None
    if cp is None or emul is None:
        missing = [c for c in h_cpus if not samples.has(f"h.cpu{c}.user")] or h_cpus
        where = f"CPU(s) {', '.join(map(str, missing))}" if missing else "any CPU"
        warnings.append(cav.note(cav.Code.CPU_COLUMNS_MISSING,
                                 f"samples have no /proc/stat columns for {where}: (H) rows are na"))
    else:
        measured["cp_sec_h"] = samples.delta(cp, window, "CP SEC (H)")
        measured["emul_sec_h"] = samples.delta(emul, window, "EMUL SEC (H)")
    # (S): the SUT's processes.
    if samples.has("s.cpu_user") and samples.has("s.cpu_sys"):
        measured["cp_sec_s"] = samples.delta(["s.cpu_sys"], window, "CP SEC (S)")
        measured["emul_sec_s"] = samples.delta(["s.cpu_user"], window, "EMUL SEC (S)")
    else:
        warnings.append(cav.note(cav.Code.CPU_COLUMNS_MISSING,
                                 "samples have no SUT CPU columns (s.cpu_user, s.cpu_sys): (S) rows are na"))
    sut_cpus = [int(c) for c in run.config.sut_cpus]
    cp_sut = samples.cpu_fields(sut_cpus, CP_FIELDS, "system") if sut_cpus else None
    emul_sut = samples.cpu_fields(sut_cpus, EMUL_FIELDS, "user") if sut_cpus else None
    if cp_sut is not None and emul_sut is not None:
        measured["busy_sec_hs"] = samples.delta(cp_sut + emul_sut, window, "SUT PROC BUSY SEC (H)")
    if samples.has("i.instructions"):
        measured["instructions_i"] = samples.delta(["i.instructions"], window, "INSTRUCTIONS (I)")
    measured["disk_ios"] = samples.device_sum("h.disk.", ("reads", "writes"), window, "DISK IOS")
    measured["disk_bytes"] = samples.device_sum("h.disk.", ("read_bytes", "write_bytes"), window, "DISK BYTES")
    measured["net_bytes"] = samples.device_sum("h.net.", ("rx_bytes", "tx_bytes"), window, "NET BYTES")
    busy_ms = samples.device_max("h.disk.", "busy_ms", window, "DISK BUSY")
    measured["disk_busy_s"] = None if busy_ms is None else busy_ms / 1000.0
    resident = samples.gauge_mean("s.pss_bytes", window)
    if resident is None:
        resident = samples.gauge_mean("s.rss_bytes", window)
    measured["wkset_s"] = None if resident is None else resident / MB
    counter = samples.tx_counter(run.sut.tx_counter if run.sut is not None else None)
    if counter is not None:
        measured["sut_tx"] = samples.delta([counter], window, "SUT TRANSACTIONS")
    _sampled_totals(samples, window, measured)
    _exact_driver_counts(run, measured)


def _sampled_totals(samples: Samples, window: Window, measured: dict[str, float | None]) -> None:
    """Every metric the registry says is taken from sample columns (catalog.metric.Sampled):
    the window's difference of the first group of its columns present (or a gauge's mean), in
    the registry's unit; absent columns leave it na, never 0."""
    for metric in REGISTRY.sampled():
        spec = metric.sampled
        assert spec is not None
        if spec.gauge:
            mean = samples.gauge_mean(spec.columns[0][0], window)
            measured[metric.key] = None if mean is None else mean * spec.factor
            continue
        for columns in spec.columns:
            present = [c for c in columns if samples.has(c)]
            if not present or (spec.need_all and len(present) < len(columns)):
                continue
            value = samples.delta(present, window, metric.label)
            if value is not None:
                value *= spec.factor
                if spec.whole:
                    # Counters sampled once a second are interpolated at the window's edges: a
                    # burst of connections before the window (the users' logons) would leave a
                    # fraction of one inside it, and a fraction of a connection is none.
                    value = float(round(value))
            measured[metric.key] = value
            break


def _exact_driver_counts(run: RunRecord, measured: dict[str, float | None]) -> None:
    """Connections and handshakes counted by the driver itself at the window's edges replace
    the sampled ones: a sample a second away, interpolated, can put a fraction of the users'
    logon burst (full handshakes) in the window, and rounding the full and resumed counts apart
    then made RESUMED % 99.95 where every handshake in the window resumed."""
    counts = run.driver.window_counts if run.driver is not None else None
    if not counts:
        return
    for metric in REGISTRY.sampled():
        spec = metric.sampled
        name = spec.driver_count if spec is not None else None
        if spec is not None and name is not None and name in counts:
            measured[metric.key] = float(counts[name]) * spec.factor


# A server's restart after the load (run.json sut.restart): registry key -> its field.
_RESTART_FIELDS = {"wal_ckpt_bytes": "wal_since_checkpoint", "redo_bytes": "redo_bytes", "restart_t": "restart_s",
                   "redo_s": "redo_s", "redo_cpu_s": "redo_cpu_s", "recovery_ckpt_s": "recovery_checkpoint_s",
                   "startup_t": "startup_s", "restart_launch_t": "restart_launch_s",
                   "restart_init_s": "restart_init_s", "restart_redo_s": "restart_redo_s",
                   "restart_ckpt_s": "restart_checkpoint_s", "restart_ready_s": "restart_ready_s"}


def _restart_values(run: RunRecord, measured: dict[str, float | None]) -> None:
    restart = run.sut.restart if run.sut is not None else None
    if restart is None:
        return
    for key, name in _RESTART_FIELDS.items():
        measured[key] = _number(getattr(restart, name))


def _unmonitored(run: RunRecord) -> str | None:
    """A server perflab did not start and nothing measured where it runs (its (S) rows are na):
    where it is, in words; else None."""
    sut, target = run.sut, run.workload.get("target") or {}
    kind = target.get("kind")
    entry = KINDS[kind] if isinstance(kind, str) and kind in KINDS else None  # (a kind not registered here: no)
    if entry is None or not entry.network or sut is None or sut.pids or sut.host is not None or sut.cgroup is not None:
        return None
    return entry.model.where(target)


def _driver_from_run(run: RunRecord, measured: dict[str, float | None]) -> None:
    """Without the driver's sampled counters, its own account in run.json."""
    driver = run.driver
    if driver is None:
        return
    cpu_s = _number(driver.cpu_s)
    wall = _number(driver.window_wall_s)
    window = measured.get("window_s")
    if cpu_s is not None and wall and window:
        # Its CPU seconds were taken over its own wall-clock view of the window.
        measured["driver_sec"] = cpu_s * window / wall
    elif _number(driver.util_pct) is not None:
        measured["driver_cpu"] = _number(driver.util_pct)


def _per_group(tx: WindowTransactions, window: Window, codes: np.ndarray, names: Sequence[str],
               keys: Sequence[str]) -> dict[str, dict[str, float | None]]:
    """`keys` for each group of the window's transactions (rows whose code is the group's index)."""
    out: dict[str, dict[str, float | None]] = {}
    for name, raw in zip(names, grouped_response_rows(tx, codes, len(names))):
        if raw is None:
            continue
        raw["window_s"] = window.duration
        derived = REGISTRY.evaluate(raw, keys=keys)
        out[name] = {key: derived.get(key) for key in keys}
    return out


#: The window's transactions from which the per-class and per-transaction rows are made on a
#: thread of their own (below, a few thousand the thread's start would cost more than it saves).
PARALLEL_ROWS = 200_000

GroupRows = tuple[dict[str, dict[str, float | None]], dict[str, dict[str, float | None]]]


def _grouped_rows(tx: WindowTransactions, window: Window) -> Callable[[], GroupRows]:
    """What gives the per-class and per-transaction rows. They depend on nothing else the
    reduction makes, so a large window's are made on threads of their own while this one makes
    the rest: numpy releases the GIL in the sorts, gathers and partitions they are made of (10M
    transactions: the passes 0.95-1.14 s one after another, 0.62-0.68 s beside each other on
    the lab's two cores, the same CPU)."""
    if tx.count < PARALLEL_ROWS:
        return lambda: (_per_class(tx, window), _per_transaction(tx, window))
    pool = ThreadPoolExecutor(2, thread_name_prefix="perflab-groups")
    by_class, by_transaction = pool.submit(_per_class, tx, window), pool.submit(_per_transaction, tx, window)
    pool.shutdown(wait=False)  # its threads end after their one task each; result() waits for them
    return lambda: (by_class.result(), by_transaction.result())


def _per_class(tx: WindowTransactions, window: Window) -> dict[str, dict[str, float | None]]:
    return _per_group(tx, window, tx.class_code, tx.class_names, CLASS_KEYS)


def _per_transaction(tx: WindowTransactions, window: Window) -> dict[str, dict[str, float | None]]:
    """TRANSACTION_KEYS per transaction name, as _per_class does per class."""
    if tx.tx_code is None or tx.tx_names is None:
        return {}
    return _per_group(tx, window, tx.tx_code, tx.tx_names, TRANSACTION_KEYS)


def _per_component(samples: Samples, window: Window, outer: dict[str, float | None]) -> dict[str, dict[str, float | None]]:
    keys = REGISTRY.perflab_keys(per_component=True)
    out: dict[str, dict[str, float | None]] = {}
    for component in samples.components():
        prefix = f"v.{component}."
        raw: dict[str, float | None] = {}
        if samples.has(prefix + "cpu_sys"):
            raw["srv_cp_sec_v"] = samples.delta([prefix + "cpu_sys"], window, f"{component} CP CPU SEC (V)")
        if samples.has(prefix + "cpu_user"):
            raw["srv_virt_sec_v"] = samples.delta([prefix + "cpu_user"], window, f"{component} VIRT CPU SEC (V)")
        resident = samples.gauge_mean(prefix + "pss_bytes", window)
        if resident is None:
            resident = samples.gauge_mean(prefix + "rss_bytes", window)
        raw["srv_wkset_v"] = None if resident is None else resident / MB
        derived = REGISTRY.evaluate(raw, component=True, outer=outer)
        out[component] = {key: derived.get(key) for key in keys}
    return out


def _harness_component(outer: dict[str, float | None]) -> dict[str, float | None]:
    """perflab's worker as a component of the SUT's processes: its CPU is known from the
    transactions (HARNESS SEC (V)), not from a process of its own."""
    keys = REGISTRY.perflab_keys(per_component=True)
    derived = REGISTRY.evaluate({"srv_cpu_sec_v": outer.get("harness_sec")}, component=True, outer=outer)
    return {key: derived.get(key) for key in keys}


def _per_interval(tx: WindowTransactions | None, samples: Samples | None, edges: np.ndarray,
                  h_cpus: list[int], measured: dict[str, float | None]) -> list[dict[str, float | None]]:
    """INTERVAL_KEYS per bucket between `edges` (the transactions completed in each, the
    counters' differences across it)."""
    buckets = len(edges) - 1
    rows: list[dict[str, float | None]] = [{} for _ in range(buckets)]
    if tx is not None:
        rows = per_bucket(tx, edges, INTERVAL_PERCENTILES)
    series: dict[str, np.ndarray] = {}
    if samples is not None:
        sources = {
            "cp_sec_h": samples.cpu_fields(h_cpus, CP_FIELDS, "system") if h_cpus else None,
            "emul_sec_h": samples.cpu_fields(h_cpus, EMUL_FIELDS, "user") if h_cpus else None,
            "cp_sec_s": ["s.cpu_sys"] if samples.has("s.cpu_sys") else None,
            "emul_sec_s": ["s.cpu_user"] if samples.has("s.cpu_user") else None,
        }
        for key, names in sources.items():
            counter = samples.counter(names) if names else None
            if counter is not None and len(counter.t):
                # An edge the counter's samples do not reach (a lost monitor) is na, not flat.
                values = np.where(samples.covers(counter, edges), counter.at(edges), np.nan)
                series[key] = np.diff(values)
    out = []
    for b in range(buckets):
        raw = dict(rows[b])
        raw["window_s"] = float(edges[b + 1] - edges[b])
        raw["processors"] = measured.get("processors")
        raw["processors_h"] = measured.get("processors_h")
        for key, deltas in series.items():
            raw[key] = float(deltas[b]) if deltas[b] >= 0 else None
        derived = REGISTRY.evaluate(raw, keys=INTERVAL_KEYS)
        out.append({"t_start": float(edges[b]), "t_end": float(edges[b + 1]),
                    **{key: derived.get(key) for key in INTERVAL_KEYS}})
    return out


def _mixed_work(run: RunRecord) -> bool:
    """Users with a job stream beside them (the workload's load.batch)."""
    load = (run.workload or {}).get("load") or {}
    return isinstance(load, dict) and bool(load.get("batch"))


def _users_little(values: dict[str, float | None], tx: WindowTransactions, users: float,
                  window: Window) -> dict[str, float | None]:
    """The run's values with the users' own rows in place of the run's: ETR (T), AVG LAST (T),
    the counts and Little's-law rate and deviation, from the transactions of user numbers below
    USERS (a job's are recorded above them)."""
    assert tx.user is not None  # read for mixed work
    rows = response_rows(tx, tx.user < users)
    completed = rows["tx_ok"]
    out = {**values, **rows, "etr_t": completed / window.duration if completed is not None and window.duration else None}
    think, response, etr = out.get("avg_think_t"), out.get("avg_last_t"), out.get("etr_t")
    out["little_etr_t"] = users / (think + response) if think is not None and response is not None else None
    out["little_dev"] = (100.0 * (out["little_etr_t"] - etr) / etr
                         if out["little_etr_t"] is not None and etr else None)
    return out


def _caveats(values: dict[str, float | None], run: RunRecord, already: list[Caveat],
             thinks: np.ndarray | None = None, little: dict[str, float | None] | None = None) -> list[Caveat]:
    """The run's caveats; `little`: the values Little's law is checked on (the users' own, in
    mixed work; the run's otherwise)."""
    notes: list[Caveat] = []
    tx_ok, errors = values.get("tx_ok"), values.get("errors_t")
    if tx_ok == 0:
        notes.append(cav.note(cav.Code.NONE_COMPLETED, "no transactions completed in the window: per-command rows are na"))
    if errors:
        notes.append(cav.note(cav.Code.ERRORS,
                              f"{errors:.0f} transactions ended in an error ({values.get('error_pct_t') or 0:.2f}% of "
                              f"those finished in the window): ETR (T) and the response rows count completed "
                              f"transactions only", errors=errors))
    driver_cpu = values.get("driver_cpu")
    saturated = bool(run.driver is not None and run.driver.saturated)
    known = any(c.code is cav.Code.DRIVER_SATURATED for c in already)
    if not known and (saturated or (driver_cpu is not None and driver_cpu >= cav.DRIVER_SATURATION_PCT)):
        notes.append(cav.driver_saturated(driver_cpu))
    other = values.get("other_util_h")
    if other is not None and other < -cav.NEGATIVE_UTIL_PCT:
        notes.append(cav.negative_utilization("OTHER UTIL (H)", other, run.sut is not None and run.sut.host is not None))
    little = values if little is None else little
    deviation = little.get("little_dev")  # (from these two, when both were measured)
    expected, etr = little.get("little_etr_t"), little.get("etr_t")
    tolerance = little_tolerance_pct(little, thinks)
    if deviation is not None and tolerance is not None and expected is not None and etr is not None \
            and abs(deviation) > tolerance:
        notes.append(cav.little_law(expected, etr, deviation, tolerance))
    return notes


def little_tolerance_pct(values: dict[str, float | None], thinks: np.ndarray | None = None,
                         sigmas: float = LITTLE_SIGMAS) -> float | None:
    """How far USERS / (Z + R) may sit from ETR (T) before the window deserves a caveat: `sigmas`
    standard errors of the comparison, never below the seeds' 5%.

    Little's law is exact for time averages; the check compares it with per-transaction means
    over a window, which carries two errors:

    * the edges: each user is part-way through a cycle at each edge of the window, and a
      window counts whole cycles. What is left of a user's cycle at a random moment is the
      equilibrium residual of the cycle time C, with variance E[C³]/(3 E[C]) - (E[C²]/(2 E[C]))²
      (C²/12 for a constant cycle); over USERS users and two edges the count of completions is
      off by sqrt(2 · USERS · that) / E[C], relative to USERS · WINDOW / E[C] completions;
    * AVG THINK (T) is a sample mean: relative standard error SD(C) / (E[C] sqrt(thinks)).

    With `thinks` (every think that started in the window) the cycle's moments are taken from
    them plus AVG LAST (T); without, the cycle is taken as constant. A think time of seconds
    with a long idle hump (the Bactrian) makes both errors far larger than a constant cycle of
    the same mean would, which is why the check must know the thinks. A window too short for
    users' first cycles to mix is a bias, not noise; users who start mid-think
    (timing.first_think: residual) avoid it.
    """
    users, completed, window = values.get("users"), values.get("tx_ok"), values.get("window_s")
    response = values.get("avg_last_t")
    if not users or not completed:
        return None
    if thinks is not None and len(thinks) >= 2 and response is not None and window:
        cycles = np.asarray(thinks, dtype=np.float64) + response
        m1, m2, m3 = cycles.mean(), (cycles ** 2).mean(), (cycles ** 3).mean()
        residual_var = max(0.0, m3 / (3.0 * m1) - (m2 / (2.0 * m1)) ** 2)
        edge = math.sqrt(2.0 * residual_var / users) / window
        sampling = float(cycles.std(ddof=1)) / (m1 * math.sqrt(len(cycles)))
        relative = math.hypot(edge, sampling)
    else:
        # A constant cycle: the residual is uniform over it (variance 1/12 of a cycle per edge).
        relative = math.sqrt(users / 6.0) / completed
    return max(cav.LITTLE_TOLERANCE_PCT, 100.0 * sigmas * relative)

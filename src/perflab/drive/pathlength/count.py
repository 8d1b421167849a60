"""The counted pass, start to end: after the timed run, on a freshly prepared SUT, count the
instructions of `pathlength.transactions` transactions drawn from the workload's mix, write
pathlength.parquet and return the run record's `pathlength`.

A fresh SUT, not the one the timed run left: a SQLite database grows with every transaction the
timed run committed, so a faster release would otherwise be counted on a larger database than a
slower one, and the pathlengths of a study's configurations would not be paired.

Nothing here raises: a pass that fails (valgrind missing, a worker that crashes, a timeout)
leaves INSTR/CMD (I) na with its reason, and the timed run is kept as it is.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

import perflab
from perflab import arrow_arrays
from perflab.drive.adapters.base import adapter_class, prepare_sut
from perflab.drive.pathlength.draw import draw
from perflab.drive.pathlength.functions import CodeRange
from perflab.drive.pathlength.inprocess import NULLS, read_counts, worker_command, write_functions
from perflab.drive.pathlength.valgrind import callgrind_parts, valgrind_version
from perflab.records.run import PATHLENGTH_FILE, PathlengthMethod, PathlengthRecord
from perflab.sut.releases import call_with_path
from perflab.workload.kinds import KINDS
from perflab.workload.model import Workload

#: the directory of the pass (its fresh SUT, spec, worker log, callgrind file) in the run directory
PASS_DIR = "pathlength"


@dataclass(frozen=True)
class PassInputs:
    workload: Workload
    workload_dir: Path
    run_dir: Path
    seed: int
    cpus: list[int]
    paths: list[str]  # the releases under test, first on the worker's import path


def count_pathlength(inputs: PassInputs) -> PathlengthRecord:
    """Run the counted pass; its record (status failed with the reason when it could not count)."""
    settings = inputs.workload.pathlength
    assert settings is not None  # called only for a workload that asks for it
    # How the target's kind is counted: its registry line says (workload/kinds.py), and
    # workload/checks.py refuses a pathlength for a kind that says none.
    method = KINDS.of(inputs.workload.target).pathlength
    assert method is not None
    tool = f"{valgrind_version()} {'cachegrind' if method == 'per_command' else 'callgrind'}"
    record = PathlengthRecord(status="failed", tool=tool, method=method, warmup=settings.warmup)
    started = time.monotonic()
    try:
        if method == "server_backend":
            _count_server(inputs, record)
        else:
            _count(inputs, method, record)
    except KeyboardInterrupt:
        # Ctrl-C during the pass: the timed run is measured and is stored all the same.
        record.status, record.reason = "failed", "interrupted (Ctrl-C) during the counted pass"
    except Exception as exc:  # whatever fails here (the SUT's set-up, the worker, its files) leaves the run kept
        record.status, record.reason = "failed", f"{type(exc).__name__}: {exc}"[:500]
    record.seconds = round(time.monotonic() - started, 3)
    return record


def _count(inputs: PassInputs, method: PathlengthMethod, record: PathlengthRecord) -> None:
    workload, settings = inputs.workload, inputs.workload.pathlength
    assert settings is not None
    pass_dir = inputs.run_dir / PASS_DIR
    pass_dir.mkdir(exist_ok=True)
    data = workload.model_dump(mode="json", by_alias=True)
    if method == "per_command":
        data["target"]["valgrind"] = True  # the command adapter's own per-command count
    _prepare(workload, data, inputs, pass_dir)
    drawn = draw(workload, inputs.seed, settings.warmup + settings.transactions)
    out = pass_dir / "results.json"
    spec = {"workload": data, "workload_dir": str(inputs.workload_dir), "run_dir": str(pass_dir),
            "cpus": inputs.cpus, "paths": inputs.paths, "drawn": [[d.tx_index, d.params] for d in drawn],
            "warmup": settings.warmup, "nulls": NULLS, "mode": method, "out": str(out)}
    functions_out = pass_dir / "functions.json"
    if method == "per_command" and settings.functions:
        # each command under callgrind, read function by function in the worker (worker.py)
        spec.update(functions=True, functions_dir=str(inputs.run_dir), functions_out=str(functions_out))
        record.tool = (record.tool or "").replace("cachegrind", "callgrind")
    spec_path = pass_dir / "spec.json"
    spec_path.write_text(json.dumps(spec))
    callgrind_file = pass_dir / "callgrind.out"
    command = (worker_command(spec_path, callgrind_file) if method == "client_requests"
               else [sys.executable, "-m", "perflab.drive.pathlength.worker", str(spec_path)])
    log = pass_dir / "worker.log"
    code = _run(command, log, settings.timeout, inputs.seed)
    if code is None:
        record.reason = f"the counted pass did not finish within {settings.timeout:g} s (pathlength.timeout)"
        return
    if code != 0 or not out.exists():
        record.reason = f"the counted worker exited with status {code}: {_tail(log)}"
        return
    output = json.loads(out.read_text())
    results = output["results"]
    counted = [r[2] for r in results]
    if functions_out.exists():
        written = json.loads(functions_out.read_text())
        record.functions, record.functions_seconds = written["functions"], round(written["seconds"], 3)
        record.functions_reason = written.get("reason")
    if method == "client_requests":
        counts = read_counts(callgrind_file, len(results))
        record.overhead_instructions = counts.overhead
        counted = counts.per_transaction
        if settings.functions:
            machine = [CodeRange(*c) for c in output.get("code") or []]
            names = _counted_names(workload, drawn[settings.warmup:], results, counted)
            _functions(record, lambda: write_functions(callgrind_file, names, machine, inputs.run_dir))
        callgrind_file.unlink(missing_ok=True)  # megabytes of call graph; the counts are in the tables
    _write_table(inputs, drawn[settings.warmup:], results, counted, record)


def _write_table(inputs: PassInputs, counted_drawn: list, results: list[list], counted: list,
                 record: PathlengthRecord) -> None:
    """pathlength.parquet, one row per counted transaction; the record's counts and status."""
    workload = inputs.workload
    names = [t.name for t in workload.transactions]
    classes = [t.tx_class for t in workload.transactions]
    instructions = [math.nan if not ok or n is None else float(n) for (ok, _e, _c), n in zip(results, counted)]
    table = pa.table({
        "transaction": arrow_arrays.strings([names[d.tx_index] for d in counted_drawn]),
        "class": arrow_arrays.strings([classes[d.tx_index] for d in counted_drawn]),
        "instructions": arrow_arrays.numbers(instructions, pa.float64()),
        "ok": arrow_arrays.booleans([bool(r[0]) for r in results]),
        "error": arrow_arrays.strings([r[1] for r in results]),
    })
    pq.write_table(table, inputs.run_dir / PATHLENGTH_FILE)
    record.transactions = len(results)
    record.errors = sum(1 for r in results if not r[0])
    measured = sum(1 for v in instructions if not math.isnan(v))
    if measured == 0:
        record.reason = "no counted transaction completed with a count"
        return
    record.status = "counted"


def _count_server(inputs: PassInputs, record: PathlengthRecord) -> None:
    """A PostgreSQL target: a fresh server loaded as the timed run's was, restarted under
    callgrind, its backend counted between markers (drive/pathlength/server.py)."""
    import shutil

    from perflab.drive.pathlength.server import NULLS as SERVER_NULLS
    from perflab.drive.pathlength.server import (
        backend_counts,
        process_totals,
        run_counted_server,
        write_backend_functions,
    )
    from perflab.drive.server_run import load_key, prepare_postgres
    from perflab.sut.postgres_server import PostgresServer
    from perflab.workload.model import PostgresTarget

    workload, settings = inputs.workload, inputs.workload.pathlength
    target = workload.target
    assert settings is not None and isinstance(target, PostgresTarget) and target.server is not None
    pass_dir = inputs.run_dir / PASS_DIR
    pass_dir.mkdir(exist_ok=True)
    drawn = draw(workload, inputs.seed, settings.warmup + settings.transactions)
    server = PostgresServer(target.server, target.database, pass_dir, f"{inputs.run_dir.name}-pathlength",
                            inputs.cpus or None, None)
    out_dir = pass_dir / "callgrind"
    if not server.account.can_reach(pass_dir):
        out_dir = Path("/var/tmp/perflab-pgdata") / f"{inputs.run_dir.name}-callgrind"
    out_dir.mkdir(parents=True, exist_ok=True)
    server.account.chown(out_dir)
    try:
        server.start(load_key(target))
        prepare_postgres(target, server)
        # A standby as the timed run had one: with synchronous_commit waiting for it, the
        # backend's commit path (SyncRepWaitForLSN) is the one the timed run took; its walsender
        # is counted apart (other_processes), as every process that is not the backend.
        server.start_standby()
        result, files, _seconds = run_counted_server(server, out_dir, [(d.tx_index, d.params) for d in drawn],
                                                     settings.warmup, workload, settings.timeout)
        backend = files.get(result.backend_pid)
        if backend is None:
            raise RuntimeError(f"no callgrind file of the counted backend (pid {result.backend_pid}) in {out_dir}")
        counts = backend_counts(callgrind_parts(backend), len(result.results), SERVER_NULLS)
        record.overhead_instructions = counts.overhead
        record.other_processes = process_totals(files, result.kinds, result.backend_pid)
        if settings.functions:
            names = _counted_names(workload, drawn[settings.warmup:], result.results, counts.per_transaction)
            _functions(record, lambda: write_backend_functions(backend, names, inputs.run_dir))
        _write_table(inputs, drawn[settings.warmup:], result.results, counts.per_transaction, record)
    finally:
        note = server.stop()
        shutil.rmtree(out_dir, ignore_errors=True)
        if note:
            record.reason = f"{record.reason}; {note}" if record.reason else note


def _counted_names(workload: Workload, counted_drawn: list, results: list[list], counted: list) -> list[str | None]:
    """Each counted transaction's name, None where its count is not used (it failed, or has none)."""
    names = [t.name for t in workload.transactions]
    return [names[d.tx_index] if ok and n is not None else None
            for d, (ok, _e, _c), n in zip(counted_drawn, results, counted)]


def _functions(record: PathlengthRecord, write: Callable[[], int]) -> None:
    """The per-function tables, timed; a failure leaves them out with its reason, the counts kept."""
    started = time.monotonic()
    try:
        record.functions = write()
    except Exception as exc:  # the tables are an addition: the pass's counts stand without them
        record.functions_reason = f"{type(exc).__name__}: {exc}"[:500]
    record.functions_seconds = round(time.monotonic() - started, 3)


def _prepare(workload: Workload, data: dict, inputs: PassInputs, pass_dir: Path) -> None:
    """The SUT set up afresh for the pass, as the timed run's was (the release's own import
    path in a process of its own, as there)."""
    if inputs.paths:
        call_with_path(inputs.paths, prepare_sut, workload.target.kind, data, str(inputs.workload_dir),
                       str(pass_dir))
    else:
        adapter_class(workload.target.kind).prepare(workload, inputs.workload_dir, pass_dir)


def _run(command: list[str], log: Path, timeout: float, seed: int) -> int | None:
    """The worker's exit status, or None when it outlasted `timeout` (its process group killed).
    perflab itself is put on its import path: the worker is a plain subprocess, not a spawned one;
    its hash seed is the run's."""
    env = dict(os.environ)
    source = str(Path(perflab.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (source, env.get("PYTHONPATH")) if p)
    # Python's string hashes from the run's seed, not the process's chance: dictionaries probe
    # the same way in both configurations of a block (same seed), so a count moves only with
    # the code (the noise of a per-function count, docs/workloads.md#pathlength); the blocks'
    # seeds still vary it. A workload that sets PYTHONHASHSEED itself keeps its own.
    env.setdefault("PYTHONHASHSEED", str(seed % 4294967296))
    with open(log, "wb") as handle:
        process = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT, env=env,
                                   start_new_session=True)
        try:
            return process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill(process)
            return None
        except BaseException:
            _kill(process)  # the worker is in a session of its own: Ctrl-C does not reach it
            raise


def _kill(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def _tail(log: Path, lines: int = 5) -> str:
    try:
        text = log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return " | ".join(text[-lines:])[-600:] or "(no output)"

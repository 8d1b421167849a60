"""The counted pass's worker: `python -m perflab.drive.pathlength.worker SPEC.json`.

It builds the same adapter a SUT worker builds (drive/adapters/), runs the warm-up transactions,
then the counted ones, and writes each one's outcome to the spec's `out` file. Two modes:

* `client_requests` (sqlite, python): the worker runs under callgrind with nothing instrumented
  or collected at first; it starts the instrumentation before the warm-up, then wraps each
  counted transaction in client requests -- collection on, the call, collection off, a dump
  labelled `tx-N` -- so each dump holds exactly one transaction's instructions, plus the
  requests' own few, which `nulls` empty calls (dumps `null-N`) measure. The parent reads the
  dumps by their labels (drive/pathlength/inprocess.py).
* `per_command` (command): the worker itself is not under valgrind; the command adapter runs
  each command under cachegrind (its `valgrind` mode) and reports each one's count.

Everything the worker prints on failure goes to stderr, which the parent keeps for the reason.
"""

from __future__ import annotations

import gc
import json
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: exit status when the worker that should be counted finds no valgrind around it
NOT_UNDER_VALGRIND = 3


def _nothing(_tx_index: int, _params: Any) -> None:
    return None


def _error_of(function: Callable[..., Any], *args: Any) -> str | None:
    try:
        function(*args)
        return None
    except Exception as exc:  # a failed transaction is a result; its count is not used
        return f"{type(exc).__name__}: {exc}"[:300]


class Marker:
    """One counted call between two toggles of callgrind's collection, then a labelled dump.
    The label's C string is made before collection starts, so only the call and the two
    requests' own instructions are collected (the nulls measure the latter)."""

    def __init__(self, requests: Any):
        self.requests = requests

    def count(self, label: str, function: Callable[..., Any], *args: Any) -> str | None:
        requests = self.requests
        address = requests.label(label)
        toggle = requests.toggle_collect
        error = None
        toggle()
        try:
            function(*args)
        except Exception as exc:
            error = exc
        toggle()
        requests.dump_stats_at(address)
        return None if error is None else f"{type(error).__name__}: {error}"[:300]


class _CommandFunctions:
    """A command's per-function tables: each counted command's processes, each a callgrind file,
    read as one part (drive/pathlength/functions.py) and added under the transaction's name. A
    command has no empty call to subtract: its count is its processes' whole."""

    def __init__(self, adapter: Any, workload: Any):
        from perflab.drive.pathlength.functions import Profile

        self.names = [t.name for t in workload.transactions]
        self.profile = Profile()
        self.counting = False
        self.pending: Any = None
        self.seconds = 0.0
        self.error: str | None = None
        self.counted = 0     # the counted transaction's number in the pass
        adapter.count_functions(self.read)   # the command adapter's callgrind mode

    def read(self, paths: list[Path]) -> None:
        import time

        from perflab.drive.pathlength.functions import PartFunctions, read_parts

        if not self.counting or self.error is not None:
            return
        started = time.monotonic()
        whole = PartFunctions("command")
        try:
            parts = [part for path in paths for part in read_parts(path)]
        except (OSError, ValueError) as exc:   # the tables are an addition: the command's count stands
            self.error = f"{type(exc).__name__}: {exc}"[:300]
            return
        for part in parts:
            for mine, theirs in ((whole.own, part.own), (whole.inner, part.inner),
                                 (whole.inclusive, part.inclusive)):
                for key, value in theirs.items():
                    mine[key] += value
            for edge, (count, cost) in part.calls.items():
                entry = whole.calls.setdefault(edge, [0, 0])
                entry[0] += count
                entry[1] += cost
            for key, file in part.files.items():
                whole.files.setdefault(key, file)
            whole.total += part.total
        self.pending = whole
        self.seconds += time.monotonic() - started

    def take(self, tx_index: int, used: bool) -> None:
        if self.pending is not None and used:
            self.profile.add(self.counted, self.names[tx_index], self.pending, None)
        self.pending = None
        self.counted += 1

    def write(self, run_dir: Path, out: str) -> None:
        import time

        from perflab.drive.pathlength.functions import write_profile

        started = time.monotonic()
        functions = None if self.error is not None else write_profile(self.profile, run_dir)
        Path(out).write_text(json.dumps({"functions": functions, "reason": self.error,
                                         "seconds": self.seconds + time.monotonic() - started}))


def main(spec_path: str) -> int:
    spec = json.loads(Path(spec_path).read_text())
    if spec.get("cpus"):
        os.sched_setaffinity(0, spec["cpus"])
    if spec.get("paths"):
        from perflab.sut.releases import prepend_path

        prepend_path(spec["paths"])
    os.environ["PERFLAB_RUN_DIR"] = spec["run_dir"]
    from perflab.drive.adapters.base import WorkerContext, adapter_class
    from perflab.workload.model import Workload

    workload = Workload.model_validate(spec["workload"])
    drawn = [(int(i), p) for i, p in spec["drawn"]]
    warmup = int(spec["warmup"])
    results: list[list[Any]] = []
    warmup_errors = 0
    requests = None
    if spec["mode"] == "client_requests":
        from perflab.drive.pathlength.client_request import ClientRequests

        requests = ClientRequests()
        if not requests.running_on_valgrind():
            print("the counted worker is not running under valgrind", file=sys.stderr)
            return NOT_UNDER_VALGRIND
        # Instrumented from here: the adapter's set-up (imports, connection) runs uncounted but
        # instrumented, so the warm-up finds callgrind's translations made.
        requests.start_instrumentation()
    adapter = adapter_class(workload.target.kind)(
        WorkerContext(workload, Path(spec["workload_dir"]), Path(spec["run_dir"]), 0))
    take: Callable[[], float] = getattr(adapter, "take_instructions", lambda: math.nan)
    for tx_index, params in drawn[:warmup]:
        warmup_errors += _error_of(adapter.execute, tx_index, params) is not None
        take()
    if requests is not None:
        # The start-up's objects (perflab, pydantic, the SUT's modules) frozen out of the
        # collector's reach: a collection that falls into a counted call then scans only what
        # the transactions made, not the hundred thousand objects of the imports.
        gc.collect()
        gc.freeze()
        marker = Marker(requests)
        for n in range(int(spec["nulls"])):
            marker.count(f"null-{n}", _nothing, 0, None)
        for n, (tx_index, params) in enumerate(drawn[warmup:]):
            error = marker.count(f"tx-{n}", adapter.execute, tx_index, params)
            results.append([error is None, error, None])
    else:
        functions = _CommandFunctions(adapter, workload) if spec.get("functions") else None
        for tx_index, params in drawn[warmup:]:
            if functions is not None:
                functions.counting = True
            error = _error_of(adapter.execute, tx_index, params)
            count = take()
            results.append([error is None, error, None if math.isnan(count) else count])
            if functions is not None:
                functions.take(tx_index, error is None and not math.isnan(count))
        if functions is not None:
            functions.write(Path(spec["functions_dir"]), spec["functions_out"])
    adapter.close()
    from perflab.sut.machine_code import code_map

    # the machine code this process made (the known loop, the client requests): the names of
    # callgrind's symbol-less functions in the per-function tables (drive/pathlength/functions.py)
    Path(spec["out"]).write_text(json.dumps({"warmup_errors": warmup_errors, "results": results,
                                             "code": code_map()}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

"""The two tiers of the tests, decided by rule (tests/conftest.py applies it to every item).

* **lab**: a test that starts a real run or a real system -- perflab's driver against a SUT
  (`perflab run`, `perflab study`, `perflab accuracy`, `execute_run`, a duet's `run_pair`, a
  StudyRunner without a model executor), a monitor sampling real processes, PostgreSQL, nginx,
  Ray, network namespaces, Chromium. Every truth test of a real system is here.
  The Monte-Carlo simulations of the statistics' error rates and power (`LAB_SIMULATIONS`,
  minutes of CPU) are truth tests too, and run there.
* **fast**: everything else -- unit tests, synthetic run directories and study documents, and
  orchestration driven through the model driver (perflab.drive.model_driver).

The rule reads source, not names of files: a test is lab when its own function, a fixture it
uses, or a helper either of them calls (transitively, through the test modules and the
helper modules they import from tests/) names one of `LAB_NAMES`, or calls any function with
one of `LAB_COMMANDS` as its first argument (`perflab("study", ...)`, `[*PERFLAB, "run", ...]`).
`@pytest.mark.lab` forces a test into the lab tier; `@pytest.mark.fast` keeps one out of it
that the rule would put there (it promises to start no real run -- a bad-input test whose
command is refused before any run). In the fast tier, conftest.py fails a test that stores a
real run in its tmp_path, so a test the rule misses is found the first time it runs.

The lab tier runs in two phases (the Makefile's `test`):

* **shared** (`-m "lab and shared"`, two at a time: `-n 2 --dist loadfile`): the simulations
  (`LAB_SIMULATIONS`: they measure no machine) and the lab tests named in `LAB_SHARED` -- tests
  that start real systems but assert nothing a second test on the other CPU could change: exit
  codes, failure reasons, stored and listed runs, what a browser shows, a seed's determinism, a
  threshold two orders of magnitude away. Every one of them keeps its own store, its own ports
  (0 or a free one) and no fixed network namespace.
* **quiet** (`-m "lab and not shared"`, one at a time): every other lab test. A lab test is quiet
  unless it is named in `LAB_SHARED`: every truth of CPU, time, rate, memory or counts per
  second, every study and its verdicts, calibration, duets, harness cost and lateness, and
  anything on fixed ports or namespaces (nginx on 18080, the remote SUT host, Ray) stays here.
  Being conservative is the rule: a test named in LAB_SHARED by mistake flakes when its
  neighbour loads the machine, a quiet test only costs time.
"""

from __future__ import annotations

import ast
import functools
import inspect
import json
from pathlib import Path
from typing import Any, Callable, Iterable

TESTS = Path(__file__).resolve().parent

#: Names whose use starts a real run or a real system.
LAB_NAMES = frozenset({
    # perflab's own runs
    "execute_run", "execute_local_run", "execute_server_run", "run_pair", "RunLifecycle", "run_workload",
    # monitors of real processes and their children
    "Sampler", "MonitorProcess", "Child",
    # servers, hosts and browsers
    "PostgresServer", "NetLab", "start_agent", "DriverCluster", "sync_playwright", "async_playwright",
    "installed_releases", "CHROMIUM",
})
#: Monte-Carlo checks of the statistics -- error rates, power and coverage over thousands of
#: simulated studies: truth tests by simulation, a minute or more of CPU each. The lab tier keeps
#: them, beside the real systems' truths. (Node ids or their prefixes; a new long simulation is
#: added here or marked @pytest.mark.lab. The fast tier's summary lists its slowest tests.)
LAB_SIMULATIONS = (
    "tests/stats/test_stats_error_control.py::",
    "tests/study/test_validity.py::test_stationary_open_loop_runs_are_almost_never_excluded_and_a_growing_queue_is",
    "tests/stats/test_stats_multiplicity.py::test_holm_known_values_and_statsmodels_oracle",
    "tests/history/test_history_truths.py::",     # the change-point detector's power and false rate
)
#: Lab tests that may run beside another lab test (the `shared` phase; the docstring says which
#: qualify). Node ids or their prefixes; loadfile keeps a file's tests, and its module fixtures,
#: on one worker.
LAB_SHARED = (
    # failures, signals, full disks, hung SUTs, SIGKILLed drivers and what the store shows after:
    # exit codes, reasons and stored files (test_runtime_hung's bound on a run's length is its
    # window plus 30 s of slack against a 2 s deadline)
    "tests/reliability/test_runtime_store_views.py::",
    "tests/reliability/test_runtime_sigkill.py::",
    "tests/reliability/test_runtime_hung.py::",
    "tests/reliability/test_runtime_signals.py::",
    "tests/reliability/test_runtime_disk_full.py::",
    "tests/reliability/test_runtime_concurrent.py::",   # its two runs share one store, their own
    "tests/reliability/test_secrets.py::",
    "tests/reliability/test_text_terminal.py::",
    "tests/core/test_driver.py::test_sut_crash_marks_run_failed_and_keeps_transactions",
    "tests/core/test_driver.py::test_sigterm_leaves_a_readable_interrupted_run",
    "tests/core/test_driver.py::test_sigkill_leaves_the_catalog_working",
    # a toy target kind added in three places runs: its exit code and its rows, all ok
    "tests/core/test_toy_target_kind.py::",
    # the compiled loop against hostile servers of the test's own and its open loop: errors, rows and
    # counts (a peak of resident memory is the process's own, whatever runs beside it)
    "tests/net/test_native_hostile.py::",
    "tests/net/test_native_open_loop.py::",
    "tests/net/test_native_sanitized.py::",  # the same, on the loop built under ASan and UBSan
    "tests/net/test_native_tls.py::",  # https in the compiled loop: rows, handshakes and words
    # a seed's determinism: the same script choices and think times, user by user, over a prefix
    # (> 50 per user of ~300 a user completes in the window)
    "tests/core/test_driver.py::test_same_seed_same_sequence",
    "tests/net/test_external_seeds.py::",                # a free port per server (its docstring)
    # what `perflab serve` and Chromium show of stored runs and a live one (perflab serve on port 0)
    "tests/serve/test_browser.py::",
    "tests/serve/test_dashboard_browser.py::",
    "tests/serve/test_live_writer.py::test_a_plain_perflab_run_writes_live_json",
    "tests/report/test_report_chromium.py::",
    "tests/history/test_history_browser.py::",    # the history page of a store of model runs (its own server, port 0)
    # real systems checked for exit codes, reasons, system-call counts, which kernel or release
    # ran, ordering, and bounds an order of magnitude from the measured value (each on a free port
    # or a socket of its own; no fixed port or namespace)
    "tests/net/test_postgres.py::test_server_killed_mid_run_fails_the_run_with_the_reason",
    "tests/net/test_service_port.py::test_two_runs_of_one_workload_at_once_each_listen_on_their_own_port",
    "tests/net/test_service_port.py::test_run_dir_given_to_the_service_is_absolute_with_the_default_relative_store",
    "tests/cases/test_crypto.py::",           # a 3x bound where 16-29x is measured
    "tests/cases/test_copy_job.py::",         # the kernel's system-call counts per job
    "tests/net/test_http_client_fastpath.py::",  # bytes on the wire, counts against thousands a second
    "tests/net/test_guest.py::test_each_job_runs_on_gvisors_kernel",
    "tests/net/test_guest.py::test_the_probe_fails_natively_so_it_tells_the_two_apart",
    "tests/cases/test_paths.py::test_echo_over_a_unix_socket_only",
    "tests/net/test_tcp_http.py::test_echo_streaming_several_messages_per_transaction",
    # perflab's own runs checked for instruction counts under valgrind, a seed's schedule and
    # shares, exit codes and outcomes, fingerprints, exact counts and bytes, CPU placements, and
    # bounds that hold on a loaded host (each passed with both CPUs held by busy loops)
    "tests/core/test_pathlength_run.py::",
    "tests/pathlength/test_functions_run.py::",
    "tests/pathlength/test_known_change_study.py::",   # instruction counts, not times
    "tests/pathlength/test_flame_chromium.py::",
    "tests/core/test_driver.py::test_valgrind_mode_counts_instructions_per_command",
    "tests/core/test_driver.py::test_sqlite_two_releases",
    "tests/core/test_driver.py::test_script_mix_follows_weights",
    "tests/core/test_engine_schedule.py::test_open_loop_same_seed_same_arrivals_and_scripts",
    "tests/core/test_engine_schedule.py::test_open_loop_batches_keep_the_rate_and_never_start_early",
    "tests/core/test_run_outcomes.py::test_a_run_with_errors_shows_errors_and_exits_5",
    "tests/core/test_run_outcomes.py::test_a_clean_run_is_complete_and_exits_0",
    "tests/study/test_sweep_and_limits.py::test_memory_limit_reaches_the_sut_cgroup",
    "tests/core/test_releases.py::test_a_run_measures_the_release_it_names_and_sqlite_counts_its_commits",
    "tests/core/test_recorder.py::test_a_run_longer_than_the_spill_keeps_every_transaction",
    "tests/core/test_run_inprocess.py::test_consecutive_runs_restore_affinity_and_do_not_share_cpus",
    "tests/core/test_job_stream.py::test_a_stream_of_known_bytes",
    "tests/core/test_mixed_work.py::test_a_study_judges_a_class_row_as_its_primary_metric",
    "tests/bench/test_bench_smoke.py::test_null_target_driver_cost",
    "tests/bench/test_bench_smoke.py::test_schedule_lateness_is_never_negative",
    "tests/bench/test_bench_smoke.py::test_monitor_overhead_is_reported",
    # the embedded default without the extras; a threshold 100x away from the measured ITR (S)
    "tests/install/test_without_extras.py::test_the_embedded_default_runs_without_the_extras",
    "tests/reduce/test_catalog_thresholds.py::test_perflab_run_exits_1_when_a_threshold_is_violated",
)
#: The tests' ways of calling perflab's command line (cli_helpers.perflab, reliability_helpers.run_main).
CLI_HELPERS = frozenset({"perflab", "run_main", "_perflab"})
#: First arguments that make a CLI call a real run (`perflab("run", ...)`, `run_main("study", ...)`).
LAB_COMMANDS = frozenset({"run", "study", "accuracy", "agent"})


@functools.lru_cache(maxsize=None)
def _module(path: Path) -> tuple[dict[str, ast.AST], dict[str, tuple[Path, str]]] | None:
    """A module's top-level functions (and class methods, as Class.name) and the names it
    imports from other test modules (name -> (file, name there))."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None
    defs: dict[str, ast.AST] = {}
    imports: dict[str, tuple[Path, str]] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defs[node.name] = node
        elif isinstance(node, ast.ClassDef):
            defs[node.name] = node
            for sub in node.body:
                if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    defs[f"{node.name}.{sub.name}"] = sub
        elif isinstance(node, ast.ImportFrom):
            source = _resolve(path, node.module, node.level)
            if source is not None:
                for alias in node.names:
                    imports[alias.asname or alias.name] = (source, alias.name)
    return defs, imports


def _resolve(path: Path, module: str | None, level: int) -> Path | None:
    """The file of a test module imported by `path` (None: not one of the tests' own)."""
    base = path.parent if level else TESTS
    for _ in range(max(0, level - 1)):
        base = base.parent
    parts = module.split(".") if module else []
    candidate = base.joinpath(*parts)
    for found in (candidate.with_suffix(".py"), candidate / "__init__.py"):
        if parts and found.is_file() and TESTS in found.parents:
            return found
    return None


def _uses(node: ast.AST) -> tuple[set[str], bool]:
    """The names a function refers to, and whether it starts a real run by itself."""
    names: set[str] = set()
    calls: list[ast.Call] = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            names.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            names.add(sub.attr)
        elif isinstance(sub, ast.Call):
            calls.append(sub)
            names.update(k.arg for k in sub.keywords if k.arg)   # StudyOptions(executor=...)
    real = False
    for call in calls:
        callee = call.func.id if isinstance(call.func, ast.Name) else getattr(call.func, "attr", None)
        first = call.args[0] if call.args else None
        if callee in CLI_HELPERS and isinstance(first, ast.Constant) and first.value in LAB_COMMANDS:
            real = True
        if callee == "StudyRunner" and "executor" not in names:
            real = True   # a study runner without a model executor drives real runs
    for sub in ast.walk(node):
        # a command line built by hand: [*PERFLAB, "run", ...], [sys.executable, "-m", "perflab.cli", "study", ...]
        if isinstance(sub, (ast.List, ast.Tuple)):
            texts = [e.value for e in sub.elts if isinstance(e, ast.Constant)]
            cli = "perflab.cli" in texts or any(isinstance(e, ast.Starred) and getattr(e.value, "id", None) == "PERFLAB"
                                                for e in sub.elts)
            if cli and any(t in LAB_COMMANDS for t in texts):
                real = True
    return names, real


@functools.lru_cache(maxsize=None)
def _def_uses(path: Path, name: str) -> tuple[frozenset[str], bool]:
    """_uses of one top-level definition, walked once per collection (every test's closure
    reaches the same helpers)."""
    module = _module(path)
    assert module is not None and name in module[0]
    names, real = _uses(module[0][name])
    return frozenset(names), real


@functools.lru_cache(maxsize=None)
def _is_lab(path: Path, name: str) -> bool:
    """Whether the function `name` of `path`, or anything it calls among the tests' own
    functions, starts a real run or system."""
    stack, seen = [(path, name)], set()
    while stack:
        key = stack.pop()
        if key in seen:
            continue
        seen.add(key)
        file, there = key
        module = _module(file)
        if module is None or there not in module[0]:
            continue
        defs, imports = module
        names, real = _def_uses(file, there)
        if real or names & LAB_NAMES:
            return True
        for used in names:
            if used in defs:
                stack.append((file, used))
            elif used in imports:
                stack.append(imports[used])
    return False


@functools.lru_cache(maxsize=None)
def function_is_lab(function: Callable[..., Any]) -> bool:
    """Whether `function` (a test or a fixture) starts a real run or system, by the rule."""
    function = inspect.unwrap(function)
    try:
        path = Path(inspect.getsourcefile(function)).resolve()
    except (TypeError, OSError):
        return False
    if TESTS not in path.parents:
        return False
    qualname = function.__qualname__.replace(".<locals>", "")
    return _is_lab(path, qualname) or _is_lab(path, function.__name__)


def item_is_lab(item: Any) -> bool:
    """The rule for one collected test: its function or any fixture it uses."""
    if item.get_closest_marker("fast") is not None:
        return False
    if item.get_closest_marker("lab") is not None or item.nodeid.startswith(LAB_SIMULATIONS):
        return True
    functions: list[Callable[..., Any]] = [getattr(item, "function", None)]
    info = getattr(item, "_fixtureinfo", None)
    for defs in (info.name2fixturedefs.values() if info is not None else ()):
        functions.extend(d.func for d in defs)
    return any(f is not None and function_is_lab(f) for f in functions)


def item_is_shared(item: Any) -> bool:
    """A lab test that may run beside another (the `shared` phase): a simulation, or one named
    in LAB_SHARED. Every other lab test runs alone."""
    return item.nodeid.startswith(LAB_SIMULATIONS) or item.nodeid.startswith(LAB_SHARED)


def lab_names(items: Iterable[Any]) -> list[str]:
    return [item.nodeid for item in items if item_is_lab(item)]


def real_runs(directory: Path) -> list[Path]:
    """Run directories under `directory` that perflab's own driver stored (not the model driver,
    not a test's hand-written run.json): their fingerprint names the placement and no model."""
    found = []
    for path in Path(directory).glob("**/runs/*/run.json"):
        try:
            fingerprint = json.loads(path.read_text()).get("fingerprint") or {}
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(fingerprint, dict) and "placement" in fingerprint and "model" not in fingerprint:
            found.append(path.parent)
    return found

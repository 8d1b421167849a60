"""Soak: 10,000 simulated users for an hour -- does the driver's memory grow, does it fall behind?

A benchmark, not a test (bench/README.md): it takes an hour and CI does not run it. It answers
issue 14's last question with two numbers and a verdict against stated limits:

* driver RSS growth: the driver's resident set (VmRSS of the `perflab run` process, sampled every
  few seconds) over the last tenth of the window against the first tenth, in per cent of the
  first. A leak in the engine, the recorder or the live file grows it. The recorder's rows are
  not kept in memory (it spills every 4096 to the run directory: drive/load/recorder.py), so no
  growth is expected at all. Limit: <= 5 %.
* lateness drift: actual start - intended start of every transaction, per tenth of the window;
  the drift is the last tenth's median (and p99) minus the first tenth's. An event loop that
  slows down as the run ages (timers piling up, a growing list scanned per transaction) shows
  here first. Limit: median drift <= 1 ms and p99 drift <= 5 ms.

The users think an exponential 20 s on average (500 transactions/s at 10k users): a load the
2-core machine's driver carries at about a third of its core, so what is measured is ageing,
not saturation. The null in-process target (perflab.sut.synthetic:noop), driver on CPU 0, SUT
worker on CPU 1, monitor on.

    .venv/bin/python bench/soak.py                     # the benchmark: 10k users, 1 hour (~62 min)
    .venv/bin/python bench/soak.py --smoke             # under a minute, 50 users: proves it works
    .venv/bin/python bench/soak.py --users 2000 --duration 600

Prints the result as JSON and, with --out, writes it there (bench/results/soak.json).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import emit, machine, proc_rss_bytes  # noqa: E402
from perflab_runs import python_workload, run_perflab  # noqa: E402

RSS_GROWTH_LIMIT_PCT = 5.0
MEDIAN_DRIFT_LIMIT_S = 0.001
P99_DRIFT_LIMIT_S = 0.005
TENTHS = 10


def _quantile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def soak(users: int, duration_s: float, think_s: float, stabilization_s: float, poll_every_s: float) -> dict[str, Any]:
    name = f"bench-soak-{users}"
    think = f"{{dist: exponential, mean: {think_s:g}}}"
    text = python_workload(name, users=users, think=think, stabilization=stabilization_s, measurement=duration_s,
                           workers=1, monitor_interval="5s")
    run = run_perflab(text, name, monitor=True, poll=proc_rss_bytes, poll_every=poll_every_s,
                      timeout=stabilization_s + duration_s + 600)
    t0 = run.run["clock"]["t0_epoch"]
    window = run.run["window"]
    start, end = window["start"], window["end"]
    tenth = (end - start) / TENTHS

    # driver RSS: the first and last tenth of the window
    rss = [(t - t0, value) for t, value in run.polls if value]
    first = [v for t, v in rss if start <= t < start + tenth]
    last = [v for t, v in rss if end - tenth <= t < end]
    if not first or not last:
        raise RuntimeError(f"{run.run_id}: no RSS sample in the window's first or last tenth (poll every "
                           f"{poll_every_s:g} s, window {end - start:g} s)")
    rss_first, rss_last = statistics.median(first), statistics.median(last)

    # lateness per tenth of the window (by intended start)
    table = run.transactions()
    intended = table.column("intended_start").to_pylist()
    actual = table.column("actual_start").to_pylist()
    per_tenth: list[list[float]] = [[] for _ in range(TENTHS)]
    rows_in_window = 0
    for i, a in zip(intended, actual):
        if start <= i < end:
            rows_in_window += 1
            per_tenth[min(TENTHS - 1, int((i - start) / tenth))].append(a - i)
    medians = [_quantile(v, 0.5) for v in per_tenth]
    p99s = [_quantile(v, 0.99) for v in per_tenth]
    if medians[0] is None or medians[-1] is None:
        raise RuntimeError(f"{run.run_id}: no transactions in the window's first or last tenth")
    growth_pct = 100.0 * (rss_last - rss_first) / rss_first
    median_drift, p99_drift = medians[-1] - medians[0], p99s[-1] - p99s[0]
    return {
        "users": users, "duration_s": duration_s, "think_mean_s": think_s, "run_id": run.run_id,
        "command": run.command, "background_cores": run.background_cores,
        "transactions_in_window": rows_in_window,
        "rss_first_tenth_bytes": rss_first, "rss_last_tenth_bytes": rss_last, "rss_growth_pct": growth_pct,
        "lateness_median_per_tenth_s": medians, "lateness_p99_per_tenth_s": p99s,
        "lateness_median_drift_s": median_drift, "lateness_p99_drift_s": p99_drift,
        "limits": {"rss_growth_pct": RSS_GROWTH_LIMIT_PCT, "median_drift_s": MEDIAN_DRIFT_LIMIT_S,
                   "p99_drift_s": P99_DRIFT_LIMIT_S},
        "passed": growth_pct <= RSS_GROWTH_LIMIT_PCT and median_drift <= MEDIAN_DRIFT_LIMIT_S
        and p99_drift <= P99_DRIFT_LIMIT_S,
        "valid_run": run.run.get("valid"),
        "machine": machine(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--duration", type=float, default=3600.0, help="measurement window, seconds")
    parser.add_argument("--think", type=float, default=20.0, help="mean think time, seconds")
    parser.add_argument("--stabilization", type=float, default=60.0, help="warm-up before the window, seconds")
    parser.add_argument("--poll", type=float, default=5.0, help="seconds between RSS samples")
    parser.add_argument("--smoke", action="store_true", help="50 users, a 30 s window: proves it works")
    parser.add_argument("--out", type=Path, help="also write the JSON result here")
    args = parser.parse_args(argv)
    if args.smoke:
        args.users, args.duration, args.think, args.stabilization, args.poll = 50, 30.0, 0.5, 5.0, 0.5
    result = soak(args.users, args.duration, args.think, args.stabilization, args.poll)
    return emit(result, args.out)


if __name__ == "__main__":
    sys.exit(main())

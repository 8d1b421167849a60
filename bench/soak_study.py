"""Soak a user can run: the README's study, then a long run at its calibrated load, for an hour --
does the driver's memory, its open files or the store grow, and how long does each phase take?

A benchmark, not a test (bench/README.md): an hour, and CI does not run it. It runs what README's
main job runs, as a user would, in new processes of `perflab` on a store of its own:

1. **the study**: `perflab study examples/sqlite-release-study.yaml` (tens of thousands of bank
   users thinking a Bactrian 10 s, SQLite 3.40.1 against 3.54.1 in duets, a counted pass after
   each run), its windows lengthened so that it takes about half the time (`--study-share`);
2. **the long run**: `perflab run examples/sqlite-users.yaml` at the users the study calibrated
   (one SUT alone: a duet's share taken back), for the rest of the time.

Every `--every` seconds it samples, from /proc, the `perflab` process (the driver: its event
loop, recorder and live file) and its process tree (SUT workers, the monitor): resident set
(VmRSS), open file descriptors; and the store's size on disk. Each sample is labelled with the
phase it fell in -- the study's step (a calibration step, run k of n, the reports after the last
run) and the run's own phase from its live file (stagger, stabilization, measurement, stopping;
"after window" while its record, counted pass and reduction follow). The output (JSON, `--out`)
holds the samples over time, the phases as segments with their start, duration and the driver's
RSS and open files at their end, and a summary: RSS and open files first / last / largest per
part, the store's growth per minute.

    .venv/bin/python bench/soak_study.py --minutes 60 --out bench/results/soak_study.json   # the soak
    .venv/bin/python bench/soak_study.py --minutes 4                                        # a smoke

Nothing here is a limit or a verdict: the numbers are read side by side (a driver RSS that rises
run after run, open files that do not come back down after a run, a phase that lengthens).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import REPO, descendants, log, machine, perflab_cmd, proc_rss_bytes  # noqa: E402

STUDY = REPO / "examples" / "sqlite-release-study.yaml"
WORKLOAD = REPO / "examples" / "sqlite-users.yaml"
#: The study's costs besides its windows, seconds, as a 4-minute smoke measured them: calibration
#: and the knob's mixed runs (a host with no bias bound of its own measures it in the study: four
#: runs of about 30 s), and per place of the schedule (a block's duet, and the knob block beside
#: it) the runs' start, stabilization, stop and counted pass. Used only to size the windows so
#: that the study takes about its share; the long run takes whatever time is left.
STUDY_FIXED_S = 200.0
STUDY_PLACE_OVERHEAD_S = 40.0
#: A knob block beside each block (docs/studies.md: in-study bias), where the host has no bound.
PLACES_PER_BLOCK = 2
#: The long run's users when the study calibrated none (it stopped short): README's workload's own.
DEFAULT_USERS = 20_000
_STEP = re.compile(r"^(calibrating .*|run \d+/\d+: .*|  mixed run of .*)$")
_LEFT = re.compile(r", about [\d.]+ min left$")   # the progress line's estimate: not part of the step


@dataclass
class Sample:
    t: float                   # seconds since the soak began (CLOCK_MONOTONIC)
    part: str                  # study or long run
    step: str                  # the study's step (its progress line), or the long run
    run_id: str | None         # the newest run of the store
    run_phase: str | None      # stagger, stabilization, measurement, stopping, after window, done
    rss_bytes: int | None      # the perflab process (the driver)
    tree_rss_bytes: int | None  # it and every descendant (SUT workers, monitor)
    fds: int | None
    tree_fds: int | None
    store_bytes: int


@dataclass
class Segment:
    part: str
    step: str
    run_id: str | None
    run_phase: str | None
    start_s: float
    duration_s: float
    rss_end_bytes: int | None
    fds_end: int | None
    samples: int


@dataclass
class Watch:
    """What the sampler knows of the perflab process it watches."""

    part: str
    proc: subprocess.Popen
    step: str = "starting"
    lines: list[tuple[float, str]] = field(default_factory=list)


def _fds(pid: int) -> int | None:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


def _store_bytes(store: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(store):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                pass
    return total


def _current_run(store: Path, seen: dict[str, str]) -> tuple[str | None, str | None]:
    """The run going on (of a duet's two, the first started: the pair shares its phases) and its
    phase: the live file's while the run is on, "after window" once its window is over and its
    record still says running (the record, counted pass and reduction); with no run going on,
    the last one and "between runs". `seen`: the runs known to have ended (not read again)."""
    running: list[Path] = []
    try:
        entries = sorted(p for p in (store / "runs").iterdir() if p.name not in seen)
    except OSError:
        return None, None
    for path in entries:
        try:
            status = json.loads((path / "run.json").read_text()).get("status")
        except (OSError, ValueError):
            status = "running"   # being written: not ended
        if status == "running":
            running.append(path)
        else:
            seen[path.name] = str(status)
    if not running:
        last = max(seen, default=None)
        return last, None if last is None else "between runs"
    first = running[0]
    try:
        phase = json.loads((first / "live.json").read_text()).get("phase")
    except (OSError, ValueError):
        return first.name, "starting"
    return first.name, "after window" if phase == "stopping" else phase


def _read_stderr(watch: Watch, started: float) -> None:
    assert watch.proc.stderr is not None
    for line in watch.proc.stderr:
        line = line.rstrip("\n")
        watch.lines.append((time.monotonic() - started, line))
        if _STEP.match(line):
            watch.step = _LEFT.sub("", line.strip())
        elif watch.part == "study" and line.startswith("  ETR (T)"):   # a run's last line
            watch.step = "after a run: the next one's start, or judging and the reports"
        elif line.startswith("markdown: "):
            watch.step = "reports written"


def watch(argv: list[str], part: str, store: Path, started: float, every_s: float, samples: list[Sample],
          env: dict[str, str]) -> Watch:
    """Run one perflab command, sampling it until it exits."""
    log(f"{part}: {' '.join(argv[2:])}")
    proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    w = Watch(part, proc, "long run" if part == "long run" else "starting")
    reader = threading.Thread(target=_read_stderr, args=(w, started), daemon=True)
    reader.start()
    ended: dict[str, str] = {}
    while proc.poll() is None:
        pid = proc.pid
        tree = [pid, *descendants(pid)]
        rss = [proc_rss_bytes(p) for p in tree]
        fds = [_fds(p) for p in tree]
        run_id, phase = _current_run(store, ended)
        samples.append(Sample(t=time.monotonic() - started, part=part, step=w.step, run_id=run_id, run_phase=phase,
                              rss_bytes=rss[0], tree_rss_bytes=sum(r for r in rss if r) or None, fds=fds[0],
                              tree_fds=sum(f for f in fds if f) or None, store_bytes=_store_bytes(store)))
        time.sleep(every_s)
    reader.join(timeout=10)
    out = proc.stdout.read() if proc.stdout is not None else ""
    w.lines.append((time.monotonic() - started, f"[exit {proc.returncode}] {out.strip()}"))
    if not _answered(proc.returncode):
        log(f"{part} exited {proc.returncode}: " + "\n".join(line for _, line in w.lines[-5:]))
    return w


def _answered(code: int | None) -> bool:
    """An exit code that is an answer (a verdict, a failed or invalid run: README's exit codes),
    not bad input (2), an interruption or a crash."""
    return code in (0, 1, 3, 4, 5)


def segments(samples: list[Sample]) -> list[Segment]:
    """Consecutive samples of one phase, as one segment each."""
    out: list[Segment] = []
    for i, s in enumerate(samples):
        key = (s.part, s.step, s.run_id, s.run_phase)
        end = samples[i + 1].t if i + 1 < len(samples) else s.t
        last = out[-1] if out else None
        if last is not None and (last.part, last.step, last.run_id, last.run_phase) == key:
            last.duration_s = end - last.start_s
            last.rss_end_bytes, last.fds_end, last.samples = s.rss_bytes, s.fds, last.samples + 1
        else:
            out.append(Segment(s.part, s.step, s.run_id, s.run_phase, s.t, end - s.t, s.rss_bytes, s.fds, 1))
    return out


def summary(samples: list[Sample]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for part in ("study", "long run"):
        mine = [s for s in samples if s.part == part]
        if not mine:
            continue
        rss = [s.rss_bytes for s in mine if s.rss_bytes]
        fds = [s.fds for s in mine if s.fds]
        minutes = (mine[-1].t - mine[0].t) / 60 or None
        out[part] = {
            "minutes": minutes,
            "driver_rss_bytes": {"first": rss[0] if rss else None, "last": rss[-1] if rss else None,
                                 "max": max(rss) if rss else None},
            "driver_open_files": {"first": fds[0] if fds else None, "last": fds[-1] if fds else None,
                                  "max": max(fds) if fds else None},
            "tree_rss_max_bytes": max((s.tree_rss_bytes or 0 for s in mine), default=None),
            "store_bytes": {"first": mine[0].store_bytes, "last": mine[-1].store_bytes},
            "store_growth_bytes_per_min": (mine[-1].store_bytes - mine[0].store_bytes) / minutes if minutes else None,
        }
    return out


def calibrated_users(store: Path) -> tuple[int, str]:
    """The users the study calibrated, for one SUT alone (a duet's runs each ran at a share)."""
    try:
        study_json = max((store / "studies").glob("*/study.json"), key=lambda p: p.stat().st_mtime_ns)
        load = (json.loads(study_json.read_text()).get("design") or {}).get("load") or {}
    except (OSError, ValueError):
        return DEFAULT_USERS, "no study.json: the workload's own users"
    users, share = load.get("users"), load.get("share_fraction")
    if not users:
        return DEFAULT_USERS, "the study calibrated no load: the workload's own users"
    alone = round(users / share) if share else users
    return int(alone), f"the study's calibrated load ({users:,} users{' each in a duet' if share else ''})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0, help="the whole soak (default: an hour)")
    parser.add_argument("--study-share", type=float, default=0.5, help="the study's share of the time")
    parser.add_argument("--users", type=int, help="the long run's users (default: the study's calibrated load)")
    parser.add_argument("--every", type=float, default=2.0, help="seconds between samples")
    parser.add_argument("--store", type=Path, help="the run store (default: a new temporary one, removed after)")
    parser.add_argument("--out", type=Path, help="also write the JSON result here")
    args = parser.parse_args(argv)
    total_s = args.minutes * 60.0
    study_s = total_s * args.study_share
    # the windows that make the study take its share; a short soak (a smoke) runs 3 blocks of 5 s
    blocks = 4 if study_s >= 20 * 60 else 3
    places = blocks * PLACES_PER_BLOCK
    window = max(5.0, (study_s - STUDY_FIXED_S - places * STUDY_PLACE_OVERHEAD_S) / places)
    with tempfile.TemporaryDirectory(prefix="perflab-soak-") as tmp:
        store = args.store or Path(tmp) / "store"
        store.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "PERFLAB_HOME": str(store)}
        samples: list[Sample] = []
        started = time.monotonic()
        study = watch([*perflab_cmd(), "study", str(STUDY), "--blocks", str(blocks), "--measurement",
                       f"{window:.0f}s"], "study", store, started, args.every, samples, env)
        users, why = (args.users, "--users") if args.users else calibrated_users(store)
        left = max(60.0, total_s - (time.monotonic() - started))
        long_run = watch([*perflab_cmd(), "run", str(WORKLOAD), "--users", str(users), "--duration", f"{left:.0f}s",
                          "--label", "soak"], "long run", store, started, args.every, samples, env)
        result = {
            "minutes": args.minutes, "study": {"file": str(STUDY.relative_to(REPO)), "blocks": blocks,
                                               "window_s": round(window), "exit_code": study.proc.returncode},
            "long_run": {"file": str(WORKLOAD.relative_to(REPO)), "users": users, "users_from": why,
                         "duration_s": round(left), "exit_code": long_run.proc.returncode},
            "summary": summary(samples),
            "phases": [asdict(s) for s in segments(samples)],
            "samples": [asdict(s) for s in samples],
            "machine": machine(),
        }
    text = json.dumps(result, indent=2)
    print(text)
    for part, row in result["summary"].items():
        rss, fds = row["driver_rss_bytes"], row["driver_open_files"]
        log(f"{part}: {row['minutes']:.1f} min; driver RSS {_mb(rss['first'])} -> {_mb(rss['last'])} MB "
            f"(largest {_mb(rss['max'])}); open files {fds['first']} -> {fds['last']} (largest {fds['max']}); "
            f"store {_mb(row['store_bytes']['first'])} -> {_mb(row['store_bytes']['last'])} MB")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    return 0 if _answered(study.proc.returncode) and _answered(long_run.proc.returncode) else 1


def _mb(value: int | None) -> str:
    return "na" if value is None else f"{value / 1e6:.1f}"


if __name__ == "__main__":
    sys.exit(main())

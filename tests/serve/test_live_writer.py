"""live.json: LiveWriter's figures from a recorder, its CPU sources, its once-a-second limit,
its safety (a failing live display never ends a run), and that every `perflab run` writes it
(the run lifecycle attaches the writer)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from cli_helpers import perflab

from perflab.drive import live
from perflab.drive.live import ERROR_CHARS, LiveWriter, SutCpu
from perflab.drive.load.engine import Phases
from perflab.drive.load.recorder import Recorder
from perflab.monitor.sources.procfs import CLK_TCK, PidStat
from perflab.records.live import LiveStatus, read_live

from .serve_data import PLAIN_YAML, write


@dataclass
class FakeEngine:
    """The attributes the progress callback reads (perflab.drive.load.engine.Engine has them all)."""

    phases: Phases
    recorder: Recorder
    users: int | None = 3
    rate: float | None = None


def add(recorder: Recorder, intended: float, end: float, ok: bool = True, error: str | None = None) -> None:
    recorder.add(0, 0, 0, 0, intended, intended, None, end, ok, error, 0.01)


def cgroup_dir(path: Path, usage_usec: int) -> Path:
    path.mkdir(exist_ok=True)
    (path / "cgroup.controllers").write_text("cpu memory\n")
    (path / "cpu.stat").write_text(f"usage_usec {usage_usec}\nuser_usec 1\nsystem_usec 1\n")
    return path


def test_recent_figures_are_those_of_the_transactions_since_the_previous_write(tmp_path, monkeypatch):
    driver_cpu = iter([10.0, 10.25])
    monkeypatch.setattr(live, "_driver_cpu_seconds", lambda: next(driver_cpu))
    cgroup = cgroup_dir(tmp_path / "cg", 1_000_000)
    recorder = Recorder(["s"], ["t"], ["c"], 0.0)
    engine = FakeEngine(Phases(stagger=1.0, stabilization=2.0, measurement=10.0), recorder)
    writer = LiveWriter(tmp_path, "run-1", sut_cgroup=str(cgroup), processors=2)
    for i in range(5):
        add(recorder, i * 0.1, i * 0.1 + 0.5)
    writer.tick(engine, 2.0)
    first = read_live(tmp_path)
    assert first is not None and first.etr_t is None and first.recent_s is None and first.history == []
    assert first.tx_completed == 5 and first.phase == "stabilization"

    responses = [0.01 * (k + 1) for k in range(10)]          # 10 ms .. 100 ms
    for k, response in enumerate(responses):
        add(recorder, 2.0 + 0.05 * k, 2.0 + 0.05 * k + response)
    add(recorder, 2.6, 2.7, ok=False, error="<b>first</b>")
    add(recorder, 2.8, 2.9, ok=False, error="y" * 1000)
    cgroup_dir(cgroup, 1_600_000)
    writer.tick(engine, 2.5)                                 # half a second later: no write
    assert writer.writes == 1
    writer.tick(engine, 3.0)
    status = read_live(tmp_path)
    assert writer.writes == 2 and writer.error is None
    assert status.run_id == "run-1" and status.phase == "measurement"
    assert status.recent_s == pytest.approx(1.0)
    assert status.etr_t == pytest.approx(10.0)                # 10 completed in 1 s (failures not counted)
    assert status.avg_last_t == pytest.approx(sum(responses) / 10)
    assert status.resp_p90_t == pytest.approx(0.09)           # nearest rank: the 9th of 10
    assert status.util_proc_s == pytest.approx(30.0)          # 0.6 CPU-s in 1 s over 2 processors
    assert status.driver_cpu_pct == pytest.approx(25.0)
    assert (status.tx_completed, status.errors) == (15, 2)
    assert status.last_error == "y" * ERROR_CHARS             # the latest failure, truncated
    assert status.time_left_s == pytest.approx(10.0) and status.window_end_s == pytest.approx(13.0)
    assert [p.elapsed_s for p in status.history] == [3.0] and status.history[0].errors == 2
    assert status.users == 3 and status.rate is None


def test_history_covers_the_whole_run_in_a_bounded_number_of_points(tmp_path, monkeypatch):
    """At most `history` points: when full, neighbours merge in pairs, so the first seconds stay."""
    monkeypatch.setattr(live, "_driver_cpu_seconds", lambda: 1.0)
    recorder = Recorder(["s"], ["t"], ["c"], 0.0)
    engine = FakeEngine(Phases(0.0, 0.0, 100.0), recorder)
    writer = LiveWriter(tmp_path, "r", history=3)
    for second in range(6):
        add(recorder, second, second + 0.5)
        writer.tick(engine, float(second))
    status = read_live(tmp_path)
    # points at 1..5 s: [1, 2, 3] become [1+2, 3]; 4 and 5 are gathered into one, and the
    # full [1+2, 3, 4+5] becomes [1+2+3, 4+5]
    assert [p.elapsed_s for p in status.history] == [3.0, 5.0]
    assert [p.span_s for p in status.history] == [3.0, 2.0]
    assert all(p.etr_t == pytest.approx(1.0) for p in status.history)


def test_sut_cpu_from_processes_keeps_the_last_reading_of_one_that_exited(monkeypatch):
    readings = {101: [PidStat("w", "S", 1, 0, 0, 0, 0, 30, 10, 5, 5, 1, 0, 0), None],
                102: [PidStat("w", "S", 1, 0, 0, 0, 0, 100, 0, 0, 0, 1, 0, 0)] * 2}
    monkeypatch.setattr(live, "read_pid_stat", lambda pid: readings[pid].pop(0))
    cpu = SutCpu(None, [101, 102])
    assert cpu.seconds() == pytest.approx(150 / CLK_TCK)
    assert cpu.seconds() == pytest.approx(150 / CLK_TCK)  # 101 is gone: its time stays counted


def test_sut_cpu_from_a_v1_cgroup(tmp_path):
    (tmp_path / "cpuacct.usage").write_text("2500000000\n")
    assert SutCpu({"cpuacct": str(tmp_path)}, []).seconds() == pytest.approx(2.5)
    assert SutCpu(None, []).seconds() is None


def test_a_failing_writer_stops_without_raising(tmp_path):
    recorder = Recorder(["s"], ["t"], ["c"], 0.0)
    engine = FakeEngine(Phases(0.0, 0.0, 10.0), recorder)
    writer = LiveWriter(tmp_path / "missing" / "dir", "r")
    writer.tick(engine, 1.0)
    assert writer.error is not None and "FileNotFoundError" in writer.error and writer.writes == 0
    writer.tick(engine, 5.0)
    assert writer.writes == 0


def test_read_live_tolerates_missing_damaged_and_newer_files(tmp_path):
    assert read_live(tmp_path) is None
    (tmp_path / "live.json").write_text("{not json")
    assert read_live(tmp_path) is None
    status = LiveStatus(run_id="r", pid=1, phase="measurement", elapsed_s=1, window_start_s=0, window_end_s=2,
                        time_left_s=1, tx_completed=3, errors=0, updated=0.0, updated_iso="x")
    (tmp_path / "live.json").write_text(json.dumps({**status.model_dump(), "a_newer_field": 1}))
    assert read_live(tmp_path) == status


def test_a_plain_perflab_run_writes_live_json(tmp_path, store):
    """The lifecycle attaches a LiveWriter to every run: a plain `perflab run` leaves live.json,
    whose counts never exceed what the run stored."""
    path = write(tmp_path, "plain.yaml", PLAIN_YAML)
    result = perflab("run", path, "-q", "--no-monitor", store=store, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    run_dir = store / "runs" / result.stdout.strip()
    status = read_live(run_dir)
    assert status is not None and status.run_id == run_dir.name
    table = pq.read_table(run_dir / "transactions.parquet", columns=["ok"]).to_pydict()
    assert 0 < status.tx_completed <= sum(table["ok"])
    assert status.history and all(p.etr_t is None or p.etr_t >= 0 for p in status.history)
    assert status.phase in ("stagger", "stabilization", "measurement", "stopping")

"""The schedule and the SUT pipe under load: open-loop batches, sleeping without spinning, many
users started in batches, and the length-prefixed pipe read and written in bulk."""

from __future__ import annotations

import asyncio
import math
import os
import signal

import pytest
import uvloop
from cli_helpers import load_run, perflab, run_dir_of, write_workload

from perflab.drive.load import engine as engine_module
from perflab.drive.load.engine import USER_START_BATCH, sleep_until
from perflab.drive.workers.pool import WorkerPool
from perflab.drive.workers.wire import FrameReader, WorkerSpec, frame
from perflab.drive.workers import pool as workers_module
from perflab.errors import SutFailure
from perflab.workload.loader import load_workload


def run_ok(path, store, *args):
    result = perflab("run", path, "-q", "--no-monitor", *args, store=store)
    assert result.returncode == 0, result.stderr
    return load_run(run_dir_of(store, result.stdout.strip().splitlines()[-1]))


def first_steps(tx):
    """One row per arrival (open loop: `user` is the arrival number): its first transaction."""
    return tx.sort_values("intended_start").groupby("user", sort=True).first()


# --- the pipe's framing -----------------------------------------------------------------------


MESSAGES = [b"", b"a", b"\x00\x00\x00\x05", bytes(range(256)) * 3, b"z" * 70_000, b"last"]


def test_frames_cut_anywhere_decode_to_the_messages_sent():
    stream = b"".join(frame(m) for m in MESSAGES)
    for cut in range(1, 40):  # every cut inside the first messages' lengths and bodies
        reader = FrameReader()
        decoded = reader.feed(stream[:cut]) + reader.feed(stream[cut:])
        assert [bytes(m) for m in decoded] == MESSAGES
    reader = FrameReader()
    decoded = []
    for i in range(0, len(stream), 7):  # seven bytes a read: the 70 kB message in 10,000 pieces
        decoded += reader.feed(stream[i:i + 7])
    assert [bytes(m) for m in decoded] == MESSAGES


def test_many_replies_in_one_read_are_all_decoded():
    replies = [frame(f"reply {i}".encode()) for i in range(1000)]
    decoded = FrameReader().feed(b"".join(replies))
    assert [bytes(m) for m in decoded] == [f"reply {i}".encode() for i in range(1000)]


# --- sleeping until a deadline ---------------------------------------------------------------


def test_sleep_until_never_wakes_early_and_does_not_spin(monkeypatch):
    """Deadlines a fraction of a millisecond away: every one is reached, none early, and each
    takes about one timer wake-up -- not the hundreds of zero-length sleeps of a spin."""
    sleeps = 0
    real_sleep = asyncio.sleep

    async def counting_sleep(delay, *args):
        nonlocal sleeps
        sleeps += 1
        assert delay >= engine_module.TIMER_TICK_S  # never a delay uvloop would round to zero
        return await real_sleep(delay, *args)

    monkeypatch.setattr(engine_module.asyncio, "sleep", counting_sleep)
    offsets = [0.00005 * k for k in range(1, 40)] * 5  # 50 us to 2 ms
    early = []

    async def main():
        for offset in offsets:
            deadline = engine_module.time.monotonic() + offset
            await sleep_until(deadline)
            if engine_module.time.monotonic() < deadline:
                early.append(offset)

    uvloop.run(main())
    assert early == []
    assert sleeps <= 2 * len(offsets)


# --- open loop --------------------------------------------------------------------------------


OPEN = """
name: open-{tag}
target: {{kind: python}}
transactions:
  - {{name: a, class: trivial, call: "perflab.sut.synthetic:noop"}}
  - {{name: b, class: nontrivial, call: "perflab.sut.synthetic:noop"}}
scripts:
  - {{name: s1, weight: 3, steps: [a]}}
  - {{name: s2, weight: 1, steps: [b]}}
load: {{rate: {rate}, arrival: {arrival}, max_in_flight: 100000}}
timing: {{stagger: 0, stabilization: 0.5s, measurement: {measure}}}
placement: {{workers: 2}}
seed: {seed}
"""


def open_workload(tmp_path, rate, arrival="constant", measure="2s", seed=1, name="open.yaml"):
    text = OPEN.format(tag=name.split(".")[0], rate=rate, arrival=arrival, measure=measure, seed=seed)
    return write_workload(tmp_path, text, name)


def test_open_loop_batches_keep_the_rate_and_never_start_early(tmp_path, store):
    """5,000 arrivals/s: gaps of 0.2 ms, five per timer tick, so arrivals start in batches. What
    is checked is the schedule, which holds on a busy host too; a host busy enough that the SUT
    fell behind the arrivals makes the run invalid (exit 5, "fell behind") and nothing else."""
    rate = 5000
    result = perflab("run", open_workload(tmp_path, rate), "-q", "--no-monitor", store=store)
    run, tx = load_run(run_dir_of(store, result.stdout.strip().splitlines()[-1]))
    said = result.stdout + result.stderr
    assert result.returncode == 0 or (result.returncode == 5 and "fell behind" in said), said
    assert run["status"] == "complete"
    arrivals = first_steps(tx)
    w = run["window"]
    inside = arrivals[(arrivals.intended_start >= w["start"]) & (arrivals.intended_start < w["end"])]
    # Constant arrivals at k / rate: a window of T seconds holds rate * T of them, give or take
    # the one at each edge.
    assert abs(len(inside) - rate * (w["end"] - w["start"])) <= 2
    # every arrival of the run, from the first: none skipped, none twice
    assert list(arrivals.index) == list(range(len(arrivals)))
    gaps = arrivals.intended_start.diff().dropna()
    assert gaps.min() == pytest.approx(1 / rate, abs=1e-9) and gaps.max() == pytest.approx(1 / rate, abs=1e-9)
    assert int((tx.actual_start < tx.intended_start).sum()) == 0  # never before its time
    assert not tx.error.fillna("").str.startswith("dropped").any()


def test_open_loop_same_seed_same_arrivals_and_scripts(tmp_path, store):
    runs = []
    for i in range(2):
        _, tx = run_ok(open_workload(tmp_path, 800, arrival="poisson", measure="1.5s", seed=5, name=f"p{i}.yaml"),
                       store)
        runs.append(first_steps(tx))
    a, b = runs
    n = min(len(a), len(b))
    assert n > 800 and abs(len(a) - len(b)) <= 1  # only the last arrival may fall either side of the end
    # times relative to each run's t0: equal up to the float rounding of a different t0
    assert abs(a.intended_start.to_numpy()[:n] - b.intended_start.to_numpy()[:n]).max() < 1e-6
    assert list(a.script.iloc[:n]) == list(b.script.iloc[:n])
    assert set(a.script) == {"s1", "s2"}
    _, other = run_ok(open_workload(tmp_path, 800, arrival="poisson", measure="1.5s", seed=6, name="p2.yaml"), store)
    other = first_steps(other)
    assert abs(other.intended_start.to_numpy()[:50] - a.intended_start.to_numpy()[:50]).max() > 1e-4


# --- closed loop: many users ------------------------------------------------------------------


def test_users_started_in_batches_all_log_on_at_their_stagger_time(tmp_path, store):
    users = 2 * USER_START_BATCH + 500  # three batches, the last one partial
    stagger, think = 1.0, 2.0
    text = f"""
    name: many-users
    target: {{kind: python}}
    transactions: [{{name: t, call: "perflab.sut.synthetic:noop"}}]
    scripts: [{{name: s, steps: [t]}}]
    think: {think}
    load: {{users: {users}}}
    timing: {{stagger: {stagger}s, stabilization: 0.5s, measurement: 2s}}
    placement: {{workers: 2}}
    """
    run, tx = run_ok(write_workload(tmp_path, text), store)
    assert run["status"] == "complete"
    first = tx.sort_values("intended_start").groupby("user").first()
    assert sorted(first.index) == list(range(users))  # every user logged on and ran
    # the logon schedule is the user's number, whichever batch created it
    expected = [stagger * uid / users + think for uid in first.index]
    assert (first.intended_start - expected).abs().max() < 1e-6
    assert int((tx.actual_start < tx.intended_start).sum()) == 0


# --- the worker pool ----------------------------------------------------------------------------


POOL = """
name: pool
target: {kind: python}
transactions:
  - {name: echo, call: "perflab.sut.synthetic:fail"}
  - {name: stall, call: "perflab.sut.synthetic:stall"}
scripts: [{name: s, steps: [echo]}]
load: {users: 1}
"""


def start_pool(tmp_path, workers: int, depth: int) -> WorkerPool:
    path = write_workload(tmp_path, POOL)
    workload = load_workload(path)
    run_dir = tmp_path / "run"
    run_dir.mkdir(exist_ok=True)
    specs = [WorkerSpec(workload.model_dump(mode="json", by_alias=True), str(tmp_path), str(run_dir), i)
             for i in range(workers)]
    return WorkerPool(specs, depth=depth)


def test_requests_of_one_iteration_go_in_one_write_and_all_come_back_in_order(tmp_path, monkeypatch):
    """Eight requests issued together reach one worker in one write; the worker decodes all
    eight from its reads and answers each (the `fail` transaction echoes its message)."""
    writes = []
    real_write_all = workers_module.write_all

    def counting_write_all(fd, data):
        writes.append(len(data))
        real_write_all(fd, data)

    pool = start_pool(tmp_path, workers=1, depth=8)
    monkeypatch.setattr(workers_module, "write_all", counting_write_all)

    async def main():
        pool.attach(asyncio.get_running_loop())
        try:
            replies = await asyncio.gather(*(pool.execute(0, {"message": f"request {i}"}) for i in range(8)))
            return replies, list(writes)
        finally:
            pool.detach(asyncio.get_running_loop())

    try:
        replies, requests_written = uvloop.run(main())
    finally:
        pool.close()
    assert len(requests_written) == 1
    assert [r.error for r in replies] == [f"RuntimeError: request {i}" for i in range(8)]
    assert all(not r.ok and r.worker == 0 and not math.isnan(r.cpu) for r in replies)


def test_worker_killed_mid_run_fails_its_requests_with_the_reason(tmp_path):
    pool = start_pool(tmp_path, workers=2, depth=2)
    victim = pool.workers[0]

    async def main():
        pool.attach(asyncio.get_running_loop())
        try:
            stalled = pool.execute(1, {"seconds": 30.0})  # the first free slot: a request in flight
            assert victim.pending, "the stalled request should be in flight on worker 0"
            await asyncio.sleep(0.2)
            os.kill(victim.pid, signal.SIGKILL)
            with pytest.raises(SutFailure) as failed:
                await stalled
            with pytest.raises(SutFailure):
                await pool.execute(0, {"message": "after"})  # the run is over: no new transactions
            return str(failed.value)
        finally:
            pool.detach(asyncio.get_running_loop())

    try:
        reason = uvloop.run(main())
    finally:
        pool.close()
    assert reason == f"SUT worker 0 (pid {victim.pid}) died (killed by signal {signal.SIGKILL.value})"
    assert pool.failure == reason

"""The recorder: a run's transactions spilled to disk in batches are the same rows, in the same
order, as those kept in memory; the memory holds at most SPILL_ROWS of them; nothing is lost when
a spill cannot be written; the spill files are gone once the table is written."""

from __future__ import annotations

import math
import random

import pyarrow as pa
import pytest

from perflab.drive.load import recorder as rec
from perflab.drive.load.recorder import SCHEMA, SPILL_ROWS, Recorder

T0 = 1000.0


def fill(recorder: Recorder, count: int, seed: int = 7) -> None:
    rnd = random.Random(seed)
    for i in range(count):
        start = T0 + i * 0.01
        ok = rnd.random() > 0.1
        recorder.add(i % 97, i % 2, i % 3, i % 2, start, start + 0.001, None if i % 5 else start + 0.002,
                     start + 0.004, ok, None if ok else f"error {i}", rnd.expovariate(1.0),
                     cpu=rnd.random() if i % 4 else math.nan, worker=i % 2)


def same(a: pa.Table, b: pa.Table) -> bool:
    """Equal tables, a NaN equal to a NaN (an unmeasured CPU time is NaN in both)."""
    return a.schema == b.schema and a.to_pandas().equals(b.to_pandas())


def new(spill=None) -> Recorder:
    return Recorder(["s0", "s1"], ["t0", "t1", "t2"], ["c0", "c1"], T0, spill_path=spill)


def test_spilled_table_equals_the_table_kept_in_memory(tmp_path):
    count = 3 * SPILL_ROWS + 17
    kept, spilled = new(), new(tmp_path / "tx.arrows")
    fill(kept, count)
    fill(spilled, count)
    assert spilled.spilled == 3 * SPILL_ROWS and len(spilled) == count == len(kept)
    assert len(spilled.ok) == 17  # only the rows after the last spill stay in memory
    a, b = kept.table(), spilled.table()
    assert a.schema == b.schema == SCHEMA
    assert same(a, b)
    assert b.column("error").null_count == count - kept.errors
    assert b.column("intended_start")[0].as_py() == pytest.approx(0.0)  # relative to t0
    # a table from a row on, across the spill boundary and inside the memory
    assert same(spilled.table(SPILL_ROWS - 3), a.slice(SPILL_ROWS - 3))
    assert same(spilled.table(count - 5), a.slice(count - 5))
    spilled.close()
    assert list(tmp_path.iterdir()) == []


def test_reading_the_table_mid_run_keeps_every_row(tmp_path):
    """A table read while spilling takes the rows spilled so far; later spills append to the file."""
    recorder, kept = new(tmp_path / "tx.arrows"), new()
    fill(recorder, 2 * SPILL_ROWS + 1)
    assert recorder.table().num_rows == 2 * SPILL_ROWS + 1
    recorder_rows = 2 * SPILL_ROWS + 1
    for i in range(SPILL_ROWS * 2):
        start = T0 + 1e3 + i
        recorder.add(1, 0, 0, 0, start, start, None, start + 1, True, None, 0.0)
    fill(kept, recorder_rows)
    table = recorder.table()
    assert table.num_rows == recorder_rows + 2 * SPILL_ROWS
    assert same(table.slice(0, recorder_rows), kept.table())
    assert len(list(tmp_path.iterdir())) == 1
    recorder.close()
    assert list(tmp_path.iterdir()) == []


def test_a_spill_that_cannot_be_written_loses_nothing(tmp_path):
    recorder = new(tmp_path / "missing-directory" / "tx.arrows")
    fill(recorder, SPILL_ROWS + 10)
    assert recorder.spill_error is not None and "FileNotFoundError" in recorder.spill_error
    assert recorder.spilled == 0 and len(recorder.ok) == SPILL_ROWS + 10
    kept = new()
    fill(kept, SPILL_ROWS + 10)
    assert same(recorder.table(), kept.table())


def test_recent_rows_and_error_texts_across_a_spill(tmp_path):
    """The live display's last second may span a spill: the last spilled batch is still at hand."""
    recorder = new(tmp_path / "tx.arrows")
    fill(recorder, 2 * SPILL_ROWS + 40)
    table = recorder.table()
    errors = table.column("error").to_pylist()
    rows = recorder.recent(2 * SPILL_ROWS - 10, 2 * SPILL_ROWS + 40)
    assert rows.first == 2 * SPILL_ROWS - 10 and len(rows.ok) == 50
    assert rows.intended.tolist() == table.column("intended_start").to_pylist()[2 * SPILL_ROWS - 10:]
    assert rows.ok.tolist() == table.column("ok").to_pylist()[2 * SPILL_ROWS - 10:]
    for i in range(SPILL_ROWS, 2 * SPILL_ROWS + 40):
        assert recorder.error_at(i) == errors[i]
    # older rows are no longer at hand: what is returned starts at the last spilled batch
    rows = recorder.recent(SPILL_ROWS - 5, SPILL_ROWS + 5)
    assert rows.first == SPILL_ROWS and len(rows.ok) == 5
    assert all(recorder.error_at(i) is None for i in range(SPILL_ROWS))


FULL_DISK = """
import os, resource, signal, sys
sys.path[:0] = {paths!r}
from tests.core.test_recorder import fill, new, same
from perflab.drive.load.recorder import SPILL_ROWS
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))
spilled, kept = new({path!r}), new()
fill(spilled, 6 * SPILL_ROWS + 3)
fill(kept, 6 * SPILL_ROWS + 3)
assert spilled.spill_error is not None and ("too large" in spilled.spill_error or "short write" in spilled.spill_error), spilled.spill_error
assert 0 < spilled.spilled < 6 * SPILL_ROWS, spilled.spilled
assert same(spilled.table(), kept.table())
print("ok", spilled.spilled, spilled.spill_error)
"""


def test_a_spill_cut_short_by_a_full_file_system_loses_nothing(tmp_path):
    """RLIMIT_FSIZE makes the file system "full" in the middle of a chunk: the chunks written
    whole are read back, the half-written one is not, the rest stayed in memory."""
    import subprocess
    import sys
    from pathlib import Path

    probe = new(tmp_path / "probe.arrows")
    fill(probe, SPILL_ROWS)
    batch_bytes = probe.spilled_bytes
    probe.close()
    repo = Path(__file__).resolve().parents[2]
    code = FULL_DISK.format(paths=[str(repo), str(repo / "src")], limit=int(2.5 * batch_bytes),
                            path=str(tmp_path / "tx.arrows"))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.startswith("ok"), done.stderr[-2000:]


def test_spill_schema_is_the_table_schema_without_dictionaries():
    assert rec.SPILL_SCHEMA.names == SCHEMA.names
    assert rec.SPILL_SCHEMA.field("transaction").type == pa.int16()


COUNTING_SUT = '''
import os

_fd = None


def hit():
    """One byte per call appended to calls.bin: the SUT's own count of the calls it served."""
    global _fd
    if _fd is None:
        _fd = os.open(os.path.join(os.path.dirname(__file__), "calls.bin"), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.write(_fd, b".")
'''


def test_a_run_longer_than_the_spill_keeps_every_transaction(tmp_path, monkeypatch):
    """A real run that spills many times (SPILL_ROWS made small): transactions.parquet holds one
    row per call the SUT served (a call in flight when the run stopped may be served and not
    recorded: at most one per user), its rows in the order they completed; the spill files are
    gone, and the run's record says how much the driver wrote."""
    import json

    import pyarrow.parquet as pq
    from net.net_helpers import run_workload

    monkeypatch.setattr(rec, "SPILL_ROWS", 64)
    users = 8
    (tmp_path / "counting.py").write_text(COUNTING_SUT)
    path = tmp_path / "w.yaml"
    path.write_text(WORKLOAD.format(users=users))
    run, metrics = run_workload(tmp_path, path)
    assert run["status"] == "complete", run["reason"]
    table = pq.read_table(metrics.run_dir / "transactions.parquet")
    calls = (tmp_path / "calls.bin").stat().st_size
    assert table.num_rows > 3 * 64, f"only {table.num_rows} transactions: too few to spill"
    assert table.num_rows <= calls <= table.num_rows + users
    ends = table.column("end").to_numpy()
    assert (ends[1:] >= ends[:-1]).all()  # recorded as they completed, spilled batches in order
    assert not [p.name for p in metrics.run_dir.iterdir() if "spill" in p.name]
    record = json.loads((metrics.run_dir / "run.json").read_text())
    assert record["driver"]["spilled_bytes"] > 0 and record["driver"]["spill_error"] is None
    assert any("spilled" in c.text for c in metrics.caveats)  # the report says what the driver wrote


WORKLOAD = """
name: spill
target: {{kind: python}}
transactions:
  - {{name: t, call: "counting:hit"}}
scripts: [{{name: s, steps: [t]}}]
think: 0
load: {{users: {users}}}
timing: {{stagger: 0s, stabilization: 0s, measurement: 1s}}
placement: {{workers: 1}}
"""


def test_rows_handed_over_are_the_rows_recorded_and_are_not_kept(tmp_path):
    """A remote driver hands its new rows over every second: the pieces, put together, are the
    whole record, and the driver keeps none of them."""
    recorder, kept = new(), new()
    fill(kept, 1000)
    pieces = []
    rnd = random.Random(3)
    whole = kept.table()
    taken = 0
    while taken < 1000:
        step = min(1000 - taken, rnd.randint(1, 300))
        for i in range(taken, taken + step):
            row = whole.slice(i, 1).to_pylist()[0]
            recorder.add(row["user"], int(row["script"] == "s1"), ["t0", "t1", "t2"].index(row["transaction"]),
                         int(row["class"] == "c1"), row["intended_start"] + T0, row["actual_start"] + T0,
                         None if math.isnan(row["first_response"]) else row["first_response"] + T0,
                         row["end"] + T0, row["ok"], row["error"], row["think"], cpu=row["cpu"], worker=row["worker"])
        taken += step
        pieces.append(recorder.hand_over())
        assert len(recorder.ok) == 0 and len(recorder) == taken
    assert same(pa.concat_tables(pieces), whole)
    with pytest.raises(ValueError):
        recorder.table(0)
    with pytest.raises(ValueError):
        new(tmp_path / "x").hand_over()

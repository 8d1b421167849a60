"""The recorder: a run's transactions spilled to disk in batches are the same rows, in the same
order, as those kept in memory; the memory holds at most SPILL_ROWS of them; nothing is lost when
a spill cannot be written; the spill files are gone once the table is written."""

from __future__ import annotations

import math
import random

import pyarrow as pa
import pytest

from perflab.drive import recorder as rec
from perflab.drive.recorder import SCHEMA, SPILL_ROWS, Recorder

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
    """A table read while spilling ends the current file; later spills go to a new one."""
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
    assert len(list(tmp_path.iterdir())) == 2
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
    recorder = new(tmp_path / "tx.arrows")
    fill(recorder, SPILL_ROWS + 40)
    rows = recorder.recent(SPILL_ROWS - 10, SPILL_ROWS + 40)
    assert rows.first == SPILL_ROWS and len(rows.ok) == 40  # the spilled part is not in memory
    table = recorder.table()
    assert rows.intended.tolist() == table.column("intended_start").to_pylist()[SPILL_ROWS:]
    assert rows.ok.tolist() == table.column("ok").to_pylist()[SPILL_ROWS:]
    errors = table.column("error").to_pylist()
    for i in range(SPILL_ROWS, SPILL_ROWS + 40):
        assert recorder.error_at(i) == errors[i]
    assert all(recorder.error_at(i) is None for i in range(SPILL_ROWS))  # spilled: not kept


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


def test_a_run_longer_than_the_spill_keeps_every_transaction(tmp_path):
    """A real run that spills several times: transactions.parquet holds one row per call the SUT
    served (a call in flight when the run stopped may be served and not recorded: at most one
    per user), its rows in the order they completed, and the spill files are gone."""
    from tests.cli_helpers import perflab, run_dir_of, write_workload
    import pyarrow.parquet as pq

    users = 8
    (tmp_path / "counting.py").write_text(COUNTING_SUT)
    path = write_workload(tmp_path, f"""
        name: spill
        target: {{kind: python}}
        transactions:
          - {{name: t, call: "counting:hit"}}
        scripts: [{{name: s, steps: [t]}}]
        think: 0
        load: {{users: {users}}}
        timing: {{measurement: 2s}}
        placement: {{workers: 1}}
        """)
    store = tmp_path / "store"
    done = perflab("run", path, "--quiet", store=store)
    assert done.returncode == 0, done.stderr
    run_id = next((store / "runs").iterdir()).name
    run_dir = run_dir_of(store, run_id)
    table = pq.read_table(run_dir / "transactions.parquet")
    calls = (tmp_path / "calls.bin").stat().st_size
    # The noop-like call runs at thousands a second here: 2 s and more are several spills. If a
    # slow machine gave fewer than 2 spills' worth the test would not test the spill: it says so.
    assert table.num_rows > 2 * SPILL_ROWS, f"only {table.num_rows} transactions: too few to spill"
    assert table.num_rows <= calls <= table.num_rows + users
    ends = table.column("end").to_numpy()
    assert (ends[1:] >= ends[:-1]).all()  # recorded as they completed, spilled batches in order
    assert not [p.name for p in run_dir.iterdir() if "spill" in p.name]

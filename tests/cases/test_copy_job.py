"""The copy job (perflab.sut.copy_job, the seeds' IEBCOPY analog): its shapes are the seed's,
a job does exactly the block reads and writes its shape says, and a job under the wrong release
of zstandard fails instead of measuring the wrong library."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from net.net_helpers import EXAMPLES, run_workload

from cases.release_packages import installed_releases
from perflab.sut import copy_job

COPY = EXAMPLES / "batch" / "copy-job.yaml"
RELEASES = ("0.19.0", "0.25.0")  # zstd 1.5.2 and 1.5.7 inside their wheels
#: read and write system calls of the worker itself per transaction: its request and its reply
#: on the pipes (measured: exactly 2 here). A job's extra block would add 2 more.
WORKER_SYSCALLS = 2


@pytest.fixture(scope="module")
def releases() -> dict[str, Path]:
    return installed_releases("zstandard", RELEASES)


def test_shapes_are_the_seed_s():
    assert copy_job.parse_shape("80:6160") == (80, 6160)       # 77 records a block
    assert copy_job.parse_shape("132:6160") == (132, 6072)     # 46 whole records: 6,072 bytes
    assert copy_job.parse_shape("4096:6160") == (4096, 4096)   # one record a block
    assert copy_job.parse_shape("0:32760") == (0, 32760)       # undefined format: the block itself
    with pytest.raises(ValueError, match="inconsistent with block size"):
        copy_job.parse_shape("8192:6160")                       # the seed's "*": not executed
    for bad in ("80", "a:b", "80:0", "-1:100"):
        with pytest.raises(ValueError, match="shape"):
            copy_job.parse_shape(bad)


@pytest.mark.parametrize("shape", ["80:6160", "132:6160", "0:32760"])
def test_a_job_reads_every_whole_block_once_and_writes_each_compressed(tmp_path, monkeypatch, releases, shape):
    """In-process, every read and write counted: DATASET_BYTES // block reads of exactly a block,
    in order, and one write of each block's compressed form; the job returns the bytes written."""
    monkeypatch.syspath_prepend(str(releases[RELEASES[1]]))
    monkeypatch.setenv("PERFLAB_RUN_DIR", str(tmp_path))
    monkeypatch.setattr(copy_job, "_state", {})
    copy_job.prepare()
    reads, writes = [], []
    real_pread, real_pwrite = os.pread, os.pwrite

    def pread(fd, n, offset):
        reads.append((n, offset))
        return real_pread(fd, n, offset)

    def pwrite(fd, data, offset):
        writes.append((len(data), offset))
        return real_pwrite(fd, data, offset)

    monkeypatch.setattr(os, "pread", pread)
    monkeypatch.setattr(os, "pwrite", pwrite)
    written = copy_job.copy(shape, expect=RELEASES[1])
    block = copy_job.parse_shape(shape)[1]
    blocks = copy_job.DATASET_BYTES // block
    assert reads == [(block, i * block) for i in range(blocks)]
    assert len(writes) == blocks and written == sum(n for n, _ in writes)
    assert [offset for _, offset in writes] == [sum(n for n, _ in writes[:i]) for i in range(blocks)]  # back to back
    assert written < copy_job.DATASET_BYTES  # text-like records compress
    assert list(tmp_path.iterdir()) == []  # the scratch files are used through their descriptors only


def test_the_records_are_seeded_text_of_the_size_asked():
    data = copy_job.records(100_000)
    assert len(data) == 100_000 and data == copy_job.records(100_000) and data != copy_job.records(100_000, seed=2)
    assert data.count(b"\n") > 1000 and all(32 <= b < 127 or b == 10 for b in data[:5000])


@pytest.mark.parametrize("shape", ["0:32760", "80:6160"])
def test_a_job_reads_and_writes_its_blocks_under_the_release_asked(tmp_path, releases, shape):
    """Known work per job: DATASET_BYTES // block reads and as many writes (SYSCALL IO/CMD (S),
    from the kernel's own counts of the worker's system calls), plus the worker's own few."""
    version = RELEASES[1]
    jobs = 8
    run, metrics = run_workload(tmp_path, COPY, {"target.release": [], "target.path": [str(releases[version])],
                                                 "load.jobs": jobs,
                                                 "transactions.copy.kwargs": {"shape": shape, "expect": version}})
    assert run["status"] == "complete", run["reason"]
    values = metrics.values
    assert values["tx_ok"] == jobs and values["errors_t"] == 0
    blocks = copy_job.DATASET_BYTES // copy_job.parse_shape(shape)[1]
    if values["syscall_io_cmd_s"] is None:
        pytest.skip("this kernel does not count a process's system calls (/proc/<pid>/io)")
    # per job, averaged over the stream: within one call of the exact count
    assert abs(values["syscall_io_cmd_s"] - (2 * blocks + WORKER_SYSCALLS)) < 1, (values["syscall_io_cmd_s"], blocks)


def test_a_wrong_release_on_the_path_fails_every_job(tmp_path, releases):
    wrong = releases[RELEASES[0]]
    run, metrics = run_workload(tmp_path, COPY, {"target.release": [], "target.path": [str(wrong)], "load.jobs": 3,
                                                 "transactions.copy.kwargs": {"shape": "0:32760",
                                                                              "expect": RELEASES[1]}})
    assert metrics.values["tx_ok"] == 0 and metrics.values["errors_t"] == 3
    errors = set(pq.read_table(metrics.run_dir / "transactions.parquet").column("error").to_pylist())
    (error,) = errors
    assert error.startswith(f"RuntimeError: zstandard {RELEASES[0]} imported (from ") and \
        error.endswith(f"not {RELEASES[1]}"), error

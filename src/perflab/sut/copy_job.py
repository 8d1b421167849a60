"""A copy job of known shape as the system under test: the seeds' IEBCOPY measurements
(001_c1584cbabe73b634.txt, "z/OS V1.13 IEBCOPY Performance": elapsed and CPU time of copying a
data set, by record length at a fixed block size and by block size, V1R12 against V1R13) with
today's analog of a release that changes the copy's cost: the zstd library bundled in a release
of `zstandard` (python-zstandard), compressing every block it copies.

One job copies one data set: DATASET_BYTES of records, read from a source file block by block
(os.pread: the page cache after the first job), each block compressed with zstd at `level` and
written to a target file (os.pwrite over the same blocks every job, so the file system allocates
nothing), then fsync'ed -- a durable copy per job. The shape is "LRECL:BLKSIZE", as in the
seed's tables:

* fixed-length records (LRECL > 0): a block holds BLKSIZE // LRECL whole records, so 80:6160 is
  blocks of 77 records (6,160 bytes) and 4096:6160 blocks of one record (4,096 bytes); a record
  longer than the block is refused, like the seed's "*" cells ("record length is inconsistent
  with block size ... test not executed");
* undefined format (LRECL 0, a load library): blocks of exactly BLKSIZE bytes.

A job reads and compresses exactly DATASET_BYTES (rounded down to whole blocks), so CPU per job
and MB/s are per known bytes. The records are not parsed: the record length only decides the
block size (whole records per block), so 4096:6160 and 0:4096 are the same job; the records are
text-like (words of a fixed vocabulary, seeded), which zstd compresses about 3:1. `expect` names
the zstandard release the job must run under: a job under another release fails, so a study
cannot compare a release with itself by accident.

    target: {kind: python, setup: "perflab.sut.copy_job:prepare", release: ["zstandard==0.25.0"]}
    transactions:
      - {name: copy, call: "perflab.sut.copy_job:copy", kwargs: {shape: "80:6160", expect: "0.25.0"}}
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

#: Bytes of records one job copies (about 6 ms of zstd level-3 CPU on the development VM).
DATASET_BYTES = 2 << 20
#: The target file written once at set-up: room for the copy even where compression gains
#: nothing (zstd's frame overhead on incompressible blocks is a few bytes a block).
TARGET_BYTES = 2 * DATASET_BYTES

_WORDS = ("record", "member", "dataset", "volume", "block", "spool", "copy", "job", "step", "extent",
          "catalog", "library", "load", "module", "alias", "directory", "track", "cylinder", "index", "key")

_state: dict[str | tuple[str, int], Any] = {}  # this worker's files ("fds") and compressors (by level)


def parse_shape(shape: str) -> tuple[int, int]:
    """("LRECL:BLKSIZE") -> (record length, bytes per block); a ValueError names what is wrong."""
    try:
        lrecl_text, blksize_text = str(shape).split(":")
        lrecl, blksize = int(lrecl_text), int(blksize_text)
    except ValueError:
        raise ValueError(f"shape {shape!r}: expected LRECL:BLKSIZE, e.g. 80:6160 or 0:32760") from None
    if lrecl < 0 or blksize <= 0:
        raise ValueError(f"shape {shape!r}: LRECL must be >= 0 and BLKSIZE > 0")
    if lrecl > blksize:
        raise ValueError(f"shape {shape!r}: record length {lrecl} is inconsistent with block size {blksize}")
    if blksize > DATASET_BYTES:
        raise ValueError(f"shape {shape!r}: a block larger than the data set ({DATASET_BYTES} bytes)")
    return lrecl, (blksize // lrecl) * lrecl if lrecl else blksize


def records(nbytes: int, seed: int = 1) -> bytes:
    """`nbytes` of text-like records (seeded): what a data set of source members looks like."""
    rnd = random.Random(seed)
    out, size = [], 0
    while size < nbytes:
        line = " ".join(rnd.choice(_WORDS) for _ in range(12)) + f" {rnd.randrange(10**6):06d}\n"
        out.append(line)
        size += len(line)
    return "".join(out).encode()[:nbytes]


def _files() -> tuple[int, int]:
    """(source fd, target fd) of this worker, in the run directory's file system: the source
    written once, the target's blocks written once (so that no job allocates any)."""
    fds = _state.get("fds")
    if fds is None:
        directory = Path(os.environ.get("PERFLAB_RUN_DIR") or ".")
        source = directory / f"copy-source-{os.getpid()}.dat"
        target = directory / f"copy-target-{os.getpid()}.dat"
        try:
            source.write_bytes(records(DATASET_BYTES))
            target.write_bytes(bytes(TARGET_BYTES))
            fds = (os.open(source, os.O_RDONLY), os.open(target, os.O_RDWR))
            os.fsync(fds[1])
        finally:
            # Used through their descriptors: the run directory keeps no scratch, and the blocks
            # are freed when the worker exits, however it exits.
            source.unlink(missing_ok=True)
            target.unlink(missing_ok=True)
        _state["fds"] = fds
    return fds


def prepare() -> None:
    """The worker's setup (target.setup), before the stream: import zstandard and write the
    source data set, so that no job pays for either."""
    import zstandard

    source, _target = _files()
    # zstd allocates its working memory on a compressor's first call: done here, not in a job
    zstandard.ZstdCompressor(level=3).compress(os.pread(source, 32760, 0))


def release() -> str:
    """The zstandard release this process imported, and the zstd it bundles."""
    import zstandard

    return f"{zstandard.__version__} (zstd {zstandard.ZSTD_VERSION[0]}.{zstandard.ZSTD_VERSION[1]}." \
           f"{zstandard.ZSTD_VERSION[2]})"


def copy(shape: str = "80:6160", level: int = 3, expect: str | None = None) -> int:
    """One job: copy the data set in blocks of `shape`, compressing each block; returns the bytes
    written. `expect`: the zstandard release this must run under."""
    import zstandard

    if expect is not None and zstandard.__version__ != expect:
        raise RuntimeError(f"zstandard {zstandard.__version__} imported (from "
                           f"{os.path.dirname(zstandard.__file__)}), not {expect}")
    _lrecl, block = parse_shape(shape)
    key = ("compressor", level)
    compressor = _state.get(key)
    if compressor is None:
        compressor = _state[key] = zstandard.ZstdCompressor(level=level)
    source, target = _files()
    compress = compressor.compress
    written = 0
    for offset in range(0, DATASET_BYTES - block + 1, block):
        packed = compress(os.pread(source, block, offset))
        if os.pwrite(target, packed, written) != len(packed):
            raise OSError(f"short write to the copy's target at offset {written}")
        written += len(packed)
    os.fsync(target)
    return written

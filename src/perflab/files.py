"""Reading a file a user names, safely: only a regular file (a FIFO with no writer must not hang a
run, /dev/zero must not fill its memory), only up to PERFLAB_MAX_FILE_BYTES, its text only as
UTF-8, and every refusal one line naming the file. A leaf module: the workload loader, think-time
files, seed tables (derive) and the agent's token file all read through it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from perflab import limits
from perflab.errors import InputError, MissingFile

_FILE_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
               (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def read_text_file(path: Path) -> str:
    """The file's text (UTF-8), read with `read_regular_bytes`; bytes that are not UTF-8 are an
    InputError naming their line."""
    data = read_regular_bytes(path)
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text: byte 0x{data[exc.start]:02x} cannot be decoded", file=path,
                         line=data.count(b"\n", 0, exc.start) + 1) from None


def read_regular_bytes(path: Path) -> bytes:
    """The file's bytes, read only if it is a regular file within PERFLAB_MAX_FILE_BYTES. Opened
    without blocking (a FIFO with no writer must not hang), checked on the open descriptor."""
    limit = int(limits.MAX_FILE_BYTES.value())
    too_big = (f"the file is larger than {limit:,} bytes (set {limits.MAX_FILE_BYTES.env} to allow more)")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise MissingFile("file not found", file=path) from None
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read the file: {getattr(exc, 'strerror', None) or exc}", file=path) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = next((name for test, name in _FILE_KINDS if test(info.st_mode)), "a special file")
            raise InputError(f"not a regular file ({kind})", file=path)
        if info.st_size > limit:
            raise InputError(too_big, file=path)
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise InputError(f"cannot read the file: {exc.strerror or exc}", file=path) from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:
        raise InputError(too_big, file=path)
    return data

"""Where the run store lives: a directory, or a path where one can be made.

Checked when the command line names the store (`--store`, PERFLAB_HOME), before anything is
read or written there, so `--store /dev/null` is one line of bad input instead of a catalog
error or a traceback when the first run directory is made.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from perflab.errors import InputError


def check_store_location(path: str | Path, option: str = "--store") -> Path:
    """`path` if it is a directory or can become one (its nearest existing ancestor is a
    directory); InputError naming `option` otherwise."""
    path = Path(path)
    probe = path
    while True:
        try:
            info = os.stat(probe)
        except (FileNotFoundError, NotADirectoryError):
            if probe.parent == probe:
                return path
            probe = probe.parent
            continue
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot use {str(path)!r} as the run store: {getattr(exc, 'strerror', None) or exc}",
                             field=option) from None
        if stat.S_ISDIR(info.st_mode):
            return path
        what = "" if probe == path else f" ({probe} is a file)"
        raise InputError(f"{path} is not a directory{what}: the run store is a directory", field=option)

"""Input limits: the largest load, duration and file perflab accepts (docs/workloads.md, "Input limits").

Every number a user gives perflab -- in a workload or study file, or on the command line -- is
finite and within these bounds, so a typo (`rate: .inf`, `--rate 1e9`, a 400-digit duration)
is one line of bad input (exit 2) instead of a driver that grows until the OOM killer stops it.
The bounds are far above anything one machine can drive; a user who needs more sets the
environment variable (read when a value is checked, not at import).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from perflab.errors import InputError


@dataclass(frozen=True)
class Limit:
    name: str       # what is limited, in words
    env: str | None  # the environment variable that overrides the default (None: fixed)
    default: float
    integer: bool = True

    def value(self) -> float:
        """The limit in force: the environment's override, else the default."""
        text = os.environ.get(self.env) if self.env else None
        if text is None or not text.strip():
            return self.default
        try:
            value = int(text) if self.integer else float(text)
        except ValueError:
            raise InputError(f"expected a {'whole ' if self.integer else ''}number, got {text!r}",
                             field=self.env) from None
        if not math.isfinite(value) or value <= 0:
            raise InputError(f"expected a finite number above 0, got {text!r}", field=self.env)
        return value


#: The driver's memory for its simulated users, said before a run starts (run.json
#: config.driver_memory_bytes, the progress output): DRIVER_BASE_BYTES + DRIVER_BYTES_PER_USER a
#: user. Measured (bench/memory.py, docs/performance.md "Memory per simulated user"): the driver
#: with one user holds about 110 MB; an idle user about 430 bytes more, at 100k and at 1M users.
#: A user with a transaction in flight holds more (its Task, coroutines, the request): the 1M
#: run, whose users all issue theirs at once, peaked at 2.32 GB, 2.2 KB a user above the base.
#: The estimate counts that worst case, rounded up.
DRIVER_BASE_BYTES = 128 * 1024 * 1024
DRIVER_BYTES_PER_USER = 2400

#: What this 24 GiB machine holds with half of it left to the system under test and the rest:
#: 5 million users at DRIVER_BYTES_PER_USER are 12 GB (the bound was 100,000 at 3.4 KB an idle user).
MAX_USERS = Limit("simulated users", "PERFLAB_MAX_USERS", 5_000_000)
MAX_RATE = Limit("arrivals per second", "PERFLAB_MAX_RATE", 100_000.0, integer=False)
MAX_WORKERS = Limit("SUT worker processes", "PERFLAB_MAX_WORKERS", 1024)
MAX_DURATION = Limit("seconds in a duration", "PERFLAB_MAX_DURATION", 7 * 24 * 3600.0, integer=False)
MAX_FILE_BYTES = Limit("bytes in a workload or study file", "PERFLAB_MAX_FILE_BYTES", 10 * 1024 * 1024)
#: Fixed: a study of more blocks than this would run for months.
MAX_BLOCKS = Limit("blocks", None, 1000)
#: YAML structure (fixed): nesting depth, and nodes after aliases are expanded.
MAX_YAML_DEPTH = Limit("levels of YAML nesting", None, 50)
MAX_YAML_NODES = Limit("YAML nodes (aliases expanded)", None, 1_000_000)
#: The shortest monitor interval: sampling every process faster than this measures the sampler.
MIN_MONITOR_INTERVAL = 0.01

#: Every limit, for the documentation test.
ALL = (MAX_USERS, MAX_RATE, MAX_WORKERS, MAX_DURATION, MAX_FILE_BYTES, MAX_BLOCKS, MAX_YAML_DEPTH, MAX_YAML_NODES)


def _over(limit: Limit) -> str:
    hint = f" (set {limit.env} to allow more)" if limit.env else ""
    value = limit.value()
    return f"at most {value:,.0f} {limit.name}{hint}" if limit.integer else f"at most {value:,g} {limit.name}{hint}"


class NotFinite(ValueError):
    """A value that is not a finite number; the message quotes it already."""


def finite(value: float) -> float:
    """`value` if it is a finite number; ValueError otherwise (inf, nan)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise NotFinite(f"expected a number, got {value!r}")
    try:
        number = float(value)
    except OverflowError:
        raise ValueError("the number is too large") from None
    if not math.isfinite(number):
        raise NotFinite(f"expected a finite number, got {value!r}")
    return value


def driver_memory_bytes(users: int) -> int:
    """The driver's memory (RSS) a run of `users` simulated users will need, estimated."""
    return DRIVER_BASE_BYTES + users * DRIVER_BYTES_PER_USER


def check_users(value: int) -> int:
    if value > MAX_USERS.value():
        raise ValueError(_over(MAX_USERS))
    return value


def check_rate(value: float) -> float:
    finite(value)
    if value > MAX_RATE.value():
        raise ValueError(_over(MAX_RATE))
    return value


def check_workers(value: int) -> int:
    if value > MAX_WORKERS.value():
        raise ValueError(_over(MAX_WORKERS))
    return value


def check_duration(seconds: float) -> float:
    finite(seconds)
    if seconds > MAX_DURATION.value():
        raise ValueError(_over(MAX_DURATION))
    return seconds


def check_option(check: Callable[[Any], Any], value: Any, option: str) -> Any:
    """A command-line override through the same check as the file's field: InputError naming
    the option (exit 2). None (not given) passes."""
    if value is None:
        return None
    try:
        return check(value)
    except ValueError as exc:
        message = str(exc) if isinstance(exc, NotFinite) else f"{exc} (got {value!r})"
        raise InputError(message, field=option) from None

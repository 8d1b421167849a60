"""Monitor sources: each one reads one kind of counter and returns columns for samples.parquet.

Every source is a small class with

    read() -> dict[str, float]   # column name -> value, named `<source>.<entity>.<field>`
    close() -> None

and a class attribute `name` (used in the sampler's summary). A source that cannot work on this
machine raises `SourceUnavailable` from its constructor with the reason; the sampler records the
reason and the source's columns are simply absent (never zero-filled), so reports print `na`.

Counters are returned cumulative, as the kernel keeps them; reduction takes differences over the
measurement window. Gauges (memory, process counts) are instantaneous.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol


class SourceUnavailable(Exception):
    """This source cannot measure anything here; the message says why (shown in reports)."""


class Source(Protocol):
    name: str

    def read(self) -> dict[str, float]: ...

    def close(self) -> None: ...


def close_all(sources: Iterable[Source]) -> None:
    """Close every source (the monitor's end, the agent's): one that fails to close must keep
    neither the others open nor the monitor from writing its rows."""
    for source in sources:
        try:
            source.close()
        except Exception:
            pass

"""live.json: a run in progress, about once a second, for `perflab serve` (docs/serve.md).

While a run is in progress its run.json says `running`; the driver process also keeps
`<run_dir>/live.json` up to date: the phase, time left, counts, and the last second's ETR (T),
response time, UTIL/PROC (S) and driver CPU, plus a short history for the live charts. It is a
display, not a measurement: the stored run (transactions.parquet, samples.parquet) is what
reports are made of. Readers use live.json only while run.json says `running`; it may remain
in the run directory afterwards.

The writer is perflab.drive.live.LiveWriter, a run observer of the lifecycle; this module holds
the file's model, which `perflab serve` reads.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

LIVE_FILE = "live.json"
LIVE_VERSION = 1


class LivePoint(BaseModel):
    """One write's recent figures (one point of each live chart). A long run's older points
    are merged in pairs (perflab.drive.live_stats.History): `span_s` is then the time one
    point covers, and its percentiles the larger of the merged points' (an upper bound)."""

    elapsed_s: float
    span_s: float | None = None
    etr_t: float | None = None
    avg_last_t: float | None = None
    resp_p50_t: float | None = None
    resp_p90_t: float | None = None
    resp_p99_t: float | None = None
    util_proc_s: float | None = None
    driver_cpu_pct: float | None = None
    errors: int = 0


class LiveTransaction(BaseModel):
    """One transaction name's figures since the start of the run: the live per-request table.
    Keys as the stored table's (perflab.reduce.reduce.TRANSACTION_KEYS), units the registry's
    (seconds, tx/s, %). The percentiles come from log-spaced buckets 1% apart, so each is
    within 1% above the nearest-rank value (and never above the maximum); the stored table's
    are exact."""

    name: str
    tx_ok: int = 0
    errors_t: int = 0
    error_pct_t: float | None = None
    etr_t: float | None = Field(None, description="over the recent span, tx/s")
    avg_last_t: float | None = None
    resp_p50_t: float | None = None
    resp_p90_t: float | None = None
    resp_p95_t: float | None = None
    resp_p99_t: float | None = None
    resp_max_t: float | None = None


class LiveError(BaseModel):
    """One distinct error message of a transaction, and how often it occurred since the start."""

    message: str
    transaction: str
    count: int


class LiveStatus(BaseModel):
    """The content of live.json. Times are seconds since the run's t0 (as in the data files)
    except `updated`, the wall clock of the write (seconds since the epoch), by which a reader
    tells a fresh file from one its writer stopped updating."""

    # A reader ignores fields a newer writer adds.
    model_config = ConfigDict(extra="ignore")

    version: int = LIVE_VERSION
    run_id: str
    pid: int = Field(description="the driver's pid")
    phase: str = Field(description="stagger | stabilization | measurement | stopping")
    elapsed_s: float
    window_start_s: float
    window_end_s: float
    time_left_s: float = Field(description="until the end of the measurement window")
    users: int | None = None
    rate: float | None = None
    tx_completed: int = Field(description="transactions completed ok since the start")
    errors: int = Field(description="transactions that failed since the start")
    recent_s: float | None = Field(None, description="the span the recent figures cover")
    etr_t: float | None = Field(None, description="recent ETR (T), tx/s")
    avg_last_t: float | None = Field(None, description="recent AVG LAST (T), s")
    resp_p90_t: float | None = Field(None, description="recent RESP P90 (T), s (nearest rank)")
    util_proc_s: float | None = Field(None, description="recent UTIL/PROC (S), % of the SUT's processors")
    driver_cpu_pct: float | None = Field(None, description="recent driver CPU, % of one core")
    last_error: str | None = Field(None, description="the latest error message (truncated)")
    updated: float
    updated_iso: str
    history: list[LivePoint] = Field(default_factory=list)
    transactions: list[LiveTransaction] = Field(default_factory=list)
    error_messages: list[LiveError] = Field(default_factory=list,
                                            description="distinct messages, the most frequent first")


def read_live(run_dir: Path) -> LiveStatus | None:
    """live.json of a run, or None when there is none (or it cannot be read: the writer may
    be older or newer than this reader; a live display then shows less, it never fails)."""
    try:
        return LiveStatus.model_validate(json.loads((Path(run_dir) / LIVE_FILE).read_text()))
    except (OSError, ValueError, ValidationError):
        return None



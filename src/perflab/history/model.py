"""What `perflab history` hands on: the series, their points and change points, as typed records.

The terminal table, `--json`, the dashboard's page and `--confirm` all read one `HistoryDocument`
built by perflab.history.analysis; the JSON is `HistoryDocument.dump()`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

HISTORY_FORMAT = 1
#: How a series is ordered: by when each run started, or by the version it measured (runs of one
#: version in the order they ran).
Order = Literal["time", "version"]
#: Whose change a change point is (perflab.history.cause).
Cause = Literal["host", "software", "unknown"]


class Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class SeriesKey(Model):
    """What makes runs one series: every field equal (docs/history.md, "One series")."""

    workload: str = Field(description="the workload's name")
    configuration: str = Field(description="a digest of everything else the runs were given: the workload as "
                               "written without its version, the load, placement, window and duet partner")
    host: str = Field(description="a digest of the machine's identity: host name, CPU model, cores, memory, "
                      "architecture")
    hostname: str = Field(default="?", description="the host name (for people; the digest decides)")
    arrangement: str = Field(description="one-at-a-time, duet or split-duet")
    load: str = Field(default="", description="the load, in words (fixed users or rate, or the calibration rule)")
    window: str = Field(default="", description="stabilization and measurement, in words")


class Calibration(Model):
    """The study calibration a run's load came from: the host's capacity when the study began."""

    study: str
    users: int | None = None
    rate: float | None = None
    util_proc_s: float | None = None
    etr_t: float | None = None
    run_id: str | None = None


class PeerRun(Model):
    """Another run that says how fast the host was: the base configuration's run of the same block
    (the seeds' base re-run with every measurement), or the reference series' nearest run."""

    run_id: str
    workload: str | None = None
    value: float | None = Field(default=None, description="its value of the series' metric (the base), or of the "
                                "reference series' metric")
    relative: float | None = Field(default=None, description="the reference: its value over its series' median")


class HostState(Model):
    """The host as the run found it."""

    kernel: str | None = None
    os: str | None = None
    python: str | None = None
    calibration: Calibration | None = None
    base: PeerRun | None = None
    reference: PeerRun | None = None


class Point(Model):
    """One run of a series."""

    run_id: str
    created: str = Field(description="when it started (ISO 8601)")
    time: float = Field(description="when it started, seconds since the epoch")
    version: str | None = Field(default=None, description="the version it measured (release, label)")
    label: str | None = None
    study: str | None = None
    block: int | None = None
    value: float | None = Field(default=None, description="its value of the metric (relative to its base run "
                                "with --relative)")
    raw: float | None = Field(default=None, description="its value of the metric as measured")
    excluded: list[str] = Field(default_factory=list, description="why it is not analysed (empty: it is)")
    host: HostState = Field(default_factory=HostState)


class Confirmation(Model):
    """The study `--confirm` ran between the versions either side of a change point."""

    study_id: str | None = None
    base: str
    new: str
    verdict: str | None = None
    ratio: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    level: float | None = None
    blocks: int | None = None
    arrangement: str | None = None
    reason: str | None = Field(default=None, description="why there is no verdict")


class ChangePoint(Model):
    """A persistent shift between two runs of a series."""

    index: int = Field(description="position of the first run after the change (0-based, among the analysed runs)")
    before: str = Field(description="the last run before it")
    after: str = Field(description="the first run after it")
    before_version: str | None = None
    after_version: str | None = None
    before_created: str = ""
    after_created: str = ""
    runs_before: int = Field(description="runs of the segment before it (back to the previous change point)")
    runs_after: int = Field(description="runs of the segment after it")
    mean_before: float | None = Field(default=None, description="geometric mean of the segment before")
    mean_after: float | None = None
    ratio: float | None = Field(default=None, description="after / before (geometric means)")
    ci_low: float | None = None
    ci_high: float | None = None
    level: float = Field(description="two-sided level of the interval (Welch's t on logarithms)")
    p_value: float = Field(description="the permutation test's p when it was accepted")
    q: float = Field(description="the E-Divisive statistic")
    direction: Literal["better", "worse", "none"] = "none"
    recent: bool = Field(default=False, description="among the last N runs (--recent)")
    cause: Cause = "unknown"
    cause_reason: str = ""
    confirmation: Confirmation | None = None


class Series(Model):
    """One series and one metric: its points (excluded ones too) and change points."""

    id: str = Field(description="a short digest of the key: `perflab history --series ID`")
    key: SeriesKey
    metric: str
    label: str
    unit: str = ""
    direction: str = "none"
    relative: bool = Field(default=False, description="values are ratios to the block's base run (--relative)")
    reference: bool = Field(default=False, description="an A/A or --reference series: its changes are the host's")
    points: list[Point] = Field(default_factory=list)
    change_points: list[ChangePoint] = Field(default_factory=list)
    note: str | None = Field(default=None, description="why it was not analysed, or what to know")

    def analysed(self) -> list[Point]:
        return [p for p in self.points if not p.excluded]


class Skipped(Model):
    """A run in no series, and why."""

    run_id: str
    reason: str


class HistoryDocument(Model):
    format: int = HISTORY_FORMAT
    store: str
    order: Order
    metrics: list[str]
    recent: int
    significance: float
    permutations: int
    level: float
    series: list[Series] = Field(default_factory=list)
    skipped: list[Skipped] = Field(default_factory=list)
    exit_code: int = 0
    meaning: str = ""

    def dump(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

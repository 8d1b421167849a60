"""suite.json: one release change measured under several workloads (the LSPR's shape).

A suite runs one study per workload (each a complete study of its own, in the store's
studies/) and keeps, per workload, the rows of the metrics it averages; under them the
Average (perflab.stats.across_workloads) with its interval, level and verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from perflab.records.documents import read_json, validate
from perflab.records.run import Record
from perflab.records.study import MetricComparison, StudyVerdict

SUITE_FORMAT = 1

SuiteStatus = Literal["running", "complete", "interrupted", "failed"]


class SuiteMember(Record):
    """One workload's study."""

    name: str = Field(description="the workload's name in the suite (a row of the LSPR table)")
    study_file: str = Field(description="its study file")
    study_id: str | None = Field(default=None, description="the study it ran (store: studies/ID)")
    status: str = Field(default="pending", description="pending, or the study's status")
    workload: str = Field(default="", description="the workload file's name")
    load: str = Field(default="", description="its load, in words")
    arrangement: str | None = Field(default=None, description="how its blocks ran (one-at-a-time, duet, ...)")
    rows: list[MetricComparison] = Field(default_factory=list, description="its comparison's rows for the averaged "
                                                                           "metrics")
    verdict: StudyVerdict | None = Field(default=None, description="the study's own answer")


class AverageRow(Record):
    """One metric's change averaged over the workloads (perflab.stats.across_workloads)."""

    key: str = Field(description="catalog key")
    label: str = Field(default="", description="printed label")
    unit: str = Field(default="", description="unit of the metric")
    direction: str = Field(default="none", description="higher, lower or none")
    ratio: float | None = Field(default=None, description="geometric mean of the workloads' ratios")
    ci_low: float | None = Field(default=None, description="geometric mean of their lower bounds")
    ci_high: float | None = Field(default=None, description="... of their upper bounds")
    level: float | None = Field(default=None, description="1 - the sum of their error rates (the union bound)")
    verdict: str | None = Field(default=None, description="the members' rule against the suite's margin")
    material: bool = Field(default=False, description="the whole interval lies beyond the margin")
    note: str = Field(default="", description="the verdict's remark")
    reason: str | None = Field(default=None, description="why there is no average")


class SuiteDocument(Record):
    format: int = Field(default=SUITE_FORMAT, description="format version")
    suite_id: str = Field(description="the suite's id (store: suites/ID)")
    name: str = Field(description="the suite file's name")
    title: str = Field(default="", description="its title (default: base -> new)")
    status: SuiteStatus = Field(default="running", description="running, complete, interrupted or failed")
    reason: str | None = Field(default=None, description="why it is not complete")
    created: str | None = Field(default=None, description="when it started (ISO 8601)")
    finished: str | None = Field(default=None, description="when it ended")
    suite_path: str = Field(default="", description="the suite file")
    base: str = Field(default="", description="the base configuration every workload's study compares against")
    new: str = Field(default="", description="the changed configuration")
    margin: float = Field(description="the average's equivalence margin")
    metrics: list[str] = Field(default_factory=list, description="the averaged metric keys, primary first")
    members: list[SuiteMember] = Field(default_factory=list, description="one per workload, in the file's order")
    average: list[AverageRow] = Field(default_factory=list, description="one per averaged metric")
    verdict: StudyVerdict | None = Field(default=None, description="the primary metric's average, as an exit code")

    def member(self, name: str) -> SuiteMember | None:
        return next((m for m in self.members if m.name == name), None)


def _upgrade(data: dict[str, Any]) -> dict[str, Any]:
    version = data.get("format", SUITE_FORMAT)
    if not isinstance(version, int) or version < 1:
        raise ValueError(f"unknown format {version!r}")
    if version > SUITE_FORMAT:
        raise ValueError(f"suite.json format {version} is newer than this perflab reads (format {SUITE_FORMAT}): "
                         "upgrade perflab to read it")
    return data


def read_suite_document(path: Path) -> SuiteDocument:
    """Load suite.json (a path to the file or to its suite directory)."""
    data, path = read_json(path, "suite.json", "suite")
    return validate(SuiteDocument, _upgrade, data, path, "suite document")

"""What `perflab bisect` finds, as typed records: every step (a study of two versions, with its
verdict and interval) and the finding (a version, a range, a gradual change, or none).
bisect.json is `BisectDocument.dump()`."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

BISECT_FORMAT = 1
#: What a bisect can conclude (perflab.bisect.search).
FindingKind = Literal["version", "gradual", "none", "undecided", "opposed", "no-comparison", "interrupted"]


class Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Step(Model):
    """One study of the bisect: version `base` against version `new` (indexes into `versions`)."""

    number: int
    base: int
    new: int
    base_version: str
    new_version: str
    purpose: str = Field(description="why this study ran: the whole range, a half, a retry with more blocks, the "
                         "located step measured directly")
    study_id: str | None = None
    blocks: int
    metric: str
    verdict: str | None = None
    ratio: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    level: float | None = None
    n_blocks: int = 0
    blocks_needed: int | None = None
    arrangement: str | None = None
    reason: str | None = Field(default=None, description="why there is no verdict")
    status: str = "complete"


class Part(Model):
    """The change over a range of versions (measured, or derived from two studies)."""

    base: int
    new: int
    ratio: float
    ci_low: float
    ci_high: float
    level: float
    derived: bool = Field(default=False, description="from two studies' ratios, not measured directly")


class Finding(Model):
    kind: FindingKind
    text: str = Field(description="the answer, in words")
    base: int | None = Field(default=None, description="the range (base, new]: the change lies after `base` and at or "
                             "before `new`")
    new: int | None = None
    version: str | None = Field(default=None, description="the version that made the change (kind version)")
    parts: list[Part] = Field(default_factory=list, description="how the change is shared (kind gradual), or the "
                              "located step's own size")


class BisectDocument(Model):
    format: int = BISECT_FORMAT
    bisect_id: str
    versions_file: str
    study_file: str
    metric: str
    label: str
    direction: str
    margin: float
    versions: list[str]
    status: Literal["running", "complete", "interrupted", "failed"] = "running"
    steps: list[Step] = Field(default_factory=list)
    whole: Part | None = Field(default=None, description="the change from the first version to the last")
    finding: Finding | None = None
    studies_planned: int = Field(description="1 + ceil(log2(n - 1)): the studies a bisect of n versions needs when no "
                                 "step is INCONCLUSIVE")

    def dump(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

"""Think-time distributions: the time a simulated user waits before issuing a transaction.

Each distribution is a pydantic model (so workload files are validated and documented by
the JSON schema) with `mean()` and `sample(rng)`.

The Bactrian distribution. The seeds' FS7B workload used a "Bactrian" think time: a
two-humped curve for active users and users logged on but idle, built from observed user
data and aimed at a 30 s mean. Its parameters were never published, so perflab defines its
own and documents them (docs/workloads.md):

* a mixture of two lognormal humps: an *active* hump (fraction 1 − idle_fraction) with mean
  `active_mean` and shape sigma 0.9, and an *idle* hump (fraction idle_fraction, default
  0.15) with shape sigma 0.5 whose mean is solved so the mixture's mean is exactly `mean`;
* defaults: mean 30 s, idle_fraction 0.15, active_mean = mean x 8/30 (8 s at a 30 s mean),
  which puts the idle hump's mean at (30 − 0.85 x 8) / 0.15 = 154.7 s: thinking a few
  seconds between commands, and now and then a coffee break of two to three minutes.
Scaling `mean` alone scales both humps, so a short demo can keep the shape.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PrivateAttr, model_validator

from perflab.workload.rng import UserRandom

BACTRIAN_ACTIVE_SIGMA = 0.9
BACTRIAN_IDLE_SIGMA = 0.5
BACTRIAN_ACTIVE_SHARE_OF_MEAN = 8.0 / 30.0


class _Dist(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _lognormal_mu(mean: float, sigma: float) -> float:
    """mu of a lognormal with the given mean and shape: mean = exp(mu + sigma^2 / 2)."""
    return math.log(mean) - sigma * sigma / 2.0


class ConstantThink(_Dist):
    dist: Literal["constant"] = "constant"
    value: float = Field(ge=0, description="seconds")

    def mean(self) -> float:
        return self.value

    def sample(self, rng: UserRandom) -> float:
        return self.value


class UniformThink(_Dist):
    dist: Literal["uniform"]
    low: float = Field(ge=0)
    high: float = Field(ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> "UniformThink":
        if self.low > self.high:
            raise ValueError("low must be <= high")
        return self

    def mean(self) -> float:
        return (self.low + self.high) / 2.0

    def sample(self, rng: UserRandom) -> float:
        return rng.uniform(self.low, self.high)


class ExponentialThink(_Dist):
    dist: Literal["exponential"]
    mean_s: float = Field(gt=0, alias="mean")

    def mean(self) -> float:
        return self.mean_s

    def sample(self, rng: UserRandom) -> float:
        return rng.exponential(self.mean_s)


class LognormalThink(_Dist):
    dist: Literal["lognormal"]
    mean_s: float = Field(gt=0, alias="mean")
    sigma: float = Field(default=0.5, gt=0, description="shape (standard deviation of the log)")

    def mean(self) -> float:
        return self.mean_s

    def sample(self, rng: UserRandom) -> float:
        return rng.lognormal(_lognormal_mu(self.mean_s, self.sigma), self.sigma)


class BactrianThink(_Dist):
    dist: Literal["bactrian"]
    mean_s: float = Field(default=30.0, gt=0, alias="mean", description="overall mean, seconds (seeds: 30)")
    idle_fraction: float = Field(default=0.15, gt=0, lt=1)
    active_mean: float | None = Field(default=None, gt=0, description="default: mean x 8/30")

    @model_validator(mode="after")
    def _solvable(self) -> "BactrianThink":
        if self._active_mean() * (1 - self.idle_fraction) >= self.mean_s:
            raise ValueError("active_mean x (1 - idle_fraction) must be below mean, or the idle hump has no room")
        return self

    def _active_mean(self) -> float:
        return self.active_mean if self.active_mean is not None else self.mean_s * BACTRIAN_ACTIVE_SHARE_OF_MEAN

    def idle_mean(self) -> float:
        return (self.mean_s - (1 - self.idle_fraction) * self._active_mean()) / self.idle_fraction

    def mean(self) -> float:
        return self.mean_s

    def sample(self, rng: UserRandom) -> float:
        if rng.random() < self.idle_fraction:
            return rng.lognormal(_lognormal_mu(self.idle_mean(), BACTRIAN_IDLE_SIGMA), BACTRIAN_IDLE_SIGMA)
        active = self._active_mean()
        return rng.lognormal(_lognormal_mu(active, BACTRIAN_ACTIVE_SIGMA), BACTRIAN_ACTIVE_SIGMA)


class EmpiricalThink(_Dist):
    """Think times resampled from observations: a file with one number (seconds) per line."""

    dist: Literal["empirical"]
    file: str | None = Field(default=None, description="path relative to the workload file")
    values: list[float] | None = Field(default=None, description="observed think times inline")
    _data: list[float] = PrivateAttr(default_factory=list)

    @model_validator(mode="after")
    def _one_source(self) -> "EmpiricalThink":
        if (self.file is None) == (self.values is None):
            raise ValueError("give either `file` or `values`")
        if self.values is not None:
            if not self.values or any(v < 0 for v in self.values):
                raise ValueError("values must be a non-empty list of non-negative seconds")
            self._data = list(self.values)
        return self

    def load(self, base_dir: Path) -> None:
        """Read the observations; raises OSError / ValueError with a line number on bad data."""
        if self.file is None:
            return
        path = Path(self.file)
        if not path.is_absolute():
            path = base_dir / path
        data = []
        for lineno, line in enumerate(path.read_text().splitlines(), start=1):
            text = line.split("#", 1)[0].strip().split(",")[0].strip()
            if not text:
                continue
            try:
                value = float(text)
            except ValueError:
                raise ValueError(f"{path}:{lineno}: expected a number of seconds, got {text!r}") from None
            if value < 0 or math.isnan(value):
                raise ValueError(f"{path}:{lineno}: think times cannot be negative")
            data.append(value)
        if not data:
            raise ValueError(f"{path}: no think times in the file")
        self._data = data

    def mean(self) -> float:
        return sum(self._data) / len(self._data) if self._data else float("nan")

    def sample(self, rng: UserRandom) -> float:
        return self._data[int(rng.random() * len(self._data))]


def _number_is_constant(value: Any) -> Any:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return {"dist": "constant", "value": value}
    if isinstance(value, dict) and "dist" not in value and "value" in value:
        return {"dist": "constant", **value}
    return value


ThinkTime = Annotated[
    Union[ConstantThink, UniformThink, ExponentialThink, LognormalThink, BactrianThink, EmpiricalThink],
    Field(discriminator="dist"),
    BeforeValidator(_number_is_constant),
]

NO_THINK = ConstantThink(value=0.0)

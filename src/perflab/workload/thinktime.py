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

Starting in steady state. A user who logs on and then thinks a whole think is not where a user
of a running system is: there, a user is caught part-way through a think, and long thinks are
more likely to be the ones caught (the inspection paradox). `sample_residual` draws what is
left of the think a user is in at a random moment of a stationary system -- the equilibrium
residual, density (1 − F(x)) / E[Z]: a length-biased think (density z f(z) / E[Z]) times a
uniform fraction of it. Users whose first think is drawn so (timing.first_think: residual) put
the run in its steady state from the start, instead of after their first cycles have mixed.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PrivateAttr, model_validator

from perflab.workload.rng import UserRandom

BACTRIAN_ACTIVE_SIGMA = 0.9
BACTRIAN_IDLE_SIGMA = 0.5
BACTRIAN_ACTIVE_SHARE_OF_MEAN = 8.0 / 30.0


class _Dist(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    @model_validator(mode="after")
    def _bounded(self) -> _Dist:
        # Finite numbers only (allow_inf_nan); a think time as long as the longest run at most.
        from perflab import limits

        longest = max([v for v in self.__dict__.values() if isinstance(v, float)]
                      + list(getattr(self, "values", None) or []), default=0.0)
        limits.check_duration(longest)
        return self


def lognormal_mu(mean: float, sigma: float) -> float:
    """mu of a lognormal with the given mean and shape: mean = exp(mu + sigma^2 / 2)."""
    return math.log(mean) - sigma * sigma / 2.0


class ConstantThink(_Dist):
    dist: Literal["constant"] = "constant"
    value: float = Field(ge=0, description="seconds")

    def mean(self) -> float:
        return self.value

    def sample(self, rng: UserRandom) -> float:
        return self.value

    def length_biased(self, rng: UserRandom) -> float:
        return self.value

    def sample_residual(self, rng: UserRandom) -> float:
        return rng.random() * self.length_biased(rng)


class UniformThink(_Dist):
    dist: Literal["uniform"]
    low: float = Field(ge=0)
    high: float = Field(ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> UniformThink:
        if self.low > self.high:
            raise ValueError("low must be <= high")
        return self

    def mean(self) -> float:
        return (self.low + self.high) / 2.0

    def sample(self, rng: UserRandom) -> float:
        return rng.uniform(self.low, self.high)

    def length_biased(self, rng: UserRandom) -> float:
        # density z / E[Z]·(high − low) on [low, high]: CDF (z² − low²) / (high² − low²), inverted
        low2, high2 = self.low * self.low, self.high * self.high
        return math.sqrt(low2 + rng.random() * (high2 - low2))

    def sample_residual(self, rng: UserRandom) -> float:
        return rng.random() * self.length_biased(rng)


class ExponentialThink(_Dist):
    dist: Literal["exponential"]
    mean_s: float = Field(gt=0, alias="mean")

    def mean(self) -> float:
        return self.mean_s

    def sample(self, rng: UserRandom) -> float:
        return rng.exponential(self.mean_s)

    def sample_residual(self, rng: UserRandom) -> float:
        return rng.exponential(self.mean_s)  # memoryless: what is left of a think is a whole think


class LognormalThink(_Dist):
    dist: Literal["lognormal"]
    mean_s: float = Field(gt=0, alias="mean")
    sigma: float = Field(default=0.5, gt=0, le=5, description="shape (standard deviation of the log)")

    def mean(self) -> float:
        return self.mean_s

    def sample(self, rng: UserRandom) -> float:
        return rng.lognormal(lognormal_mu(self.mean_s, self.sigma), self.sigma)

    def length_biased(self, rng: UserRandom) -> float:
        # z·f(z)/E[Z] of lognormal(mu, sigma) is lognormal(mu + sigma², sigma)
        return rng.lognormal(lognormal_mu(self.mean_s, self.sigma) + self.sigma ** 2, self.sigma)

    def sample_residual(self, rng: UserRandom) -> float:
        return rng.random() * self.length_biased(rng)


class BactrianThink(_Dist):
    dist: Literal["bactrian"]
    mean_s: float = Field(default=30.0, gt=0, alias="mean", description="overall mean, seconds (seeds: 30)")
    idle_fraction: float = Field(default=0.15, gt=0, lt=1)
    active_mean: float | None = Field(default=None, gt=0, description="default: mean x 8/30")

    @model_validator(mode="after")
    def _solvable(self) -> BactrianThink:
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
            return rng.lognormal(lognormal_mu(self.idle_mean(), BACTRIAN_IDLE_SIGMA), BACTRIAN_IDLE_SIGMA)
        active = self._active_mean()
        return rng.lognormal(lognormal_mu(active, BACTRIAN_ACTIVE_SIGMA), BACTRIAN_ACTIVE_SIGMA)

    def length_biased(self, rng: UserRandom) -> float:
        # A mixture's length-biased law: each hump in proportion to weight x mean (the idle hump
        # holds idle_fraction x idle_mean / mean of the time), then that hump length-biased.
        idle_mean = self.idle_mean()
        if rng.random() < self.idle_fraction * idle_mean / self.mean_s:
            mean, sigma = idle_mean, BACTRIAN_IDLE_SIGMA
        else:
            mean, sigma = self._active_mean(), BACTRIAN_ACTIVE_SIGMA
        return rng.lognormal(lognormal_mu(mean, sigma) + sigma ** 2, sigma)

    def sample_residual(self, rng: UserRandom) -> float:
        return rng.random() * self.length_biased(rng)


class EmpiricalThink(_Dist):
    """Think times resampled from observations: a file with one number (seconds) per line."""

    dist: Literal["empirical"]
    file: str | None = Field(default=None, description="path relative to the workload file")
    values: list[float] | None = Field(default=None, description="observed think times inline")
    _data: list[float] = PrivateAttr(default_factory=list)
    _cumulative: list[float] = PrivateAttr(default_factory=list)

    @model_validator(mode="after")
    def _one_source(self) -> EmpiricalThink:
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
        from perflab.errors import InputError, MissingFile
        from perflab.files import read_text_file

        try:
            text = read_text_file(path)   # a regular file within the size limit only (no FIFO, no /dev/zero)
        except MissingFile:
            raise FileNotFoundError(str(path)) from None
        except InputError as exc:
            raise ValueError(f"{path}: {exc.message}") from None
        data = []
        for lineno, line in enumerate(text.splitlines(), start=1):
            text = line.split("#", 1)[0].strip().split(",")[0].strip()
            if not text:
                continue
            try:
                value = float(text)
            except ValueError:
                raise ValueError(f"{path}:{lineno}: expected a number of seconds, got {text!r}") from None
            if value < 0 or not math.isfinite(value):
                raise ValueError(f"{path}:{lineno}: expected a finite, non-negative number of seconds, got {text!r}")
            data.append(value)
        if not data:
            raise ValueError(f"{path}: no think times in the file")
        self._data = data

    def mean(self) -> float:
        return sum(self._data) / len(self._data) if self._data else float("nan")

    def sample(self, rng: UserRandom) -> float:
        return self._data[int(rng.random() * len(self._data))]

    def length_biased(self, rng: UserRandom) -> float:
        """An observation picked with probability proportional to its length."""
        if not self._cumulative:
            total, cumulative = 0.0, []
            for value in self._data:
                total += value
                cumulative.append(total)
            self._cumulative = cumulative
        if self._cumulative[-1] <= 0:
            return 0.0
        return self._data[rng.pick(self._cumulative)]

    def sample_residual(self, rng: UserRandom) -> float:
        return rng.random() * self.length_biased(rng)


def _number_is_constant(value: Any) -> Any:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return {"dist": "constant", "value": value}
    if isinstance(value, dict) and "dist" not in value and "value" in value:
        return {"dist": "constant", **value}
    return value


ThinkTime = Annotated[
    ConstantThink | UniformThink | ExponentialThink | LognormalThink | BactrianThink | EmpiricalThink,
    Field(discriminator="dist"),
    BeforeValidator(_number_is_constant),
]

NO_THINK = ConstantThink(value=0.0)

"""A host's measured bias bounds (<store>/bias/<host key>.json): what a study in a concurrent
arrangement on that host widens its verdict intervals by (perflab.stats.bias).

A bound is a claim about one machine: it is measured there (`perflab accuracy --studies`), kept
with that machine's results in its run store, and applied only to studies whose machine has the
same identity. Its provenance comes from the accuracy studies' own runs (their fingerprints,
dates and the base's CPU per transaction), never from whoever wrote the file.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import Field

from perflab.records.fingerprint import identity
from perflab.records.run import Record

BIAS_FORMAT = 1
#: The fingerprint fields that make two machines one host for a bias bound: the processor, how
#: many of it, the kernel (its build names the hypervisor's instance on a cloud VM), the
#: architecture and whether a hypervisor is there (records/fingerprint.py's `bias-host`).
#: Memory, hostname and boot id may differ. HostIdentity's fields are these.
HOST_IDENTITY = identity("bias-host")
#: How a study's verdict intervals were bounded for its arrangement's bias (study.json's
#: design.bias.route): host -- this host's stored bound; in-study -- the study's own knob blocks;
#: none -- no bound measured on this host (the arrangement's own interval, said so).
BiasRoute = Literal["host", "in-study", "none"]


class HostIdentity(Record):
    cpu_model: str | None = Field(default=None, description="processor model")
    cores: int | None = Field(default=None, description="online CPUs")
    kernel: str | None = Field(default=None, description="kernel release")
    arch: str | None = Field(default=None, description="machine architecture")
    virtualized: bool | None = Field(default=None, description="a hypervisor was there")

    @classmethod
    def of(cls, fingerprint: dict[str, Any]) -> HostIdentity:
        return cls.model_validate({k: fingerprint.get(k) for k in HOST_IDENTITY})

    @property
    def key(self) -> str:
        """A file name for the host: readable, and a hash of every identity field."""
        text = json.dumps(self.model_dump(mode="json"), sort_keys=True)
        digest = hashlib.sha256(text.encode()).hexdigest()[:12]
        cores = self.cores if self.cores is not None else "x"
        return f"{cores}cpu-{digest}"

    def describe(self) -> str:
        virtual = "a virtual machine" if self.virtualized else ("bare metal" if self.virtualized is False else "")
        parts = [self.cpu_model or "unknown processor", f"{self.cores or '?'} CPUs", f"kernel {self.kernel or '?'}",
                 virtual]
        return ", ".join(p for p in parts if p)


class BiasFitRecord(Record):
    """The random-effects fit a bound comes from (perflab.stats.bias.BiasFit)."""

    k: float
    k_se: float
    tau_k: float
    a: float
    a_se: float
    tau_a: float
    studies: int


class HostBound(Record):
    """One arrangement's bound on one host, for one target kind."""

    arrangement: str = Field(description="the arrangement measured")
    target: str = Field(description="the target kind its cases stand for (sqlite, postgres, http, python)")
    k_low: float = Field(description="least magnification the next study may have")
    k_high: float = Field(description="largest magnification")
    a_low: float = Field(description="least offset (log)")
    a_high: float = Field(description="largest offset (log)")
    k_mid: float = Field(description="the fitted magnification (the point estimate is de-biased by it)")
    a_mid: float = Field(description="the fitted offset")
    level: float = Field(description="the probability the bound claims for the next study's (k, a)")
    fit: BiasFitRecord = Field(description="the fit it comes from")
    study_ids: list[str] = Field(default_factory=list, description="the accuracy studies it was fitted from")
    days: list[str] = Field(default_factory=list, description="the dates those studies ran")
    host_states: list[float] = Field(default_factory=list, description="the base's CPU per transaction (ms) in "
                                     "those studies: the host's state when they ran")
    cases: list[str] = Field(default_factory=list, description="the known-cost cases")
    measured: str = Field(default="", description="when it was fitted")


class HostBounds(Record):
    format: int = BIAS_FORMAT
    host: HostIdentity
    bounds: list[HostBound] = Field(default_factory=list)

    def find(self, arrangement: str, target: str | None) -> HostBound | None:
        return next((b for b in self.bounds if b.arrangement == arrangement and b.target == target), None)

"""ITR ratios that compose: release after release, hardware times software.

The seeds' rule (vmesa-methodology.md §1.8): a multi-step migration's ITRR is the product of the
per-step ITRRs (VM/XA 2.1 → VM/ESA 1.1 = R21 × R1E = 1.04 × 1.04 = 1.08), and a processor ITRR
multiplies a software ITRR (1.30 × 1.08 = 1.40). IBM carried no uncertainty; perflab carries it
in logs, where products are sums: for independent estimates var(ln ITRR_tot) = Σ var(ln ITRR_i).

Assumption made explicit: composition assumes no interaction -- that a release's CPU saving is
the same on the new processor as on the one it was measured on. The LSPR's low/average/high nest
intensity categories exist because that is only approximately true, so a composed ITRR is a
projection, never a measurement, and its interval covers only measurement noise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from perflab.errors import InputError
from perflab.stats.criteria import DEFAULT_CONFIDENCE


@dataclass(frozen=True)
class ITRR:
    """An ITR ratio with the standard error of its logarithm.

    *se* is the SE of ln(ratio) (0 for a value taken as exact, e.g. a printed table entry) and
    *df* its degrees of freedom (inf for normal). `ci` gives exp(ln ratio ± t_df·se).
    """

    ratio: float
    se: float = 0.0
    df: float = math.inf
    label: str = ""

    def __post_init__(self) -> None:
        if not (math.isfinite(self.ratio) and self.ratio > 0):
            raise InputError(f"an ITRR must be positive and finite, got {self.ratio!r}")
        if not (self.se >= 0 and math.isfinite(self.se)):
            raise InputError(f"the SE of ln ITRR must be finite and >= 0, got {self.se!r}")

    def ci(self, confidence: float = DEFAULT_CONFIDENCE) -> tuple[float, float]:
        from scipy import stats  # here, not at import: scipy costs most of a second at every command's start
        if self.se == 0.0:
            return self.ratio, self.ratio
        half = stats.t.ppf(0.5 + confidence / 2.0, self.df) * self.se
        return self.ratio * math.exp(-half), self.ratio * math.exp(half)

    @classmethod
    def from_interval(
        cls,
        ratio: float,
        low: float,
        high: float,
        *,
        confidence: float = DEFAULT_CONFIDENCE,
        df: float = math.inf,
        label: str = "",
    ) -> ITRR:
        """Recover the log-SE from a symmetric-in-log interval (e.g. a `Comparison`'s)."""
        from scipy import stats  # here, not at import: scipy costs most of a second at every command's start
        q = stats.t.ppf(0.5 + confidence / 2.0, df)
        return cls(ratio, (math.log(high) - math.log(low)) / (2.0 * q), df, label)

    @classmethod
    def from_comparison(cls, comparison, label: str | None = None) -> ITRR:
        """From a `perflab.stats.Comparison` of ITR: its ratio and interval.

        The df of a paired comparison is n − 1; of a Welch one it is not stored, so n − 1 of the
        smaller arm is used, which is conservative.
        """
        c = comparison
        if not (math.isfinite(c.ci_low) and math.isfinite(c.ci_high)):
            raise InputError(f"{c.metric}: the comparison has no interval to carry")
        return cls.from_interval(
            c.ratio,
            c.ci_low,
            c.ci_high,
            confidence=c.confidence,
            df=max(1, c.n_blocks - 1),
            label=c.metric if label is None else label,
        )

    def __mul__(self, other: ITRR | float) -> ITRR:
        return compose(self, other)

    __rmul__ = __mul__

    def to_dict(self, confidence: float = DEFAULT_CONFIDENCE) -> dict:
        low, high = self.ci(confidence)
        return {
            "label": self.label,
            "ratio": self.ratio,
            "se_log": self.se,
            "df": None if math.isinf(self.df) else self.df,
            "ci_low": low,
            "ci_high": high,
            "confidence": confidence,
        }


def compose(*factors: ITRR | float, label: str | None = None) -> ITRR:
    """The product of independent ITRRs: ratios multiply, log-variances add.

    Degrees of freedom by Welch–Satterthwaite: (Σ se²)² / Σ(se⁴/df), so a product of two
    4-block comparisons is not treated as if its spread were known exactly.
    """
    if not factors:
        raise InputError("compose needs at least one ITRR")
    items = [f if isinstance(f, ITRR) else ITRR(float(f)) for f in factors]
    ratio = math.prod(f.ratio for f in items)
    var = sum(f.se**2 for f in items)
    denom = sum(f.se**4 / f.df for f in items if f.se > 0 and math.isfinite(f.df))
    df = var**2 / denom if denom > 0 else math.inf
    name = label if label is not None else "·".join(f.label or f"{f.ratio:g}" for f in items)
    return ITRR(ratio, math.sqrt(var), df, name)


def transition(pair_ratios: Sequence[float], label: str = "") -> ITRR:
    """One release transition from several measurement pairs (the seeds' R1E = avg of 9–12).

    The seeds took the arithmetic mean of the pair ITRRs; perflab takes the geometric mean so
    that the estimate lives on the same log scale as its SE (the two differ by under 0.01 % for
    ratios as close as these: R1E 1.04477 vs 1.04478). The SE is the spread of the pairs' logs
    over √k, so disagreeing processors widen the interval as they should.
    """
    r = [float(x) for x in pair_ratios]
    if not r or any(not (math.isfinite(x) and x > 0) for x in r):
        raise InputError("pair ITRRs must be positive and finite, and at least one")
    logs = [math.log(x) for x in r]
    k = len(logs)
    mean = sum(logs) / k
    if k == 1:
        return ITRR(math.exp(mean), 0.0, math.inf, label)
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (k - 1))
    return ITRR(math.exp(mean), sd / math.sqrt(k), float(k - 1), label)

"""Estimate the ratio B/A of a per-run metric from randomized blocks, with an interval.

Assumptions (statistics-and-capacity.md §0, §5.3):

* The replication unit is one whole run. Intervals or transactions inside a run are not
  independent, so they never enter here: each run contributes one value (ITR_i = Σtx/ΣCPU-s).
* Run-to-run noise is multiplicative, so everything is done on ln(value): the estimate is a
  ratio of geometric means and the interval is symmetric in log space.
* Runs come in blocks (each block holds A and B once, in a random order). Differencing within a
  block, d_j = ln B_j − ln A_j, removes whatever drifts slowly across the session; under a 2 %
  linear drift the paired analysis keeps its nominal false-alarm rate where a sequential
  AAAA…BBBB design reaches about 44 % (§5.3, reproduced by tests/stats).
* The interval is Student's t on the mean of d. Not a percentile bootstrap: with 6 blocks a
  nominal 90 % percentile-bootstrap interval covers only about 81 % of the time (0.85 at 10
  blocks), while the t-interval covers 90 % at every n and 0.90–0.92 under t3 tails.

The vectorized cores (`paired_log_interval`, `welch_log_interval`) work along the last axis so
that the calibration and power simulations run the same code as `compare`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from enum import Enum

import numpy as np

from perflab import caveats as cav
from perflab.caveats import Caveat, Code
from perflab.errors import InputError
from perflab.stats.distributions import t_ppf, t_sf
from perflab.stats.verdict import (
    DEFAULT_CONFIDENCE,
    DEFAULT_MARGIN,
    DEFAULT_POWER,
    MIN_BLOCKS,
    Verdict,
    blocks_needed,
    judge,
    legacy_label,
)

#: Above this per-run CV a comparison at the default margin needs more than ~10 blocks; the
#: better remedy is less noise (pin and tune the host, or compare instruction counts) (§5.2).
NOISY_CV = 0.02
#: Experiment-wise false-alarm rate of the "this block looks like a bad run" warning. A robust
#: z-score (MAD) rule was tried first: with 6 normal blocks it flags 15 % of clean experiments at
#: a cut of 3.5 and still 6 % at 5, because a MAD from 6 values is itself very noisy.
OUTLIER_ALPHA = 0.01

PerRunValues = Mapping[int, float | None] | Sequence[float | None]


@dataclass(frozen=True)
class LogInterval:
    """A t-interval on the log scale (arrays when the inputs were batches).

    center ± t·se, with *sd* the per-unit SD it came from (of d for paired, pooled for Welch).
    """

    center: np.ndarray | np.float64
    low: np.ndarray | np.float64
    high: np.ndarray | np.float64
    se: np.ndarray | np.float64
    df: np.ndarray | np.float64
    sd: np.ndarray | np.float64

    def p_value(self) -> np.ndarray | float:
        """Two-sided p of H0: ratio = 1. With a 90 % interval, "CI excludes 1" ⇔ p < 0.10.

        An exact metric (se = 0) gives p = 1 for no change and 0 for any change.
        """
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.abs(self.center) / self.se
        t = np.where(self.se == 0, np.where(self.center == 0, 0.0, np.inf), t)
        return 2.0 * t_sf(t, self.df)


@functools.lru_cache(maxsize=4096)
def t_quantile(p: float, df: float) -> float:
    """Student's t quantile, remembered: the simulations that check the verdicts call the same
    few (level, df) pairs hundreds of thousands of times, and scipy's ppf costs ~0.3 ms a call."""
    return float(t_ppf(p, df))


def paired_log_interval(d: np.ndarray, confidence: float = DEFAULT_CONFIDENCE) -> LogInterval:
    """Two-sided t-interval for the mean of block differences d (last axis = blocks).

    mean d ± t_{(1+c)/2, n−1}·s_d/√n. Needs n ≥ 2 along the last axis.
    """
    d = np.asarray(d, dtype=float)
    n = d.shape[-1]
    if n < 2:
        raise ValueError("a paired interval needs at least 2 blocks")
    center = d.mean(axis=-1)
    sd = d.std(axis=-1, ddof=1)
    se = sd / math.sqrt(n)
    df = np.full_like(center, n - 1.0)
    t = t_quantile(0.5 + confidence / 2.0, n - 1)
    return LogInterval(center, center - t * se, center + t * se, se, df, sd)


def crossover_log_interval(d: np.ndarray, side: np.ndarray, confidence: float = DEFAULT_CONFIDENCE) -> LogInterval:
    """The paired interval with a side effect taken out: d_j = delta + gamma s_j + e_j, s_j = +1
    or -1 by which side of the machine the new configuration ran on in block j (a split duet's
    two CPU halves need not be equally fast, and the sides swap from block to block -- the
    period effect of a two-period crossover trial). delta is the mean of the two sides' means,
    whatever the balance; its standard error comes from the residuals about both, with n - 2
    degrees of freedom. Needs both sides and n >= 3."""
    d = np.asarray(d, dtype=float)
    s = np.asarray(side, dtype=float)
    n = len(d)
    X = np.column_stack([np.ones(n), s])
    inverse = np.linalg.inv(X.T @ X)
    beta = inverse @ X.T @ d
    residual = d - X @ beta
    df = n - 2
    sigma2 = float(residual @ residual) / df
    se = math.sqrt(sigma2 * inverse[0, 0])
    center = float(beta[0])
    t = t_quantile(0.5 + confidence / 2.0, df)
    sd = math.sqrt(sigma2)
    return LogInterval(np.float64(center), np.float64(center - t * se), np.float64(center + t * se), np.float64(se),
                       np.float64(df), np.float64(sd))


def welch_log_interval(
    log_base: np.ndarray, log_new: np.ndarray, confidence: float = DEFAULT_CONFIDENCE
) -> LogInterval:
    """Welch's unequal-variance t-interval for mean(log_new) − mean(log_base) (last axis).

    The fallback when blocks are broken: it ignores pairing, so block-level drift inflates its
    error instead of cancelling. Degrees of freedom by Welch–Satterthwaite.
    """
    x = np.asarray(log_base, dtype=float)
    y = np.asarray(log_new, dtype=float)
    nx, ny = x.shape[-1], y.shape[-1]
    if nx < 2 or ny < 2:
        raise ValueError("a Welch interval needs at least 2 runs per configuration")
    vx = x.var(axis=-1, ddof=1) / nx
    vy = y.var(axis=-1, ddof=1) / ny
    se = np.sqrt(vx + vy)
    with np.errstate(invalid="ignore", divide="ignore"):
        df = (vx + vy) ** 2 / (vx**2 / (nx - 1) + vy**2 / (ny - 1))
    # Two exactly repeatable configurations (an exact metric) give 0/0: any df will do.
    df = np.where(np.isfinite(df), df, nx + ny - 2.0)
    center = y.mean(axis=-1) - x.mean(axis=-1)
    t = t_quantile(0.5 + confidence / 2.0, round(float(df), 6)) if np.ndim(df) == 0 else \
        t_ppf(0.5 + confidence / 2.0, df)
    sd = np.sqrt((x.var(axis=-1, ddof=1) + y.var(axis=-1, ddof=1)) / 2.0)
    return LogInterval(center, center - t * se, center + t * se, se, df, sd)


@dataclass
class Comparison:
    """One metric compared between a base (A) and a new (B) configuration.

    *ratio* is B/A as a ratio of geometric means, [ci_low, ci_high] its interval at
    *confidence*, *cv* the per-run noise (SD of ln value; from s_d/√2 for a paired analysis,
    so drift between blocks is not counted as noise). *warnings* are the caveats a report must
    print with the number; *note* is the short remark printed next to the verdict.
    """

    metric: str
    ratio: float
    ci_low: float
    ci_high: float
    n_blocks: int
    cv: float
    verdict: Verdict
    material: bool
    note: str
    blocks_needed: int | None
    warnings: list[Caveat] = field(default_factory=list)
    higher_is_better: bool = True
    margin: float = DEFAULT_MARGIN
    confidence: float = DEFAULT_CONFIDENCE
    looks: int = 1
    method: str = "paired"
    p_value: float = math.nan
    p_adjusted: float | None = None
    n_base: int = 0
    n_new: int = 0
    gm_base: float = math.nan
    gm_new: float = math.nan
    cv_base: float = math.nan
    cv_new: float = math.nan
    dropped_blocks: list[int] = field(default_factory=list)
    legacy: str = ""
    secondary: dict | None = None

    def to_dict(self) -> dict:
        """JSON-ready: enums as strings, NaN as None."""
        return jsonable({**asdict(self), "warnings": [w.model_dump(mode="json") for w in self.warnings]})

    def __str__(self) -> str:
        ci = f"[{self.ci_low:.3f}, {self.ci_high:.3f}]" if math.isfinite(self.ci_low) else "[n/a]"
        parts = [f"{self.metric} ratio {self.ratio:.3f} {ci} {self.verdict.value}"]
        if self.material:
            parts.append("material")
        if self.note:
            parts.append(self.note)
        parts.append(f"n={self.n_blocks} CV {100 * self.cv:.1f} %")
        return " ".join(parts)


def compare(
    base: PerRunValues,
    new: PerRunValues,
    *,
    metric: str = "itr",
    higher_is_better: bool = True,
    margin: float = DEFAULT_MARGIN,
    confidence: float = DEFAULT_CONFIDENCE,
    looks: int = 1,
    paired: bool = True,
    power: float = DEFAULT_POWER,
    side: Mapping[int, int] | None = None,
) -> Comparison:
    """Compare per-run values of a new configuration against a base one.

    *base* and *new* map block number → per-run value; a plain sequence means block = position.
    None or NaN marks a run excluded by a validity gate: its block loses its pair and is dropped
    from the paired analysis (listed in *dropped_blocks* and the warnings, never silently).

    The primary analysis is paired by block when at least `MIN_BLOCKS` complete blocks remain;
    otherwise (or with ``paired=False``, for designs without blocks) it falls back to Welch on
    ln values over all valid runs, and says so. When paired, the Welch analysis is also reported
    as *secondary*, and a contradiction between the two is flagged.

    *looks* > 1 declares interim analyses in advance (§5.4 allows one extension to 2n): each
    look then uses a Bonferroni-widened interval, e.g. 95 % instead of 90 % for two looks.

    *side* maps block -> +1/-1, the side of the machine the new configuration ran on (a split
    duet): with both sides among at least `MIN_BLOCKS` complete blocks the paired analysis takes
    the side effect out (`crossover_log_interval`, method "crossover"); with one side only there
    is no interval (the side's speed and the change cannot be told apart), and the reason says so.
    """
    if looks < 1:
        raise ValueError("looks must be >= 1")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    level = 1.0 - (1.0 - confidence) / looks
    a = _per_block(base, "base", metric)
    b = _per_block(new, "new", metric)
    warnings: list[Caveat] = []
    if looks > 1:
        warnings.append(cav.remark(Code.INTERVAL_METHOD, f"{looks} pre-declared looks: {100 * level:g} % intervals "
                                   "(Bonferroni)", looks=looks, level=level))

    blocks = sorted(set(a) | set(b))
    complete = [j for j in blocks if a.get(j) is not None and b.get(j) is not None]
    dropped = [j for j in blocks if j not in complete]
    xa = np.log([v for v in a.values() if v is not None])
    xb = np.log([v for v in b.values() if v is not None])
    if len(xa) == 0 or len(xb) == 0:
        raise InputError("need at least one valid run of each configuration", field=metric)
    d = np.array([math.log(bj) - math.log(aj) for j in complete if (aj := a[j]) is not None and (bj := b[j]) is not None])
    welch_ok = min(len(xa), len(xb)) >= MIN_BLOCKS

    if not paired:
        method = "welch"
        warnings.append(cav.remark(Code.INTERVAL_METHOD, "unpaired design: Welch on ln values assumes no drift between "
                                   "the runs", method="welch"))
    elif len(complete) >= MIN_BLOCKS or not welch_ok:
        method = "paired"
    else:
        # Exclusions broke the blocks; the runs that remain can still be compared unpaired.
        method = "welch"
        warnings.append(cav.remark(
            Code.INTERVAL_METHOD, f"only {len(complete)} complete blocks: fell back to the unpaired Welch analysis of "
            f"all valid runs, which does not remove drift between blocks", method="welch", complete=len(complete)))
    if paired and dropped:
        warnings.insert(0, cav.remark(
            Code.INTERVAL_METHOD, f"{len(dropped)} of {len(blocks)} blocks incomplete (block {_list(dropped)}: a run "
            f"was excluded or missing); dropped from the paired analysis", dropped=dropped))

    secondary = None
    sides = np.array([side.get(j, 0) for j in complete], dtype=float) if (side and method == "paired") else None
    one_sided: str | None = None
    if sides is not None and set(sides.tolist()) == {-1.0, 1.0} and len(complete) >= MIN_BLOCKS:
        method = "crossover"
        warnings.append(cav.remark(Code.INTERVAL_METHOD, "the configurations swapped sides of the machine from block "
                                   "to block: the side's own speed is taken out of the paired analysis (a crossover's "
                                   "period effect)", method="crossover"))
    elif sides is not None and len(complete) >= MIN_BLOCKS:
        # Every complete block on one side: the side's own speed and the change are one number,
        # and a paired interval would print it as the change.
        one_sided = (f"the new configuration ran on one side of the machine in all {len(complete)} complete blocks: "
                     f"its side's own speed cannot be told from the change, so there is no interval (more blocks, "
                     f"which swap sides)")
    iv: LogInterval | None
    if one_sided is not None:
        n_units = len(complete)
        iv, cv, center = None, math.nan, float(d.mean())
    elif method == "crossover":
        assert sides is not None  # a crossover is found from the sides (above)
        n_units = len(complete)
        iv = crossover_log_interval(d, sides, level)
        cv = float(iv.sd) / math.sqrt(2.0)
        center = float(iv.center)
    elif method == "paired":
        n_units = len(complete)
        iv = paired_log_interval(d, level) if n_units >= 2 else None
        cv = float(iv.sd) / math.sqrt(2.0) if iv is not None else math.nan
        center = float(d.mean()) if n_units else float(xb.mean() - xa.mean())
        if n_units >= MIN_BLOCKS:
            warnings += _outliers(d, complete)
            if min(len(xa), len(xb)) >= 2:
                secondary = _secondary(xa, xb, level, margin, higher_is_better)
    else:
        n_units = min(len(xa), len(xb))
        iv = welch_log_interval(xa, xb, level) if n_units >= 2 else None
        cv = float(iv.sd) if iv is not None else math.nan
        center = float(xb.mean() - xa.mean())

    ratio = math.exp(center)
    if iv is not None and n_units >= MIN_BLOCKS:
        lo, hi = math.exp(float(iv.low)), math.exp(float(iv.high))
        p = float(iv.p_value())
    elif one_sided is not None:
        warnings.append(cav.remark(Code.NO_INTERVAL, one_sided, n=n_units))
        lo = hi = p = math.nan
    else:
        what = "blocks" if method == "paired" else "runs per configuration"
        warnings.append(cav.remark(Code.NO_INTERVAL, f"n={n_units} {what}: need ≥ {MIN_BLOCKS} for an interval",
                                   n=n_units, need=MIN_BLOCKS))
        lo = hi = p = math.nan

    j = judge(ratio, lo, hi, margin=margin, higher_is_better=higher_is_better)
    note = j.note
    needed = None
    if j.verdict is Verdict.INCONCLUSIVE and math.isfinite(cv):
        needed = blocks_needed(cv, margin, confidence=level, power=power)
        if needed > n_units:
            warnings.append(cav.remark(Code.NOISY, f"CV {100 * cv:.1f} %: need ≥ {needed:,} blocks at margin "
                                       f"{100 * margin:g} %", cv=cv, blocks_needed=needed, margin=margin))
    if math.isfinite(cv) and cv > NOISY_CV:
        warnings.append(noisy(cv))
    if secondary is not None and _contradicts(j.verdict, Verdict(secondary["verdict"])):
        warnings.append(cav.remark(
            Code.ANALYSES_DISAGREE, f"paired ({j.verdict.value}) and unpaired Welch ({secondary['verdict']}) analyses "
            f"disagree: check the run order and the excluded runs", paired=j.verdict.value,
            welch=secondary["verdict"]))

    return Comparison(
        metric=metric,
        ratio=ratio,
        ci_low=lo,
        ci_high=hi,
        n_blocks=n_units,
        cv=cv,
        verdict=j.verdict,
        material=j.material,
        note=note,
        blocks_needed=needed,
        warnings=warnings,
        higher_is_better=higher_is_better,
        margin=margin,
        confidence=level,
        looks=looks,
        method=method,
        p_value=p,
        n_base=len(xa),
        n_new=len(xb),
        gm_base=math.exp(float(xa.mean())),
        gm_new=math.exp(float(xb.mean())),
        cv_base=float(xa.std(ddof=1)) if len(xa) >= 2 else math.nan,
        cv_new=float(xb.std(ddof=1)) if len(xb) >= 2 else math.nan,
        dropped_blocks=dropped if paired else [],
        legacy=legacy_label(ratio),
        secondary=secondary,
    )


def _per_block(values: PerRunValues, which: str, metric: str) -> dict[int, float | None]:
    """Normalize input to {block: value or None}, rejecting values no ratio can be taken of."""
    items = values.items() if isinstance(values, Mapping) else enumerate(values)
    out: dict[int, float | None] = {}
    for block, v in items:
        v = math.nan if v is None else float(v)
        if math.isnan(v):
            out[int(block)] = None
            continue
        if not math.isfinite(v) or v <= 0.0:
            raise InputError(
                f"{which} run in block {block} is {v!r}: per-run values must be positive "
                f"and finite (use None for an excluded run)",
                field=metric,
            )
        out[int(block)] = v
    return out


def _secondary(xa, xb, level, margin, higher_is_better) -> dict:
    iv = welch_log_interval(xa, xb, level)
    ratio = math.exp(float(iv.center))
    lo, hi = math.exp(float(iv.low)), math.exp(float(iv.high))
    if min(len(xa), len(xb)) < MIN_BLOCKS:
        lo = hi = math.nan
    j = judge(ratio, lo, hi, margin=margin, higher_is_better=higher_is_better)
    return {"method": "welch", "ratio": ratio, "ci_low": lo, "ci_high": hi, "verdict": j.verdict.value}


def _contradicts(primary: Verdict, other: Verdict) -> bool:
    """Two verdicts contradict when both are definite and differ.

    An INCONCLUSIVE Welch next to a definite paired verdict is expected -- pairing is more
    precise when blocks differ -- so flagging it would make the warning meaningless.
    """
    return Verdict.INCONCLUSIVE not in (primary, other) and primary is not other


def _outliers(d: np.ndarray, blocks: list[int]) -> list[Caveat]:
    """Blocks whose difference is implausible given the others (leave-one-out t, Bonferroni).

    For block i, t_i = (d_i − mean of the others)/(SD of the others·√(1 + 1/(n−1))) has a t
    distribution with n − 2 df when all blocks share one normal distribution; flagging
    p_i < OUTLIER_ALPHA/n keeps false warnings on clean data below OUTLIER_ALPHA per comparison.
    The block stays in the analysis: its run passed the validity gates, and dropping data
    because it is inconvenient is how false conclusions are made. The warning asks for a look.
    """
    n = len(d)
    if n < 4:
        return []
    rest = np.array([np.delete(d, i) for i in range(n)])  # row i: every block but i
    rest_mean = rest.mean(axis=1)
    scale = rest.std(axis=1, ddof=1) * math.sqrt(1.0 + 1.0 / (n - 1))
    gap = np.abs(d - rest_mean)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(scale > 0, gap / scale, np.where(gap > 0, np.inf, 0.0))
    p = 2.0 * t_sf(t, n - 2)
    return [
        cav.remark(Code.OUTLIER, f"block {blocks[i]}: its ratio is {_signed(d[i])} against {_signed(rest_mean[i])} "
                   f"in the other blocks (p={p[i]:.1g}); check its runs", block=blocks[i], p=float(p[i]))
        for i in np.flatnonzero(p < OUTLIER_ALPHA / n)
    ]


def noisy(cv: float) -> Caveat:
    """A CV beyond NOISY_CV: no design of a few blocks resolves a few percent through it."""
    return cav.remark(Code.NOISY, f"CV {100 * cv:.1f} % exceeds {100 * NOISY_CV:g} %: reduce noise first (pin and "
                      "tune the host, or compare instruction counts)", cv=cv, limit=NOISY_CV)


def _signed(log_ratio: float) -> str:
    return f"{100 * math.expm1(log_ratio):+.1f} %".replace("-", "\u2212")


def _list(items: list[int]) -> str:
    return ", ".join(str(i) for i in items)


def jsonable(obj):
    """A JSON-ready copy: enums as their values, NaN and infinities as None, numpy scalars as Python ones."""
    if isinstance(obj, dict):
        return {k: jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [jsonable(v) for v in obj]
    if isinstance(obj, Enum):
        return obj.value
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, np.generic):
        return jsonable(obj.item())
    return obj

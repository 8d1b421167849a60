"""Operational laws and bounds for a closed interactive system (Buzen & Denning; Lazowska et al.,
*Quantitative System Performance*, ch. 3 and 5).

They hold for any measured interval, whatever the distributions, which is why a report can check
them against its own numbers and why capacity projections start from them:

* interactive response time law  R = N/X − Z
* asymptotic bounds              N/(N·D + Z) ≤ X(N) ≤ min(N/(D + Z), 1/D_max), knee N* = (D+Z)/D_max
* users supported                X_max = u*·C·ITR,  N = X_max·(R_SLA + Z)

ITR (transactions per CPU-busy second) is computed by the metric registry (perflab.reduce); here
it is an input.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from perflab.errors import InputError

#: The seeds' capacity rules, asked for by every command and report that applies them: a
#: processor is full at 90 % utilization (UTIL/PROC), and a user is served while AVG LAST (T)
#: stays under 1 s.
TARGET_UTIL = 0.90
RESPONSE_LIMIT_S = 1.0


@dataclass(frozen=True)
class Bounds:
    """Asymptotic bounds at population *n*: throughput in [x_low, x_high], response time in
    [r_low, r_high] (response excludes think time), and the knee *n_star*."""

    n: float
    x_low: float
    x_high: float
    r_low: float
    r_high: float
    n_star: float

    def to_dict(self) -> dict:
        return asdict(self)


def asymptotic_bounds(demands: Sequence[float], n: float, think_time: float = 0.0) -> Bounds:
    """Bounds for a closed network of queueing centres with service demands D_k and think time Z.

    Upper X: each user cycles at best in D + Z (no queueing), and no centre exceeds 100 %
    (X ≤ 1/D_max). Lower X: at worst a user waits behind all N − 1 others at every centre.
    """
    d = as_demands(demands)
    if n <= 0 or think_time < 0:
        raise InputError("need n > 0 users and think time >= 0")
    total, dmax = float(d.sum()), float(d.max())
    x_high = min(n / (total + think_time), 1.0 / dmax)
    x_low = n / (n * total + think_time)
    r_low = max(total, n * dmax - think_time)
    r_high = n * total
    return Bounds(n, x_low, x_high, r_low, r_high, (total + think_time) / dmax)


def response_time(n_users: float, throughput: float, think_time: float = 0.0) -> float:
    """Interactive response time law: R = N/X − Z."""
    if throughput <= 0:
        raise InputError("throughput must be positive")
    return n_users / throughput - think_time


@dataclass(frozen=True)
class Supported:
    """Users a configuration supports: *x_max* (tx/s at the target utilization) and *users*."""

    x_max: float
    users: float
    itr: float
    cpus: float
    target_util: float
    response_sla: float
    think_time: float

    def to_dict(self) -> dict:
        return asdict(self)


def users_supported(
    itr: float,
    *,
    cpus: float,
    target_util: float,
    response_sla: float,
    think_time: float,
) -> Supported:
    """Users supported at a target utilization while meeting a response-time SLA.

    X_max = u*·C·ITR (utilization law with ITR = 1/D_cpu), and by Little's law applied to the
    whole cycle N = X·(R + Z); taking R at the SLA gives the largest N the CPU can serve at u*.
    This assumes the CPU is the bottleneck and that R stays within the SLA at u* -- check the
    latter with `mva` or a measurement; it is a capacity statement, not a latency prediction.
    """
    if itr <= 0 or cpus <= 0:
        raise InputError("ITR and the number of CPUs must be positive")
    if not 0 < target_util <= 1:
        raise InputError(f"target utilization is a fraction in (0, 1], got {target_util!r}")
    if response_sla < 0 or think_time < 0:
        raise InputError("response SLA and think time must be >= 0")
    x_max = target_util * cpus * itr
    return Supported(
        x_max, x_max * (response_sla + think_time), itr, cpus, target_util, response_sla, think_time
    )


def as_demands(demands: Sequence[float]) -> np.ndarray:
    d = np.asarray(demands, dtype=float)
    if d.ndim != 1 or len(d) == 0 or not np.all(np.isfinite(d)) or np.any(d < 0):
        raise InputError("service demands must be a non-empty list of finite values >= 0")
    if not d.max() > 0:
        raise InputError("at least one service demand must be positive")
    return d

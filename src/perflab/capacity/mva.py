"""Mean value analysis of a closed, single-class queueing network with think time.

The model behind "N simulated users with think time Z against a system of K queueing centres"
(the seeds' TPNS users, perflab's closed-loop driver). Each centre k has a service demand D_k
(seconds of service per transaction, e.g. D_cpu = 1/ITR per processor-second); centres are
load-independent single servers; users think for Z between transactions.

Exact MVA (Reiser & Lavenberg) steps the population up from 0, using the arrival theorem: a
transaction arriving at a centre sees the queue the network had with one user fewer.

    R_k(n) = D_k·(1 + Q_k(n−1));   X(n) = n / (Z + Σ_k R_k(n));   Q_k(n) = X(n)·R_k(n)

It costs O(N·K), so it is the default; Bard–Schweitzer replaces Q_k(n−1) by (n−1)/n·Q_k(n) and
iterates at one population, for very large N. Multi-class or load-dependent networks are out of
scope: line-solver or JMT's JMVA are the oracles for those (statistics-and-capacity.md §3).
This is our own ~30 lines rather than a dependency because no maintained PyPI package offers it
without Java (line-solver's JMT backend) or a C build (PDQ is not on PyPI).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from perflab.capacity.laws import as_demands
from perflab.errors import InputError


@dataclass(frozen=True)
class MVAPoint:
    """The network at one population: throughput X, response time R (excluding Z), and per
    centre residence time, mean queue length (including the one in service) and utilization."""

    n: int
    throughput: float
    response: float
    residence: np.ndarray
    queue: np.ndarray
    utilization: np.ndarray

    def to_dict(self) -> dict:
        return {
            "n": self.n,
            "throughput": self.throughput,
            "response": self.response,
            "residence": self.residence.tolist(),
            "queue": self.queue.tolist(),
            "utilization": self.utilization.tolist(),
        }


@dataclass(frozen=True)
class MVAResult:
    """Exact MVA for every population 1..N: arrays indexed [n − 1] (and [n − 1, k])."""

    demands: np.ndarray
    think_time: float
    n: np.ndarray
    throughput: np.ndarray
    response: np.ndarray
    residence: np.ndarray
    queue: np.ndarray
    utilization: np.ndarray

    def at(self, n: int) -> MVAPoint:
        i = int(n) - 1
        if not 0 <= i < len(self.n):
            raise IndexError(f"population {n} outside 1..{len(self.n)}")
        return MVAPoint(
            int(n),
            float(self.throughput[i]),
            float(self.response[i]),
            self.residence[i],
            self.queue[i],
            self.utilization[i],
        )

    def to_dict(self) -> dict:
        return {
            "demands": self.demands.tolist(),
            "think_time": self.think_time,
            "n": self.n.tolist(),
            "throughput": self.throughput.tolist(),
            "response": self.response.tolist(),
        }


def mva(demands: Sequence[float], n_users: int, think_time: float = 0.0) -> MVAResult:
    """Exact MVA for populations 1..n_users."""
    d = as_demands(demands)
    n_users = _population(n_users, think_time)
    k = len(d)
    residence = np.empty((n_users, k))
    queue = np.empty((n_users, k))
    x = np.empty(n_users)
    q = np.zeros(k)
    for i in range(n_users):
        n = i + 1
        r = d * (1.0 + q)  # arrival theorem: the queue seen is the one at n − 1
        x[i] = n / (think_time + r.sum())
        q = x[i] * r  # Little's law at each centre
        residence[i], queue[i] = r, q
    return MVAResult(
        demands=d,
        think_time=float(think_time),
        n=np.arange(1, n_users + 1),
        throughput=x,
        response=residence.sum(axis=1),
        residence=residence,
        queue=queue,
        utilization=x[:, None] * d[None, :],
    )


def schweitzer(
    demands: Sequence[float],
    n_users: int,
    think_time: float = 0.0,
    *,
    tol: float = 1e-10,
    max_iter: int = 100_000,
) -> MVAPoint:
    """Bard–Schweitzer approximate MVA at one population (error typically a few % at most).

    Fixed point of R_k = D_k·(1 + (n−1)/n·Q_k), X = n/(Z + ΣR_k), Q_k = X·R_k, started from the
    queue spread evenly over the centres.
    """
    d = as_demands(demands)
    n = _population(n_users, think_time)
    q = np.full(len(d), n / len(d))
    for _ in range(max_iter):
        r = d * (1.0 + (n - 1) / n * q)
        x = n / (think_time + r.sum())
        q_new = x * r
        if np.max(np.abs(q_new - q)) < tol * max(1.0, n):
            q = q_new
            break
        q = q_new
    else:
        raise RuntimeError(f"Bard–Schweitzer did not converge in {max_iter} iterations")
    r = d * (1.0 + (n - 1) / n * q)
    x = n / (think_time + r.sum())
    return MVAPoint(n, float(x), float(r.sum()), r, x * r, x * d)


def _population(n_users: int, think_time: float) -> int:
    if int(n_users) != n_users or n_users < 1:
        raise InputError(f"the population must be a positive integer, got {n_users!r}")
    if think_time < 0:
        raise InputError("think time must be >= 0")
    return int(n_users)

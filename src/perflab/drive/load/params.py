"""Parameter generators: the values a transaction is called with (account ids, amounts...)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from perflab.workload.model import Choice, Constant, ParamSpec, RandomInt, Sequence
from perflab.workload.rng import UserRandom

Generator = Callable[[UserRandom], Any]


def make_generator(spec: ParamSpec) -> Generator:
    if isinstance(spec, RandomInt):
        low, high = spec.random_int
        return lambda rng: rng.randint(low, high)
    if isinstance(spec, Choice):
        values = list(spec.choice)
        if spec.weights is None:
            n = len(values)
            return lambda rng: values[int(rng.random() * n)]
        cumulative = list(itertools.accumulate(spec.weights))
        return lambda rng: values[rng.pick(cumulative)]
    if isinstance(spec, Sequence):
        # One counter shared by all users: a sequence hands out distinct keys (new order ids).
        counter = itertools.count(spec.sequence, spec.step)
        return lambda rng: next(counter)
    if isinstance(spec, Constant):
        value = spec.value
        return lambda rng: value
    raise TypeError(f"unknown parameter spec {spec!r}")


class ParamMaker:
    """Builds the parameter dict of one transaction from its generators."""

    __slots__ = ("_items",)

    def __init__(self, specs: dict[str, ParamSpec]):
        self._items = [(name, make_generator(spec)) for name, spec in specs.items()]

    def __call__(self, rng: UserRandom) -> dict[str, Any] | None:
        if not self._items:
            return None
        return {name: gen(rng) for name, gen in self._items}

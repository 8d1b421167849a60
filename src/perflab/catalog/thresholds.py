"""Thresholds (k6-style): absolute limits a run's metrics must meet.

A workload's `thresholds:` list (and `perflab run --threshold EXPR`) holds expressions such as
`resp_p95_t < 0.5`, `error_pct_t < 1` or `itr_s > 5000`: a key of the metric catalog, one of
`<`, `<=`, `>`, `>=`, `==`, and a finite number in the metric's own unit (seconds, %, tx/s; see
`perflab metrics`). `perflab run` evaluates them against the reduced run and exits 1 when one
is violated; a metric the run did not measure (`na`) violates its threshold: a limit that cannot
be checked is not met.

This module only parses and evaluates; it imports the registry (for the keys) and nothing of
the reduction itself, so the workload model can check expressions when it loads a file.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

#: The comparison operators of the grammar (two-character ones first in the pattern).
OPERATORS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq}
_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_EXPRESSION = re.compile(rf"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(<=|>=|==|<|>)\s*({_NUMBER})\s*$")
EXAMPLE = "resp_p95_t < 0.5"


@dataclass(frozen=True)
class Threshold:
    """One limit: `key op limit`, e.g. resp_p95_t < 0.5."""

    key: str
    op: str
    limit: float

    @property
    def expression(self) -> str:
        return f"{self.key} {self.op} {shown(self.limit)}"

    def __str__(self) -> str:
        return self.expression

    def holds(self, value: float) -> bool:
        return OPERATORS[self.op](value, self.limit)


@dataclass(frozen=True)
class ThresholdResult:
    """A threshold against what the run measured: `value` None when it was not measured."""

    threshold: Threshold
    value: float | None

    @property
    def measured(self) -> bool:
        return self.value is not None

    @property
    def passed(self) -> bool:
        return self.value is not None and self.threshold.holds(self.value)

    @property
    def why(self) -> str:
        """Why it failed ('not measured', or the comparison that does not hold); '' when it passed."""
        if self.passed:
            return ""
        if self.value is None:
            return "not measured"
        return f"{self.threshold.key} is {self.value:.6g}, not {self.threshold.op} {shown(self.threshold.limit)}"


def shown(x: float) -> str:
    """A number as written, without a float's noise: 5000.0 -> '5000', 0.1 -> '0.1'."""
    text = repr(float(x))
    return text[:-2] if text.endswith(".0") else text


def parse_threshold(text: Any) -> Threshold:
    """A Threshold from an expression; ValueError with what was expected when it is not one
    (a message the workload loader shows with the file and line)."""
    from perflab.catalog.registry import REGISTRY

    if not isinstance(text, str):
        raise ValueError(f"expected an expression such as {EXAMPLE!r}")
    match = _EXPRESSION.match(text)
    if match is None:
        raise ValueError(f"expected KEY OP NUMBER with OP one of {' '.join(OPERATORS)}, such as {EXAMPLE!r}")
    key, op, number = match.groups()
    if REGISTRY.unknown_keys([key]):
        raise ValueError(f"unknown metric key {key!r}: `perflab metrics` lists the keys")
    if REGISTRY[key].text:
        raise ValueError(f"{key!r} is descriptive text, not a number: a threshold needs a numeric metric")
    limit = float(number)
    if not math.isfinite(limit):
        raise ValueError("expected a finite number")
    return Threshold(key, op, limit)


def evaluate(thresholds: Iterable[Threshold | str], values: Mapping[str, Any]) -> list[ThresholdResult]:
    """Each threshold against a run's values by catalog key (RunMetrics.values); a value that is
    missing, None or not finite is 'not measured', which fails."""
    results = []
    for threshold in thresholds:
        threshold = threshold if isinstance(threshold, Threshold) else parse_threshold(threshold)
        value = values.get(threshold.key)
        number = None
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            number = float(value)
        results.append(ThresholdResult(threshold, number))
    return results


def violated(results: Iterable[ThresholdResult]) -> list[ThresholdResult]:
    return [r for r in results if not r.passed]

"""report.json: the machine-readable report -- the study dict as it is, plus the generated prose
and a legend of the metric keys it uses (label, unit, group, decimals, direction), so a reader
of the JSON never needs perflab's source to know what `pbt_cmd_s` means.

The study's own keys are left untouched (they are the metric catalog's keys already); the
additions live under one key, "report". NaN and infinities become null: JSON has no NaN, and
a strict parser would reject the file.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from perflab.records.study import StudyDocument
from perflab.report import discussion
from perflab.report import numbers as fmt

FORMAT = "perflab-report"
VERSION = 1


def used_keys(study: StudyDocument) -> list[str]:
    keys: list[str] = []
    for comparison in study.comparisons:
        keys += [e.key for e in comparison.metrics]
    for run in study.runs:
        keys += list(run.metrics)
    return list(dict.fromkeys(keys))


def legend(keys: list[str]) -> dict[str, dict[str, Any]]:
    out = {}
    for key in keys:
        metric = fmt.metric_of(key)
        if metric is not None:
            out[key] = {"label": metric.label, "unit": metric.unit, "source": metric.source, "group": metric.group,
                        "decimals": metric.decimals, "direction": metric.direction.value,
                        "description": metric.description}
    return out


def clean(value: Any) -> Any:
    """JSON-safe copy: NaN/inf -> None, tuples/sets -> lists, Paths and numpy scalars -> plain."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [clean(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):  # numpy scalars
        return clean(value.item())
    return value


#: DEL and the C1 controls (U+0080-U+009F: 0x9B is a terminal's CSI), U+2028 and U+2029 (line
#: ends to some editors and older JavaScript): JSON may carry them raw, but a SUT's error text
#: holding them would act on the terminal that prints the file.
_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029]")


def dumps(doc: Any) -> str:
    """Every report's JSON text (a study's, a run's): `clean` first (NaN is null), other text as
    UTF-8; JSON writes C0 controls as \\u escapes itself, and the characters above too, so the
    file carries a SUT's text exactly and prints nothing but text. A value JSON has no type for
    is written as its string."""
    text = json.dumps(clean(doc), indent=2, ensure_ascii=False, allow_nan=False, default=str)
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text) + "\n"


def render_json(study: StudyDocument) -> str:
    """The JSON report of a study document: study.json's content plus the generated prose."""
    doc = study.dump()
    doc["report"] = {"format": FORMAT, "version": VERSION, **discussion.generate(study),
                     "metrics": legend(used_keys(study))}
    return dumps(doc)

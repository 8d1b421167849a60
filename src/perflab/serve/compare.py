"""The compare page's computation: the same document, verdicts and exit code as `perflab
compare A B` (perflab.study.groups.comparison_document, perflab.study.compare.gate_exit_code),
from query parameters checked first, since they arrive from a browser."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

from perflab.errors import InputError
from perflab.serve.data import ID

EXIT_MEANING = {0: "no gated verdict is WORSE", 1: "a gated verdict is WORSE",
                3: "a gated verdict is INCONCLUSIVE (more runs needed)"}
EXIT_WORD = {0: "no regression", 1: "WORSE", 3: "INCONCLUSIVE"}
DEFAULT_METRIC = "itr_s"
_KEY = re.compile(r"^[a-z0-9_]+([.:@/][A-Za-z0-9_.:@/ -]+)?$")


@dataclass(frozen=True)
class CompareQuery:
    a: str
    b: str
    metrics: tuple[str, ...] = (DEFAULT_METRIC,)
    margin: float = 0.03
    confidence: float = 0.90

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> "CompareQuery | None":
        """None when the form has not been filled in; InputError when it is wrong."""
        a, b = (query.get("a") or "").strip(), (query.get("b") or "").strip()
        if not a and not b:
            return None
        if not a or not b:
            raise InputError("give both groups, A (base) and B (new)", field="A" if not a else "B")
        metrics = tuple(m.strip() for m in (query.get("metric") or DEFAULT_METRIC).split(",") if m.strip())
        for m in metrics:
            if not _KEY.match(m):
                raise InputError(f"not a metric key: {m!r}", field="metric")
        return cls(check_ref(a, "A"), check_ref(b, "B"), metrics or (DEFAULT_METRIC,),
                   _fraction(query.get("margin"), 0.03, "margin", 0.0, 0.5),
                   _fraction(query.get("confidence"), 0.90, "confidence", 0.5, 1.0))

    def params(self) -> dict[str, str]:
        return {"a": self.a, "b": self.b, "metric": ",".join(self.metrics), "margin": f"{self.margin:g}",
                "confidence": f"{self.confidence:g}"}


def _fraction(text: str | None, default: float, field: str, low: float, high: float) -> float:
    if text is None or not text.strip():
        return default
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"expected a number, got {text!r}", field=field) from None
    if not low < value < high:
        raise InputError(f"expected a number between {low:g} and {high:g} (exclusive), got {value:g}", field=field)
    return value


def check_ref(ref: str, which: str) -> str:
    """A run group as `perflab compare` takes it, except file system paths: a browser names runs
    in this store only (comma-separated ids or unique prefixes, label:NAME, study:ID:CONFIG)."""
    if len(ref) > 2000:
        raise InputError("too long", field=which)
    if ref.startswith("label:"):
        if not ref[len("label:"):]:
            raise InputError("expected label:NAME", field=which)
        return ref
    if ref.startswith("study:"):
        parts = ref.split(":", 2)
        if len(parts) < 3 or not ID.match(parts[1]) or ".." in parts[1] or not parts[2]:
            raise InputError(f"expected study:ID:CONFIG, got {ref!r}", field=which)
        return ref
    parts = [p.strip() for p in ref.split(",") if p.strip()]
    for part in parts:
        if not ID.match(part) or ".." in part:
            raise InputError(f"expected run ids (or unique prefixes), label:NAME or study:ID:CONFIG; got {part!r}",
                             field=which)
    if not parts:
        raise InputError("no run given", field=which)
    return ",".join(parts)


@dataclass
class CompareResult:
    query: CompareQuery
    doc: dict[str, Any]
    exit_code: int
    gated: list[dict[str, Any]]
    texts: dict[str, str]


def run_compare(store: Any, query: CompareQuery) -> CompareResult:
    """The comparison and its three reports (rendered once: the page, its frame and the
    downloads all show the same document)."""
    from perflab.report.write import EXPORTERS
    from perflab.study.compare import gate_exit_code
    from perflab.study.groups import comparison_document

    doc = comparison_document(store, query.a, query.b, query.margin, query.confidence)
    code = gate_exit_code(doc["comparisons"], list(query.metrics))
    gated = [dict(m, base=c["base"], new=c["new"]) for c in doc["comparisons"] for m in c["metrics"]
             if m["key"] in query.metrics]
    texts = {e.filename: e.render(doc) for e in EXPORTERS}
    return CompareResult(query, doc, code, gated, texts)

"""The field reference of run.json and study.json, generated from the models.

docs/architecture.md carries this text between two markers; tests/docs checks that it is
current, so the documentation of the stored formats cannot drift from the code that writes
and reads them (`python -m perflab.records.reference docs/architecture.md` rewrites it).
"""

from __future__ import annotations

import typing
from typing import Any, get_args, get_origin

from pydantic import BaseModel

from perflab.caveats import Caveat
from perflab.records.run import RUN_FORMAT, RunRecord
from perflab.records.study import STUDY_FORMAT, StudyDocument
from perflab.records.suite import SUITE_FORMAT, SuiteDocument

BEGIN = "<!-- records:begin (generated: python -m perflab.records.reference docs/architecture.md) -->"
END = "<!-- records:end -->"


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The record models an annotation refers to (list[X], X | None, dict[str, X]...)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found: list[type[BaseModel]] = []
    for arg in get_args(annotation):
        found += _models_in(arg)
    return found


def _type_name(annotation: Any) -> str:
    origin = get_origin(annotation)
    if origin is typing.Literal:
        return " \\| ".join(repr(a) for a in get_args(annotation))
    if origin is None:
        if isinstance(annotation, type):
            return annotation.__name__
        return str(annotation).replace("typing.", "")
    args = [a for a in get_args(annotation)]
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return " \\| ".join(_type_name(a) for a in args)
    name = getattr(origin, "__name__", str(origin))
    return f"{name}[{', '.join(_type_name(a) for a in args)}]"


def _table(model: type[BaseModel]) -> list[str]:
    lines = [f"#### {model.__name__}", ""]
    doc = (model.__doc__ or "").strip().split("\n\n")[0]
    if doc:
        lines += [" ".join(doc.split()), ""]
    lines += ["| field | type | meaning |", "|---|---|---|"]
    for name, field in model.model_fields.items():
        shown = field.alias or name
        meaning = " ".join((field.description or "").split())
        lines.append(f"| `{shown}` | {_type_name(field.annotation)} | {meaning} |")
    return lines + [""]


def render_record_reference() -> str:
    out = [BEGIN, "", f"### run.json (format {RUN_FORMAT})", ""]
    seen: set[type[BaseModel]] = set()

    def walk(model: type[BaseModel]) -> None:
        if model in seen:
            return
        seen.add(model)
        out.extend(_table(model))
        for field in model.model_fields.values():
            for sub in _models_in(field.annotation):
                walk(sub)

    walk(RunRecord)
    out += [f"### study.json (format {STUDY_FORMAT})", ""]
    seen.discard(Caveat)
    walk(StudyDocument)
    out += [f"### suite.json (format {SUITE_FORMAT})", ""]
    walk(SuiteDocument)
    out.append(END)
    return "\n".join(out) + "\n"


def splice(document: str) -> str:
    """The document with its generated section replaced by the current reference."""
    start, end = document.index(BEGIN), document.index(END) + len(END)
    return document[:start] + render_record_reference().rstrip("\n") + document[end:]


if __name__ == "__main__":
    import sys
    from pathlib import Path

    target = Path(sys.argv[1])
    target.write_text(splice(target.read_text(encoding="utf-8")), encoding="utf-8")

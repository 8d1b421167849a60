"""docs/reruns.md: the claims waiting for a rerun -- the explicit, shrinking list of ids a page
cites whose report is not stored, each with the page and the command that reruns it.

A page may cite an id with no stored report only while it is listed here; once its report is
kept (perflab page PAGE --run --keep), the test of the docs fails until its entry is removed, so
the list only shrinks. One section per page:

    ## docs/case-studies/durable-writes.md
    - command: `perflab page docs/case-studies/durable-writes.md --run --keep`
    - machine minutes: 15
    - ids: 20261127-201449-pg-durable-writes-3445

A section headed `Reports kept as Markdown only` lists stored reports without their record
(report.json), kept before records were: they are stored, their run rows are not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from perflab.report.book.layout import ELIDED, ID

MARKDOWN_ONLY = "Reports kept as Markdown only"
_SECTION = re.compile(r"^## (.+?)\s*$", re.M)
_COMMAND = re.compile(r"^- command:\s*`([^`]+)`", re.M)
_MINUTES = re.compile(r"^- machine minutes:\s*([\d.]+)", re.M)


@dataclass
class Waiting:
    page: str                  # as the section heading names it, relative to the checkout
    line: int
    command: str
    minutes: float | None
    ids: list[str] = field(default_factory=list)


@dataclass
class Reruns:
    path: Path
    waiting: list[Waiting] = field(default_factory=list)
    markdown_only: list[str] = field(default_factory=list)

    def entry(self, id_: str, page: str | None = None) -> Waiting | None:
        """The entry listing an id (for a page: the one under that page; an id two pages cite is
        listed under each)."""
        return next((w for w in self.waiting if id_ in w.ids and (page is None or w.page == page)), None)


def read_reruns(path: Path) -> Reruns:
    text = Path(path).read_text(encoding="utf-8") if Path(path).is_file() else ""
    reruns = Reruns(Path(path))
    heads = list(_SECTION.finditer(text))
    for i, head in enumerate(heads):
        body = text[head.end():heads[i + 1].start() if i + 1 < len(heads) else len(text)]
        title = head.group(1).strip().strip("`")
        command = _COMMAND.search(body)
        listed = _COMMAND.sub("", body)
        # full ids, and ids a page cites shortened ("…214737…e468"), written here as the page does
        ids = list(dict.fromkeys(ID.findall(listed) + [m.group(0) for m in ELIDED.finditer(listed) if "…" in m.group(0)]))
        if title == MARKDOWN_ONLY:
            reruns.markdown_only += ids
            continue
        minutes = _MINUTES.search(body)
        reruns.waiting.append(Waiting(title, text.count("\n", 0, head.start()) + 1,
                                      command.group(1) if command else "", float(minutes.group(1)) if minutes else None,
                                      ids))
    return reruns

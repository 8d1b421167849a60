"""A tiny DOM reader for the HTML tests (stdlib html.parser): every element with its attributes
and the ids of its ancestors, so a test can ask "is there an <svg> inside #chart-itr?"."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    ancestors: tuple[str, ...]          # ids of the enclosing elements, outermost first
    text: list[str] = field(default_factory=list)

    @property
    def id(self) -> str | None:
        return self.attrs.get("id")

    @property
    def classes(self) -> set[str]:
        return set((self.attrs.get("class") or "").split())


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[Element] = []
        self.stack: list[Element] = []

    def handle_starttag(self, tag, attrs):
        element = Element(tag, {k: v or "" for k, v in attrs}, tuple(e.id for e in self.stack if e.id))
        self.elements.append(element)
        if tag not in VOID:
            self.stack.append(element)

    def handle_startendtag(self, tag, attrs):
        self.elements.append(Element(tag, {k: v or "" for k, v in attrs}, tuple(e.id for e in self.stack if e.id)))

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                break

    def handle_data(self, data):
        for element in self.stack:
            element.text.append(data)


def parse(html: str) -> list[Element]:
    reader = _Reader()
    reader.feed(html)
    reader.close()
    return reader.elements


def by_id(elements: list[Element], id_: str) -> Element | None:
    return next((e for e in elements if e.id == id_), None)


def inside(elements: list[Element], id_: str, tag: str) -> list[Element]:
    return [e for e in elements if e.tag == tag and id_ in e.ancestors]


def text_of(element: Element) -> str:
    return " ".join(" ".join(element.text).split())

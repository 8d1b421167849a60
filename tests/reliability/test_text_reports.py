"""Issue 14, item 6 (files): hostile names in report.md and report.html.

Control characters (ESC[2J, OSC 8, C1, BEL) are written as \\xNN in both; in Markdown the
name's markup (a link, an HTML tag, emphasis, a heading) stays literal text, checked by
rendering report.md with a CommonMark parser."""

from __future__ import annotations

import json

from markdown_it import MarkdownIt
from report.study_data import BASE, NEW, make_study

from perflab.records.study import as_study_document

HOSTILE = ("[/x] :smile: [bold]b \x1b[2J \x1b]8;;http://evil.example/\x1b\\link\x1b]8;;\x1b\\ \x9b31m \x07 "
           "[click](http://evil.example/) ![img](http://evil.example/i.png) <b>tag</b> &amp; _em_ ~~del~~ `code`")
PARAGRAPH = "# heading\n> quote\n- item\n1. first\n" + HOSTILE
CONTROL = [chr(c) for c in [*range(0x00, 0x09), *range(0x0b, 0x20), *range(0x7f, 0xa0)]]


def hostile_study() -> dict:
    text = json.dumps(make_study())
    for name, tail in ((BASE, ""), (NEW, " B")):
        text = text.replace(json.dumps(name)[1:-1], json.dumps(HOSTILE + tail)[1:-1])
    study = json.loads(text)
    study["warnings"].append(HOSTILE)
    study["workload"]["name"] = HOSTILE
    study["workload"]["description"] = PARAGRAPH
    study["runs"][0]["reason"] = "SUT error: " + HOSTILE
    study["runs"][1]["exclusions"] = [HOSTILE]
    return study


def assert_no_control(text: str) -> None:
    raw = sorted({hex(ord(c)) for c in text if c in CONTROL})
    assert not raw, f"raw control characters written: {raw}"


def test_report_md_writes_hostile_names_as_literal_text():
    from perflab.report.markdown import render_markdown

    md = render_markdown(as_study_document(hostile_study()))
    assert_no_control(md)
    assert "\\x1b[2J" in md and "\\x9b31m" in md
    html = MarkdownIt("commonmark").enable("table").enable("strikethrough").render(md)
    assert "<a " not in html and "<img" not in html
    assert "<b>" not in html and "<em>em</em>" not in html and "<s>del</s>" not in html
    assert "<code>code</code>" not in html
    assert "<h1>heading" not in html and "<blockquote>" not in html
    # the text itself is all there, as text
    assert "[click](http://evil.example/)" in html and "&lt;b&gt;tag&lt;/b&gt;" in html
    assert "&amp;amp;" in html and "_em_" in html and "~~del~~" in html and "`code`" in html


def test_markdown_escape_keeps_plain_text_readable():
    from perflab.report.markdown import escape

    assert escape("resp_p95_t [90% CI 0.98 – 1.02] -3.0% 1.5") == "resp_p95_t [90% CI 0.98 – 1.02] -3.0% 1.5"


def test_report_html_writes_control_characters_escaped():
    from perflab.report.html import render_html

    html = render_html(as_study_document(hostile_study()))
    assert_no_control(html)
    assert "\\x1b[2J" in html
    assert "<b>tag</b>" not in html and "&lt;b&gt;tag&lt;/b&gt;" in html

"""report.html: one self-contained file with stable section ids, coloured verdicts, every
chart inline as SVG (or a note saying why it is not drawn), and everything escaped."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from perflab.records.study import as_study_document
from perflab.report.html import render_html

from . import dom
from .study_data import NEW, make_study

SECTIONS = ("general-observations", "workload", "hardware", "software", "discussion", "data", "runs", "charts")
CHARTS = ("chart-itr", "chart-response", "chart-timeline")
RESOURCE_ATTRS = ("src", "href", "xlink:href", "action", "poster", "data", "srcset", "background", "formaction")


@pytest.fixture(scope="module")
def html() -> str:
    """The report of the unmodified synthetic study, rendered once (charts take ~0.5 s)."""
    return render_html(as_study_document(make_study()))


def test_sections_have_stable_ids(html):
    elements = dom.parse(html)
    for id_ in SECTIONS:
        element = dom.by_id(elements, id_)
        assert element is not None and element.tag == "section", id_


def test_every_chart_is_inline_svg(html):
    elements = dom.parse(html)
    for id_ in CHARTS:
        figure = dom.by_id(elements, id_)
        assert figure is not None and figure.tag == "figure"
        assert "charts" in figure.ancestors
        assert dom.inside(elements, id_, "svg"), f"{id_} has no <svg>"
        assert dom.inside(elements, id_, "path"), f"{id_} draws nothing"


def test_self_contained_no_network_references(html):
    elements = dom.parse(html)
    for element in elements:
        for attr in RESOURCE_ATTRS:
            value = element.attrs.get(attr, "")
            assert not re.match(r"\s*(https?:)?//", value), f"<{element.tag} {attr}={value!r}>"
            assert not value or value.startswith("#"), f"<{element.tag} {attr}={value!r}> is not in-page"
    assert not [e for e in elements if e.tag in ("script", "link", "img", "iframe", "object", "embed")]
    assert "http://" not in html and "https://" not in html
    assert "@import" not in html and not re.search(r"url\(\s*['\"]?(?!#)", html)
    # The page forbids any request even if something slipped through.
    csp = [e for e in elements if e.tag == "meta" and e.attrs.get("http-equiv") == "Content-Security-Policy"]
    assert csp and "default-src 'none'" in csp[0].attrs["content"]


def test_ids_are_unique_across_charts(html):
    ids = Counter(e.id for e in dom.parse(html) if e.id)
    assert [i for i, n in ids.items() if n > 1] == []


def test_verdict_cells_are_coloured(html):
    elements = dom.parse(html)
    cells = {dom.text_of(e): e.classes for e in elements if e.tag == "td" and "data" in e.ancestors}
    assert "verdict-better" in cells["BETTER"]
    assert "verdict-worse" in cells["WORSE (material)"]
    assert "verdict-equivalent" in cells["EQUIVALENT"]
    assert "verdict-inconclusive" in cells["INCONCLUSIVE"]
    for name, colour in (("better", "#dafbe1"), ("worse", "#ffebe9"), ("equivalent", "#eaeef2"),
                         ("inconclusive", "#fff8c5")):
        assert re.search(rf"td\.verdict-{name} {{ background: {colour}", html)


def test_same_content_as_markdown(html):
    elements = dom.parse(html)
    discussion = dom.text_of(dom.by_id(elements, "discussion"))
    assert ("Processor busy time per command (PBT/CMD (S)) decreased by 0.051 ms (5.0%), raising internal "
            "throughput (ITR (S)) by 5.3% [90% CI 4.1% to 6.5%]: BETTER.") in discussion
    data_rows = [e for e in elements if e.tag == "tr" and "data" in e.ancestors]
    labels = {dom.text_of(e).split(" ", 1)[0] for e in data_rows}
    assert {"ITR", "ETR", "AVG", "RESP", "PBT/CMD", "UTIL/PROC", "INSTR/CMD"} <= labels
    na_row = next(dom.text_of(e) for e in data_rows if dom.text_of(e).startswith("INSTR/CMD (I)"))
    assert na_row.split("instr", 1)[1].split() == ["na"] * 9
    runs = dom.text_of(dom.by_id(elements, "runs"))
    assert "excluded: driver CPU 97%" in runs


def test_everything_is_escaped(study):
    html = render_html(as_study_document(study))
    assert "<apsw>" not in html
    assert "Release B &lt;apsw&gt; &amp; co" in html
    study["workload"]["description"] = "<script>alert(1)</script>"
    html = render_html(as_study_document(study))
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_chart_without_data_is_omitted_with_a_note(study):
    for run in study["runs"]:
        run["per_interval"] = None
        run["metrics"]["itr_s"] = None
    elements = dom.parse(render_html(as_study_document(study)))
    for id_ in ("chart-timeline", "chart-itr"):
        figure = dom.by_id(elements, id_)
        assert figure is not None and "missing" in figure.classes
        assert not dom.inside(elements, id_, "svg")
        assert "Not drawn" in dom.text_of(figure)
    assert dom.inside(elements, "chart-response", "svg")


def test_dollar_in_a_name_does_not_break_the_charts(study):
    """matplotlib reads $...$ as mathtext; an unbalanced $ must not fail the report."""
    for conf in study["configurations"]:
        conf["name"] = conf["name"].replace("Release", "Rel$ease")
    for run in study["runs"]:
        run["config"] = run["config"].replace("Release", "Rel$ease")
    comparison = study["comparisons"][0]
    comparison["base"], comparison["new"] = (comparison[k].replace("Release", "Rel$ease") for k in ("base", "new"))
    assert dom.inside(dom.parse(render_html(as_study_document(study))), "chart-itr", "svg")


def test_sweep_chart_and_table(sweep_study):
    elements = dom.parse(render_html(as_study_document(sweep_study)))
    assert dom.inside(elements, "chart-sweep", "svg")
    assert dom.by_id(elements, "sweep") is not None and dom.by_id(elements, "runs") is not None


def test_two_comparisons_keep_ids_unique(study):
    second = dict(study["comparisons"][0], new=f"{NEW} again")
    study["comparisons"].append(second)
    elements = dom.parse(render_html(as_study_document(study)))
    for id_ in ("workload", "workload-2", "data", "data-2", "runs-2"):
        assert dom.by_id(elements, id_) is not None, id_
    ids = Counter(e.id for e in elements if e.id)
    assert [i for i, n in ids.items() if n > 1] == []


def test_rendering_is_deterministic(study):
    assert render_html(as_study_document(study)) == render_html(as_study_document(study))

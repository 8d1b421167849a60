"""Where the pathlength went, from profiles made here (perflab.reduce.function_diff): a function
added in B found at the top with its count, a function that only wanders not called a change,
libraries that add up to the total, exact inclusive counts, and a flame graph whose frames share
their caller's width; rendered in Markdown, HTML (the script admitted by its hash) and JSON."""

from __future__ import annotations

import base64
import hashlib
import json
import re

import pytest

from perflab.records.study import ComparisonRecord, StudyDocument
from perflab.reduce.function_diff import Pair, cycles, pathlength_diff
from perflab.reduce.functions import RunProfile
from perflab.reduce.libraries import APSW, PERFLAB, PYTHON, SQLITE, library_of
from perflab.report import pathlength_diff as report
from perflab.report.html import render_html
from perflab.report.json_export import render_json
from perflab.report.markdown import render_markdown

PY = "libpython3.11.so.1.0"
APSW_SO = "apsw/__init__.cpython-311-x86_64-linux-gnu.so"
EVAL = (PY, "_PyEval_EvalFrameDefault")
STEP = (APSW_SO, "APSWCursor_step")
VDBE = (APSW_SO, "sqlite3VdbeExec")
HASH = (PY, "dict_lookup")
LOOP = ("(perflab machine code)", "perflab_known_loop")


def _transaction(wander: float, loop: float) -> tuple[dict, dict]:
    """EVAL (100 own) calls STEP (20 own), which calls VDBE (1,000 own); EVAL calls HASH (50 own,
    plus `wander`, as a dictionary's probes do with the hash seed) and, in B, the loop."""
    own = {EVAL: 100.0, STEP: 20.0, VDBE: 1000.0, HASH: 50.0 + wander}
    inclusive = {STEP: 1020.0, VDBE: 1000.0, HASH: 50.0 + wander}
    if loop:
        own[LOOP] = inclusive[LOOP] = loop
    inclusive[EVAL] = sum(own.values())
    return own, inclusive


def _profile(wanders: list[float], loop: float = 0.0) -> RunProfile:
    by_tx = {n: ("tx", *_transaction(w, loop)) for n, w in enumerate(wanders)}
    count = len(wanders)
    own: dict = {}
    inclusive: dict = {}
    for _name, o, i in by_tx.values():
        for k, v in o.items():
            own[k] = own.get(k, 0.0) + v / count
        for k, v in i.items():
            inclusive[k] = inclusive.get(k, 0.0) + v / count
    calls = {((*EVAL, False), (*STEP, False)): 1020.0, ((*STEP, False), (*VDBE, False)): 1000.0,
             ((*EVAL, False), (*HASH, False)): own[HASH]}
    if loop:
        calls[((*EVAL, False), (*LOOP, False))] = loop
    return RunProfile(transactions=count, own=own, inclusive=inclusive, calls=calls,
                      files={VDBE: "/project/sqlite3/sqlite3.c", STEP: "/project/src/cursor.c"},
                      per_transaction={"tx": (count, sum(own.values()))}, by_transaction=by_tx)


#: each block's transactions' wander in A and in B: the same draw, the hash seed's own wander
WANDERS = (([3, -2, 0, 1], [-1, 4, 2, -3]), ([0, 1, -1, 2], [2, -2, 0, 1]), ([1, 1, -2, 0], [0, -1, 3, 1]))


def _diff(loop: float, wanders=WANDERS):
    pairs = [Pair(block, f"a{block}", f"b{block}", _profile(wa), _profile(wb, loop))
             for block, (wa, wb) in enumerate(wanders)]
    return pathlength_diff("A", "B", pairs, 0.95)


def test_a_function_added_in_b_is_at_the_top_with_its_count_and_alone_above_the_noise():
    diff = _diff(loop=2002.0)
    top = diff.exclusive[0]
    assert (top.function, top.library, top.base, top.new) == ("perflab_known_loop", PERFLAB, 0.0, 2002.0)
    assert top.above_noise is True and top.delta_low == top.delta_high == 2002.0   # the same in every block
    wander = next(r for r in diff.exclusive if r.function == "dict_lookup")
    assert wander.above_noise is False and wander.delta_low < 0 < wander.delta_high
    assert [r.function for r in diff.exclusive if r.above_noise] == ["perflab_known_loop"]
    # the libraries add up to the total change, and so do the functions (all are listed here)
    assert sum(lib.delta for lib in diff.libraries) == pytest.approx(diff.delta)
    assert sum(r.delta for r in diff.exclusive) == pytest.approx(diff.delta)
    wander_change = sum(sum(b) - sum(a) for a, b in WANDERS) / 12
    assert diff.delta == pytest.approx(2002 + wander_change) and diff.paired_transactions == 12
    # inclusive: the unchanged chain below does not move; the caller every instruction runs
    # under is named in the notes, not listed
    inclusive = {r.function: r for r in diff.inclusive}
    assert inclusive["APSWCursor_step"].delta == 0 and inclusive["APSWCursor_step"].above_noise is False
    assert "_PyEval_EvalFrameDefault" not in inclusive
    assert any("_PyEval_EvalFrameDefault" in note for note in diff.notes)
    assert diff.functions_changed == 2 and diff.blocks == 3


def test_an_a_a_has_no_function_above_the_noise():
    diff = _diff(loop=0.0)
    assert not any(r.above_noise for r in diff.exclusive + diff.inclusive)
    assert diff.total_low < 0 < diff.total_high


def test_without_blocks_there_are_means_but_no_intervals():
    pairs = [Pair(None, "a", "b", _profile([0, 0]), _profile([0, 0], 2002.0))]
    diff = pathlength_diff("A", "B", pairs)
    assert diff.exclusive[0].function == "perflab_known_loop" and diff.exclusive[0].above_noise is None
    assert diff.blocks == 0 and diff.notes


def test_libraries_tell_sqlite_from_its_binding_with_or_without_line_information():
    assert library_of(APSW_SO, "sqlite3VdbeExec", "/project/sqlite3/sqlite3.c") == SQLITE
    assert library_of(APSW_SO, "APSWCursor_step", "/project/src/cursor.c") == APSW
    assert library_of(APSW_SO, "sumStep", "???") == SQLITE           # apsw 3.54's wheel: no line information
    assert library_of(APSW_SO, "Connection_execute", "") == APSW
    assert library_of(PY, "_PyEval_EvalFrameDefault") == PYTHON
    assert library_of("libc.so.6", "memcpy") == "libc"
    assert library_of("postgres", "ExecutePlan") == "PostgreSQL"
    assert library_of("libz.so.1", "inflate") == "libz.so.1"          # unclaimed: its object


def test_cycles_are_the_strongly_connected_frames():
    a, b, c, d = (("x", n, True) for n in "abcd")
    assert set(cycles({a, b, c, d}, {(a, b), (b, c), (c, a), (c, d)}).keys()) == {a, b, c}
    assert cycles({a, b}, {(a, b)}) == {}


def test_the_flame_graph_shares_each_frame_among_its_callees():
    diff = _diff(loop=2002.0)
    flame = diff.flame
    names = {i: label.name for i, label in enumerate(flame.labels)}
    nodes = [(names[lab], parent, a, b) for parent, lab, a, b in flame.nodes]
    assert nodes[0][0] == "all" and nodes[0][2] == pytest.approx(diff.base_total)
    by_name = {n[0]: n for n in nodes}
    assert by_name["_PyEval_EvalFrameDefault"][1] == 0                 # the root's child
    assert by_name["perflab_known_loop"][2:] == (0.0, 2002.0)
    assert by_name["sqlite3VdbeExec"][2] == pytest.approx(1000.0)
    for index, (_name, _parent, a, b) in enumerate(nodes):
        children = [n for n in nodes if n[1] == index]
        assert sum(n[2] for n in children) <= a + 1e-6 and sum(n[3] for n in children) <= b + 1e-6


def _document(diff) -> StudyDocument:
    return StudyDocument(name="s", title="known loop", status="complete",
                         comparisons=[ComparisonRecord(base="A", new="B", metrics=[])], pathlength_diffs=[diff])


def test_every_format_shows_where_the_pathlength_went():
    diff = _diff(loop=2002.0)
    doc = _document(diff)
    markdown = render_markdown(doc)
    assert "#### Where the pathlength went" in markdown
    assert "| perflab_known_loop | perflab (its machine code) | (perflab machine code) | 0 | 2,002 | +2,002 | " \
        "[+2,002, +2,002] | +100.0% | yes |" in markdown
    html = render_html(doc)
    script = report.flame_script()
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in html and f"<script>{script}</script>" in html
    data = re.search(r'<script type="application/json" class="flame-data" data-target="flame">(.*?)</script>',
                     html, re.S).group(1)
    assert json.loads(data)["new"] == "B"
    exported = json.loads(render_json(doc))
    assert exported["pathlength_diffs"][0]["exclusive"][0]["function"] == "perflab_known_loop"


def test_a_function_name_cannot_close_the_script_it_sits_in():
    diff = _diff(loop=2002.0)
    diff.flame.labels[1].name = "</script><script>alert(1)</script>"
    html = render_html(_document(diff))
    assert "alert(1)</script>" not in html and "\\u003c/script\\u003e" in html


def test_a_study_without_per_function_counts_has_no_section_and_no_script():
    doc = _document(_diff(loop=2002.0))
    doc.pathlength_diffs = []
    assert "Where the pathlength went" not in render_markdown(doc)
    html = render_html(doc)
    assert "<script" not in html and "script-src" not in html


def test_a_page_generates_its_tables_of_where_the_pathlength_went_from_the_record():
    from perflab.errors import InputError
    from perflab.report.book.tables import make_table

    doc = _document(_diff(loop=2002.0))
    functions = make_table("pathlength-functions", doc, [])
    assert functions.columns[:5] == ["function", "library", "object", "A", "B"]
    assert functions.rows[0][:6] == ["perflab_known_loop", "perflab (its machine code)", "(perflab machine code)", "0",
                                     "2,002", "+2,002"]
    assert make_table("pathlength-libraries", doc, []).rows[0][0] == "perflab (its machine code)"
    assert make_table("pathlength-transactions", doc, []).rows == [["tx", "4", "1,170", "3,172", "+171.1%"]]
    doc.pathlength_diffs = []
    with pytest.raises(InputError, match="no per-function counts"):
        make_table("pathlength-inclusive", doc, [])

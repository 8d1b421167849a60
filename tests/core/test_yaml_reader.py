"""The fast YAML reader (libyaml's C parser, perflab/workload/fast_yaml.py) builds what ruamel's
pure-Python round-trip reader builds: the same values and the same line and column of every
map, list, key, value and item -- the positions every file:line message is made of -- on every
YAML file of the repository and on the corners of YAML a workload file may use."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError

from perflab.workload import fast_yaml
from perflab.workload.loader import plain

REPO = Path(__file__).resolve().parents[2]
FILES = sorted(p for d in ("examples", "tests", "docs", "bench") for p in (REPO / d).rglob("*.yaml"))


def pure(text: str):
    return YAML(typ="rt").load(text)


def positions(data, path=()) -> dict:
    """Every collection's line and column and its keys' and items' positions, by path. (Not the
    value's position beside each key: nothing reads it, and the parsers place the value of an
    empty key differently -- at the colon, or at the next line.)"""
    found = {}
    if isinstance(data, (CommentedMap, CommentedSeq)):
        found[path] = (data.lc.line, data.lc.col, {k: v[:2] for k, v in (data.lc.data or {}).items()})
        for key, value in (data.items() if isinstance(data, CommentedMap) else enumerate(data)):
            found.update(positions(value, path + (key,)))
    return found


def outcome(read, text: str):
    try:
        data = read(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        return ("error", type(exc).__name__, mark.line if mark is not None else None, exc.problem)
    return ("ok", plain(data), positions(data))


def test_the_c_parser_is_installed():
    # a dependency (pyproject.toml): without it the reader is right but ten times slower
    assert fast_yaml.c_parser()


def test_the_repository_has_yaml_files_to_compare():
    assert len(FILES) > 40 and any(p.parts[-2:] == ("postgres", "debit-credit.yaml") for p in FILES)


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_yaml_file_reads_the_same(path):
    text = path.read_text()
    assert outcome(fast_yaml.load_round_trip, text) == outcome(pure, text)


CORNERS = {
    "anchors and aliases": "a: &x {k: 1, l: [1, 2]}\nb: *x\nc: &s hello\nd: *s\ne: &l [1, *x]\nf: *l\n",
    "merge key": "base: &b {x: 1, y: 2}\nnew:\n  <<: *b\n  y: 3\n",
    "timestamps": "a: 2024-01-01\nb: 2024-01-01T10:00:00Z\nc: 2024-01-01 10:00:00.5\n",
    "numbers": "a: 0o17\nb: 0x1f\nc: 1_000\nd: 010\ne: 1e3\nf: .inf\ng: -1.5\nh: +3\ni: -.inf\n",
    "booleans and nulls (YAML 1.2: yes is a string)": "a: true\nb: True\nc: yes\nd: off\ne: ~\nf:\ng: null\n",
    "YAML 1.1 named": "%YAML 1.1\n---\nx: yes\ny: 010\n",
    "block and quoted strings": "a: |\n  line one\n  line two\nb: >\n  folded\n  text\nc: 'single'\nd: \"dq\\n\"\n",
    "tagged numbers": "b: !!float 1\nc: !!int '7'\nd: !!bool 'true'\n",
    "set and omap": "a: !!set {x, y}\nb: !!omap [x: 1, y: 2]\n",
    "keys that are not strings": "1: a\n2.5: b\ntrue: c\n~: d\n'3': e\n",
    "a complex key": "? [a, b]\n: c\n",
    "comments": "# top\na: 1 # eol\n# between\nb: [1, # in flow\n  2]\n",
    "nesting": "s:\n  - {a: 1}\n  - [1, [2, {b: c}]]\n  -\n  - - x\n    - y\n",
    "unicode and a byte order mark": "\ufeffname: \"caf\u00e9 \u2603\"\nk: \u00fcber\n",
    "an empty document": "",
    "a repeated key": "a: 1\nb: 2\na: 3\n",
    "a repeated key deep down": "x:\n  y: [{a: 1, a: 2}]\n",
    "two documents": "a: 1\n---\nb: 2\n",
    "an undefined alias": "a: *nope\n",
    "a tab": "a: 1\n\tb: 2\n",
    "bad indentation": "a:\n  b: 1\n c: 2\n",
    "an unclosed list": "a: [1, 2\nb: 3\n",
    "an unclosed quote": "a: \"abc\nb: 1\n",
    "a colon in a plain scalar of a flow map (libyaml refuses it, YAML 1.2 does not)":
        "monitor: {agent: http://h:1, node_exporter: http://h:2}\n",
    "mapping values where they are not allowed": "a: b: c\n",
}


@pytest.mark.parametrize("text", CORNERS.values(), ids=CORNERS.keys())
def test_corners_read_the_same(text):
    assert outcome(fast_yaml.load_round_trip, text) == outcome(pure, text)


def test_not_a_number_reads_as_not_a_number():
    assert math.isnan(fast_yaml.load_round_trip("a: .nan\n")["a"])


def test_an_explicit_string_tag_is_a_string():
    # the one difference (fast_yaml's docstring): libyaml reads `!!str 5` as the string "5"; the
    # pure reader leaves a tagged object no field of a workload takes
    assert plain(fast_yaml.load_round_trip("a: !!str 5\n")) == {"a": "5"}


def test_the_events_are_the_same():
    # what loader._check_structure reads of them: their kinds, anchors, aliases and lines (not a
    # scalar's text: ruamel's own scanner marks the folds of a folded scalar in it)
    text = (REPO / "examples" / "postgres" / "debit-credit.yaml").read_text() + CORNERS["anchors and aliases"]

    def shape(events):
        return [(type(e).__name__, getattr(e, "anchor", None), e.start_mark.line) for e in events]

    assert shape(fast_yaml.events(text)) == shape(YAML(typ="rt").parse(text))

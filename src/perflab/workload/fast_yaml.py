"""YAML read by libyaml's C parser where it is installed, built as ruamel's round-trip loader builds it.

Why: ruamel.yaml's round-trip reader (it keeps the line of every key and item, which the
loader's file:line messages need) scans in pure Python, about a quarter of a millisecond per
list entry: a generated workload of 2,000 transactions took seconds to validate, 10,000 took
ten. ruamel.yaml.clib (a dependency: libyaml, compiled) parses and composes the node tree in C;
`_Builder` makes from it the CommentedMap and CommentedSeq the round-trip constructor makes, with
the same line and column of every key, value and item (from the nodes' marks), the same YAML 1.2
scalars (ruamel's own resolver and constructors) and the same refusal of a repeated key. Not
kept: the comments, which nothing reads. What libyaml refuses (it is YAML 1.1's parser, stricter
here and there: a plain `http://h:1` in a flow mapping) ruamel's reader decides, so an error is
always ruamel's, word for word. The one difference: an explicit `!!str 5` is the string "5" (the
pure reader leaves a tagged object that no field takes). Without the C extension (a platform
with no wheel) and for a document that names its YAML version, the pure-Python reader runs.
tests/core/test_yaml_reader.py holds the two readers to the same result.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq, LineCol
from ruamel.yaml.constructor import RoundTripConstructor
from ruamel.yaml.error import YAMLError
from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode
from ruamel.yaml.resolver import _DEFAULT_YAML_VERSION, VersionedResolver
from ruamel.yaml.util import LazyEval

try:   # ruamel.yaml.clib (a dependency), or ruamel.yaml.clibz (ruamel.yaml[libyaml])
    from _ruamel_yaml import CParser  # type: ignore[import-not-found]
except ImportError:   # pragma: no cover - a platform without the wheel
    try:
        from _ruamel_yaml_clibz import CParser  # type: ignore[import-not-found]
    except ImportError:
        CParser = None


_VERSION_DIRECTIVE = re.compile(r"^%YAML", re.MULTILINE)


def c_parser() -> bool:
    """Whether libyaml's C parser is installed (ruamel.yaml.clib)."""
    return CParser is not None


if CParser is not None:
    class _CRoundTripLoader(CParser, RoundTripConstructor, VersionedResolver):
        """The C parser's nodes, ruamel's round-trip constructor and its YAML 1.2 resolver in one
        object, as ruamel's own YAML.load joins a C parser to a constructor (main.py's XLoader)."""

        comment_handling = None           # what RoundTripConstructor asks of its loader
        allow_duplicate_keys = False
        # The resolver asks for the version of every scalar through a property that tries two
        # missing attributes first (two exceptions a scalar, a third of the reading time); a
        # document that names its version (%YAML) is read by the pure-Python reader instead.
        processing_version = _DEFAULT_YAML_VERSION

        def __init__(self, text: str) -> None:
            CParser.__init__(self, text)
            self._parser = self._composer = self
            RoundTripConstructor.__init__(self, loader=self)
            VersionedResolver.__init__(self, version=None, loadumper=self)
            # ruamel compiles its resolver's patterns lazily behind a proxy whose every `match`
            # is two attribute look-ups in Python; the resolver's table, with the patterns
            # themselves (the same regular expressions), is built once per document here.
            table = self.versioned_resolver
            for resolvers in table.values():
                resolvers[:] = [(tag, regexp.lazy_self() if isinstance(regexp, LazyEval) else regexp)
                                for tag, regexp in resolvers]


def _pure(text: str) -> bool:
    """Read by the pure-Python reader: no C parser, or a %YAML directive (whose version the C
    parser does not hand to the resolver: YAML 1.1's yes/no booleans would be lost)."""
    return CParser is None or _VERSION_DIRECTIVE.search(text) is not None


def load_round_trip(text: str) -> Any:
    """The document as ruamel's round-trip loader builds it (CommentedMap, line numbers kept)."""
    if _pure(text):
        return YAML(typ="rt").load(text)
    loader = _CRoundTripLoader(text)
    with collector_paused():
        try:
            try:
                node = loader.get_single_node()
            except YAMLError:
                # libyaml is YAML 1.1's parser: stricter than ruamel's 1.2 here and there (a plain
                # `http://h:1` in a flow mapping); what it refuses, ruamel's reader decides, with
                # its own message and line.
                return YAML(typ="rt").load(text)
            if node is None:
                return None
            try:
                return _Builder(loader).build(node)
            except _Unusual:
                return loader.construct_document(node)
        finally:
            loader.dispose()


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a file's objects are made (and back as it
    was after). Each of its passes walks every object made so far: they were 60% of the time
    to read and validate a study of 10,000 configurations. What is made here holds no cycle the
    reference counts miss for long, and its size is bounded by the file's (PERFLAB_MAX_FILE_BYTES)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def _positions(collection: Any, node: Any) -> dict[Any, list[int]]:
    """Set a collection's line and column (its `lc`, as the round-trip constructor sets it) and
    return the table of its keys' or items' positions to fill (the LineCol's data: what
    lc.key(), lc.value() and lc.item() read)."""
    lc = LineCol()
    lc.line, lc.col = node.start_mark.line, node.start_mark.column
    lc.data = {}
    setattr(collection, LineCol.attrib, lc)
    return lc.data


class _Unusual(Exception):
    """A node the plain builder leaves to ruamel's constructor: the whole document is built by it."""


_STR, _MAP, _SEQ = "tag:yaml.org,2002:str", "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"


class _Builder:
    """The round-trip constructor's result for the plain documents workload and study files are
    (string keys, maps, lists and scalars), built in one walk of the nodes.

    Why not ruamel's constructor alone: it spends two thirds of the reading time on comment
    handling, tag objects and generators a file without comments does not need (a study of
    10,000 configurations: 0.9 s of 1.2). This walk builds the same CommentedMap and
    CommentedSeq with the same line and column of every key, value and item (what
    loader.line_of reads); every scalar that is not a string is still built by ruamel (numbers,
    booleans, null, timestamps, explicit tags); anything else -- a merge key (<<), a key that is
    not a string, a repeated key (ruamel's message names both), a tagged map or list -- makes
    ruamel's constructor build the whole document instead, so the result is always ruamel's.
    """

    def __init__(self, loader: Any) -> None:
        self.loader = loader
        self.built: dict[int, Any] = {}   # anchored nodes, built once (an alias is the same object)

    def build(self, node: Any) -> Any:
        if node.anchor is not None and id(node) in self.built:
            return self.built[id(node)]
        tag = node.ctag
        suffix = tag.suffix if tag.handle is None else None
        if isinstance(node, ScalarNode):
            value = node.value if suffix == _STR else self.loader.construct_object(node, deep=True)
        elif isinstance(node, MappingNode) and suffix == _MAP:
            value = CommentedMap()
            positions = _positions(value, node)
            if node.anchor is not None:
                self.built[id(node)] = value
            for key_node, value_node in node.value:
                key_tag = key_node.ctag
                if not isinstance(key_node, ScalarNode) or key_tag.handle is not None or key_tag.suffix != _STR:
                    raise _Unusual()
                key = key_node.value
                if key in value:
                    raise _Unusual()
                positions[key] = [key_node.start_mark.line, key_node.start_mark.column,
                                  value_node.start_mark.line, value_node.start_mark.column]
                value[key] = self.build(value_node)
        elif isinstance(node, SequenceNode) and suffix == _SEQ:
            value = CommentedSeq()
            positions = _positions(value, node)
            if node.anchor is not None:
                self.built[id(node)] = value
            for i, child in enumerate(node.value):
                value.append(self.build(child))
                positions[i] = [child.start_mark.line, child.start_mark.column]
        else:
            raise _Unusual()
        if node.anchor is not None:
            self.built[id(node)] = value
        return value


def events(text: str) -> Iterator[Any]:
    """The document's parser events (no node is built): the C parser's where installed."""
    if _pure(text):
        yield from YAML(typ="rt").parse(text)
        return
    parser = CParser(text)
    try:
        found = []
        while parser.check_event():
            found.append(parser.get_event())
    except YAMLError:   # what libyaml refuses, ruamel's parser decides (load_round_trip)
        found = list(YAML(typ="rt").parse(text))
    finally:
        parser.dispose()
    yield from found

"""An HTTP transaction's request as the compiled loop sends it (drive/load/loop/proto_http.c):
the bytes the lean client sends (http_request.py's encode_request), its `{placeholders}` left as
places the loop fills with each transaction's parameters.

How: the request is rendered once here with a marker for each parameter -- a word of letters
and digits no template holds, which str(), json.dumps, Latin-1 and urlsplit all leave as it is
-- and cut at the markers. Where a marker landed says how its value is written there: in the
head (path, query, headers) as str() in Latin-1; in a plain body as str() in UTF-8; in a JSON
body as a whole JSON value when a string was the placeholder alone (fill() keeps the value's
type then), else inside the string, escaped. The loop writes the head, the body's length and the
body (encode_request's order). A request without placeholders is sent as pre-encoded bytes.

What the loop cannot place as the Python path would is refused with the reason (the workload
takes the Python path, saying it): a value whose text a head cannot carry, a path whose value
could change how the URL splits ('#', whitespace, a URL of its own), extraction anywhere in the
workload (a later request's values would come from a response).
"""

from __future__ import annotations

import re
import secrets
from typing import Any

from perflab.drive.adapters.http_request import PreparedRequest, encode_request
from perflab.drive.load.native_params import ENC_HEAD, ENC_JSON, ENC_JSON_STR, ENC_TEXT, texts, values_of
from perflab.workload.model import ParamSpec

Part = bytes | tuple[int, int]


class Refused(Exception):
    """Why the compiled loop cannot send this request as the Python path would."""


def _path_value_ok(value: Any) -> bool:
    # urlsplit cuts a URL at '#' and drops whitespace and control characters: such a value in the
    # path would be sent otherwise by the Python path than by plain concatenation
    return all(32 < ord(c) < 127 and c != "#" for c in str(value))


class _Marker(str):
    """A parameter's place: json.dumps writes its content (the whole-value marker: fill() put the
    value itself there, a string that was the placeholder alone), str() its inner marker (fill()
    put str(value) inside a string, a path or a header)."""

    inner: str

    def __str__(self) -> str:
        return self.inner


def _marker(whole: str, inner: str) -> _Marker:
    m = _Marker(whole)
    m.inner = inner
    return m


def _cut(data: bytes, wholes: dict[bytes, int], inners: dict[bytes, int], inner_encoding: int) -> list[Part]:
    """data cut at the markers: literal bytes and (parameter, encoding) places. A whole-value
    marker stands between the quotes json.dumps put around it, which the value's JSON replaces."""
    pattern = re.compile(b"|".join(re.escape(m) for m in [*wholes, *inners]))
    parts: list[Part] = []
    at = 0
    for match in pattern.finditer(data):
        start, end = match.span()
        word = match.group(0)
        if word in wholes:
            if data[start - 1:start] != b'"' or data[end:end + 1] != b'"':
                raise Refused("a JSON value's place is not where json.dumps writes a string")
            place: Part = (wholes[word], ENC_JSON)
            start, end = start - 1, end + 1
        else:
            place = (inners[word], inner_encoding)
        if start > at:
            parts.append(data[at:start])
        parts.append(place)
        at = end
    if at < len(data):
        parts.append(data[at:])
    return parts


def request_spec(request: PreparedRequest, host: str, base: str, params: dict[str, ParamSpec]) -> tuple:
    """proto_http.c's httptx_t of one request: (wire, head parts, body parts, idempotent,
    HEAD, statuses, expected). Raises Refused."""
    statuses = tuple(sorted(request.statuses)) if request.statuses else ()
    tail = (request.idempotent, request.method == "HEAD", statuses, request.expected)
    if request.fixed is not None:
        wire = encode_request(host, request.method, *request.fixed)
        return (wire, [], None, *tail)
    names = list(params)
    nonce = secrets.token_hex(8)
    wholes = {f"PLW{nonce}P{i}E": i for i in range(len(names))}
    inners = {f"PLM{nonce}P{i}E": i for i in range(len(names))}
    template = str([request.path, request.headers, request.json_body, request.body])
    if any(m in template for m in [*wholes, *inners]):  # (a template holding the random word: vanishingly rare)
        raise Refused("a request holds the loop's marker")
    if request.path.startswith("{"):
        raise Refused(f"{request.method} {request.path}: a path that begins with a placeholder")
    for name in names:
        values = values_of(params[name])
        if values is None:  # a number: digits and a sign, in any place
            continue
        if "{" + name + "}" in request.path and not all(_path_value_ok(v) for v in values):
            raise Refused(f"parameter {name} has a value the path cannot carry as the Python path sends it")
        if any("{" + name + "}" in str(v) for v in request.headers.values()) and \
                any(texts(v)[ENC_HEAD] is None for v in values):
            raise Refused(f"parameter {name} has a value a header cannot carry (not Latin-1)")
    places = {name: _marker(whole, inner) for name, whole, inner in zip(names, wholes, inners)}
    url, headers, body = request.render(places, base)
    head = encode_request(host, request.method, url, headers, None)
    assert head.endswith(b"\r\n\r\n")
    head_parts = _cut(head[:-2], {}, {m.encode(): i for m, i in inners.items()}, ENC_HEAD)
    body_parts = None
    if body is not None:
        body_parts = _cut(body, {m.encode(): i for m, i in wholes.items()}, {m.encode(): i for m, i in inners.items()},
                          ENC_JSON_STR if request.json_body is not None else ENC_TEXT)
    return (None, head_parts, body_parts, *tail)

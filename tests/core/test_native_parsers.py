"""The compiled loop's parsers alone (drive/load/loop/http_parse.c and pg_wire.c, through the
binding's parse_http and pg_messages): RFC 9112's framing rules, hostile heads and bodies, and
property-based input -- a response or a message stream cut at any points reads as it reads whole,
and no input crashes them. (The loop's own tests against servers are tests/net/.)"""

from __future__ import annotations

import struct

import programs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perflab.drive.load import native_http

pytestmark = programs.needs_compiled_loop()
# (HM_* in http_parse.h)
STATUS_LINE, CONTENT_LENGTH, CHUNK, TOO_LARGE, BARE_LF, TRANSFER_ENCODING, HEADER = 1, 2, 3, 4, 7, 8, 9


def parse(data: bytes | list[bytes], head_only: bool = False, eof: bool = False):
    """(result, status, keepalive, body, used, error, framing)"""
    pieces = [data] if isinstance(data, bytes) else data
    return native_http.http_loop.parse_http(pieces, head_only, eof)


def bytewise(data: bytes) -> list[bytes]:
    return [data[i:i + 1] for i in range(len(data))]


# --- what is a response -----------------------------------------------------------------------


@pytest.mark.parametrize("data, status, body, keepalive, framing", [
    (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", 200, b"hello", 1, "length"),
    (b"HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", 200, b"", 1, "length"),  # no reason phrase
    (b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", 200, b"ok", 0, "length"),  # 1.0: close unless kept alive
    (b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok", 200, b"ok", 1, "length"),
    (b"HTTP/1.1 200 OK\r\nConnection: Keep-Alive, Close\r\nContent-Length: 2\r\n\r\nok", 200, b"ok", 0, "length"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\nContent-Length: 5\r\n\r\nhello", 200, b"hello", 1, "length"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;a=b\r\nhello\r\n6 ; c\r\n world\r\n0\r\nT: x\r\n\r\n",
     200, b"hello world", 1, "chunked"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, Chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", 200, b"abc", 1, "chunked"),
    (b"HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n", 204, b"", 1, "none"),
    (b"HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n", 304, b"", 1, "none"),
    (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\nHTTP/1.1 201 Created\r\n"
     b"Content-Length: 1\r\n\r\nx", 201, b"x", 1, "length"),
    # 101 is final: no body, and the connection speaks something else after it
    (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n", 101, b"", 0, "none"),
    # a folded line continues a field the parser does not read: ignored
    (b"HTTP/1.1 200 OK\r\nX-Long: a\r\n  b\r\nContent-Length: 1\r\n\r\nz", 200, b"z", 1, "length"),
])
def test_well_formed_responses_read_the_same_whole_and_byte_by_byte(data, status, body, keepalive, framing):
    for pieces in ([data], bytewise(data)):
        result, got_status, got_keepalive, got_body, used, error, got_framing = parse(pieces)
        assert (result, got_status, got_body, got_keepalive, got_framing, error) == \
            ("done", status, body, keepalive, framing, 0), pieces[:3]
        assert used == len(data)


def test_a_body_until_the_close_ends_with_it_and_other_codings_last_mean_just_that():
    until_close = b"HTTP/1.1 200 OK\r\n\r\nhello"
    assert parse(until_close)[0] == "more"
    assert parse(until_close, eof=True)[:4] == ("done", 200, 0, b"hello")
    # "notchunked" is not chunked, and chunked not last frames nothing: the body runs to the close
    for te in (b"notchunked", b"chunked, gzip"):
        data = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: " + te + b"\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
        result, _, keepalive, body, _, error, framing = parse(data, eof=True)
        assert (result, keepalive, framing, error) == ("done", 0, "close", 0) and body.startswith(b"5\r\nhello")
    # Transfer-Encoding and Content-Length both: the coding frames it, the connection is not kept
    both = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"
    assert parse(both)[:4] == ("done", 200, 0, b"ok")
    # a connection cut before the end is an incomplete response, not a malformed one
    assert parse(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nhello", eof=True)[0::5] == ("error", 0)


def test_a_head_response_has_no_body_whatever_its_length_says():
    data = b"HTTP/1.1 200 OK\r\nContent-Length: 12345\r\n\r\n"
    assert parse(data, head_only=True)[:5] == ("done", 200, 1, b"", len(data))


def test_bytes_after_the_response_are_not_the_responses():
    data = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA"
    assert parse(data)[0] == "done" and parse(data)[4] == len(data) - 5


# --- what is not ------------------------------------------------------------------------------


@pytest.mark.parametrize("data, error", [
    (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello", CONTENT_LENGTH),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\nhello", CONTENT_LENGTH),
    (b"HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\nhello", CONTENT_LENGTH),
    (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", CONTENT_LENGTH),
    (b"HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\n", CONTENT_LENGTH),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n", CONTENT_LENGTH),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n", TRANSFER_ENCODING),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", TRANSFER_ENCODING),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chu nked\r\n\r\n", TRANSFER_ENCODING),
    (b"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", TRANSFER_ENCODING),
    # a bare LF ends a head line nowhere: malformed as it arrives, not a timeout
    (b"HTTP/1.1 200 OK\nContent-Length: 0\n\n", BARE_LF),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\n", BARE_LF),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n", BARE_LF),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\n0\r\n\r\n", BARE_LF),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXY0\r\n\r\n", CHUNK),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", CHUNK),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\r\n", CHUNK),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5x\r\nhello\r\n", CHUNK),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n", CHUNK),
    (b"HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n", HEADER),
    (b"HTTP/1.1 200 OK\r\nContent-Length : 5\r\n\r\nhello", HEADER),
    (b"HTTP/1.1 200 OK\r\n: empty name\r\n\r\n", HEADER),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n 6\r\n\r\nhello", HEADER),  # a folded framing field
    (b"HTTP/2 200 OK\r\n\r\n", STATUS_LINE),
    (b"HTTP/1.1 20 OK\r\n\r\n", STATUS_LINE),
    (b"HTTP/1.1 200OK\r\n\r\n", STATUS_LINE),
    (b"HTTP/1.1 099 Low\r\n\r\n", STATUS_LINE),
    (b"http/1.1 200 OK\r\n\r\n", STATUS_LINE),
    (b"\r\nHTTP/1.1 200 OK\r\n\r\n", STATUS_LINE),
])
def test_malformed_responses_are_refused_whole_and_byte_by_byte(data, error):
    for pieces in ([data], bytewise(data)):
        result = parse(pieces)
        assert (result[0], result[5]) == ("error", error), (pieces[:3], result)


def test_a_server_that_is_no_http_server_is_found_at_its_first_bytes():
    # no line end needed: an SSH or SMTP banner, a TLS record, a PostgreSQL message
    for banner in (b"SSH-2.0-OpenSSH", b"220 smtp", b"\x16\x03\x01\x02", b"E\x00\x00\x00\x08", b"HTTP/2"):
        assert parse(banner)[0::5] == ("error", STATUS_LINE), banner
    assert parse(b"H")[0] == parse(b"HTTP/1.")[0] == "more"  # a status line so far


def test_heads_and_trailers_are_capped_at_a_mebibyte():
    line = b"X-Pad: " + b"a" * 1000 + b"\r\n"
    head = b"HTTP/1.1 200 OK\r\n" + line * 1100 + b"Content-Length: 0\r\n\r\n"
    assert parse(head)[0::5] == ("error", TOO_LARGE)
    assert parse([head[i:i + 4096] for i in range(0, len(head), 4096)])[0::5] == ("error", TOO_LARGE)
    trailer = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n" + line * 1100 + b"\r\n"
    assert parse([trailer[i:i + 4096] for i in range(0, len(trailer), 4096)])[0::5] == ("error", TOO_LARGE)
    # endless interim responses are capped alike
    interim = b"HTTP/1.1 100 Continue\r\n\r\n" * 50_000
    assert parse(interim)[0::5] == ("error", TOO_LARGE)


# --- any input -------------------------------------------------------------------------------

TOKEN = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-", min_size=1, max_size=12)


@st.composite
def responses(draw):
    """A well-formed response: (bytes, status, body, framing)."""
    status = draw(st.sampled_from([200, 201, 202, 301, 404, 500, 503]))
    body = draw(st.binary(max_size=3000))
    framing = draw(st.sampled_from(["length", "chunked"]))
    headers = [f"{draw(TOKEN)}: {draw(TOKEN)}".encode() for _ in range(draw(st.integers(0, 6)))]
    headers = [h for h in headers if not h.lower().startswith((b"content-length", b"transfer-encoding",
                                                                b"connection"))]
    if framing == "length":
        headers.insert(draw(st.integers(0, len(headers))), b"Content-Length: %d" % len(body))
        payload = body
    else:
        headers.insert(draw(st.integers(0, len(headers))), b"Transfer-Encoding: chunked")
        sizes, at = [], 0
        while at < len(body):
            size = draw(st.integers(1, max(1, len(body) - at)))
            sizes.append(size)
            at += size
        chunks, at = [], 0
        for size in sizes:
            ext = draw(st.sampled_from([b"", b";x=1", b" ;q"]))
            chunks.append(b"%x" % size + ext + b"\r\n" + body[at:at + size] + b"\r\n")
            at += size
        trailer = draw(st.sampled_from([b"", b"T: v\r\n"]))
        payload = b"".join(chunks) + b"0\r\n" + trailer + b"\r\n"
    head = b"HTTP/1.1 %d Reason\r\n" % status + b"".join(h + b"\r\n" for h in headers) + b"\r\n"
    return head + payload, status, body, framing


def cut(data: bytes, points: list[int]) -> list[bytes]:
    edges = sorted({p % (len(data) + 1) for p in points} | {0, len(data)})
    return [data[a:b] for a, b in zip(edges, edges[1:])]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(responses(), st.lists(st.integers(0, 10_000), max_size=12))
def test_any_well_formed_response_cut_anywhere_reads_as_written(response, points):
    data, status, body, framing = response
    result = parse(cut(data, points))
    assert result[:4] == ("done", status, 1, body) and result[4] == len(data) and result[6] == framing


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.binary(max_size=400), responses().map(lambda r: r[0])), st.lists(st.integers(0, 400), max_size=8),
       st.lists(st.tuples(st.integers(0, 400), st.binary(min_size=1, max_size=3)), max_size=4))
def test_any_bytes_read_the_same_however_they_are_cut(data, points, flips):
    """Whatever arrives -- noise, or a response with bytes changed -- the parser's verdict, status
    and body do not depend on where the reads cut it."""
    mutated = bytearray(data)
    for at, new in flips:
        if mutated:
            i = at % len(mutated)
            mutated[i:i + len(new)] = new
    data = bytes(mutated)
    whole = parse(data, eof=True)
    assert whole[0] in ("done", "more", "error")
    assert parse(cut(data, points), eof=True) == whole
    if len(data) < 200:
        assert parse(bytewise(data), eof=True) == whole


# --- PostgreSQL's backend messages ---------------------------------------------------------------


def message(kind: bytes, body: bytes) -> bytes:
    return kind + struct.pack("!I", len(body) + 4) + body


def pg(pieces):
    return native_http.http_loop.pg_messages(pieces if isinstance(pieces, list) else [pieces])


def test_messages_the_loop_reads_keep_their_bodies_and_the_rest_are_skipped():
    stream = (message(b"R", b"\0\0\0\0") + message(b"S", b"a\0b\0") + message(b"K", b"\0" * 8) +
              message(b"D", b"x" * 100_000) + message(b"E", b"SERROR\0Mno\0\0") + message(b"Z", b"I"))
    for pieces in ([stream], [stream[i:i + 7] for i in range(0, len(stream), 7)]):
        got, result, used = pg(pieces)
        assert result == "more" and used == len(stream)
        assert got == [("R", b"\0\0\0\0", 4), ("S", None, 4), ("K", None, 8), ("D", None, 100_000),
                       ("E", b"SERROR\0Mno\0\0", 12), ("Z", b"I", 1)]


def test_a_long_error_is_kept_up_to_its_cap_and_a_huge_row_is_never_held():
    words = b"M" + b"w" * 200_000 + b"\0\0"
    got, _, _ = pg([message(b"E", words)[i:i + 65536] for i in range(0, len(words) + 5, 65536)])
    assert got == [("E", words[:65536], len(words))]
    # a DataRow of a gigabyte announced: read past without a byte kept (the reader asks for no memory)
    header = b"D" + struct.pack("!I", (1 << 30))
    got, result, used = pg([header, b"\0" * 1_000_000])
    assert got == [] and result == "partial" and used == 1_000_005


@pytest.mark.parametrize("data", [
    b"Z\0\0\0\x03",                         # a length that does not count itself
    b"D" + struct.pack("!I", (1 << 30) + 1),  # longer than any server sends
    message(b"x", b""),                     # no backend message has this type
    message(b"Z", b"II"),                   # ReadyForQuery is one byte of status
    message(b"1", b"?"),                    # ParseComplete has no body
    message(b"R", b"\0\0"),                 # Authentication starts with a 4-byte code
    b"HTTP/1.1 200 OK\r\n\r\n",             # not a PostgreSQL server
])
def test_impossible_messages_are_malformed(data):
    for pieces in ([data], bytewise(data)):
        assert pg(pieces)[1] == "bad", pieces[:3]


MESSAGES = st.one_of(
    st.tuples(st.just(b"Z"), st.sampled_from([b"I", b"T", b"E"])),
    st.tuples(st.sampled_from([b"1", b"2", b"3", b"n", b"I"]), st.just(b"")),
    st.tuples(st.sampled_from([b"D", b"T", b"C", b"S", b"A"]), st.binary(max_size=300)),
    st.tuples(st.sampled_from([b"E", b"N"]), st.binary(min_size=1, max_size=300)),  # fields, then a NUL at least
    st.tuples(st.just(b"R"), st.binary(min_size=4, max_size=40)),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(MESSAGES, max_size=12), st.lists(st.integers(0, 10_000), max_size=10))
def test_any_message_stream_cut_anywhere_reads_as_written(messages, points):
    stream = b"".join(message(kind, body) for kind, body in messages)
    got, result, used = pg(cut(stream, points))
    kept = {b"E", b"R", b"Z"}
    assert result == "more" and used == len(stream)
    assert got == [(kind.decode(), body if kind in kept else None, len(body)) for kind, body in messages]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300), st.lists(st.integers(0, 300), max_size=6))
def test_any_bytes_as_messages_read_the_same_however_they_are_cut(data, points):
    whole = pg(data)
    cuts = pg(cut(data, points))
    assert cuts[1] == whole[1] and cuts[0] == whole[0]

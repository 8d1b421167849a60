"""An HTTP transaction's requests as the workload states them, made ready to send and to judge.

`{name}` in a path, header or body is replaced by the transaction's parameters and the
simulated user's variables; values are extracted from a response (a JSON path, a regex group,
a header); status and body checks decide ok or error. A request with no `{placeholder}` is
rendered once, when the workload is loaded (its bytes for the lean client: see http_client.py).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import urlsplit

from perflab.drive.workers import Reply
from perflab.workload.model import Extract, HttpRequest

_TOKEN = re.compile(r"\{(\w+)\}")
_JSON_STEP = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]|\['([^']*)'\]")
# RFC 9110 9.2.2: a client may send these again when a connection closes before the response.
IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"})


class CheckFailed(Exception):
    pass


def fill(template: Any, values: dict[str, Any]) -> Any:
    """Replace {name} in strings (recursively in JSON bodies); unknown names stay as written."""
    if isinstance(template, str):
        whole = _TOKEN.fullmatch(template)
        if whole and whole.group(1) in values:
            return values[whole.group(1)]  # keep the value's JSON type
        return _TOKEN.sub(lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0), template)
    if isinstance(template, dict):
        return {k: fill(v, values) for k, v in template.items()}
    if isinstance(template, list):
        return [fill(v, values) for v in template]
    return template


def has_placeholder(template: Any) -> bool:
    """Whether `fill` could change the template (the same traversal: strings, dict values, lists)."""
    if isinstance(template, str):
        return _TOKEN.search(template) is not None
    if isinstance(template, dict):
        return any(has_placeholder(v) for v in template.values())
    if isinstance(template, list):
        return any(has_placeholder(v) for v in template)
    return False


def json_path(document: Any, path: str) -> Any:
    """$.a.b[0]['c d']: the dotted/indexed subset of JSONPath that extraction needs (one value,
    no wildcards or filters) -- a few lines, where a JSONPath library would bring a grammar."""
    node = document
    for match in _JSON_STEP.finditer(path[1:]):
        key, index, quoted = match.groups()
        try:
            node = node[int(index)] if index is not None else node[key if key is not None else quoted]
        except (KeyError, IndexError, TypeError):
            raise CheckFailed(f"{path}: nothing at {match.group(0)}") from None
    return node


def extract(rule: Extract, status: int, headers: Any, body: bytes) -> Any:
    if rule.header is not None:
        value = headers.get(rule.header)
        if value is None:
            raise CheckFailed(f"no {rule.header} header")
        return value
    text = body.decode("utf-8", "replace")
    if rule.regex is not None:
        match = re.search(rule.regex, text)
        if match is None:
            raise CheckFailed(f"regex {rule.regex!r} found nothing")
        return match.group(1) if match.groups() else match.group(0)
    try:
        document = json.loads(text)
    except ValueError:
        raise CheckFailed("response is not JSON") from None
    assert rule.json_path is not None  # an Extract has exactly one of header, regex, json_path (Extract._one)
    return json_path(document, rule.json_path)


def encode_request(host: str, method: str, url: str, headers: dict[str, str], body: bytes | None) -> bytes:
    """One HTTP/1.1 request as the lean client sends it (keep-alive is HTTP/1.1's default)."""
    parts = urlsplit(url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host}", *(f"{k}: {v}" for k, v in headers.items())]
    if body is not None:
        lines.append(f"Content-Length: {len(body)}")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return head + body if body else head


@dataclass
class PreparedRequest:
    """One request of a transaction, with what can be worked out before the run."""

    method: str
    path: str
    headers: dict[str, str]
    json_body: Any
    body: str | None
    statuses: set[int] | None
    expect_body: str | None
    extract: dict[str, Extract]
    # (url, headers, body) when nothing in them is a {placeholder}: rendered once, here
    fixed: tuple[str, dict[str, str], bytes | None] | None = None
    # the lean client's bytes of `fixed`
    wire: bytes | None = None
    expected: bytes | None = None  # expect_body, encoded
    plain: bool = False  # no expect_status, no expect_body: any 2xx or 3xx passes (`problem`)

    @classmethod
    def of(cls, request: HttpRequest, default_headers: dict[str, str], base: str) -> PreparedRequest:
        statuses = request.expect_status
        if isinstance(statuses, int):
            statuses = [statuses]
        prepared = cls(request.method.upper(), request.path, {**default_headers, **request.headers},
                       request.json_body, request.body, set(statuses) if statuses else None, request.expect_body,
                       cast(dict[str, Extract], request.extract))  # HttpRequest._paths made each string an Extract
        parts = (prepared.path, prepared.headers, prepared.json_body, prepared.body)
        if not any(has_placeholder(part) for part in parts):
            prepared.fixed = prepared.render({}, base)
        if request.expect_body is not None:
            prepared.expected = request.expect_body.encode()
        prepared.plain = not prepared.statuses and prepared.expected is None
        return prepared

    @property
    def idempotent(self) -> bool:
        return self.method in IDEMPOTENT

    def render(self, values: dict[str, Any], base: str) -> tuple[str, dict[str, str], bytes | None]:
        """(url, headers, body) with the values filled in."""
        path = str(fill(self.path, values))
        url = path if path.startswith(("http://", "https://")) else base + path
        headers = {k: str(fill(v, values)) for k, v in self.headers.items()}
        body = None
        if self.json_body is not None:
            body = json.dumps(fill(self.json_body, values)).encode()
            headers.setdefault("Content-Type", "application/json")
        elif self.body is not None:
            body = str(fill(self.body, values)).encode()
        return url, headers, body

    def problem(self, status: int, body: bytes) -> str | None:
        """Why the response fails the checks, or None."""
        if (status not in self.statuses) if self.statuses else not (200 <= status < 400):
            return f"HTTP {status} from {self.method} {self.path}"
        if self.expected is not None and self.expected not in body:
            return f"{self.method} {self.path}: body lacks {self.expect_body!r}"
        return None

    def check(self, status: int, body: bytes) -> None:
        problem = self.problem(status, body)
        if problem is not None:
            raise CheckFailed(problem)

    def reply(self, status: int, body: bytes, first: float) -> Reply:
        """The Reply of a one-request transaction without extraction (the lean fast path)."""
        problem = self.problem(status, body)
        return Reply(True, None, first) if problem is None else Reply(False, problem[:500], first)

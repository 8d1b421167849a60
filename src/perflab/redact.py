"""Secrets kept out of everything perflab writes or prints: shown as `***`.

A workload may hold a password (a PostgreSQL DSN `postgresql://u:secret@h/db` or
`... password=secret ...`, PGPASSWORD in a target's `env:`, an Authorization header, the
monitor agent's token), and a SUT's error message may quote the DSN back. The run itself uses
the workload model, untouched; only what is recorded is redacted:

* `perflab.records` (run.json, study.json, and the catalog row, which is made from the run
  record) redact every field of every record as it is built or assigned;
* `perflab.drive.load.recorder` redacts each transaction's error text (transactions.parquet);
* `perflab.safe_text` redacts every user or server string shown on a terminal or written into
  report.md and report.html.

Two rules: a value under a secret-looking key (password, passwd, secret, token, api key,
authorization; `token_env`, which names a variable, is not one) is masked whole, and in any
text a URL's password and a `password=...` / `"password": "..."` pair are masked.
"""

from __future__ import annotations

import functools
import re
from typing import Any

MASK = "***"

_SECRET_WORD = r"(?:password|passwd|secret|token|api[_-]?key|authorization)"
_SECRET_KEY = re.compile(rf"{_SECRET_WORD}", re.IGNORECASE)
# scheme://user:PASSWORD@host -- the password runs to the authority's last "@"
_URL_PASSWORD = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/?#@]*:)([^\s/?#]*)(@)")
# password=secret, PGPASSWORD=secret, ?token=x&..., password = 'a b'
_KEY_VALUE = re.compile(rf"""(\b[\w.-]*{_SECRET_WORD}[\w.-]*\s*=\s*)('[^']*'|"[^"]*"|[^\s'",;&)]+)""",
                        re.IGNORECASE)
# 'password': 'secret', "token": "x" (a dict's repr or JSON quoted in a message)
_QUOTED_PAIR = re.compile(rf"""(['"][\w.-]*{_SECRET_WORD}[\w.-]*['"]\s*:\s*)('[^']*'|"[^"]*")""", re.IGNORECASE)


@functools.lru_cache(maxsize=4096)
def _secret_name(key: str) -> bool:
    return bool(_SECRET_KEY.search(key)) and not key.lower().endswith("_env")


def is_secret_key(key: Any) -> bool:
    """A mapping key whose value is a secret (PGPASSWORD, password, api_key, Authorization,
    token), not a key naming where a secret is (token_env)."""
    return isinstance(key, str) and _secret_name(key)


def redact_text(text: str) -> str:
    """Passwords in free text (a DSN, a command line, an error message) replaced by ***."""
    if not text or not any(c in text for c in "=:"):
        return text
    text = _URL_PASSWORD.sub(lambda m: m.group(1) + (MASK if m.group(2) else "") + m.group(3), text)
    text = _KEY_VALUE.sub(lambda m: m.group(1) + MASK, text)
    return _QUOTED_PAIR.sub(lambda m: m.group(1) + repr(MASK) if m.group(2)[0] == "'" else m.group(1) + f'"{MASK}"',
                            text)


_PLAIN = (int, float, bool, type(None))


def redact(value: Any) -> Any:
    """`value` with every secret masked: mappings by key and by text, strings by text, lists and
    tuples item by item, pydantic models field by field (a copy, when something changed; a model
    with a true `redacts_itself` attribute, perflab's records, is already clean).
    Anything else is returned as it is; so is a value with nothing to mask (the same object)."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        if all(type(v) in _PLAIN for v in value.values()) and not any(map(is_secret_key, value)):
            return value   # a row of numbers (per-interval data: thousands of them)
        out = {k: (MASK if is_secret_key(k) and v not in (None, "") and not isinstance(v, (dict, list))
                   else redact(v)) for k, v in value.items()}
        return value if all(_same(out[k], value[k]) for k in value) else out
    if isinstance(value, (list, tuple)):
        if all(type(v) in _PLAIN for v in value):   # per-interval columns: thousands of numbers
            return value
        items = [redact(v) for v in value]
        return value if all(_same(a, b) for a, b in zip(items, value)) else type(value)(items)
    fields = getattr(type(value), "model_fields", None)
    if fields is not None and hasattr(value, "model_copy") and not getattr(value, "redacts_itself", False):
        update = {}
        for name in fields:
            old = getattr(value, name, None)
            new = MASK if is_secret_key(name) and isinstance(old, str) and old else redact(old)
            if not _same(new, old):
                update[name] = new
        return value.model_copy(update=update) if update else value
    return value


def _same(new: Any, old: Any) -> bool:
    return new is old or (isinstance(new, str) and isinstance(old, str) and new == old)

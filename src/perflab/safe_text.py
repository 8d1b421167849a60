"""User- and server-supplied text, made safe to show.

Names, labels, descriptions, error messages from a SUT and values quoted back in an error
message come from outside perflab. On a terminal they must not be read as rich markup (`[/x]`
raised an exception, `[bold]` vanished) or reach the terminal as control sequences (ESC[2J
clears the screen, OSC 8 hides a hyperlink); in Markdown they must not become markup. Each
output format escapes with one function here.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from rich.console import Console
from rich.markup import escape as _rich_escape

from perflab.redact import redact_text

# C0 and C1 control characters, DEL; tab and newline are handled by the caller's context.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_LINE_BREAKS = re.compile(r"[\r\n\t]")


def visible(text: object, one_line: bool = True) -> str:
    """Control characters as \\xNN escapes (and line breaks too, for one-line fields); passwords
    in it (a DSN quoted in an error message) as *** (perflab.redact)."""
    s = redact_text(str(text))
    s = _CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", s)
    if one_line:
        s = _LINE_BREAKS.sub(lambda m: {"\n": "\\n", "\r": "\\r", "\t": " "}[m.group(0)], s)
    return s


def terminal(text: object, one_line: bool = True) -> str:
    """For rich: control characters escaped, markup characters made literal."""
    return _rich_escape(visible(text, one_line))


def console(stderr: bool = False, **kwargs: Any) -> Console:
    """A rich Console for perflab's output: markup is kept for perflab's own literals (user text
    goes through `terminal()`), emoji codes are not replaced (":smile:" in a label prints as
    itself). Piped or captured output is not squeezed to 80 columns: run ids and paths stay whole."""
    stream = sys.stderr if stderr else sys.stdout
    if "width" not in kwargs and kwargs.get("file") is None and not stream.isatty():
        kwargs["width"] = 200
    return Console(stderr=stderr, emoji=False, **kwargs)

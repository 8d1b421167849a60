"""Load workload (and study) files: YAML with line numbers in, validated models out.

Every problem becomes one InputError naming the file, the line, the field and what was
expected, so the CLI can print it and exit 2. ruamel.yaml's round-trip loader keeps the line
and column of every key and list item; pydantic reports the path of the failing field; this
module joins the two.
"""

from __future__ import annotations

import importlib.util
import json
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import (
    AliasEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
)
from ruamel.yaml.reader import Reader

from perflab import limits
from perflab.errors import InputError
from perflab.extras import check
from perflab.files import read_text_file
from perflab.tools import find_tool
from perflab.workload.checks import LocatedError, check_references
from perflab.workload.fast_yaml import events as yaml_events
from perflab.workload.fast_yaml import load_round_trip
from perflab.workload.kinds import KINDS
from perflab.workload.model import (
    CommandTarget,
    HttpTarget,
    PostgresTarget,
    PythonTarget,
    Workload,
)
from perflab.workload.thinktime import EmpiricalThink

M = TypeVar("M", bound=BaseModel)


def read_yaml(path: Path) -> Any:
    """Parse a workload or study file keeping positions: the one reader of both.

    Safe on any input: only a regular file no larger than PERFLAB_MAX_FILE_BYTES is read (a
    FIFO, a device or a directory is refused before reading); control characters, nesting
    deeper than MAX_YAML_DEPTH and aliases that expand beyond MAX_YAML_NODES are refused
    before the document is built. Every problem is one InputError naming the line.

    The last document read is kept: a file read again unchanged (`perflab validate` reads a
    study to tell it from a workload, then the study loader reads it) is not parsed again. The
    document returned is shared: read it, never change it (plain() copies).
    """
    text = read_text_file(Path(path))
    if _LAST_READ and _LAST_READ[0][0] == text:
        return _LAST_READ[0][1]
    bad = Reader.NON_PRINTABLE.search(text)
    if bad is not None:
        raise InputError(f"control character U+{ord(bad.group()):04X} is not allowed in YAML "
                         f"(write it as an escape in a double-quoted string)", file=path,
                         line=text.count("\n", 0, bad.start()) + 1)
    try:
        _check_structure(text, path)
        data = load_round_trip(text)
    except InputError:
        raise
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise InputError(f"invalid YAML: {_one_line(problem)}", file=path, line=line) from None
    except YAMLError as exc:
        raise InputError(f"invalid YAML: {_one_line(str(exc))}", file=path) from None
    except Exception as exc:   # noqa: BLE001 - the parser's own failures on odd input (a bad tag's value)
        raise InputError(f"invalid YAML: {_one_line(f'{type(exc).__name__}: {exc}')}", file=path,
                         line=_line_of_bad_tagged_scalar(text)) from None
    if not isinstance(data, CommentedMap):
        raise InputError("expected a mapping of fields at the top level", file=path, line=1)
    _LAST_READ[:] = [(text, data)]
    return data


#: The last document read_yaml built, with its text.
_LAST_READ: list[tuple[str, CommentedMap]] = []


def _line_of_bad_tagged_scalar(text: str) -> int | None:
    """The line of the first explicitly tagged scalar (`!!float abc`) that cannot be constructed
    on its own: ruamel's constructors raise a plain ValueError without a position for those."""
    try:
        events = list(YAML(typ="rt").parse(text))
    except Exception:  # noqa: BLE001 - the document could not be parsed at all: no line to give
        return None
    for event in events:
        if isinstance(event, ScalarEvent) and event.tag and event.start_mark is not None:
            try:
                YAML(typ="rt").load(f"!<{event.tag}> {json.dumps(event.value)}")
            except Exception:  # noqa: BLE001 - this scalar is the one that fails
                return event.start_mark.line + 1
    return None


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _check_structure(text: str, path: Path) -> None:
    """Walk the parser's events (no document is built yet): refuse nesting deeper than
    MAX_YAML_DEPTH (ruamel's composer recurses per level) and aliases that expand to more than
    MAX_YAML_NODES nodes (a "billion laughs" of 300 bytes) or refer to a node that holds them."""
    max_depth, max_nodes = int(limits.MAX_YAML_DEPTH.value()), int(limits.MAX_YAML_NODES.value())
    open_nodes: list[list] = []          # [anchor, expanded size so far] per open collection
    sizes: dict[str, int] = {}           # anchor -> expanded size of its node
    expanded = 0
    for event in yaml_events(text):
        line = event.start_mark.line + 1 if event.start_mark is not None else None
        if isinstance(event, (MappingStartEvent, SequenceStartEvent)):
            open_nodes.append([event.anchor, 1])
            if len(open_nodes) > max_depth:
                raise InputError(f"nested more than {max_depth} levels deep", file=path, line=line)
            expanded += 1
        elif isinstance(event, (MappingEndEvent, SequenceEndEvent)):
            anchor, size = open_nodes.pop()
            if anchor is not None:
                sizes[anchor] = size
            if open_nodes:
                open_nodes[-1][1] += size
        elif isinstance(event, (ScalarEvent, AliasEvent)):
            if isinstance(event, AliasEvent):
                if any(node[0] == event.anchor for node in open_nodes):
                    raise InputError(f"the alias *{event.anchor} refers to a node that contains it", file=path,
                                     line=line)
                size = sizes.get(event.anchor, 1)
            else:
                size = 1
                if event.anchor is not None:
                    sizes[event.anchor] = 1
            expanded += size
            if open_nodes:
                open_nodes[-1][1] += size
        if expanded > max_nodes:
            raise InputError(f"aliases expand the document beyond {max_nodes:,} nodes (an alias bomb?)", file=path,
                             line=line)


def line_of(data: Any, loc: tuple) -> int | None:
    """The line (1-based) of the deepest node of `loc` that exists in the YAML document.

    pydantic paths can contain union tags ('sqlite', 'exponential', 'function-after[...]');
    elements that are not keys or indexes of the current node are skipped.
    """
    node, line = data, None
    for part in loc:
        if isinstance(node, CommentedMap) and part in node:
            line = _position(node.lc.key, part, node.lc.line) + 1
            node = node[part]
        elif isinstance(node, CommentedSeq) and isinstance(part, int) and 0 <= part < len(node):
            line = _position(node.lc.item, part, node.lc.line) + 1
            node = node[part]
        elif isinstance(node, (CommentedMap, CommentedSeq)) and line is None:
            line = node.lc.line + 1
    if line is None and isinstance(data, CommentedMap):
        line = data.lc.line + 1
    return line


def _position(lookup, part, fallback: int) -> int:
    """The line (0-based) ruamel recorded for a key or item; a key merged in (`<<: *base`)
    has none of its own: the line of the mapping it was merged into."""
    try:
        return lookup(part)[0]
    except (KeyError, IndexError, TypeError):
        return fallback


def _depth_found(data: Any, loc: tuple) -> int:
    node, depth = data, 0
    for part in loc:
        if isinstance(node, CommentedMap) and part in node:
            node, depth = node[part], depth + 1
        elif isinstance(node, CommentedSeq) and isinstance(part, int) and 0 <= part < len(node):
            node, depth = node[part], depth + 1
    return depth


def _field_path(data: Any, loc: tuple) -> str:
    """Dotted path of the parts of `loc` that are real keys or indexes (union tags dropped)."""
    node, parts = data, []
    for part in loc:
        if isinstance(node, CommentedMap) and part in node:
            parts.append(str(part))
            node = node[part]
        elif isinstance(node, CommentedSeq) and isinstance(part, int) and 0 <= part < len(node):
            parts.append(f"[{part}]")
            node = node[part]
        elif isinstance(part, str) and isinstance(node, CommentedMap) and not part[:1].isupper() and "[" not in part:
            # a missing or unknown key at this level: still part of what the user must fix
            known_tag = part in {"constant", "uniform", "exponential", "lognormal", "bactrian", "empirical",
                                 "closed", "open"} or part in KINDS
            if not known_tag:
                parts.append(part)
                node = None
    return ".".join(parts).replace(".[", "[")


def _describe(error: ErrorDetails, data: Any) -> str:
    kind, msg = error["type"], error["msg"]
    loc = error["loc"]
    if kind == "extra_forbidden":
        return f"unknown field {str(loc[-1])!r}"
    if kind == "missing":
        return "required field is missing"
    if kind == "union_tag_invalid":
        ctx = error.get("ctx", {})
        return f"unknown kind {ctx.get('tag')!r}; expected one of {ctx.get('expected_tags')}"
    if kind == "union_tag_not_found":
        return f"needs a `{error.get('ctx', {}).get('discriminator', 'kind')}` field saying which kind it is"
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
    value = error.get("input")
    if value is not None and not isinstance(value, (dict, list, CommentedMap, CommentedSeq)):
        return f"{msg} (got {value!r})"
    return msg


def _best_error(errors: list[ErrorDetails], data: Any) -> ErrorDetails:
    """pydantic reports one error per union member; show the one about what the user wrote."""

    def rank(e: ErrorDetails) -> tuple:
        return (_depth_found(data, e["loc"]), e["type"] not in ("missing", "extra_forbidden"), -len(e["loc"]))

    return max(errors, key=rank)


def plain(data: Any) -> Any:
    """Plain Python values from ruamel's round-trip types (which subclass float, int, str)."""
    if isinstance(data, dict):
        return {plain(k): plain(v) for k, v in data.items()}
    if isinstance(data, list):
        return [plain(v) for v in data]
    if isinstance(data, bool) or data is None:
        return data
    for kind in (int, float, str):
        if isinstance(data, kind):
            return kind(data)
    return data


def validate_model(model: type[M], data: Any, path: Path) -> M:
    try:
        return model.model_validate(plain(data))
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        error = _best_error(errors, data)
        field = _field_path(data, error["loc"]) or None
        raise InputError(_describe(error, data), file=path, line=line_of(data, error["loc"]), field=field) from None


def load_workload(path: Path | str, data: Any = None) -> Workload:
    """Read, validate and resolve a workload file. Raises InputError (exit 2) on any problem.
    `data`: the file as read_yaml read it already (`perflab validate` reads it once to tell a
    workload from a study)."""
    path = Path(path)
    if data is None:
        data = read_yaml(path)
    workload = validate_model(Workload, data, path)
    try:
        check_references(workload)
    except LocatedError as exc:
        raise InputError(str(exc), file=path, line=line_of(data, exc.loc), field=_field_path(data, exc.loc)) from None
    _resolve_files(workload, data, path)
    _resolve_services(workload, data, path)
    return workload


def _think_locations(workload: Workload):
    if workload.think is not None:
        yield ("think",), workload.think
    for i, script in enumerate(workload.scripts):
        for j, step in enumerate(script.steps):
            if step.think is not None:
                yield ("scripts", i, "steps", j, "think"), step.think


def _resolve_files(workload: Workload, data: Any, path: Path) -> None:
    """Check that everything the workload refers to outside itself exists."""
    base = path.parent
    for loc, think in _think_locations(workload):
        if isinstance(think, EmpiricalThink):
            try:
                think.load(base)
            except FileNotFoundError:
                raise InputError(f"think-time file not found: {think.file}", file=path,
                                 line=line_of(data, loc + ("file",)), field=".".join(map(str, loc)) + ".file") from None
            except (OSError, ValueError) as exc:
                raise InputError(str(exc), file=path, line=line_of(data, loc + ("file",)),
                                 field=".".join(map(str, loc)) + ".file") from None
    target = workload.target
    if isinstance(target, PythonTarget):
        extra = [str((base / p).resolve()) for p in target.path]
        for i, tx in enumerate(workload.transactions):
            module = tx.call_body().split(":")[0]
            if not _module_exists(module, extra + [str(base.resolve())]):
                raise InputError(f"module {module!r} not found (searched the workload's directory and target.path)",
                                 file=path, line=line_of(data, ("transactions", i, "call")), field=f"transactions[{i}].call")
    if isinstance(target, CommandTarget):
        if target.valgrind and shutil.which("valgrind") is None:
            raise InputError("valgrind is not installed (apt-get install valgrind)", file=path,
                             line=line_of(data, ("target", "valgrind")), field="target.valgrind")
        for i, tx in enumerate(workload.transactions):
            argv = tx.command if isinstance(tx.command, list) else shlex.split(tx.command)
            if not argv:
                raise InputError("empty command", file=path, line=line_of(data, ("transactions", i, "command")),
                                 field=f"transactions[{i}].command")
            exe = argv[0]
            if "{" in exe:
                continue
            if shutil.which(exe) is None and not (base / exe).exists():
                raise InputError(f"program {exe!r} not found on PATH", file=path,
                                 line=line_of(data, ("transactions", i, "command")), field=f"transactions[{i}].command")


def _resolve_services(workload: Workload, data: Any, path: Path) -> None:
    """Servers and load generators the workload names must exist before a run starts them."""
    base = path.parent
    target = workload.target

    def fail(message: str, loc: tuple) -> None:
        raise InputError(message, file=path, line=line_of(data, loc), field=".".join(map(str, loc)))

    _check_extras(workload, data, path)   # pgserver among them
    if workload.pathlength is not None and find_tool("valgrind") is None:
        fail("valgrind is not installed (apt-get install valgrind): it counts the pathlength", ("pathlength",))
    if isinstance(target, PostgresTarget) and target.server is not None and target.server.bin != "pgserver":
        if not (Path(target.server.bin) / "postgres").exists():
            fail(f"no PostgreSQL server in {target.server.bin} (e.g. apt-get install postgresql-15 for "
                 "/usr/lib/postgresql/15/bin)", ("target", "server", "bin"))
    service = workload.service
    if service is not None:
        exe = service.command[0]
        if "{" not in exe and shutil.which(exe) is None and not (base / exe).exists():
            fail(f"program {exe!r} not found on PATH", ("service", "command"))
        for dest, template in service.files.items():
            if not (base / template).exists():
                fail(f"template file not found: {template}", ("service", "files", dest))
    tools = {"pgbench": "pgbench (apt-get install postgresql-client-15)",
             "wrk": "wrk (apt-get install wrk)",
             "k6": "k6 (go install go.k6.io/k6@latest; perflab looks on PATH and in $(go env GOPATH)/bin)"}
    kind = workload.driver.kind
    if kind in tools and find_tool(kind) is None:
        fail(f"{tools[kind]} is not installed", ("driver", "kind"))


def _check_extras(workload: Workload, data: Any, path: Path) -> None:
    """The optional packages (pyproject's extras) the workload's features need must be installed:
    else one line naming the extra, at the field that asks for the feature (perflab.extras)."""
    target = workload.target
    needs: list[tuple[str, str, str, tuple]] = []   # module, extra, feature, where in the file
    if isinstance(target, PostgresTarget):
        needs.append(("asyncpg", "net", "a postgres target", ("target", "kind")))
        if target.server is not None and target.server.bin == "pgserver":
            needs.append(("pgserver", "net", "PostgreSQL from the pgserver wheel", ("target", "server", "bin")))
    if isinstance(target, HttpTarget) and workload.driver.kind == "native":
        if target.chosen_client() == "httptools":
            needs.append(("httptools", "net", "the httptools client", ("target", "client")))
        else:
            needs.append(("aiohttp", "net", "an http target", ("target", "kind")))
    if workload.monitor is not None:
        needs.append(("aiohttp", "net", "a SUT host's monitor", ("monitor",)))
        if workload.monitor.node_exporter is not None:
            needs.append(("prometheus_client", "net", "reading a Prometheus exporter", ("monitor", "node_exporter")))
    if workload.drivers is not None:
        needs.append(("ray", "ray", "drivers on several hosts (Ray, on this host and every node)",
                      ("drivers", "ray")))
    for module, extra, feature, loc in needs:
        check(module, extra=extra, feature=feature, file=path, line=line_of(data, loc),
              field=_field_path(data, loc) or ".".join(loc))


def _module_exists(module: str, extra_paths: list[str]) -> bool:
    saved = list(sys.path)
    sys.path[:0] = extra_paths
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False
    finally:
        sys.path[:] = saved

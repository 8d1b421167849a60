"""Cross-field checks of a workload: what one field says about another (names that refer to
other entries, a TLS option the chosen client lacks, a pgbench run the target cannot take).

pydantic validates each model on its own (workload/model.py); these run on the whole workload
after it, and raise LocatedError with the field's path so the loader can name the line.
"""

from __future__ import annotations

import json
import re
from urllib.parse import urlsplit

from perflab.errors import repeated, some_of
from perflab.workload.kinds import KINDS, words
from perflab.workload.model import (
    BatchBeside,
    BatchLoad,
    Choice,
    ClosedLoad,
    Constant,
    HttpTarget,
    OpenLoad,
    PostgresTarget,
    RandomInt,
    Service,
    TcpTarget,
    Workload,
)
from perflab.workload.thinktime import ConstantThink

# The target each external driver drives (what each target kind is: workload/kinds.py).
_DRIVER_TARGETS = {"pgbench": "postgres", "k6": "http", "wrk": "http"}


class LocatedError(ValueError):
    """A cross-reference error that knows which field it is about (for file:line messages)."""

    def __init__(self, loc: tuple, message: str):
        super().__init__(message)
        self.loc = loc


def check_references(workload: Workload) -> None:
    """Cross-field checks pydantic cannot locate precisely: names that refer to other entries.

    Raises LocatedError with the field path so the loader can point at the line.
    """
    names = [t.name for t in workload.transactions]
    _unique("transaction", "transactions", names)
    _unique("script", "scripts", [s.name for s in workload.scripts])
    known = set(names)
    scripts = {s.name for s in workload.scripts}
    for i, script in enumerate(workload.scripts):
        for j, step in enumerate(script.steps):
            if step.transaction not in known:
                raise LocatedError(
                    ("scripts", i, "steps", j, "transaction"),
                    f"unknown transaction {step.transaction!r}; defined: {some_of(names)}",
                )
    if workload.init_script is not None and workload.init_script not in scripts:
        raise LocatedError(("init_script",), f"unknown script {workload.init_script!r}; defined: "
                                             f"{some_of([s.name for s in workload.scripts])}")
    if sum(s.weight for s in workload.scripts if s.name != workload.init_script) <= 0:
        raise LocatedError(("scripts",), "at least one script needs a weight above 0")
    kind = KINDS.of(workload.target)
    if workload.service is not None and not kind.network:
        raise LocatedError(("service",), f"a service is the SUT of a network target ({words(KINDS.names(True))}), "
                                         f"not of a {kind.name} target")
    if isinstance(workload.load, ClosedLoad) and workload.load.batch is not None:
        _check_mixed(workload, workload.load.batch)
    if isinstance(workload.load, BatchLoad) and workload.driver.kind != "native":
        raise LocatedError(("driver", "kind"), "a job stream (load: {jobs, initiators}) is run by perflab's own "
                                               "driver: remove driver.kind or use a closed or open load")
    wanted = _DRIVER_TARGETS.get(workload.driver.kind)
    if wanted is not None and workload.target.kind != wanted:
        raise LocatedError(("driver", "kind"), f"{workload.driver.kind} drives a {wanted} target, "
                                               f"not a {workload.target.kind} one")
    if workload.driver.kind == "pgbench":
        _check_pgbench(workload)
    target = workload.target
    if isinstance(target, PostgresTarget) and target.server is not None and workload.service is not None:
        raise LocatedError(("service",), "target.server is already the SUT: give a service or target.server, not both")
    for i, tx in enumerate(workload.transactions):
        if tx.body_kind != kind.body:
            raise LocatedError(
                ("transactions", i, tx.body_kind),
                f"a {kind.name} target runs transactions with a `{kind.body}` body, not `{tx.body_kind}`",
            )
    if workload.driver.kind in ("k6", "wrk"):
        _check_http_tool(workload, workload.driver.kind)
    if isinstance(workload.target, HttpTarget):
        _check_tls(workload, workload.target)
    if workload.service is not None and workload.service.network is not None:
        _check_network_target(workload, workload.service)
    _check_remote(workload)
    if workload.pathlength is not None:
        _check_pathlength(workload)


def _unique(what: str, field: str, names: list[str]) -> None:
    """Names that must differ: the first one given again is located at its second entry's name,
    and the message names a few of the repeated ones and their count."""
    twice = repeated(names)
    if twice:
        first = min(twice, key=lambda n: twice[n][1])
        again = twice[first][1]
        others = f"; repeated names: {some_of(list(twice))}" if len(twice) > 1 else ""
        raise LocatedError((field, again, "name"), f"{what} name {first!r} is given again (first at "
                                                   f"{field}[{twice[first][0]}]){others}")


def _check_mixed(workload: Workload, batch: BatchBeside) -> None:
    """A job stream beside the users: its scripts exist, are not the users' logon, and leave the
    users a script of their own; perflab's own driver on one host runs both."""
    names = [s.name for s in workload.scripts]
    for i, name in enumerate(batch.scripts):
        if name not in names:
            raise LocatedError(("load", "batch", "scripts", i), f"unknown script {name!r}; defined: {some_of(names)}")
        if name == workload.init_script:
            raise LocatedError(("load", "batch", "scripts", i), f"{name!r} is the users' init script, not a job")
    chosen = set(batch.scripts)
    if sum(s.weight for s in workload.scripts if s.name in chosen) <= 0:
        raise LocatedError(("load", "batch", "scripts"), "at least one of the job stream's scripts needs a weight "
                                                         "above 0")
    if sum(s.weight for s in workload.scripts if s.name not in chosen and s.name != workload.init_script) <= 0:
        raise LocatedError(("load", "batch", "scripts"), "the users need a script of their own (weight above 0) "
                                                         "that the job stream does not run")
    if workload.driver.kind != "native" or workload.drivers is not None:
        raise LocatedError(("load", "batch"), "mixed work (users and a job stream) is run by perflab's own driver "
                                              "on one host: remove driver.kind and drivers, or load.batch")


def _check_pathlength(workload: Workload) -> None:
    # The kinds whose pathlength the counted pass counts say how (workload/kinds.py): an
    # in-process SUT inside its worker, a command's processes, a PostgreSQL server perflab starts.
    # An HTTP or TCP service's instructions for one request are not told apart from its other work.
    target = workload.target
    if KINDS.of(target).pathlength is None:
        raise LocatedError(("pathlength",), f"pathlength is counted for {words(KINDS.counted())} targets, not "
                                            f"{target.kind}: the instructions a server spends on one request are "
                                            f"not told apart from its other work")
    if isinstance(target, PostgresTarget):
        if target.server is None:
            raise LocatedError(("pathlength",), "a PostgreSQL target's pathlength is counted on a server perflab "
                                                "starts (target.server), not at a DSN")
        if workload.drivers is not None:
            raise LocatedError(("pathlength",), "pathlength is counted by perflab's driver on this host: remove "
                                                "drivers")


def _check_network_target(workload: Workload, service: Service) -> None:
    """A service in its own namespace is reached at its address there, nowhere else."""

    server = service.address
    target = workload.target
    hosts = (server, "{service_address}")
    if isinstance(target, TcpTarget) and target.unix is None and target.host not in hosts:
        raise LocatedError(("target", "host"), f"the service runs in its own network namespace at {server}: "
                                               f"target.host must be {server}")
    if isinstance(target, HttpTarget) and urlsplit(target.base_url).hostname not in hosts:
        raise LocatedError(("target", "base_url"), f"the service runs in its own network namespace at {server}: "
                                                   f"the base_url's host must be {server}")


def _check_tls(workload: Workload, target: HttpTarget) -> None:
    """TLS options that some clients cannot honour are refused, not ignored."""
    tls = target.tls
    if tls is not None and not target.base_url.startswith("https://"):
        raise LocatedError(("target", "tls"), "tls applies to an https:// base_url")
    if workload.driver.kind != "native":
        if tls is not None:
            raise LocatedError(("target", "tls"), f"{workload.driver.kind} makes its own TLS settings: target.tls is "
                                                  f"for perflab's driver (remove it, or use driver: native)")
        if target.connections == "per_transaction":
            raise LocatedError(("target", "connections"), f"{workload.driver.kind} keeps its connections open: "
                                                          f"per_transaction is perflab's driver's")
    if tls is not None and tls.session_resumption and target.chosen_client() != "httptools":
        raise LocatedError(("target", "tls", "session_resumption"),
                           "aiohttp cannot offer a saved TLS session on a new connection (asyncio's TLS takes none): "
                           "use client: httptools, whose TLS layer resumes sessions")


def _check_remote(workload: Workload) -> None:
    """A remote monitor measures a SUT perflab does not start; drivers on Ray run perflab's own
    driver against a network target."""
    started = workload.service is not None or getattr(workload.target, "server", None) is not None
    network = KINDS.of(workload.target).network
    if workload.monitor is not None:
        if not network:
            raise LocatedError(("monitor",), f"a {workload.target.kind} target runs in perflab's own processes, "
                                             "which perflab monitors itself: remove monitor")
        if started:
            raise LocatedError(("monitor",), "perflab starts this SUT (service or target.server) and monitors it "
                                             "itself: monitor is for a SUT on a host of its own")
    if workload.drivers is not None:
        if not network:
            raise LocatedError(("drivers",), f"drivers on other hosts drive a network target "
                                             f"({words(KINDS.names(True))}), "
                                             f"not a {workload.target.kind} one")
        if workload.driver.kind != "native":
            raise LocatedError(("drivers",), f"drivers on Ray run perflab's own driver, not {workload.driver.kind}")


def _check_pgbench(workload: Workload) -> None:
    """What pgbench can run: one transaction per script, random_int or numeric constant
    parameters, no think time (pgbench would count a \\sleep in the response time)."""

    if workload.init_script is not None:
        raise LocatedError(("init_script",), "pgbench has no logon script; remove init_script or use driver: native")
    if workload.think is not None and not (isinstance(workload.think, ConstantThink) and workload.think.value == 0):
        raise LocatedError(("think",), "pgbench runs without think time (it would count a sleep as response time)")
    for i, script in enumerate(workload.scripts):
        if len(script.steps) != 1:
            raise LocatedError(("scripts", i, "steps"), "pgbench runs one transaction per script")
        if script.steps[0].think is not None:
            raise LocatedError(("scripts", i, "steps", 0, "think"), "pgbench runs without think time")
    for i, tx in enumerate(workload.transactions):
        for name, spec in tx.params.items():
            ok = isinstance(spec, RandomInt) or (isinstance(spec, Constant) and isinstance(spec.value, (int, float))
                                                 and not isinstance(spec.value, bool))
            if not ok:
                raise LocatedError(("transactions", i, "params", name),
                                   "pgbench takes random_int or numeric value parameters only")


def _check_http_tool(workload: Workload, tool: str) -> None:
    """What k6 and wrk can run (see drive/external/k6.py and wrk.py for why).

    Both: constant think times only (a sleep in k6, wrk's delay()). k6: random_int, choice and
    value parameters; constant-rate arrivals (its constant-arrival-rate executor has no Poisson
    arrivals); connections per VU. wrk: closed loop only (it has no arrival schedule), one
    request per transaction, nothing to fill in or extract (its requests are prepared once).
    """

    for loc, think in [(("think",), workload.think)] + [
            (("scripts", i, "steps", j, "think"), step.think)
            for i, script in enumerate(workload.scripts) for j, step in enumerate(script.steps)]:
        if think is not None and not isinstance(think, ConstantThink):
            raise LocatedError(loc, f"{tool} takes a constant think time only (e.g. think: 0.5)")
    if tool == "k6":
        if isinstance(workload.load, OpenLoad) and workload.load.arrival != "constant":
            raise LocatedError(("load", "arrival"), "k6 starts arrivals at a constant rate (its constant-arrival-rate "
                                                    "executor): write arrival: constant")
        # k6 and wrk drive an http target (_DRIVER_TARGETS, checked before)
        if isinstance(workload.target, HttpTarget) and workload.target.connections != "per_user":
            raise LocatedError(("target", "connections"), "k6 keeps connections per virtual user: use per_user")
        for i, tx in enumerate(workload.transactions):
            for name, spec in tx.params.items():
                if not isinstance(spec, (RandomInt, Choice, Constant)):
                    raise LocatedError(("transactions", i, "params", name),
                                       "k6 takes random_int, choice or value parameters only")
        return
    if isinstance(workload.load, OpenLoad):
        raise LocatedError(("load", "rate"), "wrk has no arrival schedule (closed loop only): give load.users, "
                                             "or use driver: k6 for an open loop")
    if workload.init_script is not None:
        raise LocatedError(("init_script",), "wrk has no logon script; remove init_script or use driver: k6")
    for i, tx in enumerate(workload.transactions):
        if tx.params:
            raise LocatedError(("transactions", i, "params"), "wrk sends prepared requests: no parameters")
        if len(tx.http_body()) != 1:
            raise LocatedError(("transactions", i, "http"), "wrk sends one request per transaction")
        request = tx.http_body()[0]
        if request.extract:
            raise LocatedError(("transactions", i, "http", 0, "extract"), "wrk cannot extract values")
        text = json.dumps([request.path, request.headers, request.body, request.json_body])
        if re.search(r"\{\w+\}", text):
            raise LocatedError(("transactions", i, "http", 0), "wrk sends prepared requests: no {name} values")
        if request.path.startswith(("http://", "https://")):
            raise LocatedError(("transactions", i, "http", 0, "path"), "wrk sends to target.base_url: give a path")

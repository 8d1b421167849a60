"""The registry of target kinds (workload/kinds.py): every kind named once, every line whole,
a line that cannot be right refused when the registry is built, and no other place in the
source deciding by a kind's name."""

from __future__ import annotations

import ast
import types
from pathlib import Path
from typing import Literal

import pytest

from perflab.drive.adapters import registry
from perflab.drive.adapters.base import SutAdapter
from perflab.drive.adapters.context import NetworkContext
from perflab.workload import targets
from perflab.workload.kinds import BODIES, KINDS, KindError, KindRegistry, TargetKind
from perflab.workload.model import Transaction, Workload
from perflab.workload.targets import HttpTarget, SqliteTarget, TargetModel

SRC = Path(__file__).resolve().parents[2] / "src" / "perflab"


def _workload(target: dict, body: dict) -> Workload:
    return Workload.model_validate({"name": "w", "target": target, "transactions": [{"name": "t", **body}],
                                    "scripts": [{"name": "s", "steps": ["t"]}], "load": {"users": 1}})


def test_every_line_resolves_to_what_it_says():
    for kind in KINDS:
        runs = registry.resolve(kind.runs)
        if kind.network:
            assert callable(runs) and not (isinstance(runs, type) and issubclass(runs, SutAdapter)), kind.name
        else:
            assert isinstance(runs, type) and issubclass(runs, SutAdapter), kind.name
            assert registry.adapter_class(kind.name) is runs
        if kind.counts is not None:
            counts = registry.driver_counts(kind)
            assert callable(counts.totals), kind.name
            counts.close()
        if kind.native is not None:
            engine = registry.native_engine(kind)
            assert callable(engine.reason), kind.name
    # each body a kind runs is a transaction's field
    assert set(BODIES) <= set(Transaction.model_fields)
    assert {k.body for k in KINDS} <= set(BODIES)


def test_the_workload_model_takes_every_kind_and_no_other():
    assert KINDS.of(_workload({"kind": "sqlite"}, {"sql": "SELECT 1"}).target).name == "sqlite"
    assert isinstance(_workload({"kind": "http", "base_url": "http://127.0.0.1:1"},
                                {"http": {"path": "/"}}).target, HttpTarget)
    with pytest.raises(ValueError, match="toy"):
        _workload({"kind": "toy"}, {"sql": "SELECT 1"})
    with pytest.raises(KindError, match="unknown target kind 'toy'; registered: sqlite, python"):
        KINDS["toy"]


def test_make_executor_refuses_a_kind_run_in_the_workers_rather_than_guessing_one():
    # It used to end in an unconditional TcpExecutor, which failed deep, at an assert in tcp.py.
    context = NetworkContext(_workload({"kind": "sqlite"}, {"sql": "SELECT 1"}))
    with pytest.raises(KindError, match="sqlite target runs in perflab's worker processes"):
        registry.make_executor(context)
    with pytest.raises(KindError, match="http target is a server over the network"):
        registry.adapter_class("http")


class ToyTarget(TargetModel):
    kind: Literal["toy"]


class Misnamed(TargetModel):
    kind: Literal["other"]


_OK = dict(name="toy", model=ToyTarget, body="sql", runs="perflab.drive.adapters.sqlite:SqliteAdapter")


@pytest.mark.parametrize("change, refusal", [
    ({"model": Misnamed}, r"its model Misnamed has no `kind: Literal\['toy'\]` field \(it says 'other'\)"),
    ({"model": dict}, "its model is not a target model"),
    ({"body": "graphql"}, "body 'graphql' is none of a transaction's"),
    ({"runs": "perflab.drive.adapters.sqlite.SqliteAdapter"}, "is not 'package.module:name'"),
    ({"runs": "perflab.drive.adapters.toy:ToyAdapter"}, "names module perflab.drive.adapters.toy, which does not exist"),
    ({"native": "perflab.drive.load.native_http:NativeHttpEngine"}, "a kind run in perflab's workers has no `native`"),
    ({"counts": "perflab.drive.adapters.counts:ConnectionCounts"}, "a kind run in perflab's workers has none"),
    ({"network": True, "worker_deadline": True}, "a network kind has no worker"),
    ({"pathlength": "by_hand"}, "pathlength 'by_hand' is none of"),
    ({"name": "Toy Kind"}, "a kind's name is lower-case"),
])
def test_a_half_registered_kind_is_refused_when_the_registry_is_built(change, refusal):
    line = TargetKind(**{**_OK, **change})
    with pytest.raises(KindError, match=refusal):
        KindRegistry([line])


def test_a_kind_registered_twice_or_a_model_no_line_names_is_refused():
    line = TargetKind(**_OK)
    assert KindRegistry([line])["toy"] is line
    with pytest.raises(KindError, match="'toy' is registered twice"):
        KindRegistry([line, line])
    module = types.ModuleType("toy_models")
    ToyTarget.__module__ = Misnamed.__module__ = module.__name__
    module.ToyTarget, module.Misnamed = ToyTarget, Misnamed
    with pytest.raises(KindError, match="toy_models.Misnamed is the model of target kind 'other', which no line"):
        KindRegistry([line], models_of=[module])
    # the registry itself names every model workload/targets.py defines (it was built with it)
    assert {k.model for k in KINDS} >= {m for m in vars(targets).values() if isinstance(m, type)
                                          and issubclass(m, TargetModel) and m is not TargetModel}
    assert KINDS.of(SqliteTarget(kind="sqlite")).pathlength == "client_requests"


def test_no_other_source_decides_by_a_kind_name():
    """`target.kind == "postgres"`, `kind in ("http", "tcp")`, `{"sqlite": ...}[kind]`: each of
    them is a fact about a kind written outside its registry line. Ask KINDS instead."""
    names = set(KINDS.names())

    def kind_names(node: ast.AST) -> set[str]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return {node.value} & names
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return set().union(*(kind_names(e) for e in node.elts)) if node.elts else set()
        return set()

    wrong = []
    for path in SRC.rglob("*.py"):
        if path.name == "kinds.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare):
                sides = [node.left, *node.comparators]
                about_kind = any("kind" in ast.unparse(s) and "driver" not in ast.unparse(s) for s in sides)
                if about_kind and any(kind_names(s) for s in sides):
                    wrong.append(f"{path.relative_to(SRC)}:{node.lineno}: {ast.unparse(node)}")
    assert not wrong, "decided by a kind's name outside workload/kinds.py:\n" + "\n".join(wrong)

"""Synthetic study documents for the capacity tests: study.json as the study runner writes it
(docs/architecture.md), with metrics computed from a known model so the tests know the answer."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from perflab.capacity.closed import mva_steps
from perflab.capacity.source import StudySource
from perflab.records.study import parse_study_document


def closed_sweep(users, *, demand_ms=2.0, think=0.02, delay=0.001, processors=1, blocks=1, cv=0.0, seed=1,
                 tamper=None) -> dict:
    """A users sweep whose runs follow exact MVA (plus multiplicative noise of CV *cv*).
    *tamper(n, metrics)* may change a level's metrics (to make bad data)."""
    rng = np.random.default_rng(seed)
    runs, points = [], []
    for n in users:
        last = None
        for last in mva_steps(demand_ms / 1000.0, processors, delay, think, n):
            pass
        config = f"users={n}"
        for b in range(blocks):
            noise = float(np.exp(rng.normal(0.0, cv))) if cv else 1.0
            pbt = demand_ms * noise
            x = last.x
            m = {"etr_t": x, "avg_last_t": last.r, "avg_think_t": think, "pbt_cmd_s": pbt,
                 "util_proc_s": 100.0 * last.u, "itr_s": 1000.0 * processors / pbt, "processors": processors,
                 "tx_ok": x * 60.0, "users": n}
            if tamper:
                tamper(n, m)
            runs.append({"run_id": f"r-{n}-{b}", "config": config, "block": b, "order": len(runs),
                         "status": "complete", "valid": True, "excluded": False, "exclusion_reasons": [],
                         "users": n, "metrics": m})
        points.append({"config": config, "value": n, "runs": blocks, "metrics": {}})
    return _doc("users-sweep", {"factor": "users", "values": list(users), "points": points}, runs, processors)


def concurrency_sweep(factor, values, throughput, blocks=1, cv=0.0, seed=2, key="etr_t") -> dict:
    """A sweep over *factor* whose runs have *key* = throughput(n) times noise."""
    rng = np.random.default_rng(seed)
    runs, points = [], []
    for v in values:
        n = len(v) if isinstance(v, list) else v
        config = f"{factor}={v}"
        for b in range(blocks):
            x = float(throughput(n) * (np.exp(rng.normal(0.0, cv)) if cv else 1.0))
            runs.append({"run_id": f"r-{n}-{b}", "config": config, "block": b, "order": len(runs),
                         "status": "complete", "valid": True, "excluded": False, "exclusion_reasons": [],
                         "metrics": {key: x, "etr_t": x}})
        points.append({"config": config, "value": v, "runs": blocks, "metrics": {}})
    return _doc(f"{factor}-sweep", {"factor": factor, "values": list(values), "points": points}, runs, None)


def ab_study(base: str, new: str, ratio: float, ci: tuple[float, float], n_blocks: int = 6,
             confidence: float = 0.90) -> dict:
    """An A/B study whose ITR (S) comparison has the given ratio and interval."""
    entry = {"key": "itr_s", "label": "ITR (S)", "ratio": ratio, "ci_low": ci[0], "ci_high": ci[1],
             "n_blocks": n_blocks, "verdict": "BETTER"}
    doc = _doc(f"{base}-{new}", None, [], 1)
    doc["design"]["confidence"] = confidence
    doc["comparisons"] = [{"base": base, "new": new, "metrics": [entry]}]
    return doc


def _doc(name, sweep, runs, processors) -> dict:
    return {"study_id": f"20261124-000000-{name}", "name": name, "title": name, "status": "complete",
            "design": {"blocks": 1, "confidence": 0.90, "placement": "driver on CPU 0, SUT on CPU 1"},
            "configurations": [{"name": "base", "base": True,
                                "hardware": {"cores": 2, "online_cpus": [0, 1], "processors": processors}}],
            "runs": runs, "comparisons": [], "sweep": sweep, "warnings": []}


def store_study(store: Path, doc: dict) -> Path:
    """Write *doc* as <store>/studies/<id>/study.json; returns the study directory."""
    d = store / "studies" / doc["study_id"]
    d.mkdir(parents=True, exist_ok=True)
    (d / "study.json").write_text(json.dumps(doc))
    return d


def finite(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


def source(doc: dict) -> StudySource:
    """*doc* as the capacity models take it: the typed study document (no file)."""
    return StudySource(parse_study_document(doc))

"""Run groups for `perflab compare`: which stored runs stand for A and which for B.

A group is a comma-separated list of run references (ids, unique prefixes, paths), or
`label:NAME` (every complete run with that label), or `study:ID:CONFIG` (that configuration's
runs in a stored study). The result has the shape of study.json, so the same reports apply.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from perflab.errors import InputError
from perflab.store.catalog import Store
from perflab.sut.fingerprint import split_fingerprint
from perflab.study.compare import DEFAULT_METRICS, compare_configs, flatten_components, with_component_keys


def _group_dirs(store: Store, ref: str, which: str) -> tuple[str, list[Path]]:
    if ref.startswith("label:"):
        label = ref[len("label:"):]
        dirs = [Path(r.path) for r in reversed(store.rows()) if r.label == label and r.shown_status == "complete"]
        name = label
    elif ref.startswith("study:"):
        parts = ref.split(":", 2)
        if len(parts) < 3:
            raise InputError(f"expected study:ID:CONFIG, got {ref!r}", field=which)
        study_json = store.home / "studies" / parts[1] / "study.json"
        if not study_json.exists():
            raise InputError(f"no study {parts[1]!r} in {store.home / 'studies'}", field=which)
        doc = json.loads(study_json.read_text())
        dirs = [store.run_dir(r["run_id"]) for r in doc["runs"] if r["config"] == parts[2]]
        name = parts[2]
    else:
        dirs = [store.resolve(part.strip()) for part in ref.split(",") if part.strip()]
        name = ref if len(ref) <= 40 else ref[:37] + "..."
    if not dirs:
        raise InputError(f"no runs found for {ref!r}", field=which)
    return name, dirs


def _run_entry(run_dir: Path, config: str, index: int) -> dict[str, Any]:
    from perflab.reduce.reduce import reduce_run

    run = json.loads((run_dir / "run.json").read_text())
    metrics = reduce_run(run_dir)
    reasons = []
    if run.get("status") != "complete":
        reasons.append(f"run {run.get('status')}: {run.get('reason')}")
    reasons += [r for r in run.get("invalid_reasons", []) if not r.startswith("run ")]
    block = run.get("config", {}).get("block")
    return {"run_id": run["run_id"], "config": config, "block": block, "order": index, "status": run["status"],
            "reason": run.get("reason"), "valid": not reasons, "excluded": bool(reasons),
            "exclusion_reasons": reasons, "users": run["config"].get("users"), "rate": run["config"].get("rate"),
            "metrics": flatten_components(dict(metrics.values), metrics.per_component), "per_class": metrics.per_class, "per_interval": metrics.per_interval,
            "warnings": list(metrics.warnings), "_run": run}


def comparison_document(store: Store, a: str, b: str, margin: float, confidence: float,
                        metrics: list[str] | None = None) -> dict[str, Any]:
    name_a, dirs_a = _group_dirs(store, a, "A")
    name_b, dirs_b = _group_dirs(store, b, "B")
    if name_a == name_b:
        name_a, name_b = f"A: {name_a}", f"B: {name_b}"
    if set(dirs_a) & set(dirs_b):
        raise InputError("A and B share runs; a comparison needs two different groups", field="A/B")
    runs = [_run_entry(d, name_a, i) for i, d in enumerate(dirs_a)] + [_run_entry(d, name_b, i) for i, d in enumerate(dirs_b)]
    # Pair by block when every run carries one (runs of one study), otherwise by order.
    if any(r["block"] is None for r in runs):
        for r in runs:
            r["block"] = r["order"]
    configurations = []
    warnings = []
    for name in (name_a, name_b):
        first = next(r for r in runs if r["config"] == name)["_run"]
        hardware, software = split_fingerprint(first.get("fingerprint", {}))
        configurations.append({"name": name, "base": name == name_a, "changes": {},
                               "software": software, "hardware": hardware})
    fingerprints = {json.dumps({k: v for k, v in r["_run"].get("fingerprint", {}).items()
                                if k in ("cpu_model", "cores", "memory_bytes", "kernel")}, sort_keys=True) for r in runs}
    if len(fingerprints) > 1:
        warnings.append("the runs come from different machines or kernels (fingerprints differ): "
                        "the comparison mixes hardware with software")
    first_run = runs[0]["_run"]
    for r in runs:
        r.pop("_run")
    doc = {
        "study_id": None, "name": f"compare {name_a} vs {name_b}", "title": f"{name_a} -> {name_b}",
        "status": "complete", "reason": None,
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "finished": None,
        "workload": {"name": first_run["workload"].get("name"), "description": first_run["workload"].get("description", ""),
                     "path": first_run.get("workload_path"),
                     "transactions": [{"name": t["name"], "class": t.get("class")} for t in first_run["workload"]["transactions"]],
                     "scripts": [{"name": s["name"], "weight": s.get("weight"), "steps": [st["transaction"] for st in s["steps"]]}
                                 for s in first_run["workload"]["scripts"]],
                     "think": first_run["workload"].get("think"),
                     "timing": {"stagger": first_run["config"].get("stagger_s"),
                                "stabilization": first_run["config"].get("stabilization_s"),
                                "measurement": first_run["config"].get("measurement_s")}},
        "design": {"blocks": max(len(dirs_a), len(dirs_b)), "seed": None, "margin": margin, "confidence": confidence,
                   "schedule": [[r["block"], r["config"]] for r in runs], "load": {"mode": "stored runs"},
                   "gates": {}, "placement": first_run.get("fingerprint", {}).get("placement")},
        "configurations": configurations,
        "runs": runs,
        "comparisons": [compare_configs(runs, name_a, name_b, with_component_keys(metrics or DEFAULT_METRICS, runs),
                                        margin, confidence)],
        "sweep": None,
        "warnings": warnings,
    }
    return doc

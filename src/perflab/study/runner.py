"""Run a study: calibrate, run every configuration in randomized interleaved blocks, reduce
each run, apply the validity gates, compare, and write study.json and the reports.

study.json is rewritten after every run, so a study stopped half-way (Ctrl-C, a failure)
keeps what it measured and reports on it, marked interrupted.
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from perflab.drive.run import RunRequest, execute_run
from perflab.errors import InputError
from perflab.stats.schedule import interleaved_schedule
from perflab.store.atomic import write_json_atomic
from perflab.store.catalog import Store, new_run_id
from perflab.study.calibrate import calibrate
from perflab.study.compare import DEFAULT_METRICS, compare_configs, flatten_components, with_component_keys
from perflab.study.configure import ChangeError, configured_workload, one_variable_warnings
from perflab.study.gates import check_run
from perflab.study.model import Configuration, Study, check_study
from perflab.sut.fingerprint import split_fingerprint
from perflab.workload.loader import line_of, load_workload, read_yaml, validate_model
from perflab.workload.model import LocatedError, Workload

UTIL_BAND_HALF_WIDTH = 10.0


@dataclass
class StudyOptions:
    measurement: float | None = None
    stabilization: float | None = None
    stagger: float | None = None
    blocks: int | None = None
    monitor: bool = True


def load_study(path: Path) -> tuple[Study, Workload, Path]:
    """Validate a study file and the workload it names; errors point at file:line."""
    path = Path(path)
    data = read_yaml(path)
    study = validate_model(Study, data, path)
    try:
        check_study(study)
    except LocatedError as exc:
        raise InputError(str(exc), file=path, line=line_of(data, exc.loc), field=".".join(map(str, exc.loc))) from None
    workload_path = (path.parent / study.workload).resolve()
    if not workload_path.exists():
        raise InputError(f"workload file not found: {study.workload}", file=path, line=line_of(data, ("workload",)),
                         field="workload")
    workload = load_workload(workload_path)
    for i, config in enumerate(study.configurations):
        try:
            configured_workload(workload, config)
        except ChangeError as exc:
            raise InputError(str(exc), file=path, line=line_of(data, ("configurations", i, "set", exc.path)),
                             field=f"configurations[{i}].set.{exc.path}") from None
    return study, workload, workload_path


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


class StudyRunner:
    def __init__(self, study_path: Path, store: Store, options: StudyOptions | None = None,
                 on_event: Callable[[str, dict], None] | None = None):
        self.study_path = Path(study_path)
        self.study, self.workload, self.workload_path = load_study(self.study_path)
        self.store = store
        self.options = options or StudyOptions()
        self.on_event = on_event or (lambda kind, info: None)
        self.study_id = new_run_id(self.study.name)
        self.dir = store.home / "studies" / self.study_id
        self.interrupted: str | None = None

    # --- configurations --------------------------------------------------------------------

    def _configurations(self) -> list[Configuration]:
        study = self.study
        if study.sweep is None:
            return list(study.configurations)
        base = study.configurations[0] if study.configurations else Configuration(name="base")
        points = []
        for value in study.sweep.values:
            point = base.model_copy(deep=True)
            point.name = f"{study.sweep.factor}={value}"
            if study.sweep.factor in ("sut_cpus", "memory_limit", "workers"):
                setattr(point, study.sweep.factor, Configuration.model_validate({"name": "x", study.sweep.factor: value})
                        .__getattribute__(study.sweep.factor))
            points.append((point, value))
        self._sweep_values = {p.name: v for p, v in points}
        return [p for p, _ in points]

    def _timing(self) -> dict[str, float]:
        timing = self.study.timing or self.workload.timing
        o = self.options
        return {
            "stagger": timing.stagger if o.stagger is None else o.stagger,
            "stabilization": timing.stabilization if o.stabilization is None else o.stabilization,
            "measurement": timing.measurement if o.measurement is None else o.measurement,
        }

    # --- one run ----------------------------------------------------------------------------

    def _run(self, config: Configuration, users: int | None, rate: float | None, measurement: float,
             block: int | None, order: int | None, purpose: str) -> tuple[Any, Any]:
        from perflab.reduce.reduce import reduce_run

        timing = self._timing()
        sweep = self.study.sweep
        if sweep is not None and sweep.factor == "users" and purpose == "measure":
            users, rate = int(self._sweep_values[config.name]), None
        if sweep is not None and sweep.factor == "rate" and purpose == "measure":
            users, rate = None, float(self._sweep_values[config.name])
        request = RunRequest(
            workload=configured_workload(self.workload, config), workload_path=self.workload_path,
            users=users, rate=rate, duration=measurement, stagger=timing["stagger"],
            stabilization=timing["stabilization"], seed=None, label=config.name, study=self.study_id,
            workers=config.workers, sut_cpus=config.sut_cpus, monitor=self.options.monitor,
            memory_limit=config.memory_limit,
            extra={"block": block, "order": order, "purpose": purpose, "configuration": config.name},
        )
        self.on_event("run-start", {"config": config.name, "block": block, "order": order, "purpose": purpose,
                                    "users": users, "rate": rate})
        result = execute_run(request, self.store)
        metrics = reduce_run(result.run_dir)
        if result.status == "interrupted":
            self.interrupted = result.reason
        return result, metrics

    # --- the study ----------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        study = self.study
        self.dir.mkdir(parents=True, exist_ok=False)
        configs = self._configurations()
        base = configs[0]
        blocks = self.options.blocks or study.blocks
        schedule = interleaved_schedule([c.name for c in configs], blocks, study.seed)
        timing = self._timing()
        doc: dict[str, Any] = {
            "study_id": self.study_id, "name": study.name,
            "title": study.title or " -> ".join(c.name for c in configs),
            "status": "running", "reason": None, "created": _now(), "finished": None,
            "study_path": str(self.study_path), "study": study.model_dump(mode="json"),
            "workload": self._workload_summary(),
            "design": {"blocks": blocks, "seed": study.seed, "margin": study.margin, "confidence": study.confidence,
                       "schedule": [list(s) for s in schedule], "timing": timing,
                       "gates": study.gates.model_dump(mode="json"), "load": {}, "placement": None},
            "configurations": [{"name": c.name, "base": c is base, "changes": c.changes(), "software": {},
                                "hardware": {}} for c in configs],
            "runs": [], "comparisons": [], "sweep": None,
            "warnings": one_variable_warnings(study),
        }
        self.doc = doc
        self._save()
        users, rate = self._decide_load(base, doc)
        util_band = study.gates.util_band
        if util_band is None and study.load.calibrate is not None:
            target = study.load.calibrate.target_util
            util_band = (target - UTIL_BAND_HALF_WIDTH, min(100.0, target + UTIL_BAND_HALF_WIDTH))
        doc["design"]["gates"]["util_band"] = list(util_band) if util_band else None
        by_name = {c.name: c for c in configs}
        started = time.monotonic()
        for order, (block, name) in enumerate(schedule):
            if self.interrupted:
                break
            self.on_event("progress", {"index": order, "total": len(schedule), "elapsed": time.monotonic() - started})
            config = by_name[name]
            result, metrics = self._run(config, users, rate, timing["measurement"], block, order, "measure")
            self._record(doc, config, block, order, result, metrics, util_band, is_base=config is base)
            self._save()
        doc["comparisons"] = self._compare(doc, configs)
        if study.sweep is not None:
            doc["sweep"] = self._sweep_summary(doc, configs)
        doc["status"] = "interrupted" if self.interrupted else "complete"
        doc["reason"] = self.interrupted
        doc["finished"] = _now()
        self._save()
        return doc

    def _save(self) -> None:
        write_json_atomic(self.dir / "study.json", self.doc)

    def _workload_summary(self) -> dict[str, Any]:
        w = self.workload
        return {
            "name": w.name, "description": w.description, "path": str(self.workload_path),
            "target": w.target.model_dump(mode="json"),
            "transactions": [{"name": t.name, "class": t.tx_class} for t in w.transactions],
            "scripts": [{"name": s.name, "weight": s.weight, "steps": [st.transaction for st in s.steps]}
                        for s in w.scripts],
            "init_script": w.init_script,
            "think": w.think.model_dump(mode="json", by_alias=True) if w.think else None,
            "timing": self._timing(),
        }

    def _decide_load(self, base: Configuration, doc: dict) -> tuple[int | None, float | None]:
        rule = self.study.load
        w = self.workload
        closed = w.closed if rule.rate is None else False
        if rule.users is not None:
            doc["design"]["load"] = {"mode": "fixed", "users": rule.users, "rate": None}
            return rule.users, None
        if rule.rate is not None:
            doc["design"]["load"] = {"mode": "fixed", "users": None, "rate": rule.rate}
            return None, rule.rate
        if rule.calibrate is None:
            users = getattr(w.load, "users", None)
            rate = getattr(w.load, "rate", None)
            doc["design"]["load"] = {"mode": "workload", "users": users, "rate": rate}
            return users, rate
        cal = rule.calibrate

        def measure(users: int | None, rate: float | None) -> dict:
            result, metrics = self._run(base, users, rate, cal.measurement, None, None, "calibrate")
            values = metrics.values
            util = values.get("util_proc_s")
            if util is None:
                util = values.get("util_proc_h")
            return {"util": util, "etr_t": values.get("etr_t"), "run_id": result.run_id, "valid": result.valid,
                    "reasons": metrics.warnings, "driver_util": values.get("driver_cpu")}

        outcome = calibrate(cal, measure, closed, getattr(w.load, "users", None), getattr(w.load, "rate", None),
                            on_step=lambda step: self.on_event("calibration-step", step))
        doc["design"]["load"] = {"mode": "calibrated", "users": outcome.users, "rate": outcome.rate,
                                 "target_util": cal.target_util, "tolerance": cal.tolerance,
                                 "calibration": outcome.steps}
        doc["warnings"].extend(outcome.warnings)
        self._save()
        return outcome.users, outcome.rate

    def _record(self, doc: dict, config: Configuration, block: int, order: int, result, metrics,
                util_band, is_base: bool) -> None:
        import json

        run = json.loads((result.run_dir / "run.json").read_text())
        values = flatten_components(dict(metrics.values), metrics.per_component)
        reasons = check_run(run, values, metrics.per_interval, self.study.gates, util_band, is_base)
        entry = {
            "run_id": result.run_id, "config": config.name, "block": block, "order": order,
            "status": run["status"], "reason": run.get("reason"), "valid": not reasons, "excluded": bool(reasons),
            "exclusion_reasons": reasons, "users": run["config"].get("users"), "rate": run["config"].get("rate"),
            "metrics": values, "per_class": metrics.per_class, "per_interval": metrics.per_interval,
            "warnings": list(metrics.warnings),
        }
        doc["runs"].append(entry)
        conf = next(c for c in doc["configurations"] if c["name"] == config.name)
        if not conf["software"]:
            fp = run.get("fingerprint", {})
            conf["hardware"], conf["software"] = split_fingerprint(fp)
            conf["software"]["adapter"] = self.workload.target.kind
            conf["hardware"]["processors"] = run["config"].get("processors")
            conf["hardware"]["real_storage_bytes"] = run["config"].get("real_storage_bytes")
            doc["design"]["placement"] = fp.get("placement")
        self.on_event("run-end", {"config": config.name, "block": block, "run_id": result.run_id,
                                  "status": run["status"], "excluded": bool(reasons), "reasons": reasons,
                                  "etr_t": values.get("etr_t"), "util_proc_s": values.get("util_proc_s"),
                                  "itr_s": values.get("itr_s")})

    def _compare(self, doc: dict, configs: list[Configuration]) -> list[dict]:
        if self.study.sweep is not None:
            return []
        metrics = with_component_keys(self.study.metrics or DEFAULT_METRICS, doc["runs"])
        base = configs[0].name
        return [compare_configs(doc["runs"], base, c.name, metrics, self.study.margin, self.study.confidence)
                for c in configs[1:]]

    def _sweep_summary(self, doc: dict, configs: list[Configuration]) -> dict:
        from perflab.study.compare import geomean

        keys = self.study.metrics or DEFAULT_METRICS
        points = []
        for c in configs:
            runs = [r for r in doc["runs"] if r["config"] == c.name and not r["excluded"]]
            points.append({"config": c.name, "value": self._sweep_values[c.name], "runs": len(runs),
                           "metrics": {k: geomean(r["metrics"].get(k) for r in runs) for k in keys}})
        return {"factor": self.study.sweep.factor, "values": list(self.study.sweep.values), "points": points}

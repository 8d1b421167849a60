"""Comparisons of configurations: per metric, the ratio of geometric means with its interval
(paired by block) and a verdict, from the per-run values of the valid runs."""

from __future__ import annotations

import math
from typing import Any, Iterable

from perflab.stats import compare as stats_compare

# What a release report compares by default: capacity first (ITR), then cost per command,
# throughput and response time. Metrics a run could not measure are skipped (na).
DEFAULT_METRICS = [
    "itr_s", "itr_h", "pbt_cmd_s", "emul_cmd_s", "cp_cmd_s", "pbt_cmd_h", "etr_t", "etr", "etr_ratio",
    "avg_last_t", "resp_p90_t", "avg_first_t", "util_proc_s", "util_proc_h", "wkset_s", "vio_cmd",
    "minflt_cmd_s", "io_bytes_cmd_s", "instr_cmd_i",
]


# Per-component (V) rows, compared per component: the seeds' VTAM and SFS server rows.
COMPONENT_METRICS = ("srv_tot_cpu_cmd_v", "srv_wkset_v")


def flatten_components(values: dict[str, Any], per_component: dict[str, dict] | None) -> dict[str, Any]:
    """Add `<metric>:<component>` keys (e.g. srv_tot_cpu_cmd_v:checkpointer) to a run's values."""
    out = dict(values)
    for component, row in (per_component or {}).items():
        for key in COMPONENT_METRICS:
            if row.get(key) is not None:
                out[f"{key}:{component}"] = row[key]
    return out


def with_component_keys(metrics: list[str], runs: list[dict]) -> list[str]:
    """The metric list plus every per-component key some run measured, in a stable order."""
    extra = sorted({k for r in runs for k in r.get("metrics", {}) if ":" in k and k.split(":", 1)[0] in COMPONENT_METRICS})
    return list(metrics) + [k for k in extra if k not in metrics]


def _registry():
    from perflab.reduce.registry import REGISTRY

    return REGISTRY


def _metric_info(key: str) -> dict[str, Any]:
    base, _, component = key.partition(":")
    try:
        metric = _registry().get(base)
    except (KeyError, ImportError):
        metric = None
    if metric is None:
        return {"label": key, "unit": "", "group": "", "direction": "none", "decimals": 3}
    direction = getattr(metric.direction, "value", metric.direction)
    label = f"{component} {metric.label}" if component else metric.label
    return {"label": label, "unit": metric.unit, "group": metric.group, "direction": direction,
            "decimals": getattr(metric, "decimals", 3)}


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def geomean(values: Iterable[float]) -> float | None:
    values = [v for v in values if _finite(v)]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def compare_configs(runs: list[dict], base: str, new: str, metrics: list[str], margin: float,
                    confidence: float) -> dict[str, Any]:
    """One comparison block of study.json (see docs/architecture.md)."""
    valid = [r for r in runs if not r.get("excluded")]
    out = []
    for key in metrics:
        info = _metric_info(key)
        by_block = {name: {r.get("block", i): r["metrics"].get(key) for i, r in enumerate(valid) if r["config"] == name}
                    for name in (base, new)}
        base_values = [v for v in by_block[base].values() if _finite(v)]
        new_values = [v for v in by_block[new].values() if _finite(v)]
        if not base_values and not new_values:
            continue  # not measured on this machine or for this SUT: the run tables show na
        entry = {"key": key, **info, "base_value": geomean(base_values), "new_value": geomean(new_values),
                 "abs_change": None, "rel_change": None, "ratio": None, "ci_low": None, "ci_high": None,
                 "verdict": None, "material": False, "note": "", "n_blocks": 0, "cv": None,
                 "blocks_needed": None, "legacy": None, "warnings": []}
        if entry["base_value"] is not None and entry["new_value"] is not None:
            entry["abs_change"] = entry["new_value"] - entry["base_value"]
            entry["rel_change"] = entry["new_value"] / entry["base_value"] - 1
        if info["direction"] in ("higher", "lower") and len(base_values) >= 2 and len(new_values) >= 2:
            result = stats_compare(
                {b: (v if _finite(v) else None) for b, v in by_block[base].items()},
                {b: (v if _finite(v) else None) for b, v in by_block[new].items()},
                metric=key, higher_is_better=info["direction"] == "higher", margin=margin, confidence=confidence,
            )
            d = result.to_dict()
            entry.update({k: d.get(k) for k in ("ratio", "ci_low", "ci_high", "material", "note", "n_blocks", "cv",
                                                "blocks_needed", "legacy", "warnings")})
            entry["verdict"] = str(d.get("verdict")) if d.get("verdict") is not None else None
            if _finite(entry["ratio"]) and entry["base_value"] is not None:
                # The change a report states is the paired estimate its interval belongs to, not
                # the ratio of the columns' means (those include runs of incomplete blocks): a
                # study read "decreased by 2.6% [90% CI -11.5% to +12.3%]" around a ratio of 0.997.
                entry["rel_change"] = entry["ratio"] - 1
                entry["abs_change"] = entry["base_value"] * entry["rel_change"]
        elif info["direction"] in ("higher", "lower"):
            entry["warnings"] = ["fewer than 2 valid runs per configuration: no interval, no verdict"]
        out.append(entry)
    return {"base": base, "new": new, "metrics": out}


def gate_exit_code(comparisons: list[dict], gate_metrics: list[str]) -> int:
    """0: no gated verdict WORSE; 1: one is WORSE; 3: none WORSE but one INCONCLUSIVE (or missing)."""
    verdicts = []
    for comparison in comparisons:
        for m in comparison["metrics"]:
            if m["key"] in gate_metrics:
                verdicts.append(m.get("verdict"))
    if any(v == "WORSE" for v in verdicts):
        return 1
    if not verdicts or any(v in (None, "INCONCLUSIVE") for v in verdicts):
        return 3
    return 0

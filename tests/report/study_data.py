"""A synthetic study dict in the shape of study.json (docs/architecture.md), built by hand so
every expected number in the report tests is known: two configurations, 6 blocks, one run
excluded with its reason, and comparison entries with each verdict plus a missing metric."""

from __future__ import annotations

BASE, NEW = "Release A (stdlib)", "Release B <apsw> & co"   # markup in a name: escaping is tested
BLOCKS = 6
EXCLUDED_RUN = "run-B-3"
EXCLUSION = "driver CPU 97%: run invalid (the driver, not the SUT, may have set the pace)"


def _entry(key, label, unit, group, direction, base, new, *, ratio=None, ci=(None, None), verdict=None,
           material=False, cv=0.008, blocks_needed=None, legacy=None, warnings=(), decimals=2):
    both = base is not None and new is not None
    primary = key == "itr_s"
    return {"key": key, "label": label, "unit": unit, "group": group, "direction": direction, "decimals": decimals,
            "role": "primary" if primary else "secondary", "verdict_unadjusted": verdict,
            "adjustment": ("holm" if primary else "gatekept-holm") if verdict else "none",
            "p_adjusted": (0.001 if verdict in ("BETTER", "WORSE") else 0.5) if verdict else None,
            "base_value": base, "new_value": new,
            "abs_change": new - base if both else None, "rel_change": new / base - 1 if both else None,
            "ratio": ratio, "ci_low": ci[0], "ci_high": ci[1], "verdict": verdict, "material": material,
            "note": "", "n_blocks": BLOCKS - 1 if verdict else 0, "cv": cv if verdict else None,
            "blocks_needed": blocks_needed, "legacy": legacy, "warnings": list(warnings)}


def comparison_metrics() -> list[dict]:
    return [
        # BETTER: ITR (S) up 5.3 %, explained by PBT/CMD (S) down 5.0 %.
        _entry("itr_s", "ITR (S)", "tx/s", "Throughput", "higher", 980.0, 1031.6, ratio=1.0527, ci=(1.041, 1.065),
               verdict="BETTER", legacy="change +5.3 %"),
        _entry("pbt_cmd_s", "PBT/CMD (S)", "ms", "Proc. Usage", "lower", 1.020, 0.969, ratio=0.95,
               ci=(0.939, 0.961), verdict="BETTER", material=True, legacy="change -5.0 %", decimals=3),
        # EQUIVALENT
        _entry("etr_t", "ETR (T)", "tx/s", "Throughput", "higher", 402.5, 403.1, ratio=1.0015, ci=(0.995, 1.008),
               verdict="EQUIVALENT", legacy="equivalent"),
        # WORSE (material: the whole interval is beyond 1/0.97)
        _entry("avg_last_t", "AVG LAST (T)", "s", "Response Time", "lower", 0.0123, 0.0131, ratio=1.065,
               ci=(1.04, 1.09), verdict="WORSE", material=True, legacy="change +6.5 %", decimals=3),
        # INCONCLUSIVE: noisy, says how many blocks it needs
        _entry("resp_p90_t", "RESP P90 (T)", "s", "Response Time", "lower", 0.030, 0.031, ratio=1.033,
               ci=(0.97, 1.10), verdict="INCONCLUSIVE", cv=0.045, blocks_needed=38, legacy="change +3.3 %",
               warnings=["CV 4.5 %: need ≥ 38 blocks at margin 3 %"], decimals=3),
        # no direction: utilization, lower for the new release (a caveat)
        _entry("util_proc_s", "UTIL/PROC (S)", "%", "Processor Util.", "none", 41.0, 39.0),
        # missing: this machine has no CPU counters
        _entry("instr_cmd_i", "INSTR/CMD (I)", "instr", "Proc. Usage", "lower", None, None,
               warnings=["fewer than 2 valid runs per configuration: no interval, no verdict"], decimals=0),
    ]


def _per_interval_rows(etr: float, util: float) -> list[dict]:
    """The shape reduction writes: one row per interval."""
    return [{"t_start": 7.0 + i, "t_end": 8.0 + i, "etr_t": etr + (i % 3) - 1, "util_proc_s": util + 0.5 * (i % 2),
             "util_proc_h": util + 5.0, "avg_last_t": 0.012} for i in range(10)]


def _per_interval_columns(etr: float, util: float) -> dict:
    """The shape the contract shows: columns."""
    t = [float(i) for i in range(10)]
    return {"t": t, "etr_t": [etr + (i % 2) for i in range(10)], "util_proc_s": [util] * 10,
            "util_proc_h": [util + 5.0] * 10, "avg_last_t": [0.013] * 10}


def _runs() -> list[dict]:
    runs = []
    order = 0
    for block in range(BLOCKS):
        pair = (BASE, NEW) if block % 2 == 0 else (NEW, BASE)
        for config in pair:
            is_new = config == NEW
            run_id = f"run-{'B' if is_new else 'A'}-{block}"
            excluded = run_id == EXCLUDED_RUN
            etr = 403.0 if is_new else 402.5
            util = 39.0 if is_new else 41.0
            runs.append({
                "run_id": run_id, "config": config, "block": block, "order": order, "status": "complete",
                "reason": None, "exclusions": [EXCLUSION] if excluded else [],
                "metrics": {"etr_t": etr + block * 0.1, "itr_s": (1031.6 if is_new else 980.0) + block,
                            "itr_h": None, "util_proc_s": util, "avg_last_t": 0.0131 if is_new else 0.0123,
                            "instr_cmd_i": None},
                "per_class": {"trivial": {"avg_last_t": 0.004 + 0.0001 * block, "tx_ok": 400.0},
                              "nontrivial": {"avg_last_t": 0.015 + 0.0002 * block, "tx_ok": 3600.0}},
                "per_interval": _per_interval_rows(etr, util),
                "caveats": ["Little's law deviation 2.1%"] if run_id == "run-A-2" else [],
            })
            order += 1
    return runs


def make_study() -> dict:
    return {
        "format": 2,
        "study_id": "20261122-040000-release-ab12",
        "name": "release",
        "title": f"{BASE} -> {NEW}",
        "status": "complete", "reason": None,
        "created": "2026-11-22T04:00:00+00:00", "finished": "2026-11-22T04:30:00+00:00",
        "study_path": "examples/release-study.yaml",
        "workload": {
            "name": "debit-credit", "description": "TPC-B-like debit-credit against SQLite.",
            "path": "examples/debit-credit.yaml",
            "target": {"kind": "sqlite", "driver": "stdlib", "database": "bank.db"},
            "transactions": [{"name": "debit_credit", "class": "nontrivial"}, {"name": "balance", "class": "trivial"}],
            "scripts": [{"name": "teller", "weight": 9.0, "steps": ["debit_credit"]},
                        {"name": "inquiry", "weight": 1.0, "steps": ["balance"]}],
            "think": {"dist": "exponential", "mean": 0.02},
            "timing": {"stagger": 1.0, "stabilization": 2.0, "measurement": 10.0},
        },
        "design": {
            "blocks": BLOCKS, "seed": 7, "margin": 0.03, "confidence": 0.90, "family_alpha": 0.05,
            "primary_metrics": ["itr_s"],
            "schedule": [[r["block"], r["config"]] for r in _runs()],
            "load": {"mode": "calibrated", "users": 37, "rate": None, "target_util": 90.0,
                     "calibration": [{"users": 8, "rate": None, "util_proc_s": 31.0, "etr_t": 400.0,
                                      "run_id": "cal-1", "valid": True},
                                     {"users": 37, "rate": None, "util_proc_s": 89.5, "etr_t": 1800.0,
                                      "run_id": "cal-2", "valid": True}]},
            "gates": {"max_error_rate": 0.01, "util_band": [80.0, 100.0], "max_etr_trend": 0.05},
            "placement": "driver on CPU 0, SUT on CPU 0 (shared: the driver's CPU use is included in the "
                         "SUT's CPUs' busy time)",
        },
        "configurations": [
            {"name": BASE, "base": True, "changes": {},
             "software": {"sut_version": "SQLite 3.40.1 (Python sqlite3 module)", "adapter": "sqlite",
                          "python": "CPython 3.11.2"},
             "hardware": {"cpu_model": "Example CPU @ 3.0GHz", "cores": 2, "memory_bytes": 8 * 2**30,
                          "kernel": "6.1.0-test", "processors": 1, "perf_counters": {"available": False,
                                                                                     "reason": "perf_event_paranoid 3"}}},
            {"name": NEW, "base": False, "changes": {"target.driver": "apsw"},
             "software": {"sut_version": "SQLite 3.54.1 (apsw)", "adapter": "sqlite", "python": "CPython 3.11.2"},
             "hardware": {"cpu_model": "Example CPU @ 3.0GHz", "cores": 2, "memory_bytes": 8 * 2**30,
                          "kernel": "6.1.0-test", "processors": 1, "perf_counters": {"available": False,
                                                                                     "reason": "perf_event_paranoid 3"}}},
        ],
        "runs": _runs(),
        "comparisons": [{"base": BASE, "new": NEW, "metrics": comparison_metrics()}],
        "sweep": None,
        "warnings": ["one-variable rule: the configurations differ in target.driver only"],
        "verdict": {"exit_code": 0, "meaning": "every primary verdict is EQUIVALENT or BETTER",
                    "primary": [{"base": BASE, "new": NEW, "key": "itr_s", "verdict": "BETTER"}]},
    }


def make_sweep_study() -> dict:
    study = make_study()
    study["comparisons"] = []
    points = []
    for i, users in enumerate((4, 8, 16)):
        points.append({"config": f"users={users}", "value": users, "runs": 2,
                       "metrics": {"etr_t": 100.0 * users / (1 + 0.05 * i), "itr_s": 1000.0 - 10 * i,
                                   "avg_last_t": 0.01 * (1 + i), "util_proc_s": 20.0 * (i + 1), "itr_h": None}})
    study["sweep"] = {"factor": "users", "values": [4, 8, 16], "points": points}
    return study


def pct1(fraction: float) -> str:
    """The expected "5.0%" of a relative change, computed the test's own way."""
    return f"{abs(100.0 * fraction):.1f}%"


def find(entries: list[dict], key: str) -> dict:
    return next(e for e in entries if e["key"] == key)


def doc(study: dict):
    """The study dict as the model the reports read, with its first comparison."""
    from perflab.records.study import parse_study_document

    document = parse_study_document(study)
    return document, (document.comparisons[0] if document.comparisons else None)

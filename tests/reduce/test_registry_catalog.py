"""The registry as a catalog: the contract's keys exist, labels (and their seed spellings) find
their metric, seed-only rows stay out of perflab's catalog, na propagates."""

from __future__ import annotations

import pytest

from perflab.catalog.metric import Formula
from perflab.catalog.registry import GROUPS, REGISTRY, Metric, normalize_label

CONTRACT_KEYS = ["etr_t", "itr_h", "itr_s", "itrr_s", "pbt_cmd_h", "cp_cmd_s", "emul_cmd_s", "util_proc_h",
                 "avg_last_t", "resp_p90_t", "instr_cmd_i", "page_cmd", "vio_cmd"]


@pytest.mark.parametrize("key", CONTRACT_KEYS)
def test_contract_keys_are_perflab_metrics(key):
    metric = REGISTRY[key]
    assert isinstance(metric, Metric)
    assert key in REGISTRY.perflab_keys()
    assert metric.group in GROUPS


@pytest.mark.parametrize("label,key", [
    ("ITR (H)", "itr_h"), ("PBT/CMD (S)", "pbt_cmd_s"), ("TVR(H)", "tvr_h"), ("TVR (H)", "tvr_h"),
    ("FP REQ/CMD(Q)", "fp_req_cmd_q"), ("FP REQ/CMD (Q)", "fp_req_cmd_q"), ("ETR (T) [from Table 34]", "etr_t"),
    ("etr (t)", "etr_t"), ("UTIL/PROC", "util_proc"), ("Total BIO Requests", "total_bio_requests"),
    ("elapsed seconds", "elapsed_s"), ("Elapsed Seconds", "elapsed_s"), ("WKSET (V)", "wkset_v"),
])
def test_lookup_by_label(label, key):
    assert REGISTRY.by_label(label).key == key


def test_labels_that_differ_by_table_family():
    assert REGISTRY.by_label("ITR").key == "itr"                       # RTM's, in a CMS table
    assert REGISTRY.by_label("ITR", context="batch").key == "itr_job_min"  # VSE jobs per CPU-minute
    assert REGISTRY.by_label("ITR", context="zos").key == "itr_h"
    assert REGISTRY.by_label("ETR (open data sets per s)").key == "etr_t"
    assert REGISTRY.by_label("LPAR CPU%", context="zos").key == "util_proc_h"


def test_normalize_label():
    assert normalize_label("TVR(H)") == normalize_label("tvr (h)") == "TVR (H)"
    assert normalize_label("ETR (T) [from Table 34]") == "ETR (T)"
    assert normalize_label("  FP   REQ/CMD(Q) ") == "FP REQ/CMD (Q)"


@pytest.mark.parametrize("key", ["itr", "emul_itr", "tot_int_adj", "xstor_cmd", "pgblpgs_user", "tvr", "pbt_cmd",
                                 "util_proc", "srv_diag_98_cmd_v", "itr_job_min", "agents_held", "transfer_rate",
                                 "busy_msec_sec"])
def test_seed_only_rows_are_registered_but_not_in_the_perflab_catalog(key):
    metric = REGISTRY[key]
    assert metric.seed_only
    assert key not in REGISTRY.perflab_keys() and key not in REGISTRY.perflab_keys(per_component=True)


def test_every_metric_is_complete():
    for metric in REGISTRY:
        assert metric.label and metric.group and metric.description, metric.key
        assert metric.key == metric.key.lower() and " " not in metric.key
        if metric.raw and metric.origin.value == "perflab" and not metric.text and metric.fallback is None:
            assert metric.measurement, f"raw perflab metric {metric.key} must say how it is measured"


def test_ratio_rows_declare_their_base():
    for key, base in (("itrr_h", "itr_h"), ("itrr_s", "itr_s"), ("itrr", "itr"), ("etrr_job", "etr_job_min")):
        assert REGISTRY[key].relative_to == base


def test_formula_inputs_and_text():
    formula = REGISTRY["itr_h"].primary
    assert formula.inputs == ("etr_t", "util_proc_h")
    assert formula.text(REGISTRY.label_of) == "ETR (T) / (UTIL/PROC (H) / 100)"
    with pytest.raises(ValueError):
        Formula("__import__('os')")


def test_na_propagates_and_never_divides_by_zero():
    values = REGISTRY.evaluate({"tx_ok": 100.0, "window_s": 10.0})
    assert values["etr_t"] == 10.0
    assert values["pbt_cmd_s"] is None and values["itr_h"] is None and values["page_cmd"] is None
    zero = REGISTRY.evaluate({"tx_ok": 0.0, "window_s": 10.0, "cp_sec_s": 1.0, "emul_sec_s": 1.0})
    assert zero["etr_t"] == 0.0
    assert zero["cp_cmd_s"] is None and zero["pbt_cmd_s"] is None


def test_measured_value_is_kept_when_the_formula_cannot_apply():
    values = REGISTRY.evaluate({"driver_cpu": 42.0})
    assert values["driver_cpu"] == 42.0
    values = REGISTRY.evaluate({"driver_cpu": 42.0, "driver_sec": 5.0, "window_s": 10.0, "driver_processors": 1})
    assert values["driver_cpu"] == 50.0


def test_processors_h_falls_back_to_processors():
    values = REGISTRY.evaluate({"processors": 6.0, "total_h": 548.36})
    assert values["processors_h"] == 6.0
    assert values["util_proc_h"] == pytest.approx(91.393, abs=1e-3)

"""The registry's formulas against the worked verifications of vmesa-methodology.md 2.3, 2.5
and 2.6: printed inputs in, printed output expected within the printed rounding (interval
arithmetic, half a unit in the last printed digit of every input and of the output)."""

from __future__ import annotations

import pytest

from perflab.catalog.registry import REGISTRY, compose, delta, mean_of, percent_change
from perflab.derive.interval import Interval
from perflab.derive.table import Cell


def _interval(printed: str, key: str | None = None) -> Interval:
    exact = key is not None and key in REGISTRY and REGISTRY[key].exact_count
    return Cell.parse(printed).interval(exact=exact)


def recompute(key: str, formula_index: int = 0, **printed: str) -> Interval:
    """Evaluate one of a metric's registry formulas on the rounding intervals of printed inputs."""
    formula = REGISTRY[key].formulas[formula_index]
    missing = set(formula.inputs) - set(printed) - set(formula.optional)
    assert not missing, f"inputs {missing} not given"
    args = [_interval(printed[k], k) if k in printed else Interval.point(0.0) for k in formula.inputs]
    return formula(*args)


def agrees(result: Interval, printed: str) -> bool:
    return result.overlaps(Cell.parse(printed).interval())


# (metric key, formula index, printed inputs, printed output, where)
WORKED = [
    ("etr_ratio", 0, {"etr": "238.56", "etr_t": "205.97"}, "1.158", "T14 Y64R5865"),
    ("etr_ratio", 0, {"etr": "86.82", "etr_t": "94.86"}, "0.915", "T6 Y33F2642 (CTCA)"),
    ("etr_ratio", 0, {"etr": "119.65", "etr_t": "52.14"}, "2.295", "T34 Y64F4808 (thrashing)"),
    ("tot_int_adj", 0, {"tot_int": "0.192", "etr_ratio": "1.306"}, "0.251", "T14 Y63R5866"),
    ("tot_int_adj", 0, {"tot_int": "13.748", "etr_ratio": "2.295"}, "31.546", "T34 Y64F4808"),
    ("tot_int_adj", 0, {"tot_int": "38.821", "etr_ratio": "1.247"}, "48.404", "T62 L23F1480"),
    ("itr_h", 0, {"etr_t": "205.97", "util_proc_h": "87.15"}, "236.35", "T14 Y64R5865 (6-way)"),
    ("itr_h", 0, {"etr_t": "62.84", "util_proc_h": "90.38"}, "69.53", "T7 L23R1770 (2-way)"),
    ("itr_h", 0, {"etr_t": "9.63", "util_proc_h": "84.40"}, "11.41", "T11 H13R0280 (1-way)"),
    ("itr_h", 0, {"etr_t": "19.18", "util_proc_h": "43.83"}, "43.77", "T62 L23F1480"),
    ("pbt_cmd_h", 0, {"total_h": "548.36", "etr_t": "204.06"}, "26.872", "T14 Y63R5866"),
    ("pbt_cmd_h", 0, {"total_h": "174.59", "etr_t": "62.66"}, "27.863", "T32 L24R1770"),
    ("pbt_cmd", 0, {"total": "548", "etr_t": "204.06"}, "26.855", "T14 Y63R5866 (RTM CPU, TPNS count)"),
    ("pbt_cmd", 0, {"total": "504", "etr_t": "169.84"}, "29.675", "T34 Y64F480F"),
    ("pbt_cmd", 1, {"cp_cmd": "10.193", "emul_cmd": "16.662"}, "26.855", "T14 Y63R5866 CP + EMUL"),
    ("pbt_cmd", 1, {"cp_cmd": "35.306", "emul_cmd": "57.113"}, "92.420", "T12 H14R0283 CP + EMUL"),
    ("util_proc_h", 0, {"total_h": "548.36", "processors_h": "6"}, "91.39", "T14 Y63R5866"),
    ("util_proc_h", 0, {"total_h": "174.59", "processors_h": "2"}, "87.30", "T32 L24R1770"),
    ("tvr_h", 1, {"pbt_cmd_h": "26.872", "emul_cmd_h": "16.229"}, "1.66", "T14 Y63R5866"),
    ("tvr_h", 1, {"pbt_cmd_h": "86.266", "emul_cmd_h": "21.835"}, "3.95", "T34 Y64F4808"),
    ("tvr_h", 0, {"cp_cmd_h": "7.461", "emul_cmd_h": "15.386"}, "1.48", "T31 Y24R2161 (CP + EMUL form)"),
    ("tvr", 0, {"pbt_cmd": "26.855", "emul_cmd": "16.662"}, "1.61", "T14 Y63R5866"),
    ("pgblpgs_user", 0, {"pgblpgs": "43242", "users": "910"}, "47.5", "T32 L14R0910"),
    ("pgblpgs_user", 0, {"pgblpgs": "104K", "users": "5860"}, "18.2", "T14 Y64R5865 (K = 1024)"),
    ("page_cmd", 0, {"reads_sec": "266", "writes_sec": "161", "etr_t": "204.06"}, "2.093", "T14 Y63R5866"),
    ("page_cmd", 0, {"reads_sec": "1048", "writes_sec": "849", "etr_t": "52.14"}, "36.380", "T34 Y64F4808"),
    ("xstor_cmd", 0, {"xstor_in_sec": "1053", "xstor_out_sec": "1267", "etr_t": "204.06"}, "11.369", "T14"),
    ("xstor_cmd", 0, {"xstor_in_sec": "3745", "xstor_out_sec": "4667", "etr_t": "131.99"}, "63.732", "T34"),
    ("vio_cmd", 0, {"vio_rate": "1702", "etr_t": "204.06"}, "8.341", "T14 Y63R5866"),
    ("vio_cmd", 0, {"vio_rate": "279", "etr_t": "32.41"}, "8.607", "T32 L14R0910"),
    ("srv_tot_cpu_cmd_v", 0, {"srv_cp_cpu_cmd_v": "2.4394", "srv_virt_cpu_cmd_v": "1.9112"}, "4.3505", "VTAM T14"),
    ("srv_tot_cpu_cmd_v", 0, {"srv_cp_cpu_cmd_v": "4.9089", "srv_virt_cpu_cmd_v": "4.0570"}, "8.9659", "VTAM T34"),
    ("srv_tot_cpu_cmd_v", 0, {"srv_cp_cpu_cmd_v": "2.4271", "srv_virt_cpu_cmd_v": "1.9133"}, "4.3404", "SFS T14"),
    # 2.5 guest and batch
    ("processor_sec", 0, {"elapsed_s": "541", "busy_pct": "41.6"}, "225.1", "T25 PD10608C"),
    ("processor_sec", 0, {"elapsed_s": "835.841", "busy_pct": "97.59"}, "815.697", "T24 BNTV310"),
    ("itr_job_min", 0, {"jobs": "56", "processor_sec": "223.9"}, "15.009", "T25 PD10606A"),
    ("itr_job_min", 0, {"jobs": "56", "processor_sec": "176.8"}, "19.00", "T30 PD11104A"),
    ("etr_job_min", 0, {"jobs": "56", "elapsed_s": "561"}, "5.989", "T25 PD10604A"),
    ("etr_job_min", 0, {"jobs": "56", "elapsed_s": "456"}, "7.368", "T30 PD11030A"),
    ("dasd_io_rate", 0, {"dasd_ios": "159121", "elapsed_s": "541"}, "294.1", "T25 PD10608C"),
    ("dasd_io_rate", 0, {"dasd_ios": "161472", "elapsed_s": "471"}, "342.8", "T30 PD11030B"),
    ("itr_job_s", 0, {"jobs": "390", "processor_sec": "815.697"}, "0.478", "T24 BNTV310"),
    ("itr_job_s", 0, {"jobs": "390", "processor_sec": "858.844"}, "0.454", "T24 CBES10VR"),
    ("etr_job_s", 0, {"jobs": "390", "elapsed_s": "835.841"}, "0.467", "T24"),
    ("etr_job_s", 0, {"jobs": "390", "elapsed_s": "878.253"}, "0.444", "T24"),
    ("io_int_job", 0, {"io_int_rate": "575.70", "elapsed_s": "835.841", "jobs": "390"}, "1233.83", "T24"),
    ("io_int_job", 0, {"io_int_rate": "547.50", "elapsed_s": "878.253", "jobs": "390"}, "1232.93", "T24"),
    # 2.6 server capacity (DASD fast write) and SFS derived results
    ("cpu_msec_sec", 0, {"cpu_secs": "48", "elapsed_s": "1800"}, "26.7", "Table 42"),
    ("cpu_msec_sec", 0, {"cpu_secs": "377", "elapsed_s": "1800"}, "209.4", "Table 42"),
    ("dasd_resp_msec_sec", 0, {"dasd_rate_total": "8.4", "dasd_resp": "27.9"}, "234.4", "Table 42"),
    ("dasd_resp_msec_sec", 0, {"dasd_rate_total": "481.0", "dasd_resp": "26.3"}, "12650.3", "Table 42"),
    ("busy_msec_sec", 0, {"cpu_msec_sec": "26.7", "dasd_resp_msec_sec": "234.4"}, "261.1", "Table 42"),
    ("busy_msec_sec", 0, {"cpu_msec_sec": "209.4", "dasd_resp_msec_sec": "2298.3"}, "2507.7", "Mailbox"),
    ("active_msec_sec", 0, {"pct_true_dormant": "26.2", "pct_true_nondormant": "73.8", "pct_test_idle": "58.0"},
     "310", "Table 42"),
    ("active_msec_sec", 0, {"pct_true_dormant": "25.2", "pct_true_nondormant": "74.8", "pct_test_idle": "70.7"},
     "219", "Table 42"),
    ("avg_fp_request_time", 0, {"fp_request_service_time": "1693.8389", "total_fp_requests": "1.3589"}, "1246.5",
     "App. B Y64F4808"),
    ("agents_held", 0, {"agent_holding_time": "2925.549", "etr_t": "52.14"}, "152.5", "App. B Y64F4808"),
    ("agents_in_call", 0, {"fp_request_service_time": "1693.84", "etr_t": "52.14"}, "88.3", "App. B Y64F4808"),
    ("avg_luw_time", 0, {"agent_holding_time": "2925.549", "begin_luws": "0.4831"}, "6055.8", "App. B"),
    ("avg_lock_wait_time", 0, {"lock_wait_time": "164.9504", "total_lock_conflicts": "0.0462"}, "3570.4", "App. B"),
    ("sac_per_fp_request", 0, {"sac_calls": "6.2168", "total_fp_requests": "1.3589"}, "4.57", "App. B"),
    ("bio_request_time", 0, {"total_bio_request_time": "707.2909", "total_bio_requests": "2.4072"}, "293.82",
     "App. B"),
    ("blocking_factor", 0, {"total_dasd_block_transfers": "3.2765", "total_bio_requests": "2.4072"}, "1.36",
     "App. B"),
    ("chaining_factor", 0, {"total_dasd_block_transfers": "3.2765", "total_io_requests": "2.4206"}, "1.35",
     "App. B"),
    ("checkpoint_util", 0, {"checkpoint_duration": "5.3", "seconds_between_checkpoints": "16.4"}, "32.3",
     "App. B"),
    ("avg_fp_request_time", 0, {"fp_request_service_time": "127.0508", "total_fp_requests": "1.3373"}, "95.0",
     "App. B Y63F4809"),
    ("agents_held", 0, {"agent_holding_time": "165.5363", "etr_t": "168.70"}, "27.9", "App. B Y63F4809"),
    ("io_time_cmd_q", 0, {"total_bio_request_time": "707.2909"}, "0.707", "IO TIME/CMD (Q) = App. B / 1000"),
    ("sfs_time_cmd_q", 0, {"fp_request_service_time": "1693.8389"}, "1.694", "SFS TIME/CMD (Q) = App. B / 1000"),
    ("fp_req_cmd_q", 0, {"total_fp_requests": "1.3589"}, "1.359", "FP REQ/CMD (Q) = App. B"),
    ("transfer_rate", 0, {"message_size": "32000", "time_per_iteration": "39.91"}, "801.90", "INSTVER"),
    ("network_delay", 0, {"avg_last_t": "0.817", "tot_int_adj": "0.251"}, "0.566", "Y63R5866, L1728"),
    ("pg_cmd", 0, {"page_cmd": "10.593", "xstor_cmd": "0.000"}, "11", "Table 3 pair 12 base Pg/cmd"),
]


@pytest.mark.parametrize("key,index,inputs,printed,where", WORKED, ids=[f"{w[0]}:{w[4]}" for w in WORKED])
def test_worked_verification(key, index, inputs, printed, where):
    assert agrees(recompute(key, index, **inputs), printed), where


def test_itrr_is_relative_to_the_first_column():
    itrr = REGISTRY["itrr_h"]
    assert itrr.relative_to == "itr_h"
    # T31: 87.53/44.73 = 1.957; 123.64/44.73 = 2.764; 236.35/44.73 = 5.284
    for itr, printed in (("87.53", "1.957"), ("123.64", "2.764"), ("236.35", "5.284")):
        assert agrees(itrr.ratio_to_base(_interval(itr), _interval("44.73")), printed)
    columns = REGISTRY.fill_relative([{"itr_h": 44.73}, {"itr_h": 87.53}, {"itr_h": None}])
    assert columns[0]["itrr_h"] == 1.0
    assert columns[1]["itrr_h"] == pytest.approx(87.53 / 44.73)
    assert columns[2]["itrr_h"] is None


def test_percent_of_native_and_vse_ratios():
    native = REGISTRY["itr_pct_native"]
    assert native.relative_to == "itr_job_s" and native.relative_scale == 100
    assert agrees(native.ratio_to_base(_interval("0.454"), _interval("0.478")), "95.0")
    assert agrees(REGISTRY["etr_pct_native"].ratio_to_base(_interval("0.444"), _interval("0.467")), "95.1")
    itrr = REGISTRY["itrr_job"]
    assert agrees(itrr.ratio_to_base(_interval("19.006"), _interval("14.901")), "1.28")
    assert agrees(itrr.ratio_to_base(_interval("18.991"), _interval("13.906")), "1.37")


def test_rtm_itr_is_only_approximate():
    itr = REGISTRY["itr"].formulas[0]
    assert not itr.exact and itr.approx == pytest.approx(0.01)
    assert abs(itr(266.53, 548.0) / 48.61 - 1) < 0.01           # T14 Y63R5866: -0.06 %
    assert abs(itr(127.04, 521.0) / 25.25 - 1) > 0.03           # T23 Y6$V6002 (VM/XA): 3.5 %, not reproducible
    emul = REGISTRY["emul_itr"].formulas[0]
    assert not emul.exact
    assert abs(emul(1.306, 16.662) / 78.49 - 1) < 0.01


def test_cp_plus_emul_h_falls_short_of_pbt_h():
    approx = REGISTRY["pbt_cmd_h"].formulas[1]
    assert not approx.exact
    assert approx(10.640, 16.229) == pytest.approx(26.869)      # vs 26.872: the monitor's third component


def test_batch_guest_cpu_per_io_saving():
    per_io = REGISTRY["cpu_ms_per_io"].formulas[0]
    saving = delta(per_io(225.5, 162810.0), per_io(176.8, 164504.0))
    assert saving == pytest.approx(0.31, abs=0.005)              # T30: 0.31 ms per DASD I/O
    assert percent_change(36.035, 31.654) == pytest.approx(13.84, abs=0.01)  # Table 33: +4.381 (13.8 %)


def test_composition_and_symbols():
    assert compose([1.30, 1.08]) == pytest.approx(1.404)         # hardware x software: 1.40
    assert compose([1.04, 1.04]) == pytest.approx(1.0816)        # R21 x R1E = 1.08
    assert mean_of([1.059, 1.032, 1.045, 1.043]) == pytest.approx(1.04475)  # R1E
    assert agrees(mean_of([_interval("0.834"), _interval("0.811")]), "0.82")  # R5


def test_little_law_arithmetic():
    values = REGISTRY.evaluate({"users": 280, "avg_think_t": 28.58, "avg_last_t": 0.67, "tx_ok": 963.0,
                                "window_s": 100.0})
    assert values["little_etr_t"] == pytest.approx(280 / 29.25)
    assert values["etr_t"] == pytest.approx(9.63)
    assert values["little_dev"] == pytest.approx(100 * (280 / 29.25 - 9.63) / 9.63)

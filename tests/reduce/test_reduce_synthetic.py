"""reduce_run on synthetic run directories whose numbers are known by construction."""

from __future__ import annotations

import json

import numpy as np
import pytest

from perflab.catalog.registry import REGISTRY
from perflab.errors import InputError
from perflab.reduce.reduce import RunMetrics, reduce_run

T = np.arange(0.0, 31.0, 1.0)       # one sample a second over a 30 s run
WINDOW = (10.0, 20.0)               # stagger + stabilization before 10 s, 10 s window


def steady_samples(t=T, sut_user=0.3, sut_sys=0.2, cpus=(0, 1), cpu_user=0.4, cpu_sys=0.1, **extra):
    """Counters advancing at constant rates: the SUT uses 0.5 CPU-s per second (3 user + 2 sys
    over the window), each listed CPU is 50 % busy (40 % user, 10 % system)."""
    samples = {"t": t, "s.cpu_user": sut_user * t, "s.cpu_sys": sut_sys * t}
    for cpu in cpus:
        samples[f"h.cpu{cpu}.user"] = cpu_user * t
        samples[f"h.cpu{cpu}.system"] = cpu_sys * t
        samples[f"h.cpu{cpu}.idle"] = (1 - cpu_user - cpu_sys) * t
    for name, rate in extra.items():
        samples[name.replace("__", ".")] = rate * t
    return samples


def in_window(n, start=WINDOW[0], end=WINDOW[1]):
    """n completion times spread evenly inside [start, end)."""
    return np.linspace(start, end, n, endpoint=False) + (end - start) / (2 * n)


def test_known_costs(make_run):
    # 1000 transactions in a 10 s window; the SUT's CPU counters advance by exactly 5 s.
    run = make_run(transactions={"end": in_window(1000), "response": 0.02}, samples=steady_samples())
    m = reduce_run(run)
    v = m.values
    assert v["window_s"] == 10.0 and v["tx_ok"] == 1000
    assert v["etr_t"] == pytest.approx(100.0)
    assert v["busy_sec_s"] == pytest.approx(5.0)
    assert v["pbt_cmd_s"] == pytest.approx(5.0)          # 5 CPU-s / 1000 tx = 5 ms per command
    assert v["cp_cmd_s"] == pytest.approx(2.0) and v["emul_cmd_s"] == pytest.approx(3.0)
    assert v["total_s"] == pytest.approx(50.0)
    assert v["processors"] == 1 and v["util_proc_s"] == pytest.approx(50.0)   # sut_cpus = [1]
    assert v["itr_s"] == pytest.approx(200.0)             # = 1000 * PROCESSORS / PBT/CMD (S)
    assert v["tvr_s"] == pytest.approx(5 / 3)
    # (H) over sut_cpus + driver_cpus = {0, 1}: 2 x 50 % busy
    assert v["processors_h"] == 2
    assert v["total_h"] == pytest.approx(100.0) and v["util_proc_h"] == pytest.approx(50.0)
    assert v["pbt_cmd_h"] == pytest.approx(10.0) and v["cp_cmd_h"] == pytest.approx(2.0)
    assert v["itr_h"] == pytest.approx(200.0)
    assert v["tvr_h"] == pytest.approx(1.25)
    assert v["avg_last_t"] == pytest.approx(0.02) and v["resp_p99_t"] == pytest.approx(0.02)
    assert m.warnings == []


def test_every_catalog_key_is_present_and_unmeasured_ones_are_na(make_run):
    m = reduce_run(make_run(transactions={"end": in_window(100)}, samples=steady_samples()))
    assert set(m.values) == set(REGISTRY.perflab_keys())
    assert m.values["instr_cmd_i"] is None and m.values["wkset_s"] is None and m.values["etr"] is None
    assert m.values["itrr_h"] is None       # one run has no base configuration
    assert set(m.to_json()["values"]) == set(REGISTRY.perflab_keys())


def test_window_excludes_stagger_stabilization_and_after(make_run):
    end = np.concatenate([np.linspace(1, 9.9, 500), in_window(200), np.linspace(20.0, 29, 300)])
    response = np.concatenate([np.full(500, 5.0), np.full(200, 0.05), np.full(300, 9.0)])
    # The SUT burns CPU fast before the window and slowly inside it.
    t = T
    cpu = np.where(t <= 10, 0.9 * t, 9.0 + 0.1 * (t - 10))
    samples = steady_samples()
    samples["s.cpu_user"] = cpu
    samples["s.cpu_sys"] = 0 * t
    m = reduce_run(make_run(transactions={"end": end, "response": response}, samples=samples))
    assert m.values["tx_ok"] == 200
    assert m.values["etr_t"] == pytest.approx(20.0)
    assert m.values["avg_last_t"] == pytest.approx(0.05) and m.values["resp_p99_t"] == pytest.approx(0.05)
    assert m.values["busy_sec_s"] == pytest.approx(1.0)   # 0.1 CPU-s per second inside the window only


def test_counters_are_interpolated_at_window_edges(make_run):
    t = np.arange(0.5, 31.0, 1.0)                          # samples between the window edges
    m = reduce_run(make_run(window=(10.25, 20.25), transactions={"end": in_window(500, 10.25, 20.25)},
                            samples=steady_samples(t=t)))
    assert m.values["busy_sec_s"] == pytest.approx(5.0)
    assert m.values["total_h"] == pytest.approx(100.0)


def test_samples_missing(make_run):
    m = reduce_run(make_run(transactions={"end": in_window(1000)}))
    assert "samples missing: (S)/(H) rows are na" in m.warnings
    assert m.values["etr_t"] == pytest.approx(100.0)
    for key in ("pbt_cmd_s", "pbt_cmd_h", "itr_h", "itr_s", "util_proc_s", "total_h", "tvr_h"):
        assert m.values[key] is None, key


def test_sut_columns_missing_leaves_h_rows(make_run):
    samples = steady_samples()
    del samples["s.cpu_user"], samples["s.cpu_sys"]
    m = reduce_run(make_run(transactions={"end": in_window(1000)}, samples=samples))
    assert m.values["pbt_cmd_s"] is None and m.values["itr_s"] is None
    assert m.values["pbt_cmd_h"] == pytest.approx(10.0)
    assert any("(S) rows are na" in w for w in m.warnings)


def test_samples_not_covering_the_window(make_run):
    t = np.arange(0.0, 15.0, 1.0)                          # monitor stopped at 14 s
    m = reduce_run(make_run(transactions={"end": in_window(1000)}, samples=steady_samples(t=t)))
    assert m.values["pbt_cmd_s"] is None and m.values["total_h"] is None
    assert any("samples cover" in w for w in m.warnings)


def test_all_cpus_when_none_are_configured(make_run):
    run = make_run(config={"sut_cpus": [], "driver_cpus": []}, transactions={"end": in_window(1000)},
                   samples=steady_samples(cpus=(0, 1, 2, 3)))
    v = reduce_run(run).values
    assert v["processors"] == 4 and v["processors_h"] == 4
    assert v["total_h"] == pytest.approx(200.0) and v["util_proc_h"] == pytest.approx(50.0)
    assert v["util_proc_s"] == pytest.approx(12.5)


def test_missing_cpu_columns_make_h_rows_na(make_run):
    run = make_run(config={"sut_cpus": [1], "driver_cpus": [5]}, transactions={"end": in_window(1000)},
                   samples=steady_samples())
    m = reduce_run(run)
    assert m.values["total_h"] is None and m.values["itr_h"] is None
    assert any("CPU(s) 5" in w for w in m.warnings)


def test_per_class_split(make_run):
    klass = ["TRIV"] * 600 + ["NONTRIV"] * 400
    response = np.array([0.01] * 600 + [0.1] * 400)
    order = np.random.default_rng(1).permutation(1000)     # classes interleaved in time
    m = reduce_run(make_run(transactions={"end": in_window(1000), "response": response[order],
                                          "klass": [klass[i] for i in order]}))
    assert list(m.per_class) == ["NONTRIV", "TRIV"]
    triv, nontriv = m.per_class["TRIV"], m.per_class["NONTRIV"]
    assert triv["tx_ok"] == 600 and nontriv["tx_ok"] == 400
    assert triv["etr_t"] == pytest.approx(60.0) and nontriv["etr_t"] == pytest.approx(40.0)
    assert triv["avg_last_t"] == pytest.approx(0.01) and nontriv["avg_last_t"] == pytest.approx(0.1)
    assert m.values["avg_last_t"] == pytest.approx((600 * 0.01 + 400 * 0.1) / 1000)
    # nearest rank: 600 of 1000 responses are 0.01 s, so p50 is 0.01 and p90 is 0.1
    assert m.values["resp_p50_t"] == pytest.approx(0.01) and m.values["resp_p90_t"] == pytest.approx(0.1)


def test_nearest_rank_percentiles(make_run):
    response = np.arange(1, 101) / 1000.0                  # 1 ms .. 100 ms
    m = reduce_run(make_run(transactions={"end": in_window(100), "response": response}))
    assert m.values["resp_p50_t"] == pytest.approx(0.050)
    assert m.values["resp_p90_t"] == pytest.approx(0.090)
    assert m.values["resp_p99_t"] == pytest.approx(0.099)


def test_errors_are_not_throughput(make_run):
    ok = np.ones(1000, bool)
    ok[::10] = False                                       # 100 errors, answered fast
    response = np.where(ok, 0.05, 0.001)
    m = reduce_run(make_run(transactions={"end": in_window(1000), "response": response, "ok": ok},
                            samples=steady_samples()))
    v = m.values
    assert v["tx_ok"] == 900 and v["errors_t"] == 100
    assert v["etr_t"] == pytest.approx(90.0)
    assert v["error_pct_t"] == pytest.approx(10.0)
    assert v["avg_last_t"] == pytest.approx(0.05)          # errors do not flatter the response time
    assert v["pbt_cmd_s"] == pytest.approx(5000 / 900)
    assert any("100 transactions ended in an error" in w for w in m.warnings)


def test_littles_law_check(make_run):
    # 10 users, think 0.09 s, response 0.01 s: N / (Z + R) = 100/s, as measured.
    m = reduce_run(make_run(config={"users": 10}, transactions={"end": in_window(1000), "response": 0.01,
                                                                  "think": 0.09}))
    assert m.values["little_etr_t"] == pytest.approx(100.0)
    assert m.values["little_dev"] == pytest.approx(0.0, abs=1e-9)
    assert not any("Little" in w for w in m.warnings)
    # 20 users claimed for the same traffic: the law predicts 200/s, +100 %.
    m = reduce_run(make_run("twice", config={"users": 20}, transactions={"end": in_window(1000), "response": 0.01,
                                                                           "think": 0.09}))
    assert m.values["little_etr_t"] == pytest.approx(200.0)
    assert m.values["little_dev"] == pytest.approx(100.0)
    assert any(w.startswith("Little's law") for w in m.warnings)


def test_littles_law_in_mixed_work_is_the_users_own(make_run):
    # 10 users (think 0.09 s, response 0.01 s: 100/s) and beside them one job initiator, recorded
    # as user 10, running 100 jobs of 0.2 s in the window with no think. The run's ETR (T) is
    # 110/s and its AVG LAST (T) mixes in the jobs; Little's law is the users' cycle: 100/s.
    users = np.r_[np.arange(1000) % 10, np.full(100, 10)]
    end = np.r_[in_window(1000), in_window(100)]
    transactions = {"end": end, "response": np.r_[np.full(1000, 0.01), np.full(100, 0.2)],
                    "think": np.r_[np.full(1000, 0.09), np.full(100, np.nan)], "user": users,
                    "klass": ["online"] * 1000 + ["batch"] * 100}
    mixed = {"name": "mixed", "load": {"users": 10, "batch": {"scripts": ["job"], "initiators": 1}}}
    m = reduce_run(make_run(config={"users": 10}, workload=mixed, transactions=transactions))
    assert m.values["etr_t"] == pytest.approx(110.0)
    assert m.values["little_etr_t"] == pytest.approx(100.0) and m.values["little_dev"] == pytest.approx(0.0, abs=1e-9)
    assert not any("Little" in w for w in m.warnings)
    # the same rows in a run without a job stream: every row is a user's, and the law misses
    m = reduce_run(make_run("plain", config={"users": 10}, transactions=transactions))
    assert m.values["little_dev"] < -10 and any(w.startswith("Little's law") for w in m.warnings)


def test_open_loop_has_no_littles_law(make_run):
    m = reduce_run(make_run(config={"rate": 100.0}, transactions={"end": in_window(1000)}))
    assert m.values["rate"] == 100.0 and m.values["users"] is None and m.values["little_etr_t"] is None


def test_driver_cpu_from_samples_and_saturation(make_run):
    samples = steady_samples(driver__cpu_user=0.9, driver__cpu_sys=0.07)
    m = reduce_run(make_run(transactions={"end": in_window(1000)}, samples=samples))
    assert m.values["driver_cpu"] == pytest.approx(97.0)
    assert "driver CPU 97% of one core: run invalid (the driver, not the SUT, set the pace)" in m.warnings


def test_driver_cpu_from_run_json(make_run):
    m = reduce_run(make_run(transactions={"end": in_window(1000)}, samples=steady_samples(),
                            driver={"cpu_s": 4.0, "window_wall_s": 10.0, "util_pct": 40.0, "saturated": False}))
    assert m.values["driver_cpu"] == pytest.approx(40.0)
    assert not any("driver" in w for w in m.warnings)


def test_run_status_and_invalid_reasons_are_warnings(make_run):
    m = reduce_run(make_run(transactions={"end": in_window(10)}, status="interrupted", reason="SIGTERM",
                            invalid_reasons=["run interrupted: SIGTERM"]))
    assert "run interrupted: SIGTERM" in m.warnings
    assert m.warnings.count("run interrupted: SIGTERM") == 1


def test_sut_counter_paging_io_storage(make_run):
    samples = steady_samples(sut__xact_commit=110.0, h__vm__pgmajfault=20.0, h__vm__pswpout=10.0,
                             h__disk__sda__reads=30.0, h__disk__sda__writes=20.0, h__disk__sdb__reads=50.0,
                             h__disk__sdb__writes=0.0, h__disk__sda__read_bytes=4096.0,
                             h__disk__sda__write_bytes=4096.0, h__disk__sdb__read_bytes=0.0,
                             h__disk__sdb__write_bytes=0.0, s__minflt=300.0, s__syscr=150.0, s__syscw=50.0,
                             s__read_bytes=1000.0, s__write_bytes=1000.0, h__net__lo__rx_bytes=500.0,
                             h__net__lo__tx_bytes=500.0, i__instructions=2e9, i__cycles=3e9)
    samples["s.pss_bytes"] = np.where(T < 10, 999.0, 64.0) * 2**20    # a gauge: mean inside the window
    v = reduce_run(make_run(transactions={"end": in_window(1000)}, samples=samples)).values
    assert v["etr"] == pytest.approx(110.0) and v["etr_ratio"] == pytest.approx(1.1)
    assert v["reads_sec"] == pytest.approx(20.0) and v["writes_sec"] == pytest.approx(10.0)
    assert v["page_cmd"] == pytest.approx(0.3)
    assert v["vio_rate"] == pytest.approx(100.0) and v["vio_cmd"] == pytest.approx(1.0)
    assert v["io_bytes_cmd"] == pytest.approx(81.92)
    assert v["minflt_cmd_s"] == pytest.approx(3.0)
    assert v["syscall_io_cmd_s"] == pytest.approx(2.0) and v["io_bytes_cmd_s"] == pytest.approx(20.0)
    assert v["net_bytes_cmd"] == pytest.approx(10.0)
    assert v["instr_cmd_i"] == pytest.approx(2e7) and v["cpi_i"] == pytest.approx(1.5)
    assert v["wkset_s"] == pytest.approx(64.0)


def test_instructions_from_transactions(make_run):
    m = reduce_run(make_run(transactions={"end": in_window(100), "instructions": np.full(100, 5e6)}))
    assert m.values["instr_cmd_i"] == pytest.approx(5e6)
    partial = np.full(100, 5e6)
    partial[3] = np.nan
    m = reduce_run(make_run("partial", transactions={"end": in_window(100), "instructions": partial}))
    assert m.values["instr_cmd_i"] is None
    assert any("instructions measured for 99 of 100" in w for w in m.warnings)


def test_per_component_servers(make_run):
    samples = steady_samples(v__postgres__cpu_user=0.2, v__postgres__cpu_sys=0.1, v__wal_writer__cpu_sys=0.05)
    samples["v.postgres.rss_bytes"] = 0 * T + 100 * 2**20
    m = reduce_run(make_run(transactions={"end": in_window(1000)}, samples=samples))
    pg = m.per_component["postgres"]
    assert pg["srv_cp_cpu_cmd_v"] == pytest.approx(1.0) and pg["srv_virt_cpu_cmd_v"] == pytest.approx(2.0)
    assert pg["srv_tot_cpu_cmd_v"] == pytest.approx(3.0) and pg["srv_wkset_v"] == pytest.approx(100.0)
    wal = m.per_component["wal_writer"]
    assert wal["srv_cp_cpu_cmd_v"] == pytest.approx(0.5) and wal["srv_tot_cpu_cmd_v"] is None


def test_per_interval_series(make_run):
    m = reduce_run(make_run(transactions={"end": in_window(1000), "response": 0.02}, samples=steady_samples()))
    assert m.interval_s == 1.0 and len(m.per_interval) == 10
    for row in m.per_interval:
        assert row["t_end"] - row["t_start"] == pytest.approx(1.0)
        assert row["etr_t"] == pytest.approx(100.0)
        assert row["util_proc_s"] == pytest.approx(50.0) and row["util_proc_h"] == pytest.approx(50.0)
        assert row["avg_last_t"] == pytest.approx(0.02)
    coarse = reduce_run(make_run("coarse", transactions={"end": in_window(1000)}), interval_s=4.0)
    assert [r["tx_ok"] for r in coarse.per_interval] == [400, 400, 200]   # last bucket is 2 s


def test_reduction_is_deterministic(make_run):
    rng = np.random.default_rng(7)
    end = np.sort(rng.uniform(0, 30, 5000))
    run = make_run(config={"users": 50}, transactions={"end": end, "response": rng.exponential(0.05, 5000),
                                                         "think": rng.exponential(0.5, 5000),
                                                         "klass": rng.choice(["A", "B", "C"], 5000)},
                   samples=steady_samples())
    first, second = reduce_run(run), reduce_run(run)
    assert json.dumps(first.to_json()) == json.dumps(second.to_json())
    again = RunMetrics.from_json(json.loads(json.dumps(first.to_json())))
    assert again.values == first.values and again.per_class == first.per_class


def test_bad_run_directories(tmp_path, make_run):
    with pytest.raises(InputError, match="run.json is missing"):
        reduce_run(tmp_path / "nowhere")
    broken = make_run("broken")
    (broken / "run.json").write_text("{not json")
    with pytest.raises(InputError) as info:
        reduce_run(broken)
    assert info.value.line == 1
    no_window = make_run("no-window")
    run = json.loads((no_window / "run.json").read_text())
    del run["window"]
    (no_window / "run.json").write_text(json.dumps(run))
    with pytest.raises(InputError) as info:
        reduce_run(no_window)
    assert info.value.field == "window"

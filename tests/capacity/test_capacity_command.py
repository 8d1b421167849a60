"""`perflab capacity ...` as a user runs it: the seed tables reproduced from their CSVs, studies
composed, what-if scaling, scaling per processor, and bad input as one line with exit 2."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from capacity_studies import ab_study, closed_sweep, concurrency_sweep, store_study
from cli_helpers import perflab

from perflab.derive.command import derive_table

DATA = Path(__file__).parent / "data"
PAIRS = DATA / "21-t03-itrr-measurement-pairs.csv"
MATRIX = DATA / "22-t02-itrr-release-matrix.csv"
TABLE31 = DATA / "06-t31-processor-capacity-9021.csv"


def run_json(*args, **kw) -> dict:
    res = perflab("capacity", *args, "--json", **kw)
    assert res.returncode == 0, res.stderr[-2000:]
    return json.loads(res.stdout)


def test_release_matrix_reproduced_from_the_seed_csvs():
    doc = run_json("matrix", PAIRS, MATRIX)
    c = doc["counts"]
    # every judged cell reproduced within rounding: 10 printed, 17 of the seeds' recomputed
    # column; a `?` keeps 1 printed (0.91?) and 5 recomputed cells (R13C?, RH?) from being
    # judged; the R13A row defines R13A (nothing to check); the 27 are derive's 27 (below)
    assert c == {"rows": 23, "printed_cells": 10, "printed_reproduced": 10, "printed_doubtful": 1,
                 "recomputed_cells": 17, "recomputed_reproduced": 17, "recomputed_doubtful": 5, "defining": 1,
                 "not_derivable": 0}
    rows = {(r["source"], r["target"], r["case"]): r for r in doc["rows"]}
    # the seeds' worked example: VM/XA 2.1 -> VM/ESA 1.1 = R21 x R1E = 1.04 x 1.04 = 1.08 (1.0816)
    r = rows[("VM/XA 2.1", "VM/ESA 1.1", "")]
    assert r["perflab"] == pytest.approx(1.0816) and r["printed"] == 1.08 and r["printed_ok"]
    # within rounding: each symbol anywhere in [1.035, 1.045]
    assert r["within"] == pytest.approx([1.035 ** 2, 1.045 ** 2])
    # from the pairs: R21 = geomean(1.064?, 1.029), R1E = geomean(pairs 9-12), interval from their
    # spread; pair 6 and pair 9 are doubtful, so the estimate says so
    assert r["from_pairs"] == pytest.approx(math.sqrt(1.064 * 1.029) * (1.059 * 1.032 * 1.045 * 1.043) ** 0.25)
    assert r["ci_low"] < r["from_pairs"] < r["ci_high"]
    assert "pair 6 printed '1.064?'" in r["note"] and not r["doubtful"]
    # a product using a one-pair transition gets no interval, and says why
    r20 = rows[("VM/XA 2.0", "VM/ESA 1.1", "")]
    assert r20["ci_low"] is None and "R20 is one pair" in r20["note"]
    # R13A is not in the pairs table: the printed value is used, and nothing is made up from pairs
    r13a = rows[("VM/SP 5", "VM/ESA 1.0 (ESA)", "4381")]
    assert r13a["perflab"] == pytest.approx(0.82 * 1.07 * 0.87) and r13a["from_pairs"] is None
    assert rows[("VM/ESA 1.0 (370)", "VM/ESA 1.0 (ESA)", "4381")]["defines"] == "R13A"
    # a doubtful printed cell is read (0.91), shown beside R13A x R1E = 0.9048, and not judged
    doubtful = rows[("VM/ESA 1.0 (370)", "VM/ESA 1.1", "4381")]
    assert doubtful["printed"] == 0.91 and doubtful["printed_ok"] is None and doubtful["printed_doubtful"]
    assert doubtful["perflab"] == pytest.approx(0.87 * 1.04) and doubtful["recomputed_ok"]
    # a doubtful derivation (R13C?) is computed from its reading, shown, and not judged
    r13c = rows[("VM/SP 5", "VM/ESA 1.1", "9221")]
    assert r13c["perflab"] == pytest.approx(0.82 * 1.07 * 0.95) and r13c["recomputed_ok"] is None
    assert r13c["doubtful"] and "R13C?" in r13c["note"]
    symbols = {s["symbol"]: s for s in doc["symbols"]}
    assert symbols["R1E"]["pairs"] == ["9", "10", "11", "12"] and round(symbols["R1E"]["perflab"], 2) == 1.04
    assert symbols["RH"]["doubtful"] and symbols["RH"]["printed"] == 0.97


def test_capacity_matrix_and_derive_judge_the_matrix_alike():
    # one computation: `perflab derive` on the matrix CSV (its pairs table beside it) and
    # `perflab capacity matrix` give every cell the same recomputed range and the same judgement
    doc = run_json("matrix", PAIRS, MATRIX)
    derived = derive_table(MATRIX)
    by_cell = {(c.row, c.column): c for c in derived.checks}
    assert len(by_cell) == len(derived.checks) == 2 * 23
    for r in doc["rows"]:
        label = f"{r['source']} -> {r['target']}" + (f" ({r['case']})" if r["case"] else "")
        for column, status in (("itrr_printed", r["printed_status"]),
                               ("itrr_recomputed_from_symbols", r["recomputed_status"])):
            check = by_cell[(label, column)]
            assert check.status.value == status, (label, column)
            if check.recomputed is None:
                assert r["within"] is None or r["defines"], (label, column)
            else:
                assert [check.recomputed.lo, check.recomputed.hi] == pytest.approx(r["within"], rel=1e-12)
                assert check.recomputed.lo <= r["perflab"] <= check.recomputed.hi
    assert derived.tally.checked == 27 == doc["counts"]["printed_cells"] + doc["counts"]["recomputed_cells"]
    assert not derived.disagreements


def test_processor_scaling_of_the_seeds_table_31():
    doc = run_json("cpus", TABLE31)
    lv = {int(x["processors"]): x for x in doc["levels"]}
    assert [round(lv[n]["itrr"], 3) for n in (1, 2, 3, 6)] == [1.0, 1.957, 2.764, 5.284]
    assert all(x["printed_ok"] for x in doc["levels"])
    assert lv[2]["per_added"] == pytest.approx(87.53 / 44.73 - 1)
    assert lv[6]["per_added"] == pytest.approx((236.35 - 123.64) / 44.73 / 3)
    assert lv[6]["efficiency"] == pytest.approx(236.35 / 44.73 / 6)
    assert lv[1]["ci_low"] is None  # one run per column


def test_processor_scaling_of_a_sut_cpus_sweep(tmp_path):
    # ITR grows 1.8x from 1 to 2 CPUs; 3 blocks give the ratio an interval from the study's pairs
    doc = concurrency_sweep("sut_cpus", [[1], [0, 1]], lambda k: 500.0 * (1.0 if k == 1 else 1.8), blocks=3,
                            cv=0.01, key="itr_s")
    d = store_study(tmp_path, doc)
    out = run_json("cpus", d)
    two = out["levels"][1]
    assert two["processors"] == 2 and two["itrr"] == pytest.approx(1.8, rel=0.03)
    assert two["ci_low"] < two["itrr"] < two["ci_high"]
    assert any("has 2 CPUs and the driver uses one" in n["text"] for n in out["notes"])


def test_compose_two_studies_adds_log_variances(tmp_path):
    # intervals symmetric in log, as a paired t-interval on ln ITR is
    ab = store_study(tmp_path, ab_study("A", "B", 1.04, (1.04 / 1.02, 1.04 * 1.02)))
    bc = store_study(tmp_path, ab_study("B", "C", 1.10, (1.10 / 1.05, 1.10 * 1.05)))
    doc = run_json("compose", ab.name, str(bc), "--store", tmp_path, "--confidence", "0.90")
    a, b = doc["steps"]
    assert doc["product"]["ratio"] == pytest.approx(1.04 * 1.10)
    assert doc["product"]["se_log"] ** 2 == pytest.approx(a["se_log"] ** 2 + b["se_log"] ** 2)
    # each step's interval is the study's own (t with n_blocks - 1 df at its confidence)
    assert (a["ci_low"], a["ci_high"]) == pytest.approx((1.04 / 1.02, 1.04 * 1.02), rel=1e-9)
    assert a["df"] == 5
    # the product's interval is narrower than multiplying the ends, wider than either step's
    lo, hi = doc["product"]["ci_low"], doc["product"]["ci_high"]
    ratio = doc["product"]["ratio"]
    assert ratio / (1.02 * 1.05) < lo < ratio / 1.05 and ratio * 1.05 < hi < ratio * 1.02 * 1.05
    assert doc["warnings"] == []
    # steps that do not chain by name are pointed out
    ca = store_study(tmp_path, ab_study("C", "D", 0.95, (0.93, 0.97)))
    warning = run_json("compose", str(ab), str(ca))["warnings"][0]
    assert warning["code"] == "steps_unchained" and warning["text"].startswith("steps do not chain")


def test_compose_with_given_numbers_and_what_if(tmp_path):
    doc = run_json("compose", "hw=1.30", "sw=1.08")
    assert doc["product"]["ratio"] == pytest.approx(1.404) and doc["product"]["se_log"] == 0
    w = run_json("whatif", "1.30", f"R=1.08:{1.08 / 1.03!r}:{1.08 * 1.03!r}", "--users", "5860")
    assert w["users_projected"] == pytest.approx(5860 * 1.404)
    lo, hi = w["users_projected_ci"]
    assert lo == pytest.approx(5860 * 1.404 / 1.03, rel=1e-9) and hi == pytest.approx(5860 * 1.404 * 1.03, rel=1e-9)
    assert not w["extrapolated"]
    assert run_json("whatif", "2.5", "--users", "100")["extrapolated"]


def test_what_if_from_a_sweep(tmp_path):
    d = store_study(tmp_path, closed_sweep([1, 2, 4, 8, 12, 16, 24], think=0.02, blocks=3, cv=0.02))
    base = run_json("supported", d)["supported"][0]
    w = run_json("whatif", "1.10:1.08:1.12", "--sweep", str(d))
    assert w["users_now"] == base["users"] and w["users_now_ci"] == [base["low"], base["high"]]
    assert w["users_projected"] == pytest.approx(base["users"] * 1.10)


def test_sweep_commands_on_a_stored_study(tmp_path):
    d = store_study(tmp_path, closed_sweep([1, 2, 4, 8, 12, 16, 24], think=0.02))
    s = run_json("summary", d.name, "--store", tmp_path)
    assert s["model"]["demand"] == pytest.approx(0.002) and s["usl"] is not None
    assert run_json("usl", d)["usl"]["n_levels"] == 7
    m = run_json("mva", d, "--fit", "1,24")
    assert m["held_out_max_abs_error"]["avg_last_t"] < 1e-4
    assert len(run_json("bounds", d)["levels"]) == 7
    sup = run_json("supported", d, "--target-util", "80", "--response-limit", "0.05")["supported"]
    assert sup[0]["u"] <= 0.80 and sup[1]["r"] <= 0.05
    for cmd in ("summary", "usl", "mva", "bounds", "supported"):
        res = perflab("capacity", cmd, d)
        assert res.returncode == 0 and res.stdout.strip(), (cmd, res.stderr)


@pytest.mark.parametrize("args, message", [
    (["usl", "{short}"], "no curve: a USL fit needs ≥ 6 measured levels, the sweep has 3 (1, 2, 4)"),
    (["mva", "{dip}"], "no curve: ETR (T) is not monotone"),
    (["mva", "{ab}"], "not a sweep study"),
    (["mva", "{short}", "--fit", "5"], "no measured level 5"),
    (["supported", "{short}", "--target-util", "120"], "between 0 and 100"),
    (["mva", "nosuchstudy"], "no study 'nosuchstudy'"),
    (["compose", "{ab}#Z"], "no comparison with new configuration 'Z'"),
    (["compose", "1.04:1.10:1.20"], "expected low ≤ ratio ≤ high"),
    (["cpus", "{short}"], "no curve: scaling per processor needs a sweep over sut_cpus"),
    (["whatif", "1.1"], "give --users N or --sweep STUDY"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, message):
    def dip(n, m):
        if n == 8:
            m["etr_t"] *= 0.3
    paths = {"short": store_study(tmp_path, closed_sweep([1, 2, 4])),
             "dip": store_study(tmp_path / "b", closed_sweep([1, 2, 4, 8, 12, 16], tamper=dip)),
             "ab": store_study(tmp_path / "c", ab_study("A", "B", 1.05, (1.01, 1.09)))}
    res = perflab("capacity", *[a.format(**paths) for a in args], "--store", tmp_path)
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert message in res.stderr and "Traceback" not in res.stderr
    assert res.stdout == ""
    assert len(res.stderr.strip().splitlines()) == 1


def test_a_broken_study_json_names_the_file_and_line(tmp_path):
    d = tmp_path / "studies" / "x"
    d.mkdir(parents=True)
    (d / "study.json").write_text('{"runs": [\n  1,\n  oops]}')
    res = perflab("capacity", "summary", "x", "--store", tmp_path)
    assert res.returncode == 2 and "study.json:3: not valid JSON" in res.stderr

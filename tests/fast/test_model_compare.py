"""`perflab compare` on stored model runs: every way of naming a group (run ids, label:NAME,
study:ID:CONFIG), every exit code, and the study's own verdict when it is given the study's
groups. The runs come from model studies (seeded: the same runs on every run of the tests)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from model_helpers import KNOWN_COST, metric, perflab_model, study_of, write

from perflab.drive.model_driver import Model

QUIET = Model(noise=0.005, block_noise=0.02, seed=1)

STUDY = """
name: {name}
workload: w.yaml
configurations:
  - name: base
  - name: candidate
    set: {{transactions.work.kwargs.cpu_ms: {cost}}}
blocks: {blocks}
seed: 2
metrics: [itr_s, pbt_cmd_s, etr_t]
{extra}
"""


def _study(directory: Path, store: Path, name: str, cost: float, extra: str = "", model: Model = QUIET,
           blocks: int = 6) -> dict:
    write(directory, "w.yaml", KNOWN_COST)
    path = write(directory, f"{name}.yaml", STUDY.format(name=name, cost=cost, extra=extra, blocks=blocks))
    doc, _ = study_of(perflab_model("study", path, model=model, store=store))
    return doc


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """Four stores: a +10% study, an A/A study, a study whose every pair is excluded, and an A/A
    study of 3 blocks at 5% noise a run (an interval of about ±12%: INCONCLUSIVE)."""
    root = tmp_path_factory.mktemp("compare")
    out = {}
    for name, cost, extra, model, blocks in (("worse", 2.2, "", QUIET, 6), ("same", 2.0, "", QUIET, 6),
                                             ("none", 2.0, "gates: {util_band: [99, 100]}", QUIET, 6),
                                             ("noisy", 2.0, "", Model(noise=0.05, seed=4), 3)):
        store = root / name
        out[name] = (store, _study(root, store, name, cost, extra, model, blocks))
    return out


def _compare(store: Path, a: str, b: str, *args: str) -> tuple[int, dict | None, str]:
    out = store.parent / f"out-{abs(hash((a, b, args)))}"
    done = perflab_model("compare", a, b, "--out", out, *args, store=store)
    path = out / "study.json"
    return done.returncode, json.loads(path.read_text()) if path.exists() else None, done.stderr


def test_compare_on_the_study_groups_gives_the_study_s_verdict(stores):
    for name in ("worse", "same", "none"):
        store, doc = stores[name]
        code, compared, err = _compare(store, f"study:{doc['study_id']}:base", f"study:{doc['study_id']}:candidate")
        assert code == doc["verdict"]["exit_code"] == {"worse": 1, "same": 0, "none": 4}[name], err
        mine, theirs = metric(compared, "itr_s"), metric(doc, "itr_s")
        assert (mine["verdict"], mine["ratio"], mine["ci_low"], mine["n_blocks"]) == \
            (theirs["verdict"], theirs["ratio"], theirs["ci_low"], theirs["n_blocks"])


def test_compare_by_run_ids_and_by_labels_finds_a_known_cost(stores):
    store, doc = stores["worse"]
    base = ",".join(r["run_id"] for r in doc["runs"] if r["config"] == "base")
    new = ",".join(r["run_id"] for r in doc["runs"] if r["config"] == "candidate")
    for a, b in ((base, new), ("label:base", "label:candidate")):
        code, compared, err = _compare(store, a, b)
        itr = metric(compared, "itr_s")
        assert code == 1 and itr["verdict"] == "WORSE", (a, b, err)
        assert itr["ratio"] == pytest.approx(1 / 1.1, rel=0.01) and itr["n_blocks"] == 6
    # unique prefixes name runs too (model runs come many to a second: the shortest unique one)
    ids = base.split(",") + new.split(",")
    unique = lambda run: next(run[:k] for k in range(len(run) - 4, len(run) + 1)
                              if sum(other.startswith(run[:k]) for other in ids) == 1)
    assert _compare(store, ",".join(unique(r) for r in base.split(",")), new)[0] == 1


def test_compare_exit_codes(stores):
    store, doc = stores["same"]
    code, compared, _ = _compare(store, "label:base", "label:candidate")
    assert code == 0 and metric(compared, "itr_s")["verdict"] == "EQUIVALENT"
    store, doc = stores["noisy"]
    code, compared, _ = _compare(store, f"study:{doc['study_id']}:base", f"study:{doc['study_id']}:candidate")
    assert code == 3 and metric(compared, "itr_s")["verdict"] == "INCONCLUSIVE"
    store, doc = stores["same"]
    code, _, err = _compare(store, "no-such-run", "label:nothing")
    assert code == 2 and "Traceback" not in err
    code, _, err = _compare(store, "label:base", "label:candidate", "--metric", "itr_x")
    assert code == 2 and "--metric" in err
    store, doc = stores["none"]
    code, _, err = _compare(store, f"study:{doc['study_id']}:base", f"study:{doc['study_id']}:candidate")
    assert code == 4 and "no valid comparison" in err


def test_compare_by_run_ids_or_labels_gives_the_study_s_own_answer_and_n(stores):
    # A run that belongs to a stored study keeps the study's decision however it is named, so
    # run ids and labels give the study's verdict, interval and n -- and its exit code 4 when the
    # study excluded every pair (its utilization band), where the single-run gates would not.
    for name in ("worse", "same", "none"):
        store, doc = stores[name]
        base = ",".join(r["run_id"] for r in doc["runs"] if r["config"] == "base")
        new = ",".join(r["run_id"] for r in doc["runs"] if r["config"] == "candidate")
        theirs = metric(doc, "itr_s")
        for a, b in ((base, new), ("label:base", "label:candidate")):
            code, compared, err = _compare(store, a, b)
            assert code == doc["verdict"]["exit_code"], (name, a, err)
            mine = metric(compared, "itr_s")
            assert (mine["verdict"], mine["ratio"], mine["ci_low"], mine["ci_high"], mine["n_blocks"]) == \
                (theirs["verdict"], theirs["ratio"], theirs["ci_low"], theirs["ci_high"], theirs["n_blocks"]), name


def test_runs_that_cannot_be_paired_are_compared_unpaired_and_say_so(stores):
    # Two halves of one configuration's runs share no block: Welch's interval, not pairs by order.
    store, doc = stores["same"]
    runs = [r["run_id"] for r in doc["runs"] if r["config"] == "base"]
    code, compared, err = _compare(store, ",".join(runs[:3]), ",".join(runs[3:]))
    entry = metric(compared, "itr_s")
    assert entry["method"] == "welch" and entry["n_base"] == 3 and entry["n_new"] == 3, entry
    assert any("unpaired" in w["text"] for w in compared["warnings"])


def test_compare_on_a_subset_of_one_study_s_runs_uses_the_runs_named(stores):
    # Four of the six blocks named: the comparison is of those four pairs, not of the study's six.
    store, doc = stores["worse"]
    blocks = {0, 1, 2, 3}
    base = ",".join(r["run_id"] for r in doc["runs"] if r["config"] == "base" and r["block"] in blocks)
    new = ",".join(r["run_id"] for r in doc["runs"] if r["config"] == "candidate" and r["block"] in blocks)
    code, compared, err = _compare(store, base, new)
    itr, whole = metric(compared, "itr_s"), metric(doc, "itr_s")
    assert itr["n_blocks"] == 4 and whole["n_blocks"] == 6, err
    assert itr["ratio"] != whole["ratio"] and itr["ratio"] == pytest.approx(1 / 1.1, rel=0.01)


def test_duet_runs_of_two_studies_keep_the_duet_s_rules(tmp_path):
    # Two duet studies; the base's runs of one against the candidate's of the other: the
    # machine-wide rows are the pair's (no verdict), response rows descriptive, and the design
    # says duet -- from the runs' own records, not a solo study's rules.
    store = tmp_path / "store"
    one = _study(tmp_path, store, "one", 2.0, "arrangement: duet")
    two = _study(tmp_path, store, "two", 2.2, "arrangement: duet")
    a = ",".join(r["run_id"] for r in one["runs"] if r["config"] == "base")
    b = ",".join(r["run_id"] for r in two["runs"] if r["config"] == "candidate")
    code, compared, err = _compare(store, a, b)
    assert compared is not None, err
    assert compared["design"]["arrangement"] == "duet" and compared["design"]["duet"] is True
    assert compared["design"]["bias"]["route"] == "none"     # no bound measured on this test's store
    roles = {m["key"]: m["role"] for m in compared["comparisons"][0]["metrics"]}
    assert roles["util_proc_h"] == "pair" and roles["avg_last_t"] == "descriptive" and roles["itr_s"] == "primary"
    assert any("ran as pairs (duet)" in w["text"] for w in compared["warnings"])

"""`perflab history` over stores of model runs (tests/history/history_data.py): which runs make one
series, in which order, what is excluded and why, where a planted change is found, whose change it
is, and the exit code a CI job reads.

False change points: the permutation test claims one in a segment of pure noise 5% of the time
at its default level, whatever the noise's size (the energy statistic is scale-free). So the
tests about series, order, causes and exit codes give each run an exact ITR (S)
(history_data.exact: the model's cost, 1000 / cpu_ms, with no noise): a segment of equal values has
no split for a shuffle to beat, and the planted steps are the only change points. A planted step
is then missed only if 10 of the 199 shuffles put its runs back together in one block (each does
with a chance of about (n - m + 1) / C(n, m): 7e-7 for 10 runs of 30), far below 1e-4. The first
test keeps the model's noise: the detector on real reductions.
"""

from __future__ import annotations

import json

import pytest
from model_helpers import perflab_model

from perflab.errors import EXIT_CHANGE_POINT, EXIT_OK, EXIT_USAGE
from perflab.history.analysis import HistoryOptions, build_history

from .history_data import KNOB, history, workload_file

#: +5% CPU per transaction: ITR (S) x 1/1.05, 10 SD of the model's 0.5% run-to-run noise.
SHIFT = 1.05


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """20 runs of version v1, then 10 of v2, whose transactions cost 5% more (exact values)."""
    root = tmp_path_factory.mktemp("planted")
    w = workload_file(root)
    ids = history(root / "store", w, [2.0] * 20 + [2.0 * SHIFT] * 10, versions=["v1"] * 20 + ["v2"] * 10,
                  exact_itr=True)
    return root / "store", ids


def test_a_planted_change_in_real_reductions_is_found_between_the_right_runs_with_its_size(tmp_path):
    # The model's 0.5% run-to-run noise, reduced as any run is: a 5% step is 10 SD. Its change
    # point is at run 20 unless a run within 3 of it strays 5 SD (below 1e-5); the segments either
    # side are at least 3 runs long (a false change point beside it may shorten one), so the
    # estimate's SD is at most 0.5% x sqrt(1/3 + 1/10) = 0.33%, and 1.5% is 4.5 SD (below 1e-5).
    w = workload_file(tmp_path)
    ids = history(tmp_path / "store", w, [2.0] * 20 + [2.0 * SHIFT] * 10, versions=["v1"] * 20 + ["v2"] * 10)
    doc = build_history(tmp_path / "store", HistoryOptions(ignore=[KNOB]))
    assert len(doc.series) == 1
    s = doc.series[0]
    assert [p.run_id for p in s.points] == ids          # ordered by time: the order they ran
    cp = next(c for c in s.change_points if c.index == 20)
    assert (cp.before, cp.after, cp.before_version, cp.after_version) == (ids[19], ids[20], "v1", "v2")
    # ITR (S) x 1/1.05: the model's cost, which its reduction gives back to 0.1%
    assert cp.ratio == pytest.approx(1 / SHIFT, rel=0.015)
    assert cp.ci_low < cp.ratio < cp.ci_high and cp.level == 0.95
    assert cp.direction == "worse" and cp.cause == "software"
    assert cp.p_value <= 0.05


def test_exact_values_give_the_planted_change_alone(planted):
    store, ids = planted
    s = build_history(store, HistoryOptions(ignore=[KNOB])).series[0]
    (cp,) = s.change_points
    assert (cp.index, cp.before, cp.after, cp.runs_before, cp.runs_after) == (20, ids[19], ids[20], 20, 10)
    assert cp.ratio == pytest.approx(1 / SHIFT, rel=1e-12) and cp.ci_low == pytest.approx(cp.ci_high)
    assert not cp.recent and cp.p_value == pytest.approx(1 / 200)


def test_without_ignore_the_knob_is_configuration_and_the_runs_are_two_series(planted):
    store, ids = planted
    doc = build_history(store, HistoryOptions())
    assert sorted(len(s.points) for s in doc.series) == [10, 20]
    assert all(not s.change_points for s in doc.series)
    assert len({s.key.configuration for s in doc.series}) == 2


def test_the_command_gives_the_table_json_and_exit_codes(planted):
    store, ids = planted
    table = perflab_model("history", "--ignore", KNOB, "--gate", store=store)
    assert table.returncode == EXIT_OK, table.stderr      # the change is 10 runs old: not new
    assert ids[20] in table.stdout and "v1 -> v2" in table.stdout and "software" in table.stdout
    as_json = perflab_model("history", "--ignore", KNOB, "--json", "--recent", "10", "--gate",
                            store=store)
    assert as_json.returncode == EXIT_CHANGE_POINT       # among the last 10 runs: new
    doc = json.loads(as_json.stdout)
    cp = doc["series"][0]["change_points"][0]
    assert cp["after"] == ids[20] and cp["recent"] is True and doc["exit_code"] == EXIT_CHANGE_POINT
    assert "a change point among the last 10 runs" in doc["meaning"]
    # only worse ones fail: the change is worse, so it still fails; a gate on nothing new passes
    worse = perflab_model("history", "--ignore", KNOB, "--recent", "10", "--gate", "--fail-on",
                          "worse", store=store)
    assert worse.returncode == EXIT_CHANGE_POINT
    no_gate = perflab_model("history", "--ignore", KNOB, "--recent", "10", store=store)
    assert no_gate.returncode == EXIT_OK


@pytest.mark.parametrize("args,field", [(["--metric", "no_such_metric"], "--metric"), (["--by", "size"], "--by"),
                                        (["--fail-on", "some"], "--fail-on"), (["--significance", "0.7"],
                                                                               "--significance")])
def test_bad_input_is_one_line_and_exit_2(planted, args, field):
    store, _ = planted
    result = perflab_model("history", *args, store=store)
    assert result.returncode == EXIT_USAGE
    assert field in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_two_hosts_are_never_one_series(tmp_path):
    w = workload_file(tmp_path)
    a = history(tmp_path / "store", w, [2.0] * 8, seed=0)
    b = history(tmp_path / "store", w, [2.0] * 8, seed=100, fingerprint={"hostname": "other-host"})
    doc = build_history(tmp_path / "store", HistoryOptions())
    assert "other-host" in {s.key.hostname for s in doc.series}
    runs = [{p.run_id for p in s.points} for s in doc.series]
    assert sorted(map(len, runs)) == [8, 8] and set(a) in runs and set(b) in runs
    assert len({s.key.host for s in doc.series}) == 2


def test_loads_and_windows_are_separate_series(tmp_path):
    (tmp_path / "b").mkdir()
    history(tmp_path / "store", workload_file(tmp_path, rate=100), [2.0] * 6, seed=0)
    history(tmp_path / "store", workload_file(tmp_path / "b", rate=120), [2.0] * 6, seed=50)
    doc = build_history(tmp_path / "store", HistoryOptions())
    assert sorted(s.key.load for s in doc.series) == ["100/s", "120/s"]


def test_versions_are_ordered_as_releases_and_a_run_without_one_is_shown_excluded(tmp_path):
    w = workload_file(tmp_path)
    labels = ["apsw==3.10.0", "apsw==3.9.2", "apsw==3.40.1", None, "apsw==3.9.2"]
    ids = history(tmp_path / "store", w, [2.0] * 5, versions=labels)
    doc = build_history(tmp_path / "store", HistoryOptions(order="version"))
    s = doc.series[0]
    assert [p.run_id for p in s.points] == [ids[1], ids[4], ids[0], ids[2], ids[3]]   # 3.9.2 < 3.10.0 < 3.40.1
    assert s.points[-1].excluded == ["no version recorded (ordered by version)"]
    # labels that are not versions keep the order in which they first ran
    other = tmp_path / "other"
    other.mkdir()
    ids = history(other / "store", workload_file(other), [2.0] * 4, versions=["c3", "a1", "c3", "b2"])
    s = build_history(other / "store", HistoryOptions(order="version")).series[0]
    assert [p.run_id for p in s.points] == [ids[0], ids[2], ids[1], ids[3]]


def test_a_failed_run_is_excluded_with_its_reason_and_not_analysed(tmp_path):
    w = workload_file(tmp_path)
    ids = history(tmp_path / "store", w, [2.0] * 8)
    from perflab.records.run import read_run_record
    from perflab.store.atomic import write_json_atomic
    from perflab.store.catalog import Store

    path = Store(tmp_path / "store").run_dir(ids[3]) / "run.json"
    data = read_run_record(path).dump()
    data.update(status="failed", reason="the SUT's worker died")
    write_json_atomic(path, data)
    s = build_history(tmp_path / "store", HistoryOptions()).series[0]
    excluded = {p.run_id: p.excluded for p in s.points if p.excluded}
    assert list(excluded) == [ids[3]] and "the SUT's worker died" in excluded[ids[3]][0]
    assert len(s.analysed()) == 7


def _interleaved(store, workloads, steps, shift_at, shifted, versions=True):
    """Each step runs every workload once (a CI job's set); from `shift_at` on, the workloads in
    `shifted` cost 5% more."""
    ids: dict[str, list[str]] = {w.stem: [] for w in workloads}
    for step in range(steps):
        for k, w in enumerate(workloads):
            cost = 2.0 * (SHIFT if step >= shift_at and w.stem in shifted else 1.0)
            ids[w.stem] += history(store, w, [cost], versions=[f"v{step}"] if versions else None,
                                   seed=1000 * k + step, exact_itr=True)
    return ids


@pytest.fixture(scope="module")
def three_workloads(tmp_path_factory):
    root = tmp_path_factory.mktemp("three")
    return root, [workload_file(root, name) for name in ("alpha", "beta", "gamma")]


def test_a_change_in_every_workload_at_once_is_the_hosts(three_workloads, tmp_path):
    root, workloads = three_workloads
    _interleaved(tmp_path / "store", workloads, 16, 10, {"alpha", "beta", "gamma"})
    doc = build_history(tmp_path / "store", HistoryOptions(ignore=[KNOB]))
    assert len(doc.series) == 3
    for s in doc.series:
        (cp,) = s.change_points
        assert cp.index == 10 and cp.cause == "host", (s.key.workload, cp)
        assert "every other series of this host" in cp.cause_reason


def test_a_change_in_one_workload_is_the_softwares(three_workloads, tmp_path):
    root, workloads = three_workloads
    _interleaved(tmp_path / "store", workloads, 16, 10, {"alpha"})
    doc = build_history(tmp_path / "store", HistoryOptions(ignore=[KNOB]))
    changed = {s.key.workload: s.change_points for s in doc.series}
    assert not changed["beta"] and not changed["gamma"]
    (cp,) = changed["alpha"]
    assert cp.cause == "software" and cp.cause_reason.startswith("version v9 -> v10")


def test_a_reference_series_that_changed_at_the_same_time_makes_it_the_hosts(three_workloads, tmp_path):
    root, workloads = three_workloads
    _interleaved(tmp_path / "store", workloads[:2], 16, 10, {"alpha", "beta"})
    doc = build_history(tmp_path / "store", HistoryOptions(ignore=[KNOB], references=["beta"]))
    by = {s.key.workload: s for s in doc.series}
    assert by["beta"].reference and not by["alpha"].reference
    (cp,) = by["alpha"].change_points
    assert cp.cause == "host" and "reference series beta" in cp.cause_reason
    # each point carries the reference's nearest run: the host's speed then
    assert all(p.host.reference is not None and p.host.reference.workload == "beta" for p in by["alpha"].points)
    # only alpha asked for: the reference is read (for the host's sake) but not shown
    only = build_history(tmp_path / "store", HistoryOptions(ignore=[KNOB], references=["beta"], workload="alpha",
                                                            ))
    assert [s.key.workload for s in only.series] == ["alpha"] and only.series[0].change_points[0].cause == "host"


def test_the_same_version_on_both_sides_or_a_new_kernel_is_the_hosts(tmp_path):
    w = workload_file(tmp_path)
    history(tmp_path / "same", w, [2.0] * 12 + [2.0 * SHIFT] * 8, versions=["v1"] * 20, exact_itr=True)
    (cp,) = build_history(tmp_path / "same", HistoryOptions(ignore=[KNOB])).series[0].change_points
    assert cp.cause == "host" and "same version on both sides (v1)" in cp.cause_reason
    ids = history(tmp_path / "kernel", w, [2.0] * 12, versions=[f"v{i}" for i in range(12)], exact_itr=True)
    ids += history(tmp_path / "kernel", w, [2.0 * SHIFT] * 8, versions=[f"v{i}" for i in range(12, 20)], seed=12,
                   fingerprint={"kernel": "6.99.0-new"}, exact_itr=True)
    s = build_history(tmp_path / "kernel", HistoryOptions(ignore=[KNOB])).series[0]
    (cp,) = s.change_points
    assert cp.cause == "host" and "kernel" in cp.cause_reason and "6.99.0-new" in cp.cause_reason
    assert s.points[-1].host.kernel == "6.99.0-new"     # the host's state, carried by each point


def test_a_host_change_among_the_last_runs_is_reported_but_does_not_fail_the_gate(tmp_path):
    w = workload_file(tmp_path)
    history(tmp_path / "store", w, [2.0] * 15 + [2.0 * SHIFT] * 5, versions=["v1"] * 20, exact_itr=True)
    result = perflab_model("history", "--ignore", KNOB, "--gate", "--json", store=tmp_path / "store")
    assert result.returncode == EXIT_OK
    doc = json.loads(result.stdout)
    cp = doc["series"][0]["change_points"][0]
    assert cp["recent"] and cp["cause"] == "host" and "1 recent change point(s) of the host's" in doc["meaning"]


def test_relative_values_are_each_run_over_its_blocks_base_run(tmp_path):
    # A duet study of model runs: each run's point carries its block's base run (the host's state
    # then), and --relative analyses the run over it -- the pair's ratio, in which the host's
    # speed of that block cancels.
    from perflab.drive.model_driver import Model

    workload_file(tmp_path)
    (tmp_path / "study.yaml").write_text(f"name: pair\nworkload: known-cost.yaml\nconfigurations:\n  - {{name: a}}\n"
                                         f"  - {{name: b, set: {{{KNOB}: 2.1}}}}\nduet: true\nblocks: 4\n")
    done = perflab_model("study", tmp_path / "study.yaml", model=Model(noise=0.002, block_noise=0.03),
                         store=tmp_path / "store")
    assert done.returncode == EXIT_OK, done.stderr[-2000:]
    raw = build_history(tmp_path / "store", HistoryOptions(ignore=[KNOB])).series
    rel = build_history(tmp_path / "store", HistoryOptions(ignore=[KNOB], relative=True)).series
    (raw,), (rel,) = raw, rel
    assert raw.key.arrangement == "duet" and rel.relative
    by_run = {p.run_id: p for p in raw.points}
    bases = [p for p in rel.points if p.label == "a"]
    news = [p for p in rel.points if p.label == "b"]
    assert len(bases) == len(news) == 4
    assert all(p.value is None and "base run itself" in p.excluded[0] for p in bases)
    for p in news:
        base = by_run[p.host.base.run_id]
        assert base.label == "a" and base.block == p.block
        assert p.value == pytest.approx(by_run[p.run_id].raw / base.raw, rel=1e-12)

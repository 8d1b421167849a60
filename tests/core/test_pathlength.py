"""Pathlength's parts that run without valgrind: reading callgrind's dumps, the overhead
subtracted, the counted transactions' draw, the window's INSTRUCTIONS (I) from the counted pass,
the known loop, the workload check (one message with file:line, exit 2), and a study's
comparison of INSTR/CMD (I)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_helpers import perflab, write_workload

from perflab.drive.pathlength.client_request import ClientRequests
from perflab.drive.pathlength.draw import draw
from perflab.drive.pathlength.inprocess import read_counts
from perflab.drive.pathlength.valgrind import callgrind_parts, labelled_counts
from perflab.reduce.pathlength import counted_instructions
from perflab.reduce.transactions import WindowTransactions
from perflab.sut.known_loop import loop_instructions, spin
from perflab.workload.loader import load_workload


def _part(n: int, label: str, ir: int, totals: bool = True) -> str:
    tail = f"totals: {ir}\n" if totals else ""
    return (f"part: {n}\n\ndesc: I1 cache:\ndesc: Timerange: Basic block 0 - 9\ndesc: Trigger: {label}\n\n"
            f"positions: line\nevents: Ir\nsummary: {ir}\n\nfn=(1) f\n0 {ir}\n\n{tail}")


def _callgrind_file(tmp_path, parts: list[tuple[str, int]], totals: bool = True):
    head = "# callgrind format\nversion: 1\ncreator: callgrind-3.19.0\npid: 7\ncmd: python -m w\n\n"
    body = "".join(_part(i + 1, label, ir, totals) for i, (label, ir) in enumerate(parts))
    path = tmp_path / "callgrind.out"
    path.write_text(head + body)
    return path


@pytest.mark.parametrize("totals", [True, False])
def test_parts_are_read_in_order_with_their_labels(tmp_path, totals):
    path = _callgrind_file(tmp_path, [("Client Request: null-0", 110), ("Client Request: tx-0", 5_000),
                                      ("Program termination", 0)], totals)
    parts = callgrind_parts(path)
    assert [(p.trigger, p.ir) for p in parts] == [("Client Request: null-0", 110), ("Client Request: tx-0", 5_000),
                                                 ("Program termination", 0)]
    assert labelled_counts(parts) == {"null-0": 110, "tx-0": 5_000}


def test_the_empty_calls_median_is_subtracted_and_a_missing_dump_is_none(tmp_path):
    # The first empty call is dearer (a one-off): the median ignores it.
    nulls = [("Client Request: null-0", 900), ("Client Request: null-1", 100), ("Client Request: null-2", 102)]
    path = _callgrind_file(tmp_path, nulls + [("Client Request: tx-0", 10_100), ("Client Request: tx-2", 50)])
    counts = read_counts(path, transactions=3, nulls=3)
    assert counts.overhead == 102
    assert counts.per_transaction == [9_998.0, None, 0.0]  # never below zero


def test_a_file_without_the_empty_calls_is_refused(tmp_path):
    path = _callgrind_file(tmp_path, [("Program termination", 12345)])
    with pytest.raises(ValueError, match="no dump of the client requests"):
        read_counts(path, transactions=1, nulls=3)


def test_outside_valgrind_the_client_requests_say_so():
    assert ClientRequests().running_on_valgrind() == 0


def test_the_known_loop_runs_and_refuses_a_count_that_would_wrap():
    spin(1000)
    assert loop_instructions(1000) == 2002
    with pytest.raises(ValueError):
        spin(0)


MIX = """
name: mix
target: {kind: python}
transactions:
  - {name: logon, call: "perflab.sut.synthetic:noop"}
  - {name: a, call: "perflab.sut.synthetic:loops", params: {iterations: {random_int: [1, 1000000]}}}
  - {name: b, call: "perflab.sut.synthetic:noop"}
scripts:
  - {name: init, steps: [logon]}
  - {name: s1, weight: 3, steps: [a, b]}
  - {name: s2, weight: 1, steps: [b]}
init_script: init
load: {users: 1}
pathlength: {transactions: 10}
"""


def test_the_draw_follows_the_seed_and_the_mix(tmp_path):
    workload = load_workload(write_workload(tmp_path, MIX))
    first = draw(workload, 1, 400)
    assert len(first) == 400
    assert first[0].tx_index == 0  # the init script's logon, once, first
    assert all(d.tx_index != 0 for d in first[1:])
    assert draw(workload, 1, 400) == first          # the same seed: the same transactions and parameters
    assert draw(workload, 2, 400) != first
    # s1 (a, b) is drawn 3 times as often as s2 (b): a is 3/7 of the transactions after the logon.
    # 399 draws, binomial sd ~ 0.025: 0.43 +- 0.13 is over 5 sd.
    share_a = sum(d.tx_index == 1 for d in first[1:]) / 399
    assert 0.30 < share_a < 0.56
    assert all(d.params is not None and 1 <= d.params["iterations"] <= 1_000_000 for d in first if d.tx_index == 1)


def _window(names: list[str], ok: list[bool]) -> WindowTransactions:
    codes = {n: i for i, n in enumerate(sorted(set(names)))}
    n = len(names)
    nan = np.full(n, np.nan)
    return WindowTransactions(ok=np.array(ok), end=np.arange(n, dtype=float), response=nan, service=nan, first=nan,
                              think=nan, instructions=nan, harness=nan, class_code=np.zeros(n, dtype=int),
                              class_names=["default"], tx_code=np.array([codes[x] for x in names]),
                              tx_names=sorted(codes))


def test_the_window_gets_each_names_mean_count_at_its_own_count(tmp_path):
    path = tmp_path / "pathlength.parquet"
    pq.write_table(pa.table({
        "transaction": ["a", "a", "b", "b", "b"],
        "class": ["x"] * 5,
        "instructions": [1000.0, 3000.0, 100.0, math.nan, 500.0],   # a: 2000; b: 300 (the failed one left out)
        "ok": [True, True, True, False, True],
        "error": [None, None, None, "boom", None],
    }), path)
    # The window: 1 a, 3 b completed (and a failed a, not counted).
    total, note = counted_instructions(path, _window(["a", "a", "b", "b", "b"], [True, False, True, True, True]))
    assert total == pytest.approx(1 * 2000 + 3 * 300)
    assert "4 transactions counted" in note
    # A name the pass did not count is taken at the mean of all counted ones, and the note says so.
    total, note = counted_instructions(path, _window(["a", "c"], [True, True]))
    assert total == pytest.approx(2000 + (1000 + 3000 + 100 + 500) / 4)
    assert "c not counted" in note


SERVER = """
name: pg
target: {kind: http, base_url: "http://127.0.0.1:9"}
transactions:
  - {name: t, http: {path: /}}
scripts: [{name: s, steps: [t]}]
load: {users: 1}
pathlength: {transactions: 10}
"""


@pytest.mark.fast
def test_pathlength_of_a_server_is_refused_with_the_line(tmp_path):
    path = write_workload(tmp_path, SERVER)
    result = perflab("validate", path)
    assert result.returncode == 2
    assert f"{path}:7" in result.stderr and "pathlength" in result.stderr and "Traceback" not in result.stderr



def test_a_study_states_a_pathlength_change_with_its_interval():
    from perflab.records.study import StudyRun
    from perflab.stats.criteria import Criteria
    from perflab.study.compare import compare_configs

    # Each block counts its own sample of transactions (its seed's draw), the same sample in both
    # configurations: the block's pathlength varies, the new release's is 6% above it in each
    # (to within 0.1%), so the paired interval is narrow around 1.06 and the verdict is WORSE
    # (more instructions per command) beyond the 3% margin.
    base = [1_000_000.0, 1_020_000.0, 990_000.0, 1_010_000.0]
    new = [b * r for b, r in zip(base, (1.0600, 1.0605, 1.0595, 1.0601))]
    runs = [StudyRun(run_id=f"{c}{i}", config=c, block=i, metrics={"instr_cmd_i": v})
            for i, (b, n) in enumerate(zip(base, new)) for c, v in (("A", b), ("B", n))]
    entry = compare_configs(runs, "A", "B", ["instr_cmd_i"], Criteria(), ["instr_cmd_i"]).metrics[0]
    assert entry.key == "instr_cmd_i" and entry.role == "primary"
    assert entry.ci_low is not None and entry.ci_high is not None
    assert entry.ci_low < 1.06 < entry.ci_high and entry.ci_high - entry.ci_low < 0.005
    assert entry.verdict_unadjusted == "WORSE"


def test_a_duet_widens_its_timed_rows_for_its_bias_but_not_its_counted_ones():
    from perflab.records.study import StudyRun
    from perflab.stats.bias import BiasBound
    from perflab.stats.criteria import Criteria
    from perflab.study.compare import DesignTraits, compare_configs

    # The counted pass runs its fixed draw alone after the window: who shared the CPU during the
    # window does not change an instruction count, so a duet's measured bias (a timed row's)
    # does not widen INSTR/CMD (I). ITR (S), timed in the window, is widened.
    base = [1_000_000.0, 1_020_000.0, 990_000.0, 1_010_000.0]
    ratios = (0.9600, 0.9605, 0.9595, 0.9601)
    runs = [StudyRun(run_id=f"{c}{i}", config=c, block=i, metrics={"instr_cmd_i": v, "itr_s": 1e9 / v})
            for i, (b, r) in enumerate(zip(base, ratios)) for c, v in (("A", b), ("B", b * r))]
    duet = DesignTraits(concurrent=True, bias=BiasBound(k_low=-0.1, k_high=0.2, a_max=0.004))
    keys = ["itr_s", "instr_cmd_i"]
    plain = {e.key: e for e in compare_configs(runs, "A", "B", keys, Criteria(), ["itr_s"]).metrics}
    paired = {e.key: e for e in compare_configs(runs, "A", "B", keys, Criteria(), ["itr_s"], duet).metrics}
    assert paired["instr_cmd_i"].design_ci_low is None
    assert (paired["instr_cmd_i"].ci_low, paired["instr_cmd_i"].ci_high) == \
        (plain["instr_cmd_i"].ci_low, plain["instr_cmd_i"].ci_high)
    itr = paired["itr_s"]
    assert itr.design_ci_low == plain["itr_s"].ci_low
    assert itr.ci_low < plain["itr_s"].ci_low and itr.ci_high > plain["itr_s"].ci_high


@pytest.mark.fast
def test_a_postgres_backend_is_counted_between_its_markers(tmp_path):
    from perflab.drive.pathlength.server import backend_counts, process_totals
    from perflab.drive.pathlength.valgrind import Part

    marker = "--dump-before=pg_backend_pid"
    # The connection's start-up, the warm-up, three nulls (the marker's own 230 and a first,
    # colder one), two transactions, the backend's end.
    irs = [5_000_000, 900_000, 260, 230, 231, 10_230, 20_230]
    parts = [Part(marker, ir) for ir in irs] + [Part("Program termination", 1_000)]
    counts = backend_counts(parts, 2, nulls=3)
    assert counts.overhead == 231
    assert counts.per_transaction == [9_999.0, 19_999.0]
    # A dump too many or too few (a transaction that called pg_backend_pid() itself) is refused.
    with pytest.raises(ValueError, match="dumps at pg_backend_pid"):
        backend_counts(parts + [Part(marker, 500)], 2, nulls=3)
    # The other processes' instructions, by the kind pg_stat_activity gave their pid.
    files = {}
    for pid, ir in ((10, 700), (11, 300), (12, 40), (13, 5), (14, 99)):
        (tmp_path / str(pid)).mkdir()
        files[pid] = _callgrind_file(tmp_path / str(pid), [("Program termination", ir)])
    totals = process_totals(files, {10: "postmaster", 11: "checkpointer", 12: "walwriter", 13: "walwriter"}, 14)
    assert totals == {"checkpointer": 300.0, "postmaster": 700.0, "walwriter": 45.0}


PG_DSN = """
name: pg
target: {kind: postgres, dsn: "postgresql://postgres@127.0.0.1:9/postgres"}
transactions:
  - {name: t, sql: "SELECT 1"}
scripts: [{name: s, steps: [t]}]
load: {users: 1}
pathlength: {transactions: 10}
"""


@pytest.mark.fast
def test_pathlength_of_a_postgres_server_perflab_does_not_start_is_refused(tmp_path):
    result = perflab("validate", write_workload(tmp_path, PG_DSN))
    assert result.returncode == 2
    assert "target.server" in result.stderr and "Traceback" not in result.stderr
    accepted = perflab("validate", str(Path(__file__).parents[2] / "examples" / "pathlength" / "postgres-known-loop.yaml"))
    assert accepted.returncode == 0, accepted.stderr

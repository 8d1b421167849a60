"""A sampled CPU profile of a real server during its window: nginx (examples/http/pages.yaml)
under perf's cpu-clock event, its processes' shares of CPU time by function, the kernel in them
-- what a valgrind count cannot see."""

from __future__ import annotations

import programs
import pyarrow.parquet as pq
import pytest
from net.net_helpers import EXAMPLES, run_workload


@programs.needs("nginx", "perf")
def test_nginx_is_sampled_during_its_window_as_shares_of_cpu_time(tmp_path):
    run, _metrics = run_workload(tmp_path, EXAMPLES / "http" / "pages.yaml", {"profile": {"frequency": 999}},
                                 stagger=0.0, stabilization=1.0, duration=3.0)
    assert run["status"] == "complete", run["reason"]
    record = run["profile"]
    assert record["status"] == "sampled", record
    assert len(record["pids"]) >= 2          # nginx's master and its worker, found at the window's start
    table = pq.read_table(tmp_path / "store" / "runs" / run["run_id"] / "profile.parquet").to_pandas()
    assert table.samples.sum() == record["samples"] > 0
    assert table.share.sum() == pytest.approx(1.0)
    assert (table.share_low <= table.share).all() and (table.share <= table.share_high).all()
    # the kernel does nginx's network work: a sampled profile sees it
    assert table[table.object == "[kernel.kallsyms]"].share.sum() > 0.2

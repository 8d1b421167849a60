"""Capacity planning and the dashboard on model studies: a users sweep of a single FCFS server
with exponential service and think times -- the network MVA solves exactly -- through `perflab
capacity summary` and `perflab capacity mva`, and the same store listed by `perflab serve`."""

from __future__ import annotations

import asyncio
import json
import math
import re
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer
from model_helpers import perflab_model, study_of, write

from perflab.drive.model_driver import Model
from perflab.serve.app import create_app


def exponential_points(mean_ms: float, k: int = 20) -> list[float]:
    """k costs with mean `mean_ms` and CV 1 (an exponential's quantile midpoints, the top one set
    so the second moment is the exponential's): a seeded stand-in for exponential service."""
    v = [-math.log(1 - (i + 0.5) / k) for i in range(k - 1)]
    s1, s2 = sum(v), sum(x * x for x in v)
    qa, qb, qc = s2 + s1 * s1, -2 * k * s1, k * k - 2 * k
    a = (-qb - math.sqrt(qb * qb - 4 * qa * qc)) / (2 * qa)
    return [round(mean_ms * x, 4) for x in [a * y for y in v] + [k - a * s1]]


WORKLOAD = f"""
name: known-cost-mva
target: {{kind: python}}
transactions:
  - name: t
    call: "perflab.sut.synthetic:work"
    params: {{cpu_ms: {{choice: {exponential_points(2.0)}}}}}
scripts: [{{name: s, steps: [t]}}]
think: {{dist: exponential, mean: 0.02}}
load: {{users: 1}}
timing: {{stabilization: 1s, measurement: 20s}}
placement: {{workers: 1}}
"""

LEVELS = [1, 3, 6, 9, 12, 18, 24]


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    root = tmp_path_factory.mktemp("sweep")
    write(root, "w.yaml", WORKLOAD)
    path = write(root, "sweep.yaml", f"""
name: mva-model
workload: w.yaml
sweep: {{factor: users, values: {LEVELS}}}
blocks: 1
metrics: [etr_t, avg_last_t, avg_think_t, pbt_cmd_s, util_proc_s, itr_s, tx_ok, processors]
""")
    done = perflab_model("study", path, model=Model(), store=root / "store")
    assert done.returncode == 0, done.stderr[-2000:]
    doc, directory = study_of(done)
    return root / "store", doc, directory


def _json(*args: str, store: Path) -> dict:
    done = perflab_model("capacity", *args, "--json", store=store)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_capacity_summary_of_a_model_sweep(sweep):
    store, doc, _ = sweep
    summary = _json("summary", doc["study_id"], store=store)
    assert summary["model"]["demand"] == pytest.approx(0.002, rel=0.02)   # the model's mean cost
    assert summary["usl"] is not None and summary["supported"]
    usl = _json("usl", doc["study_id"], store=store)["usl"]
    assert usl["n_levels"] == len(LEVELS)
    done = perflab_model("capacity", "summary", doc["study_id"], store=store)
    assert done.returncode == 0 and "supported" in done.stdout.lower(), done.stdout


def test_mva_predicts_held_out_levels_of_the_model(sweep):
    # The model is the network MVA solves (one FCFS server, exponential service and thinks): fitted
    # at 1, 3 and 18 users it predicts 6, 9 and 12 -- the knee -- within its 5% and what a 20 s
    # window's sampling leaves (seeded: the same windows every time).
    store, doc, _ = sweep
    out = _json("mva", doc["study_id"], "--fit", "1,3,18", "--demand", "point", store=store)
    held = [p for p in out["levels"] if not p["fit"]]
    assert {int(p["n"]) for p in held} == {6, 9, 12, 24}
    for p in held:
        assert abs(p["etr_error"]) < 0.05 and abs(p["avg_last_error"]) < 0.08, p
    # teeth: a model without queueing misses the knee by far more
    p = next(p for p in out["levels"] if int(p["n"]) == 12)
    assert (p["demand"] + out["model"]["delay"]) / p["avg_last_t_measured"] < 0.7


def test_the_dashboard_lists_model_studies_and_their_runs(sweep):
    store, doc, _ = sweep

    async def main():
        async with TestClient(TestServer(create_app(store))) as client:
            pages = {}
            for path in ("/studies", f"/studies/{doc['study_id']}", "/runs", "/api/runs",
                         f"/runs/{doc['runs'][0]['run_id']}"):
                response = await client.get(path)
                pages[path] = (response.status, await response.text())
            return pages

    pages = asyncio.run(main())
    assert all(status == 200 for status, _ in pages.values()), {p: s for p, (s, _) in pages.items()}
    assert doc["study_id"] in set(re.findall(r'<tr data-study="([^"]+)"', pages["/studies"][1]))
    listed = set(re.findall(r'<tr data-run="([^"]+)"', pages["/runs"][1]))
    assert {r["run_id"] for r in doc["runs"]} <= listed
    api = json.loads(pages["/api/runs"][1])
    assert {r["run_id"] for r in api} >= {r["run_id"] for r in doc["runs"]}
    assert all(r["status"] == "complete" for r in api)

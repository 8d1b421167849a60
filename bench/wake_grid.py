"""What the open loop's arrival grid buys and costs (bench/findings.md, "The open loop's arrivals on
a 1 ms grid"): the driver's CPU and wake-ups per request at 10,000 HTTP arrivals/s, and the start
lateness at 20,000/s, with the arrivals' timer on a grid of 0 (exact), 0.25, 0.5 and 1 ms.

nginx on CPU 1 (bench/nginx.py), perflab's HTTP defaults workload on CPU 0, measured as
driver_cost_pairs.py measures it (a 6 s window of the driver's CPU against nginx's count). The grid
is set by patching `native_http.WAKE_GRIDS_S` in the driver's process -- an experiment's knob, not
a workload setting (the workload's are auto, exact and tick). Two repetitions of each, alternated.

    .venv/bin/python bench/wake_grid.py      # about 4 minutes, quiet machine
"""
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import driver_cost_pairs as d  # noqa: E402
from nginx import Nginx  # noqa: E402

GRIDS = [0.0, 0.00025, 0.0005, 0.001]
py = sys.executable


def argv_for(grid):
    code = ("import sys, perflab.drive.load.native_http as n; g = float(sys.argv.pop(1)); "
            "n.WAKE_GRIDS_S['auto'] = (0.0, g); "
            "from perflab.cli import main; sys.argv[0] = 'perflab'; main()")
    return [py, "-c", code, str(grid)]


out = []
with Nginx() as nginx:
    for rep in range(2):
        for grid in GRIDS:
            path = d._open_loop(d.HTTP_DEFAULTS, "exp-rate.yaml", 10_000)
            store = d.workdir("pairs-store") / f"exp-{time.time_ns()}"
            argv = [*argv_for(grid), "run", str(path), "--quiet", "--store", str(store)]
            row = d.measure(argv, nginx.requests, pin=False, ready=d.perflab_measuring(store))
            print(json.dumps({"grid_ms": grid * 1e3, "rep": rep, "cpu_us": row["cpu_us_per_tx"], "wakes": row["wakes_per_tx"],
                              "tps": row["tps"], "exit": row["exit_code"]}), flush=True)
    for grid in GRIDS:
        path = d.write_text(d.workdir("pairs-workloads") / "exp-late.yaml", d.HTTP_DEFAULTS.read_text().replace(
            "load: {users: 50}", "load: {rate: 20000, arrival: poisson, max_in_flight: 1000}"))
        store = d.workdir("pairs-store") / f"exp-late-{time.time_ns()}"
        done = subprocess.run([*argv_for(grid), "run", str(path), "--quiet", "--store", str(store)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=d._many_files)
        late = d.lateness(store)
        print(json.dumps({"grid_ms": grid * 1e3, "late_p50_ms": late["p50_ms"], "late_p99_ms": late["p99_ms"],
                          "max": late["max_ms"], "dropped": late["dropped"], "exit": done.returncode}), flush=True)

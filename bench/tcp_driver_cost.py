"""The TCP driver beside a peer (issue 28, item 1): CPU per transaction in the load generator.

Target: redis-server (bench/redis_server.py) on CPU 1, no persistence. Peer: redis-benchmark's
PING_INLINE test, 50 connections, no pipelining: each connection sends "PING\\r\\n" and waits
for "+PONG\\r\\n", a closed loop. perflab: bench/workloads/tcp-redis-ping.yaml, the same exchange
through the TCP adapter (`message`, `reply`), 50 users, its driver on CPU 0: in the compiled loop,
and (tcp-redis-ping-python.yaml) on the Python engine. Each generator alone
on CPU 0, measured from outside as driver_cost.py measures the HTTP generators: after the load
begins and 1.5 s of warm-up, a 6 s window of its process tree's CPU against the commands Redis
counted (INFO stats). Repetitions interleave the two.

    python bench/tcp_driver_cost.py [REPS]      # default 3; writes bench/results/tcp_driver_cost.json
"""

from __future__ import annotations

import json
import sys

from common import BENCH, find_tool, log, quiet_enough, shell_join, summarize, with_retries
from driver_cost import USERS, measure_http, perflab_http_argv
from redis_server import Redis

#: perflab's rows: the compiled loop (drive/load/native_http.py's NativeTcpEngine) and the Python
#: engine it falls back to.
WORKLOADS = {"perflab (compiled loop)": BENCH / "workloads" / "tcp-redis-ping.yaml",
             "perflab (Python path)": BENCH / "workloads" / "tcp-redis-ping-python.yaml"}
RUN_S = 10


def commands(port: int) -> dict[str, tuple[list[str], bool]]:
    """name -> (argv, pin to CPU 0 here): perflab pins its own driver (--driver-cpus 0)."""
    bench = find_tool("redis-benchmark")
    out: dict[str, tuple[list[str], bool]] = {}
    if bench:
        # redis-benchmark has no duration: a count it cannot finish, stopped after RUN_S seconds
        out["redis-benchmark"] = (["timeout", "-s", "INT", str(RUN_S), bench, "-p", str(port), "-c", str(USERS),
                                   "-n", "100000000", "-t", "ping_inline", "-P", "1", "-q"], True)
    for name, workload in WORKLOADS.items():
        out[name] = (perflab_http_argv(workload), False)
    return out


def main(reps: int) -> dict:
    rows: dict[str, list[dict]] = {}
    with Redis() as redis:
        for rep in range(reps):
            for name, (argv, pin) in commands(redis.port).items():
                log(f"TCP driver cost: {name}, repetition {rep + 1}/{reps}")
                row = with_retries(lambda a=argv, p=pin: measure_http(a, redis, pin=p), quiet_enough)
                row["command"] = ("taskset -c 0 " if pin else "") + shell_join(argv)
                rows.setdefault(name, []).append(row)
    summary = {name: {"cpu_us_per_tx": summarize(r["cpu_us_per_tx"] for r in reps_),
                      "tps": summarize(r["tps"] for r in reps_),
                      "target_util_pct": summarize(r["target_util_pct"] for r in reps_),
                      "command": reps_[0]["command"], "reps": reps_}
               for name, reps_ in rows.items()}
    return summary


if __name__ == "__main__":
    result = main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
    out = BENCH / "results" / "tcp_driver_cost.json"
    out.write_text(json.dumps(result, indent=1, default=str) + "\n")
    for name, row in result.items():
        cost, tps, util = row["cpu_us_per_tx"], row["tps"], row["target_util_pct"]
        print(f"{name:26s} {cost['median']:6.2f} us/tx [{cost['min']:.2f}-{cost['max']:.2f}]  "
              f"{tps['median']:9,.0f} tx/s  redis {util['median']:4.0f} % of CPU 1")
    print(f"written: {out}")

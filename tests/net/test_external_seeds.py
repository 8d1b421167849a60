"""The run's seed reaches the external drivers: two runs with the same seed issue the same
script choices and parameters through pgbench, k6 and wrk, user by user, and a run with
another seed issues others.

What each run issued is read back from a record the tool or the server keeps of every request:
PostgreSQL's statement log (pgbench, simple protocol: the parameters in the text), k6's own JSON
output with the URL of every request (the parameters in its query), and the per-thread logs
perflab imports from wrk (wrk sends no parameters: the script choices). A run stops after a
duration, not a count, so runs are compared over the prefix every user reached in all of them.

Each server here listens on a free port of its own (not the examples' 18080), so these tests do
not collide with other runs of nginx on the machine.
"""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import textwrap
from pathlib import Path

import programs
import pyarrow.parquet as pq

from perflab.drive.external import MEASURED, WARM_UP, tool_seed
from perflab.drive.external.k6_script import RUNTIME
from perflab.workload.service_port import free_port

from .net_helpers import EXAMPLES, needs_nginx, needs_pg15, needs_pgbench, run_workload

needs_k6 = programs.needs("k6")
needs_wrk = programs.needs("wrk")

TIMING = {"stagger": 0, "stabilization": 1, "duration": 2}  # a warm-up run of the tool, then the measured run


def run_dir(tmp_path: Path, run: dict) -> Path:
    return tmp_path / "store" / "runs" / run["run_id"]


def common_prefixes(runs: list[dict], at_least: int) -> list[dict]:
    """Each run's {user: sequence}, every sequence cut to the shortest one (the runs stopped
    after a time, not a count), which must be `at_least` long."""
    n = min(len(seq) for streams in runs for seq in streams.values())
    assert n >= at_least, [{k: len(v) for k, v in streams.items()} for streams in runs]
    return [{key: tuple(seq[:n]) for key, seq in streams.items()} for streams in runs]


# --- the derived seeds ------------------------------------------------------------------------


def test_each_tool_run_gets_a_seed_of_its_own_derived_from_the_run_seed():
    seeds = {(seed, phase): tool_seed(seed, phase) for seed in (0, 1, 2, -1, 2**70) for phase in (WARM_UP, MEASURED)}
    assert all(0 <= s < 2**32 for s in seeds.values())
    assert len(set(seeds.values())) == len(seeds)  # 10 draws of 32 bits: a collision has p < 1.1e-8
    assert tool_seed(1, MEASURED) == seeds[(1, MEASURED)]  # a function of its arguments alone


@needs_k6
def test_k6_runtime_generator_is_xoshiro128ss_seeded_as_documented(tmp_path):
    """The generator in the k6 script, run by k6, against xoshiro128** written here from its
    definition (Blackman and Vigna 2021) and the seeding the runtime documents."""
    source = RUNTIME[RUNTIME.index("class Random"):RUNTIME.index("function pick")]
    script = tmp_path / "generator.js"
    script.write_text("export const options = {vus: 1, iterations: 1};\n" + source + textwrap.dedent("""
        export default function () {
          const out = [];
          for (const [seed, user] of [[7, 3], [7, 4], [4294967295, 0]]) {
            const r = new Random(seed, user);
            out.push([r.next32(), r.next32(), r.next32(), r.random()]);
          }
          console.log(JSON.stringify(out));
        }
    """))
    done = subprocess.run([programs.path("k6"), "run", "--quiet", "--no-usage-report", "--log-format", "raw", str(script)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    printed = json.loads(next(line for line in (done.stdout + done.stderr).splitlines() if line.startswith("[[")))

    mask = 0xFFFFFFFF

    def mix32(h):
        h = ((h ^ (h >> 16)) * 0x85EBCA6B) & mask
        h = ((h ^ (h >> 13)) * 0xC2B2AE35) & mask
        return h ^ (h >> 16)

    def rotl(x, k):
        return ((x << k) | (x >> (32 - k))) & mask

    def reference(seed, user):
        h = mix32(seed ^ mix32(user))
        s = [mix32((h + k * 0x9E3779B9) & mask) for k in range(4)]

        def next32():
            result = (rotl((s[1] * 5) & mask, 7) * 9) & mask
            t = (s[1] << 9) & mask
            s[2] ^= s[0]
            s[3] ^= s[1]
            s[1] ^= s[2]
            s[0] ^= s[3]
            s[2] ^= t
            s[3] = rotl(s[3], 11)
            return result

        words = [next32(), next32(), next32()]
        return words + [((next32() >> 5) * 2**26 + (next32() >> 6)) / 2**53]

    assert printed == [reference(7, 3), reference(7, 4), reference(4294967295, 0)]


# --- pgbench ----------------------------------------------------------------------------------

PGBENCH_WORKLOAD = EXAMPLES / "postgres" / "debit-credit-pgbench.yaml"
# Two scripts (a choice per transaction) with random parameters; no tables needed. The
# server logs every statement with its session; pgbench's simple protocol puts the values in
# the text. A thread per client: pgbench draws script choices per thread (see pgbench.py).
PGBENCH_CHANGES = {
    "target.pgbench_init": None,
    "target.server.settings": {"log_statement": "all", "log_line_prefix": "%c|", "synchronous_commit": "off"},
    "driver.protocol": "simple",
    "driver.threads": 2,
    "transactions": [
        {"name": "one", "class": "trivial", "sql": ["SELECT 'seed-test', 'one', :a, :b"],
         "params": {"a": {"random_int": [1, 1_000_000_000]}, "b": {"random_int": [-5, 5]}}},
        {"name": "two", "class": "nontrivial", "sql": ["SELECT 'seed-test', 'two', :c"],
         "params": {"c": {"random_int": [1, 1_000_000_000]}}},
    ],
    "scripts": [{"name": "s1", "weight": 3, "steps": ["one"]}, {"name": "s2", "weight": 1, "steps": ["two"]}],
}
_STATEMENT = re.compile(r"^([0-9a-f]+\.[0-9a-f]+)\|LOG:  statement: SELECT 'seed-test', (.*?);?$")


def pgbench_sessions(tmp_path: Path, seed: int) -> dict[tuple[str, int], list[str]]:
    """The statements of each pgbench client's session, from the server's log, keyed by phase
    and rank: which client a session served is not logged, so a phase's sessions are ranked by
    their first statement."""
    run, _ = run_workload(tmp_path, PGBENCH_WORKLOAD, PGBENCH_CHANGES, users=2, seed=seed, **TIMING)
    assert run["status"] == "complete", run["reason"]
    assert f"--random-seed={tool_seed(seed, MEASURED)}" in run["external"]["argv"]
    sessions: dict[str, list[str]] = {}  # in the order they first speak: the warm-up's two, then the measured run's
    for line in (run_dir(tmp_path, run) / "postgres.log").read_text().splitlines():
        match = _STATEMENT.match(line)
        if match:
            sessions.setdefault(match.group(1), []).append(match.group(2))
    assert len(sessions) == 4, list(sessions)
    ordered = list(sessions.values())
    ranked = {}
    for phase, phase_sessions in ((WARM_UP, ordered[:2]), (MEASURED, ordered[2:])):
        for rank, statements in enumerate(sorted(phase_sessions, key=lambda seq: seq[0])):
            ranked[(phase, rank)] = statements
    return ranked


@needs_pg15
@needs_pgbench
def test_pgbench_same_seed_same_parameters_other_seed_others(tmp_path):
    a, b, c = common_prefixes([pgbench_sessions(tmp_path, seed) for seed in (5, 5, 6)], at_least=20)
    assert a == b
    # A session's first statement alone carries a parameter drawn from 1e9 values, so two
    # sessions with unrelated seeds begin alike with p <= 1e-9: here at most 16 + 6 pairs, p < 2.2e-8.
    assert set(a.values()).isdisjoint(c.values())  # another seed
    assert len({seq[0] for seq in a.values()}) == 4  # each client its own sequence, the warm-up others
    assert {s.split(",")[0] for seq in a.values() for s in seq} == {"'one'", "'two'"}  # both scripts chosen


# --- k6 and wrk against nginx -------------------------------------------------------------------


def nginx_workload(tmp_path: Path, name: str, driver: str, transactions: str) -> Path:
    """pages.yaml's nginx on a free port, with the given transactions and driver."""
    port = free_port()
    conf = (EXAMPLES / "http" / "nginx-nolog.conf").read_text()
    conf = conf.replace("127.0.0.1:18080", f"127.0.0.1:{port}").replace("{workload_dir}/html",
                                                                          str(EXAMPLES / "http" / "html"))
    (tmp_path / "nginx.conf").write_text(conf)
    path = tmp_path / f"{name}.yaml"
    path.write_text(textwrap.dedent(f"""
        name: {name}
        service:
          command: [nginx, -c, "{{run_dir}}/nginx_conf", -e, "{{run_dir}}/nginx-error.log", -g, "daemon off;"]
          files: {{nginx_conf: nginx.conf}}
          ready: {{http: "http://127.0.0.1:{port}/index.html"}}
          stop_signal: SIGQUIT
        target: {{kind: http, base_url: "http://127.0.0.1:{port}", connections: per_user}}
        scripts:
          - {{name: reader, weight: 3, steps: [page]}}
          - {{name: api, weight: 1, steps: [session]}}
        load: {{users: 3}}
    """).lstrip() + textwrap.dedent(transactions) + f"driver: {driver}\n")
    return path


K6_TRANSACTIONS = """
    transactions:
      - name: page
        params: {a: {random_int: [1, 1000000000]}, c: {choice: [x, y, z], weights: [1, 2, 3]}}
        http: {path: "/index.html?a={a}&c={c}", expect_body: Welcome}
      - name: session
        params: {b: {random_int: [1, 1000000000]}}
        http: {path: "/api/session.json?b={b}"}
"""


def k6_requests(tmp_path: Path, path: Path, seed: int) -> dict[int, list[str]]:
    """Per user, the URLs of its requests in order, from k6's own JSON output of the measured run."""
    run, _ = run_workload(tmp_path, path, seed=seed, **TIMING)
    assert run["status"] == "complete", run["reason"]
    requests: dict[int, dict[int, str]] = {}
    with gzip.open(run_dir(tmp_path, run) / "k6.json.gz", "rt") as lines:
        for line in lines:
            if line.startswith('{"metric":"http_req_duration","type":"Point"'):
                data = json.loads(line)["data"]
                user, seq, _, _ = (int(x) for x in data["metadata"]["id"].split(":"))
                requests.setdefault(user, {})[seq] = data["tags"]["url"]
    assert sorted(requests) == [0, 1, 2]
    return {user: [urls[seq] for seq in sorted(urls)] for user, urls in requests.items()}


@needs_nginx
@needs_k6
def test_k6_same_seed_same_parameters_other_seed_others(tmp_path):
    # k6 keeps only the status tag by default (shorter output); the URL tag shows the parameters
    path = nginx_workload(tmp_path, "seeds-k6", '{kind: k6, options: ["--system-tags", "status,url"]}', K6_TRANSACTIONS)
    a, b, c = common_prefixes([k6_requests(tmp_path, path, seed) for seed in (5, 5, 6)], at_least=20)
    assert a == b
    # Every request carries a parameter drawn from 1e9 values, so two users with unrelated
    # seeds begin alike with p <= 1e-9: here 3 + 3 pairs, p <= 6e-9.
    assert all(a[user] != c[user] for user in a)  # another seed
    assert len({seq[0] for seq in a.values()}) == 3  # each user its own sequence
    assert any("/api/session.json?b=" in url for seq in a.values() for url in seq)  # both scripts chosen


WRK_TRANSACTIONS = """
    transactions:
      - {name: page, http: {path: /index.html, expect_body: Welcome}}
      - {name: session, http: {path: /api/session.json}}
"""


def wrk_choices(tmp_path: Path, path: Path, seed: int) -> dict[int, list[str]]:
    """Per user (a wrk thread), its transactions in order, from the thread logs perflab imported."""
    run, _ = run_workload(tmp_path, path, seed=seed, **TIMING)
    assert run["status"] == "complete", run["reason"]
    tx = pq.read_table(run_dir(tmp_path, run) / "transactions.parquet").to_pandas()
    tx = tx[tx["ok"]].sort_values("actual_start")  # (an error row is a request wrk sent again)
    return {int(user): list(rows["transaction"].astype(str)) for user, rows in tx.groupby("user")}


@needs_nginx
@needs_wrk
def test_wrk_same_seed_same_script_choices_other_seed_others(tmp_path):
    path = nginx_workload(tmp_path, "seeds-wrk", "{kind: wrk}", WRK_TRANSACTIONS)
    a, b, c = common_prefixes([wrk_choices(tmp_path, path, seed) for seed in (5, 5, 6)], at_least=60)
    assert sorted(a) == sorted(b) == sorted(c) == [0, 1, 2]
    assert a == b
    # Unrelated sequences of choices weighted 3:1 agree at each step with p = 0.75^2 + 0.25^2 =
    # 0.625, so over 60 steps or more with p <= 0.625^60 < 6e-13 per pair: here 3 + 3 pairs.
    assert all(a[user] != c[user] for user in a)  # another seed
    assert len(set(a.values())) == 3  # each user its own sequence

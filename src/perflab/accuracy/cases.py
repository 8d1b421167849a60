"""The systems of known added cost the accuracy studies run: a workload, and a knob -- a field a
study configuration sets to add work to every transaction, linear from 0.

* synthetic -- perflab.sut.synthetic:loops, a fixed number of arithmetic loop turns per
  transaction (fixed work, not a CPU-time target, so sharing a CPU can show);
* sqlite    -- the main job's workload on SQLite 3.40.1 through apsw, each transaction also
  counting `knob` rows of a recursive CTE;
* postgres  -- debit-credit as one PL/pgSQL call (examples/postgres), the function first running
  `knob` empty loop iterations;
* http      -- the known-cost HTTP server (perflab.sut.known_cost_http), each request also
  turning `knob` rounds of an interpreted loop in the server.

The knob's size for a given added cost is measured, not assumed (`calibrate_knob`): CPU per
transaction at knob 0 and at a probe value, alone, gives the cost of one unit. The truth a study
is measured against is not this calibration but one-at-a-time studies of the very same
configurations (perflab.accuracy.summary): what the seeds' lab would have measured.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Case:
    name: str
    workload: str                    # relative to the examples directory
    knob: str                        # the dotted workload path a configuration sets
    probe: int                       # a knob value that adds a measurable cost (~20-40%)
    start_users: int
    max_users: int
    timing: dict[str, str] = field(default_factory=dict)
    description: str = ""
    #: A load every arrangement runs as it is (no calibration): a server driven without think
    #: time by a few users is busy whatever the load, and the seeds' 90% target does not apply.
    fixed_users: int | None = None
    #: Each transaction's own CPU is measured (perflab's workers, or PostgreSQL's backend clock):
    #: its truth is measured in mixed runs (perflab.accuracy.truth); else in alternating runs.
    per_transaction_cpu: bool = True
    #: The target kind whose studies use this case's bound on a host (perflab.store.bias): the case
    #: is that kind's SUT under a workload of its kind (the synthetic SUT is a python target: the
    #: kind's own workers running Python code of known work). None: the case bounds no kind.
    target_kind: str | None = None

    def path(self, examples: Path) -> Path:
        return examples / self.workload

    def unavailable(self, examples: Path) -> str | None:
        """Why this case cannot run here, or None."""
        if not self.path(examples).is_file():
            return f"{self.path(examples)} not found (run from a perflab checkout, or pass --examples)"
        if self.name == "postgres" and shutil.which("pg_ctl") is None and not Path("/usr/lib/postgresql").is_dir():
            try:
                import pgserver  # noqa: F401
            except ImportError:
                return "no PostgreSQL server here (Debian's postgresql or the pgserver wheel: pip install 'perflab[net]')"
        return None


CASES: dict[str, Case] = {
    "synthetic": Case("synthetic", "accuracy/synthetic-knob.yaml", "transactions.work.kwargs.knob", 8000,
                      start_users=20, max_users=2000,
                      timing={"stagger": "0s", "stabilization": "2s", "measurement": "10s"},
                      description="python SUT of known work (loop turns), 20 ms thinks", target_kind="python"),
    "sqlite": Case("sqlite", "accuracy/sqlite-knob.yaml", "transactions.debit_credit.params.knob.value", 2000,
                   start_users=20000, max_users=100000,
                   timing={"stagger": "0s", "stabilization": "3s", "measurement": "12s"},
                   description="SQLite 3.40.1 (apsw), the main job's bank users, 10 s Bactrian thinks",
                   target_kind="sqlite"),
    "postgres": Case("postgres", "postgres/debit-credit-proc.yaml", "transactions.tpcb_like.params.knob.value", 4000,
                     start_users=4, max_users=4,
                     timing={"stagger": "0s", "stabilization": "8s", "measurement": "15s"},
                     description="PostgreSQL 15, debit-credit as one PL/pgSQL call, 4 users without think time",
                     fixed_users=4, target_kind="postgres"),
    "http": Case("http", "accuracy/http-knob.yaml", "transactions.get.params.knob.value", 20000,
                 start_users=8, max_users=8,
                 timing={"stagger": "0s", "stabilization": "3s", "measurement": "12s"},
                 description="the known-cost HTTP server (aiohttp), 8 users with 5 ms thinks, the knob's loop turns in "
                             "the server",
                 fixed_users=8, per_transaction_cpu=False, target_kind="http"),
}
#: The knob of the sqlite case sits in both transactions; a configuration sets both.
SECOND_KNOB = {"sqlite": "transactions.branch_report.params.knob.value"}


def knob_changes(case: Case, value: int) -> dict[str, int]:
    """The `set:` of a configuration with the knob at `value`."""
    changes = {case.knob: int(value)}
    if case.name in SECOND_KNOB:
        changes[SECOND_KNOB[case.name]] = int(value)
    return changes

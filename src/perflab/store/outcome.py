"""A run's outcome: the one value that says, at a glance, whether a run can be trusted.

`perflab run`'s exit code, the runs list of `perflab runs` and of `perflab serve`, and the header
of `perflab show` all show this value. It is decided in one place, `classify`, from what the
one exclusion rule says of the run -- `perflab.outcome.judge_outcome` applies the rule to a
reduced run; `record_outcome` is what the run's record says alone, for the catalog to index a
run before it is reduced:

* running / abandoned -- the run has not ended (abandoned: its driver is gone, `RunRow.shown_status`);
* failed / interrupted -- the run's status (exit code 1 / 130);
* invalid -- complete, but the one exclusion rule (`perflab.study.validity.judge_run` with the
  default gates, `GateSettings()`) excludes it: the run's own caveats (a hung transaction, a
  saturated driver, another run on its CPUs...), nothing measured, not steady (exit code 5);
* errors -- complete, excluded for its error rate alone (exit code 5): a run whose transactions
  fail is not a measurement of the SUT's work, however green its other rows;
* monitor lost -- complete and valid, but the SUT host's monitor stopped answering during the
  window: its (S)/(H) rows are na for what it left uncovered (exit code 0: the rule does not
  exclude it; the (T) rows stand);
* complete -- none of these.

A run judged with its reduction gets every gate; one judged from its record alone (the catalog
indexing a run before it is reduced) gets what the record says, marked `judged=False`, and is
judged again once reduced (`Store.set_etr`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from perflab import caveats as cav
from perflab.caveats import Caveat
from perflab.errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_INVALID, EXIT_OK

if TYPE_CHECKING:
    from perflab.records.run import RunRecord


class OutcomeKind(StrEnum):
    """Every outcome a run can show. The value is stable: it is stored in the catalog."""

    RUNNING = "running"
    ABANDONED = "abandoned"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    INVALID = "invalid"
    ERRORS = "errors"
    MONITOR_LOST = "monitor_lost"
    COMPLETE = "complete"


#: The words a person reads for each outcome (terminal, dashboard).
LABELS = {OutcomeKind.MONITOR_LOST: "monitor lost"}
#: Outcomes the exclusion rule excludes although the run completed.
EXCLUDED = frozenset({OutcomeKind.INVALID, OutcomeKind.ERRORS})
#: How an outcome is coloured: good, warn (look before trusting it) or bad.
TONES = {OutcomeKind.COMPLETE: "good", OutcomeKind.RUNNING: "live", OutcomeKind.MONITOR_LOST: "warn",
         OutcomeKind.INTERRUPTED: "warn", OutcomeKind.ABANDONED: "warn", OutcomeKind.FAILED: "bad",
         OutcomeKind.INVALID: "bad", OutcomeKind.ERRORS: "bad"}
#: The short words for a reason's code in a one-line outcome ("invalid (hung transactions)").
_SHORT = {cav.Code.ERROR_RATE: "error rate", cav.Code.NO_TRANSACTIONS: "nothing measured",
          cav.Code.FELL_BEHIND: "fell behind", cav.Code.RUN_NOT_COMPLETE: "not complete"}


@dataclass(frozen=True)
class RunOutcome:
    """What a run's outcome is, and why (the caveats behind it, in the rule's order)."""

    kind: OutcomeKind
    reasons: tuple[Caveat, ...] = field(default_factory=tuple)
    judged: bool = True   # every gate applied (the run's reduction); False: from its record alone

    @property
    def label(self) -> str:
        return LABELS.get(self.kind, self.kind.value)

    @property
    def tone(self) -> str:
        return TONES[self.kind]

    @property
    def excluded(self) -> bool:
        """Complete, but not valid evidence (invalid or errors)."""
        return self.kind in EXCLUDED

    @property
    def short(self) -> str:
        """One line for a list: the label and what caused it ("errors (10.0%)", "invalid (hung
        transactions, not steady)")."""
        if self.kind is OutcomeKind.ERRORS:
            rate = next((c.values.get("rate") for c in self.reasons if c.code is cav.Code.ERROR_RATE), None)
            return self.label if rate is None else f"{self.label} ({100 * rate:.1f}%)"
        if self.kind is OutcomeKind.INVALID and self.reasons:
            words = list(dict.fromkeys(_SHORT.get(c.code, c.code.value.replace("_", " ")) for c in self.reasons))
            return f"{self.label} ({', '.join(words)})"
        return self.label

    @property
    def text(self) -> str:
        """The label and every reason's sentence (`perflab run`, `perflab show`)."""
        if not self.reasons:
            return self.label
        return f"{self.label}: " + "; ".join(c.text for c in self.reasons)

    @property
    def exit_code(self) -> int:
        """`perflab run`'s exit code for this outcome (perflab.errors; README "Exit codes")."""
        if self.kind is OutcomeKind.INTERRUPTED:
            return EXIT_INTERRUPTED
        if self.kind in (OutcomeKind.FAILED, OutcomeKind.ABANDONED):
            return EXIT_FAILED
        if self.excluded:
            return EXIT_INVALID
        return EXIT_OK

    def reason_texts(self) -> list[str]:
        return [c.text for c in self.reasons]


def classify(record: RunRecord, exclusions: Sequence[Caveat] | None = None,
             caveats: Sequence[Caveat] | None = None) -> RunOutcome:
    """The run's outcome (see the module doc), from what the exclusion rule says of it.

    `exclusions`: the rule's exclusions (`perflab.study.validity.judge_run` with the default
    gates) and `caveats`: the reduction's caveats, for a reduced run; both None for a run judged
    from its record alone (the outcome is then `judged=False`)."""
    if record.status == "running":
        return RunOutcome(OutcomeKind.RUNNING, judged=False)
    if record.status in ("failed", "interrupted"):
        kind = OutcomeKind.FAILED if record.status == "failed" else OutcomeKind.INTERRUPTED
        return RunOutcome(kind, (cav.run_not_complete(record.status, record.reason),), judged=exclusions is not None)
    if exclusions is None:
        own = tuple(c for c in record.invalid if c.code is not cav.Code.RUN_NOT_COMPLETE)
        if own:
            return RunOutcome(OutcomeKind.INVALID, own, judged=False)
        lost = _lost_monitor_of_record(record)
        return RunOutcome(OutcomeKind.MONITOR_LOST if lost else OutcomeKind.COMPLETE, lost, judged=False)
    if exclusions:
        errors_only = all(c.code is cav.Code.ERROR_RATE for c in exclusions)
        return RunOutcome(OutcomeKind.ERRORS if errors_only else OutcomeKind.INVALID, tuple(exclusions))
    lost = tuple(c for c in caveats or () if c.code is cav.Code.MONITOR_LOST)
    return RunOutcome(OutcomeKind.MONITOR_LOST if lost else OutcomeKind.COMPLETE, lost)


def record_outcome(record: RunRecord) -> RunOutcome:
    """What the run's record alone says of its outcome (judged=False): its status, its own
    caveats, a monitor lost in the window. The error rate and the window's gates need its
    reduction (`perflab.outcome.judge_outcome`)."""
    return classify(record)


def _lost_monitor_of_record(record: RunRecord) -> tuple[Caveat, ...]:
    """The SUT host's monitor lost before the window's end, as the record tells it (the
    reduction says the same with the rows it left na: `reduce_run`'s monitor_lost caveat)."""
    host = record.sut.host if record.sut is not None else None
    window = record.window
    if host is None or host.lost_at is None or (window is not None and host.lost_at >= window.end):
        return ()
    return (cav.monitor_lost(host.monitor, host.url, host.lost_at, host.lost_reason, ["(S)/(H) rows"]),)


def outcome_of(kind: str | None, reasons: list[Any] | None = None, judged: bool = True) -> RunOutcome:
    """An outcome as the catalog stores it: its kind and its reasons (caveats as JSON, or
    sentences). A kind this perflab does not know (a newer one wrote it) is not trusted."""
    caveats = tuple(cav.as_caveat(r) for r in reasons or [])
    try:
        # (None, no outcome stored, is as unknown as a newer kind: OutcomeKind("") is refused too)
        return RunOutcome(OutcomeKind(kind or ""), caveats, judged)
    except ValueError:
        return RunOutcome(OutcomeKind.INVALID, (cav.note(cav.Code.OUTCOME_UNKNOWN,
                                                         f"outcome {kind!r} unknown to this perflab"), *caveats),
                          False)


def run_exit_code(outcome: RunOutcome, thresholds_violated: bool = False) -> int:
    """`perflab run`'s exit code: 130 interrupted, 1 failed, 5 invalid (a threshold judged on an
    invalid run's numbers says nothing), 1 a threshold violated, else 0."""
    code = outcome.exit_code
    if code == EXIT_OK and thresholds_violated:
        return EXIT_FAILED
    return code

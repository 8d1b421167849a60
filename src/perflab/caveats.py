"""Caveats: every reason perflab gives for distrusting a number, and every threshold behind one.

A caveat is a value, not a log line (DESIGN.md, "Warnings are values"): a code a program can
test, the numbers it is about, and the sentence a reader sees. Each code is made by exactly one
function here, so the sentence and the threshold it quotes are written once; the study, `perflab
compare`, the reports and the terminal all receive the same object and never parse its text.

Whether a caveat *excludes* a run from a verdict is decided by the gate that raised it
(`perflab.study.validity`), not by the caveat: a run-level caveat such as "driver saturated"
excludes wherever it appears, a reduction note such as "Little's law off by 7%" never does.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

# -- thresholds: each defined here once and imported wherever it is applied -----------------------

#: The driver must not set the pace: above this share of its CPU it may have.
DRIVER_SATURATION_PCT = 90.0
#: Little's law holds exactly for a stationary closed system observed long enough; beyond this
#: (and beyond the run's own sampling error, see `reduce`) the response rows deserve a caveat.
LITTLE_TOLERANCE_PCT = 5.0
#: Default largest share of transactions that may end in an error in a valid run.
MAX_ERROR_RATE = 0.01
#: A whole interval of the window with no completed transaction, in a run that completes at least
#: this many an interval on average, is a stall: the SUT or the network to it stopped answering
#: (a link down, a server paused). Completions that arrive at random at this mean leave an
#: interval empty with probability e^-30 (1e-13); a run that waits on a few long transactions
#: (a job stream, a slow open loop) completes fewer and is not judged so.
STALL_MIN_EXPECTED = 30.0
#: Default largest relative change across the window before a run is "not steady": closed loop,
#: the line through ETR (T); open loop, the shortfall of completions against arrivals.
MAX_DRIFT = 0.05
#: Two-sided significance of the steady-state test: a run is excluded for a drift only when the
#: drift is also beyond what its own interval-to-interval scatter explains at this level
#: (Student's t with n - 2 degrees of freedom for a line through n intervals).
STEADY_ALPHA = 0.01
#: Fewer intervals than this cannot be judged for steadiness at all: a caveat, never an exclusion.
MIN_STEADY_INTERVALS = 4
#: Default largest change of the response time across the window before a run is "not steady":
#: the line through log AVG LAST (T) may rise or fall by this factor less one (1.0: a doubling).
#: Response times scatter far more than rates from one interval to the next (a queue near
#: saturation), so their limit is wide; a growing queue passes it within seconds.
MAX_RESPONSE_DRIFT = 1.0
#: A utilization that is a difference of two counters (OTHER UTIL (H): the machine's busy time on
#: the SUT's processors less the SUT's own) may read below 0 by this much before it is explained.
NEGATIVE_UTIL_PCT = 1.0
#: A split duet's CPU (its SUT and the other configuration's driver) this busy gave the driver no
#: sure turn: the pair is excluded.
CPU_FULL_PCT = 98.0
#: Default half-width of the utilization band around a calibration target (base runs only).
UTIL_BAND_HALF_WIDTH = 10.0
#: A run whose interval-to-interval scatter of the primary metric is this many times the median
#: of its configuration's runs is flagged for a look (never excluded for it).
SCATTER_FLAG_RATIO = 3.0


class Code(StrEnum):
    """Every caveat perflab raises. The value is stable: it is stored in run.json/study.json."""

    RUN_NOT_COMPLETE = "run_not_complete"
    DRIVER_SATURATED = "driver_saturated"
    HUNG_TRANSACTIONS = "hung_transactions"
    CONCURRENT_RUN = "concurrent_run"      # another perflab run used some of this run's CPUs meanwhile
    ERROR_RATE = "error_rate"
    STALLED = "stalled"                    # an interval of the window without a completion: nothing answered
    NO_TRANSACTIONS = "no_transactions"
    NOT_STEADY = "not_steady"
    FELL_BEHIND = "fell_behind"
    STEADY_UNJUDGED = "steady_unjudged"
    UTIL_OUT_OF_BAND = "util_out_of_band"
    LITTLE_LAW = "little_law"
    TRANSACTIONS_MISSING = "transactions_missing"
    SAMPLES_MISSING = "samples_missing"
    MONITOR = "monitor"
    SCATTER = "scatter"
    SUT_UNMONITORED = "sut_unmonitored"    # a SUT perflab did not start, with no monitor on its host
    MONITOR_LOST = "monitor_lost"          # the SUT host's monitor stopped answering during the window
    MONITOR_GAP = "monitor_gap"            # ... and answered again: a gap inside the window
    DRIVER_LOST = "driver_lost"            # one of several drivers stopped answering: the run failed
    DUET = "duet"              # the study ran each block's two runs at the same time on the same CPUs
    NOTE = "note"              # a note stored by an older perflab, before each note had a code of its own
    LEGACY = "legacy"          # a reason stored as plain text by an older perflab
    # remarks on something other than one run (`remark`): a comparison row, a calibration, a
    # study's design, a noise estimate, a capacity model's fit
    INTERVAL_METHOD = "interval_method"      # how a row's interval was made (looks, Welch, crossover, dropped blocks)
    NO_INTERVAL = "no_interval"              # a row without an interval (too few blocks, zeros): no verdict
    NOISY = "noisy"                          # the noise is beyond what the blocks can resolve
    DRIFT = "drift"                          # the base's runs drift across the session
    OUTLIER = "outlier"                      # one block's ratio is implausible given the others
    ANALYSES_DISAGREE = "analyses_disagree"  # the paired and the unpaired analyses disagree
    AA_NOT_EQUIVALENT = "aa_not_equivalent"  # identical configurations were not shown equivalent
    RUNS_EXCLUDED = "runs_excluded"          # a row lost runs to the gates
    CALIBRATION = "calibration"              # the calibration's own doubts
    MORE_THAN_ONE_CHANGE = "more_than_one_change"  # the one-variable rule is broken
    MODEL_FIT = "model_fit"                  # a capacity model's assumptions and fit: extrapolated, a parameter unresolved
    NO_CURVE = "no_curve"                    # a capacity model the data cannot support: not built
    OTHER_WORK = "other_work"                # other processes used CPU beside the SUT during a level's window
    STEPS_UNCHAINED = "steps_unchained"      # a composition's steps do not chain by name
    BIAS_UNMEASURED = "bias_unmeasured"      # a concurrent arrangement on a host with no bias bound of its own
    # notes (`note`): what a reader, or a program, should know of a measurement or a study; none
    # excludes a run. The sentence is made where its numbers are; the code says which note it is.
    SAMPLES_COVERAGE = "samples_coverage"    # the monitor's samples leave a window edge uncovered
    COUNTER_UNREAD = "counter_unread"        # one counter's window total is na (a gap at an edge, or it went back)
    CPU_COLUMNS_MISSING = "cpu_columns_missing"  # no /proc/stat or SUT CPU columns: the (H) or (S) rows are na
    INSTRUCTIONS = "instructions"            # how INSTRUCTIONS (I) was counted (valgrind, the counted pass), or why not
    DRIVER_SPILLED = "driver_spilled"        # the driver wrote its spilled transactions to the run directory (or stopped)
    ERRORS = "errors"                        # transactions ended in an error: ETR (T) and response rows count the others
    NONE_COMPLETED = "none_completed"        # no transaction completed in the window: the per-command rows are na
    REFAULTS_UNMEASURED = "refaults_unmeasured"  # a memory limit without refault counters: REFAULTS (S) na
    REMOTE_SOURCE = "remote_source"          # the (H), (S) and (V) rows came from the SUT host's monitor
    NEGATIVE_UTIL = "negative_util"          # a difference of busy-time counters read below 0: read it as 0
    OUTCOME_UNKNOWN = "outcome_unknown"      # a stored outcome this perflab does not know
    SERVER_RESTARTED = "server_restarted"    # a server the study does not start restarted between two runs
    DIFFERENT_MACHINES = "different_machines"  # compared runs' fingerprints name different machines or kernels
    UNPAIRED = "unpaired"                    # compared runs not paired by block: Welch's interval, drift not cancelled
    PAIR_RULES = "pair_rules"                # compared runs ran as pairs: the pair's rules apply to their rows
    RESUMED = "resumed"                      # the study was resumed: which blocks were kept, which measured again
    NAMESPACES = "namespaces"                # each run of a pair in a network namespace of its own (a fixed port)
    RUN_NOT_STORED = "run_not_stored"        # a run of a block could not be stored
    PAIR_DRIVERS = "pair_drivers"            # every pair was excluded for its drivers: another arrangement would do
    ARRANGEMENT = "arrangement"              # why the study ran in the arrangement it ran in


class Caveat(BaseModel):
    """One reason to be careful: `code` for programs, `text` for people, `values` for both."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    code: Code
    text: str
    values: dict[str, Any] = Field(default_factory=dict)

    def __str__(self) -> str:
        return self.text


def as_caveat(item: Caveat | str | dict[str, Any]) -> Caveat:
    """A stored reason as a Caveat: older run.json files (format 1) kept plain sentences."""
    if isinstance(item, Caveat):
        return item
    if isinstance(item, dict):
        return Caveat.model_validate(item)
    return Caveat(code=Code.LEGACY, text=str(item))


NOTE_CODES = frozenset({Code.SAMPLES_COVERAGE, Code.COUNTER_UNREAD, Code.CPU_COLUMNS_MISSING, Code.INSTRUCTIONS,
                        Code.DRIVER_SPILLED, Code.ERRORS, Code.NONE_COMPLETED, Code.REFAULTS_UNMEASURED,
                        Code.REMOTE_SOURCE, Code.NEGATIVE_UTIL, Code.OUTCOME_UNKNOWN, Code.SERVER_RESTARTED,
                        Code.DIFFERENT_MACHINES, Code.UNPAIRED, Code.PAIR_RULES, Code.RESUMED, Code.NAMESPACES,
                        Code.RUN_NOT_STORED, Code.PAIR_DRIVERS, Code.ARRANGEMENT})


def note(code: Code, text: str, **values: Any) -> Caveat:
    """A note of a measurement or a study that excludes nothing. Its sentence is made where its
    numbers are, once; its code says which note it is, so no program reads the sentence."""
    if code not in NOTE_CODES:
        raise ValueError(f"{code} is not a note: use its own constructor")
    return Caveat(code=code, text=text, values=values)


REMARK_CODES = frozenset({Code.INTERVAL_METHOD, Code.NO_INTERVAL, Code.NOISY, Code.DRIFT, Code.OUTLIER,
                          Code.ANALYSES_DISAGREE, Code.AA_NOT_EQUIVALENT, Code.RUNS_EXCLUDED, Code.CALIBRATION,
                          Code.MORE_THAN_ONE_CHANGE, Code.MODEL_FIT, Code.NO_CURVE, Code.OTHER_WORK,
                          Code.STEPS_UNCHAINED})


def remark(code: Code, text: str, **values: Any) -> Caveat:
    """A remark on something other than one run (a comparison row, a calibration, a study's
    design, a noise estimate, a model's fit). Its sentence is made where its numbers are, once;
    its code says what kind of remark it is, so no program reads the sentence."""
    if code not in REMARK_CODES:
        raise ValueError(f"{code} is not a remark: use its own constructor")
    return Caveat(code=code, text=text, values=values)


# -- one constructor per code: the sentence is written here and nowhere else ---------------------

def run_not_complete(status: str, reason: str | None) -> Caveat:
    return Caveat(code=Code.RUN_NOT_COMPLETE, text=f"run {status}" + (f": {reason}" if reason else ""),
                  values={"status": status, "reason": reason})


def bias_unmeasured(arrangement: str, target_kind: str, host: str | None, no_knob: str | None = None) -> Caveat:
    """A concurrent arrangement with no bias bound: none measured on this host for this kind of
    target, and the study did not measure its own (`no_knob`: why). The rule is the arrangement's
    own interval, unwidened, and this sentence -- never another machine's bound
    (study/arrangement.py, study/knob.py)."""
    why = f" and this study did not measure its own ({no_knob})" if no_knob else ""
    return Caveat(code=Code.BIAS_UNMEASURED,
                  text=f"the {arrangement}'s bias has not been measured on this host ({host or 'this host'}) for "
                       f"{target_kind} targets{why}: its intervals are the {arrangement}'s own, not widened for a "
                       f"bias, and its ratio can sit beside the one-at-a-time ratio by more than its interval "
                       f"(docs/accuracy.md). `perflab accuracy --studies --quick` measures this host's bound (about "
                       f"20 minutes); `--arrangement one-at-a-time` or `interleaved` need none",
                  values={"arrangement": arrangement, "target": target_kind, "host": host, "no_knob": no_knob})


def duet_design(placement: str | None, arrangement: str = "duet") -> Caveat:
    where = f" ({placement})" if placement else ""
    if arrangement == "split-duet":
        how = ("each SUT on CPUs of its own beside the other configuration's driver, the sides swapped from block to "
               "block")
        levels = "Levels (ITR, UTIL/PROC) are those of a CPU shared with the other run's driver"
    else:
        how = "their SUTs sharing the SUT's CPUs and their drivers the driver's"
        levels = "Levels (ITR, UTIL/PROC) are those of a CPU shared by two servers"
    return Caveat(code=Code.DUET,
                  text=f"{arrangement}: each block's two runs ran at the same time{where}, {how}, their windows "
                       f"started together: a slow spell of the host slowed both and cancels from their ratio. "
                       f"{levels}; machine-wide rows ((H), disk, network, paging) count both runs and are shown once "
                       f"for the pair, without a verdict; response times depend on how the two shared the machine "
                       f"and are described, not judged. How far this arrangement's ratios sit from one-at-a-time "
                       f"ones is stated with the verdicts (docs/accuracy.md)",
                  values={"placement": placement, "arrangement": arrangement})


def driver_saturated(util_pct: float | None, tool: str | None = None, limit_pct: float = DRIVER_SATURATION_PCT) \
        -> Caveat:
    shown = "saturated" if util_pct is None else f"{util_pct:.0f}% of one core"
    who = f" ({tool})" if tool else ""
    limit = "" if limit_pct == DRIVER_SATURATION_PCT else f", limit {limit_pct:.0f}%"
    return Caveat(code=Code.DRIVER_SATURATED,
                  text=f"driver CPU {shown}{who}{limit}: run invalid (the driver, not the SUT, set the pace)",
                  values={"util_pct": util_pct, "limit_pct": limit_pct, "tool": tool})


def cpu_full(sut_util: float, driver_util: float, cpus: list[int]) -> Caveat:
    """A split duet's CPU that its SUT and the other run's driver filled."""
    where = ",".join(map(str, cpus)) or "?"
    return Caveat(code=Code.DRIVER_SATURATED,
                  text=f"CPU {where} full: its SUT {sut_util:.0f}% and the other run's driver {driver_util:.0f}% "
                       f"(limit {CPU_FULL_PCT:.0f}% together): the driver may not have had its turn, so it may have "
                       f"set the pace; the pair is invalid",
                  values={"util_pct": sut_util + driver_util, "sut_util": sut_util, "driver_util": driver_util,
                          "limit_pct": CPU_FULL_PCT, "cpus": cpus})


def hung_transactions(count: int, deadline_s: float | None) -> Caveat:
    limit = "" if deadline_s is None else f" (deadline {deadline_s:g} s)"
    return Caveat(code=Code.HUNG_TRANSACTIONS,
                  text=f"{count} transaction(s) did not finish in time{limit}: what ran them (their SUT worker, or the "
                       f"command's process group) was killed; run invalid",
                  values={"count": count, "deadline_s": deadline_s})


def concurrent_run(run_ids: list[str], cpus: list[int]) -> Caveat:
    return Caveat(code=Code.CONCURRENT_RUN,
                  text=f"another perflab run ({', '.join(run_ids)}) used CPU(s) {','.join(map(str, cpus))} of this "
                       f"run while it ran: run invalid (each measured the other's load)",
                  values={"run_ids": run_ids, "cpus": cpus})


def error_rate(rate: float, limit: float) -> Caveat:
    return Caveat(code=Code.ERROR_RATE, text=f"error rate {100 * rate:.1f}% above {100 * limit:.1f}%",
                  values={"rate": rate, "limit": limit})


def stalled(intervals: list[tuple[float, float]], expected: float) -> Caveat:
    """Whole intervals of the window in which no transaction completed, while the run completed
    `expected` an interval on average."""
    first = intervals[0]
    more = f" and {len(intervals) - 1} more interval(s)" if len(intervals) > 1 else ""
    return Caveat(code=Code.STALLED,
                  text=f"no transaction completed from {first[0]:.1f} s to {first[1]:.1f} s{more}, against "
                       f"{expected:.0f} an interval on average: the SUT or the network to it stopped answering",
                  values={"intervals": [list(i) for i in intervals], "expected": expected})


def no_transactions() -> Caveat:
    return Caveat(code=Code.NO_TRANSACTIONS, text="no completed transactions in the measurement window")


def not_steady(label: str, change: float, se: float, limit: float, intervals: int, beside_partner: bool = False,
               basis: str = "alone", log_scale: bool = False) -> Caveat:
    """A series that drifted across the window beyond its limit and beyond its noise (`basis`:
    the study's other runs, or the worst case of a lone run's; perflab.study.steadiness)."""
    what = f"{label} relative to its partner's" if beside_partner else label
    null = ("the other runs of the study" if basis == "between runs"
            else "a wander with autocorrelation up to 0.9")
    unit = " (a line through its log)" if log_scale else ""
    return Caveat(code=Code.NOT_STEADY,
                  text=f"not steady: {what} changed {100 * change:+.1f}%{unit} across the window (limit "
                       f"±{100 * limit:.0f}%, {intervals} intervals), more than {null} explain (± {100 * se:.1f}%)",
                  values={"series": label, "change": change, "se": se, "limit": limit, "intervals": intervals,
                          "beside_partner": beside_partner, "basis": basis, "log_scale": log_scale})


def fell_behind(completed: float, offered: float, limit: float) -> Caveat:
    shortfall = 1.0 - completed / offered if offered else 0.0
    return Caveat(code=Code.FELL_BEHIND,
                  text=f"not steady: the SUT completed {completed:.0f} of the {offered:.0f} arrivals offered in the "
                       f"window ({100 * shortfall:.1f}% behind, limit {100 * limit:.0f}%): its queue was growing",
                  values={"completed": completed, "offered": offered, "shortfall": shortfall, "limit": limit})


def steady_unjudged(intervals: int) -> Caveat:
    return Caveat(code=Code.STEADY_UNJUDGED,
                  text=f"steadiness not judged: {intervals} interval(s) in the window, need ≥ {MIN_STEADY_INTERVALS} "
                       f"(a longer window or a shorter monitor interval)",
                  values={"intervals": intervals, "need": MIN_STEADY_INTERVALS})


def util_out_of_band(util: float, low: float, high: float, pair: bool = False) -> Caveat:
    whose = "the pair's UTIL/PROC (S) together" if pair else "UTIL/PROC (S)"
    return Caveat(code=Code.UTIL_OUT_OF_BAND,
                  text=f"{whose} {util:.1f}% outside the utilization band {low:.0f}-{high:.0f}%",
                  values={"util": util, "low": low, "high": high, "pair": pair})


def little_law(expected: float, etr: float, deviation_pct: float, tolerance_pct: float) -> Caveat:
    return Caveat(code=Code.LITTLE_LAW,
                  text=f"Little's law: USERS / (AVG THINK (T) + AVG LAST (T)) = {expected:.2f}/s vs ETR (T) "
                       f"{etr:.2f}/s ({deviation_pct:+.1f}%, tolerance ±{tolerance_pct:.1f}% for this window): the "
                       f"window was not steady, or users waited outside think and response time",
                  values={"expected": expected, "etr_t": etr, "deviation_pct": deviation_pct,
                          "tolerance_pct": tolerance_pct})


def transactions_missing() -> Caveat:
    return Caveat(code=Code.TRANSACTIONS_MISSING, text="transactions missing: (T) rows are na")


def samples_missing() -> Caveat:
    return Caveat(code=Code.SAMPLES_MISSING, text="samples missing: (S)/(H) rows are na")


def scatter(run_id: str, metric: str, ratio: float) -> Caveat:
    return Caveat(code=Code.SCATTER,
                  text=f"run {run_id}: its interval-to-interval scatter of {metric} is {ratio:.1f}x the median of "
                       f"its configuration's runs; check it",
                  values={"run_id": run_id, "metric": metric, "ratio": ratio, "flag_ratio": SCATTER_FLAG_RATIO})


def refaults_unmeasured() -> Caveat:
    return note(Code.REFAULTS_UNMEASURED,
                "the SUT ran under a memory limit, but its cgroup's memory.stat has no workingset_refault "
                "counters (a kernel before 4.20, or no memory accounting): REFAULTS (S) rows are na; MAJFLT (S) "
                "and BLKS READ still show what the limit cost")


def sut_unmonitored(target: str) -> Caveat:
    return Caveat(code=Code.SUT_UNMONITORED,
                  text=f"the SUT ({target}) was not started by perflab and no monitor on its host was named: (S) rows "
                       f"are na and the (H) rows are the driver's machine; name one with `monitor: {{agent: URL}}` or "
                       f"`{{node_exporter: URL}}` (docs/distributed.md)",
                  values={"target": target})


def monitor_lost(monitor: str, url: str, lost_at: float | None, reason: str | None, rows: list[str]) -> Caveat:
    when = "" if lost_at is None else f" at {lost_at:.1f} s"
    return Caveat(code=Code.MONITOR_LOST,
                  text=f"the SUT host's monitor ({monitor} {url}) stopped answering{when}"
                       + (f" ({reason})" if reason else "")
                       + f": {', '.join(rows)} na for the window it left uncovered",
                  values={"monitor": monitor, "url": url, "lost_at": lost_at, "reason": reason, "rows": rows})


def monitor_gap(monitor: str, url: str, gaps: list[tuple[float, float, str | None]]) -> Caveat:
    """The SUT host's monitor did not answer for a while inside the window, then answered again
    (an agent restarted, a network blip): the window's totals come from cumulative counters at its
    edges and are exact; what the rows per interval show across the gap is a straight line."""
    spans = ", ".join(f"{a:.1f}-{b:.1f} s" + (f" ({why})" if why else "") for a, b, why in gaps)
    missing = sum(b - a for a, b, _ in gaps)
    return Caveat(code=Code.MONITOR_GAP,
                  text=f"the SUT host's monitor ({monitor} {url}) did not answer for {missing:.1f} s of the window "
                       f"({spans}): the window's totals are exact (cumulative counters at its edges), the per-interval "
                       f"rows across the gap are drawn straight, not measured",
                  values={"monitor": monitor, "url": url, "gaps": [list(g) for g in gaps], "seconds": missing})


def remote_source(monitor: str, url: str, host: str | None, offset_s: float | None, error_s: float | None,
                  drift_s: float | None, samples: int | None, failures: int | None) -> Caveat:
    """Where a remote run's (H), (S) and (V) rows came from: the monitor, the SUT host, the clocks."""
    clock = ("" if offset_s is None else f"; its clock {1000 * offset_s:+.1f} ms from the driver's (± "
             f"{1000 * (error_s or 0):.1f} ms" + ("" if drift_s is None else f", drifting {1000 * drift_s:+.2f} ms "
                                                  f"over the run") + ")")
    losses = "" if not failures else f"; {failures} of {(samples or 0) + failures} samples unanswered"
    return note(Code.REMOTE_SOURCE,
                f"the (H), (S) and (V) rows come from the SUT host {host or '(unnamed)'} through its {monitor} at "
                f"{url}{clock}{losses}", monitor=monitor, url=url, host=host, clock_offset_s=offset_s,
                clock_error_s=error_s, clock_drift_s=drift_s, samples=samples, failures=failures)


def negative_utilization(label: str, value: float, remote: bool) -> Caveat:
    """A difference of two busy-time counters that came out below 0: it means none, and why."""
    where = ("the SUT host's /proc/stat and the SUT's own counters are read by its monitor a little apart in time, "
             "and each sample's network round trip shifts one against the other" if remote else
             "/proc/stat counts the processors' time in ticks (1/HZ), the SUT's cgroup in nanoseconds")
    return note(Code.NEGATIVE_UTIL,
                f"{label} reads {value:.1f}%: below 0, it means the SUT used all the time the machine counted on its "
                f"processors -- read it as 0 ({where})", label=label, value=value)


def driver_lost(index: int, node: str | None, reason: str) -> Caveat:
    where = f" on {node}" if node else ""
    return Caveat(code=Code.DRIVER_LOST, text=f"driver {index}{where} was lost: {reason}; run failed (its transactions "
                                              f"up to its last report are kept)",
                  values={"index": index, "node": node, "reason": reason})


def set_aside(caveat: Caveat, protects: list[str]) -> Caveat:
    """A failed gate that protects none of a study's primary metrics (perflab.study.validity): the
    run is kept, and not counted in the rows the gate protects. Same code, so a program still
    tells what failed; `values` adds `set_aside_for`: those rows, by when they are measured."""
    rows = " and ".join("measured over the window" if p == "window" else f"measured {p} the window" for p in protects)
    return Caveat(code=caveat.code,
                  text=f"{caveat.text} -- kept: this gate protects the rows {rows}, not the study's primary "
                       f"metrics; those rows do not count this run",
                  values={**caveat.values, "set_aside_for": list(protects)})


#: Codes that make a run invalid wherever they are raised (the run's own record carries them).
RUN_INVALIDATING = frozenset({Code.RUN_NOT_COMPLETE, Code.DRIVER_SATURATED, Code.HUNG_TRANSACTIONS, Code.DRIVER_LOST})


def texts(caveats: list[Caveat]) -> list[str]:
    return [c.text for c in caveats]

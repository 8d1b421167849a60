"""Calibration: find the load at which the base configuration runs its SUT at the target
utilization (the seeds ran the base release at 90%), so every configuration can then run at
that same load.

Closed loop: utilization is throughput x CPU per transaction, and with think time dominating
the cycle, throughput grows about in proportion to users -- so each step scales the users by
target / measured and measures again (at most 8x per step; near saturation the proportional
step undershoots, which converges from below). Open loop: the same on the arrival rate.
The run closest to the target is kept when the target cannot be reached within the steps
(a SUT that saturates below it, or a driver that does), with a warning saying so.

A closed-loop step can read the target while its SUT is saturated: a SUT that cannot pass 93%
reads 93% at twice the users it can serve, and the excess users wait in its queue (on
2026-11-28 the main job's first step, 20,000 users, read 92.9% with AVG LAST (T) 1.6 s and ETR
1,142/s where the users offered 1,900/s). Such a step is *queueing* -- its mean response is
more than QUEUE_FACTOR times its processor time per command and more than QUEUE_SHARE of the
users' think time -- and is not accepted; the next
step offers the throughput that would run the SUT at the target (ETR x target / util) through
the users' think time, the users a closed loop needs for it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from perflab import caveats as cav
from perflab.caveats import Caveat, Code
from perflab.records.study import CalibrationStep, LoadRecord
from perflab.study.model import Calibration

MAX_STEP_FACTOR = 8.0
#: What a calibration step keeps as evidence of what holds the SUT below its target (registry keys).
EVIDENCE = ("other_util_h", "lock_wait_pct", "checkpoint_pct")
#: Other programs' share of the SUT's processors above which they are named as a cause, %.
OTHER_UTIL_PCT = 5.0
#: Time asleep on the SUT's own locks, or in WAL checkpoints, above which it is named, % of the window.
LOCK_WAIT_PCT = 5.0
CHECKPOINT_PCT = 5.0
#: A step whose AVG LAST (T) exceeds this many times its PBT/CMD (S) is queueing, not at a
#: utilization: an M/M/1 server at 90% has a response of 10 service times, a bursty think time
#: (the Bactrian) a few times that; a saturated SUT's grows with every user added (thousands).
QUEUE_FACTOR = 200.0
#: ... and whose users spend more than this share of their think time waiting for it. A SUT slow
#: by nature (I/O waits, a remote call) has responses of many times its CPU per command without
#: a queue; at the seeds' think times its responses are still a small part of the users' cycle.
QUEUE_SHARE = 0.1


@dataclass
class CalibrationResult:
    users: int | None
    rate: float | None
    steps: list[dict] = field(default_factory=list)
    warnings: list[Caveat] = field(default_factory=list)
    bottleneck: str | None = None
    chosen_run: str | None = None  # the calibration run whose load was chosen


def calibrate(rule: Calibration, measure: Callable[[int | None, float | None], dict], closed: bool,
              start_users: int | None, start_rate: float | None,
              on_step: Callable[[dict], None] | None = None) -> CalibrationResult:
    """`measure(users, rate)` runs the base once and returns {'util': %, 'etr_t': ..., 'run_id': ..., 'valid': bool}."""
    users = rule.start_users or start_users or 1
    rate = rule.start_rate or start_rate or 10.0
    result = CalibrationResult(None, None)
    best = None
    for _ in range(rule.max_steps):
        outcome = measure(users if closed else None, None if closed else rate)
        util = outcome.get("util")
        step = {"users": users if closed else None, "rate": None if closed else rate, "util_proc_s": util,
                "etr_t": outcome.get("etr_t"), "run_id": outcome.get("run_id"), "valid": outcome.get("valid", True),
                "driver_util": outcome.get("driver_util"), **{key: outcome.get(key) for key in EVIDENCE}}
        result.steps.append(step)
        if on_step is not None:
            on_step(step)
        if util is None or util <= 0:
            result.warnings.append(cav.remark(Code.CALIBRATION, "calibration could not measure the SUT's utilization: "
                                              "using the starting load"))
            break
        if not outcome.get("valid", True):
            # An invalid run is no evidence of the SUT's utilization at this load (its driver set
            # the pace, it hung...): never chosen, and calibration stops.
            result.warnings.append(cav.remark(
                Code.CALIBRATION, f"calibration run {outcome.get('run_id')} was invalid "
                f"({'; '.join(outcome.get('reasons', [])) or 'see the run'}): stopped calibrating",
                run_id=outcome.get("run_id")))
            break
        values = outcome.get("values") or {}
        queue_users = _users_for_target(values, rule.target_util) if closed else None
        step["queueing"] = queue_users is not None
        if queue_users is None and (best is None or abs(util - rule.target_util)
                                    < abs(best["util_proc_s"] - rule.target_util)):
            best = step
        if queue_users is not None:
            next_users = max(1, min(rule.max_users, queue_users))
            if next_users >= users:
                break
            users = next_users
            continue
        if abs(util - rule.target_util) <= rule.tolerance:
            break
        if _stopped_following(result.steps):
            # More load bought no more throughput: the SUT (or whatever shares its processors) is
            # saturated, and a larger step would only lengthen its queue.
            result.warnings.append(cav.remark(Code.CALIBRATION, "calibration stopped: the last step's ETR (T) did not "
                                              "grow with its load"))
            break
        factor = min(MAX_STEP_FACTOR, max(1 / MAX_STEP_FACTOR, rule.target_util / util))
        if closed:
            next_users = max(1, min(rule.max_users, round(users * factor)))
            if next_users == users:
                break
            users = next_users
        else:
            rate = rate * factor
    queueing = [s for s in result.steps if s.get("queueing")]
    if queueing:
        first = queueing[0]
        if best is None:
            # every valid step queued: the one nearest the target, and the warning says so
            best = min(queueing, key=lambda s: abs(s["util_proc_s"] - rule.target_util))
        used = "every step queued: the nearest to the target is used" if best.get("queueing") else "not used"
        result.warnings.append(cav.remark(
            Code.CALIBRATION, f"calibration step at {first['users']} users was queueing (UTIL/PROC (S) "
            f"{first['util_proc_s']:.1f}% at a saturated SUT: response times far above the processor time per "
            f"command): {used}", run_id=first.get("run_id")))
    chosen = best or result.steps[-1]
    if best is None and result.steps:
        result.warnings.append(cav.remark(Code.CALIBRATION, "no calibration run was valid: the comparison runs at the "
                                          "last step's load, and its runs are judged as any others"))
    result.users, result.rate = chosen["users"], chosen["rate"]
    result.chosen_run = chosen.get("run_id")
    if chosen["util_proc_s"] is not None and abs(chosen["util_proc_s"] - rule.target_util) > rule.tolerance:
        load = f"{chosen['users']:d} users" if closed else f"{chosen['rate']:.1f}/s"
        result.bottleneck = bottleneck(result.steps, rule.target_util)
        result.warnings.append(cav.remark(
            Code.CALIBRATION, f"calibration reached UTIL/PROC (S) {chosen['util_proc_s']:.1f}%, not the target "
            f"{rule.target_util:.0f}% ± {rule.tolerance:.0f} (after {len(result.steps)} steps): the comparison runs "
            f"at {load}" + (f"; {result.bottleneck}" if result.bottleneck else ""),
            util_proc_s=chosen["util_proc_s"], target=rule.target_util))
    return result


#: A step whose load is higher than an earlier one's but whose ETR (T) is not this much higher has
#: stopped following its load.
FOLLOW_RATIO = 1.02


def _users_for_target(values: dict, target_util: float) -> int | None:
    """None when the step is not queueing (or cannot tell); else the users that would offer the
    throughput at which the SUT runs at the target, through the users' own think time."""
    response, pbt_ms = values.get("avg_last_t"), values.get("pbt_cmd_s")
    think, etr, util = values.get("avg_think_t"), values.get("etr_t"), values.get("util_proc_s")
    if not (response and pbt_ms and think and etr and util) or response <= QUEUE_FACTOR * pbt_ms / 1000.0 \
            or response <= QUEUE_SHARE * think:
        return None
    return max(1, round(etr * target_util / util * think))


def _stopped_following(steps: list[dict]) -> bool:
    last = steps[-1]
    load, etr = last.get("users") or last.get("rate"), last.get("etr_t")
    if load is None or etr is None:
        return False
    return any((s.get("users") or s.get("rate") or 0) < load and s.get("etr_t") is not None
               and etr < FOLLOW_RATIO * s["etr_t"] for s in steps[:-1])


def bottleneck(steps: list[dict], target: float) -> str | None:
    """What stopped calibration short of its target, from the evidence of its steps: the driver's
    CPU, other programs on the SUT's processors, the SUT's processes asleep on each other's
    locks or in WAL checkpoints (the processor idle meanwhile), or -- when none of these was
    measured -- a SUT whose throughput stopped following its load."""
    from perflab.caveats import DRIVER_SATURATION_PCT

    last = steps[-1]
    driver = last.get("driver_util")
    if driver is not None and driver >= DRIVER_SATURATION_PCT:
        return (f"the driver stopped it: driver CPU {driver:.0f}% at the last step (it cannot offer more load; "
                f"use an external driver or fewer, costlier transactions)")
    if not last.get("valid", True):
        return "the last calibration run was invalid (see its run)"
    # The step that came closest: what kept *it* from the target.
    measured = [s for s in steps if s.get("util_proc_s") is not None]
    near = max(measured, key=lambda s: s["util_proc_s"]) if measured else last
    util = near.get("util_proc_s")
    causes = []
    other = near.get("other_util_h")
    if other is not None and other >= OTHER_UTIL_PCT:
        causes.append(f"other programs used {other:.1f}% of the SUT's processors (OTHER UTIL (H); the SUT had "
                      f"{util:.1f}%): the machine was not quiet -- measure on a machine of its own")
    lock = near.get("lock_wait_pct")
    if lock is not None and lock >= LOCK_WAIT_PCT:
        causes.append(f"the write lock between the SUT's processes: they slept {lock:.1f}% of the window waiting "
                      f"for one another (LOCK WAIT), the processor idle meanwhile -- SQLite has one writer at a "
                      f"time, so give it one worker per processor")
    checkpoint = near.get("checkpoint_pct")
    if checkpoint is not None and checkpoint >= CHECKPOINT_PCT:
        causes.append(f"WAL checkpoints took {checkpoint:.1f}% of the window (CHECKPOINT), their fsyncs leaving "
                      f"the processor idle")
    if causes:
        return "; ".join(causes)
    loads: list[tuple[float, float, float]] = []  # (load, UTIL/PROC (S), ETR (T)) of the steps that measured all three
    for s in steps:
        load, step_util, etr = s.get("users") or s.get("rate"), s.get("util_proc_s"), s.get("etr_t")
        if load is not None and step_util is not None and etr is not None:
            loads.append((load, step_util, etr))
    if len(loads) >= 2:
        (l0, u0, e0), (l1, u1, e1) = min(loads), max(loads)
        if l1 > l0 * 1.2 and u1 < target and e0 > 0 and (e1 / e0) < 1 + 0.5 * (l1 / l0 - 1):
            return (f"the SUT saturated below the target: raising the load {l1 / l0:.1f}x raised ETR (T) only "
                    f"{e1 / e0:.2f}x and UTIL/PROC (S) from {u0:.1f}% to {u1:.1f}% -- something other than its CPU "
                    f"(a lock between its processes, synchronous I/O, a queue in the driver) limits it")
    return None


def calibrated_step(load: LoadRecord | None) -> CalibrationStep | None:
    """The valid calibration step at the load the calibration chose (the load before a pair's
    share was taken of it)."""
    if load is None:
        return None
    if load.calibration_run is not None:
        # the record names its step (a pair's load is a share of that step's)
        return next((s for s in load.calibration if s.valid and s.util_proc_s is not None
                     and s.run_id == load.calibration_run), None)
    for step in reversed(load.calibration):  # study.json of perflab 0.1
        if step.valid and step.util_proc_s is not None and (step.users, step.rate) == (load.users, load.rate):
            return step
    return None


def calibrated_utilization(load: LoadRecord | None) -> float | None:
    """UTIL/PROC (S) the calibration measured at the load it chose. The band a base run must lie
    in is centred here, not on the target: when a bottleneck held the SUT short of the target
    (the report names it), runs at the chosen load are as steady as any, and a band around an
    unreachable target would exclude every one of them and leave the study without a verdict."""
    step = calibrated_step(load)
    return None if step is None else step.util_proc_s

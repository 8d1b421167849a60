"""`perflab capacity ...`: the capacity planner's commands (registered in perflab.cli).

Each subcommand prints terminal tables, or with --json one JSON document (no NaN: "na" values
are null). A model that cannot be built is an InputError "no curve: <why>" (exit 2, one line);
`summary` instead prints every section it could build and a note for each it could not.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from perflab import caveats as cav
from perflab.capacity import render
from perflab.capacity.laws import RESPONSE_LIMIT_S, TARGET_UTIL
from perflab.caveats import Code
from perflab.cli.options import StoreOpt
from perflab.errors import InputError, NoCurve
from perflab.safe_text import console
from perflab.stats.criteria import DEFAULT_CONFIDENCE

capacity_app = typer.Typer(
    help="Capacity planning from sweeps, studies and seed tables: USL, MVA, bounds, users supported, "
    "ITRR composition, scaling per processor.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

out = console()   # no emoji codes, 200 columns when piped

JsonOpt = typer.Option(False, "--json", help="one JSON document instead of tables")
StudyArg = typer.Argument(..., metavar="STUDY", help="sweep study: id (or unique prefix), directory, or study.json")
FitOpt = typer.Option(None, "--fit", help="levels the model is fitted to, e.g. 1,24 (default: all)")
DemandOpt = typer.Option("pooled", "--demand", help="demand beside each level: pooled D, or the level's own PBT/CMD (S) (point)")
TargetOpt = typer.Option(100 * TARGET_UTIL, "--target-util",
                         help=f"UTIL/PROC (S) target, percent (the seeds' {100 * TARGET_UTIL:g}%)")
LimitOpt = typer.Option(RESPONSE_LIMIT_S, "--response-limit",
                        help=f"AVG LAST (T) limit, seconds (the seeds' {RESPONSE_LIMIT_S:g} s)")


def _json(obj) -> None:
    from perflab.capacity.summary import json_clean

    print(json.dumps(json_clean(obj), indent=2, allow_nan=False))


def _fit_levels(text: str | None) -> list[float] | None:
    if text is None:
        return None
    try:
        return [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise InputError(f"expected levels such as 1,24, got {text!r}", field="--fit") from None


def _data(study: str, store):
    from perflab.capacity.points import sweep_data
    from perflab.capacity.source import read_study

    return sweep_data(read_study(study, store))


def _target(percent: float) -> float:
    if not 0 < percent < 100:
        raise InputError(f"expected a percentage between 0 and 100, got {percent:g}", field="--target-util")
    return percent / 100.0


@capacity_app.command()
def summary(
    study: str = StudyArg,
    target_util: float = TargetOpt,
    response_limit: float = LimitOpt,
    fit: str | None = FitOpt,
    demand: str = DemandOpt,
    as_json: bool = JsonOpt,
    store: Path | None = StoreOpt,
) -> None:
    """Everything at once for a sweep: measured levels, USL, MVA, bounds, users supported (or,
    for a sut_cpus sweep, scaling per processor); a note for each model that could not be built.

    Example: `perflab capacity summary STUDY_ID --target-util 80` (the id `perflab study` printed)
    """
    from perflab.capacity.source import read_study
    from perflab.capacity.summary import capacity_summary

    s = capacity_summary(read_study(study, store), target_util=_target(target_util), response_limit=response_limit,
                         fit=_fit_levels(fit), demand=demand)
    if as_json:
        _json(s.to_dict())
        return
    render.measured(out, s)
    if s.usl:
        render.usl(out, s.usl, s.usl_residuals, s.factor)
    if s.model:
        render.model(out, s.model)
        render.predictions(out, s.predictions, demand)
        render.bounds(out, s.bounds, s.knee)
    if s.supported:
        render.supported(out, s.supported, s.confidence)
    if s.scaling:
        render.scaling(out, s.scaling)
    render.notes(out, [n for n in s.notes if not (s.scaling and n in s.scaling.notes)])


@capacity_app.command()
def usl(
    study: str = StudyArg,
    confidence: float | None = typer.Option(None, "--confidence", help="interval level (default: the study's)"),
    as_json: bool = JsonOpt,
    store: Path | None = StoreOpt,
) -> None:
    """Fit the Universal Scalability Law to ETR (T) over a users, workers or sut_cpus sweep:
    α, β, γ, peak N and peak ETR with intervals, and the residuals. Needs ≥ 6 levels.

    Example: `perflab capacity usl STUDY_ID --json`
    """
    from perflab.capacity.uslsweep import fit_sweep_usl

    data = _data(study, store)
    fit, residuals = fit_sweep_usl(data, confidence=confidence)
    if as_json:
        _json({"study_id": data.study_id, "factor": data.factor, "usl": fit.to_dict(),
               "levels": [r.to_dict() for r in residuals], "notes": data.notes})
        return
    render.usl(out, fit, residuals, data.factor)
    render.notes(out, data.notes)


@capacity_app.command()
def mva(
    study: str = StudyArg,
    fit: str | None = FitOpt,
    demand: str = DemandOpt,
    as_json: bool = JsonOpt,
    store: Path | None = StoreOpt,
) -> None:
    """MVA from the measured demand (PBT/CMD (S)) and think time, beside every measured level of
    a users sweep; levels outside --fit are held out (their ETR and response are predictions).

    Example: `perflab capacity mva STUDY_ID --fit 1,3,18 --demand point`
    """
    from perflab.capacity.beside import predictions
    from perflab.capacity.closed import fit_closed_model

    data = _data(study, store)
    model = fit_closed_model(data, fit=_fit_levels(fit))
    preds = predictions(model, data, demand)
    held = [p for p in preds if not p.fit]
    worst_etr = max((abs(p.etr_error) for p in held), default=None)
    worst_last = max((abs(p.avg_last_error) for p in held), default=None)
    worst = {"etr_t": worst_etr, "avg_last_t": worst_last}
    if as_json:
        _json({"study_id": data.study_id, "demand": demand, "model": model.to_dict(),
               "levels": [p.to_dict() for p in preds], "held_out_max_abs_error": worst,
               "notes": [*data.notes, *model.notes]})
        return
    render.model(out, model)
    render.predictions(out, preds, demand)
    if worst_etr is not None and worst_last is not None:  # some levels held out
        out.print(f"held-out levels: largest |error| ETR (T) {100 * worst_etr:.1f}%, "
                  f"AVG LAST (T) {100 * worst_last:.1f}%", highlight=False)
    render.notes(out, [*data.notes, *model.notes])


@capacity_app.command()
def bounds(
    study: str = StudyArg,
    fit: str | None = FitOpt,
    as_json: bool = JsonOpt,
    store: Path | None = StoreOpt,
) -> None:
    """Operational-law (asymptotic) bounds on ETR (T) and AVG LAST (T) from the measured demand
    and think time, beside each measured level, and the knee N*.

    Example: `perflab capacity bounds STUDY_ID`
    """
    from perflab.capacity.beside import bounds as level_bounds
    from perflab.capacity.beside import knee
    from perflab.capacity.closed import fit_closed_model

    data = _data(study, store)
    model = fit_closed_model(data, fit=_fit_levels(fit))
    rows = level_bounds(model, data)
    if as_json:
        _json({"study_id": data.study_id, "model": model.to_dict(), "knee": knee(model),
               "levels": [b.to_dict() for b in rows], "notes": [*data.notes, *model.notes]})
        return
    render.model(out, model)
    render.bounds(out, rows, knee(model))
    render.notes(out, [*data.notes, *model.notes])


@capacity_app.command()
def supported(
    study: str = StudyArg,
    target_util: float = TargetOpt,
    response_limit: float = LimitOpt,
    fit: str | None = FitOpt,
    as_json: bool = JsonOpt,
    store: Path | None = StoreOpt,
) -> None:
    """Users supported at a target utilization and at a response-time limit (MVA from the
    measured demand), each with the interval the demand's run-to-run spread implies.

    Example: `perflab capacity supported STUDY_ID --response-limit 0.5`
    """
    from perflab.capacity.closed import fit_closed_model, supported_at_response, supported_at_utilization

    data = _data(study, store)
    model = fit_closed_model(data, fit=_fit_levels(fit))
    items = [supported_at_utilization(model, _target(target_util)), supported_at_response(model, response_limit)]
    if as_json:
        _json({"study_id": data.study_id, "model": model.to_dict(), "supported": [s.to_dict() for s in items],
               "notes": [*data.notes, *model.notes]})
        return
    render.model(out, model)
    render.supported(out, items, model.confidence)
    render.notes(out, [*data.notes, *model.notes])


@capacity_app.command()
def cpus(
    source: str = typer.Argument(..., metavar="SOURCE",
                                 help="a sut_cpus sweep study, or a seed-table CSV with PROCESSORS and ITR (H) rows"),
    as_json: bool = JsonOpt,
    store: Path | None = StoreOpt,
) -> None:
    """ITRR per added processor (the LSPR shape) from a CPUs-online sweep or a seed table.

    Example: `perflab capacity cpus tests/capacity/data/06-t31-processor-capacity-9021.csv`
    """
    from perflab.capacity.scaling import sweep_scaling, table_scaling

    path = Path(source)
    if path.suffix.lower() == ".csv":
        sc = table_scaling(path)
    else:
        sc = sweep_scaling(_data(source, store))
    if as_json:
        _json(sc.to_dict())
        return
    render.scaling(out, sc)


@capacity_app.command()
def compose(
    steps: list[str] = typer.Argument(..., metavar="STEP...",
                                      help="study[#CONFIG] | runs:A..B | [NAME=]RATIO[:LOW:HIGH]"),
    confidence: float = typer.Option(DEFAULT_CONFIDENCE, "--confidence",
                                     help="interval level of the product (and of given LOW:HIGH)"),
    as_json: bool = JsonOpt,
    store: Path | None = StoreOpt,
) -> None:
    """Compose ITRRs (A→B then B→C gives A→C): ratios multiply, log variances add.

    Example: `perflab capacity compose hw=1.30 R21=1.0464:0.942:1.163 R1E=1.04`
    """
    from perflab.capacity.compose import compose as product
    from perflab.capacity.steps import chain_warnings, parse_step

    items = [parse_step(s, store=store, confidence=confidence) for s in steps]
    total = product(*(s.itrr for s in items), label="product")
    warnings = chain_warnings(items)
    if len(items) > 1 and any(s.itrr.se == 0 for s in items) and any(s.itrr.se > 0 for s in items):
        warnings.append(cav.remark(Code.INTERVAL_METHOD, "some steps are given as exact numbers: the product's interval "
                                   "covers only the measured steps"))
    if as_json:
        _json({"steps": [s.to_dict(confidence) for s in items], "product": total.to_dict(confidence),
               "warnings": warnings})
        return
    render.steps(out, items, total, confidence)
    render.notes(out, warnings)


@capacity_app.command()
def matrix(
    pairs_csv: Path = typer.Argument(..., metavar="PAIRS_CSV", help="measurement pairs (seed table 21-t03 format)"),
    matrix_csv: Path = typer.Argument(..., metavar="MATRIX_CSV", help="release matrix (seed table 22-t02 format)"),
    confidence: float = typer.Option(DEFAULT_CONFIDENCE, "--confidence", help="interval level of the pair-based ITRRs"),
    as_json: bool = JsonOpt,
) -> None:
    """Recompute the seeds' release ITRR matrix from its measurement pairs: each cell from the
    printed symbols (checked within rounding) and from the pairs with an interval.

    Example: `perflab capacity matrix tests/capacity/data/21-t03-itrr-measurement-pairs.csv
    tests/capacity/data/22-t02-itrr-release-matrix.csv`
    """
    from perflab.capacity.matrix import release_matrix

    m = release_matrix(pairs_csv, matrix_csv, confidence)
    if as_json:
        _json(m.to_dict())
        return
    render.matrix(out, m)


@capacity_app.command()
def whatif(
    steps: list[str] = typer.Argument(..., metavar="STEP...", help="ITRR steps, as for `compose`"),
    users: int | None = typer.Option(None, "--users", min=1, help="users supported now (measured)"),
    sweep: str | None = typer.Option(None, "--sweep", help="a users sweep: users supported now at --target-util"),
    target_util: float = TargetOpt,
    confidence: float = typer.Option(DEFAULT_CONFIDENCE, "--confidence", help="interval level"),
    as_json: bool = JsonOpt,
    store: Path | None = StoreOpt,
) -> None:
    """Users supported after a change of ITRR: N_new = N × ITRR at the same utilization.

    Example: `perflab capacity whatif R21=1.0464:0.942:1.163 --users 5860`
    """
    from perflab.capacity.compose import compose as product
    from perflab.capacity.steps import parse_step
    from perflab.capacity.usl import EXTRAPOLATION_FACTOR

    if (users is None) == (sweep is None):
        raise InputError("give --users N or --sweep STUDY (the users supported now)", field="--users/--sweep")
    items = [parse_step(s, store=store, confidence=confidence) for s in steps]
    total = product(*(s.itrr for s in items), label="product")
    base_low = base_high = None
    measured_max = None
    if sweep is not None:
        from perflab.capacity.closed import fit_closed_model, supported_at_utilization

        data = _data(sweep, store)
        s = supported_at_utilization(fit_closed_model(data), _target(target_util))
        if s.users is None or s.users == 0:
            raise NoCurve(f"no curve: the sweep gives no users supported at {target_util:g}% ({s.note})",
                             field="--sweep")
        users, base_low, base_high, measured_max = s.users, s.low, s.high, data.max_n
    assert users is not None  # given, or from the sweep (one of them: above)
    lo, hi = total.ci(confidence)
    projected = users * total.ratio
    # ends multiplied: conservative when the base users also have an interval
    p_low = (base_low if base_low is not None else users) * lo if total.se > 0 or base_low is not None else None
    p_high = (base_high if base_high is not None else users) * hi if total.se > 0 or base_high is not None else None
    reference = measured_max if measured_max is not None else users
    extrapolated = projected > EXTRAPOLATION_FACTOR * reference
    notes = [cav.remark(Code.MODEL_FIT, "assumes the CPU is the bottleneck and think time and response time per user "
                        "stay as measured; an ITRR does not say how response times compare (the seeds' caveat)")]
    if extrapolated:
        notes.append(cav.remark(Code.MODEL_FIT, f"extrapolated: {projected:.0f} users is beyond "
                                f"{EXTRAPOLATION_FACTOR:g}× the measured {reference:g}", users=projected))
    if base_low is not None:
        notes.append(cav.remark(Code.INTERVAL_METHOD, "interval: the ends of the base users' and the ITRR's intervals "
                                "multiplied (conservative)"))
    result = {"itrr": total.to_dict(confidence), "users_now": users, "users_now_ci": [base_low, base_high],
              "users_projected": projected, "users_projected_ci": [p_low, p_high], "extrapolated": extrapolated,
              "steps": [s.to_dict(confidence) for s in items], "notes": notes}
    if as_json:
        _json(result)
        return
    render.steps(out, items, total, confidence)
    ci = render.interval(p_low, p_high, ".0f")
    out.print(f"users supported: {users}" + (f" ({base_low} - {base_high})" if base_low is not None else "")
              + f" -> {projected:.0f} ({ci})" + (" \\[extrapolated]" if extrapolated else ""), highlight=False)
    render.notes(out, notes)

"""The accuracy studies as a section of docs/accuracy.md, and the bias bounds as the data file
perflab.study.arrangement reads (study/arrangement_bias.json)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from perflab.accuracy.cases import CASES
from perflab.accuracy.experiment import KnobCalibration
from perflab.accuracy.summary import BIAS_TARGET_POINTS, COVERAGE_TARGET, Bound, Cell

BEGIN = "<!-- accuracy studies: `perflab accuracy --studies` rewrites from here -->"
END = "<!-- accuracy studies: end -->"


def _pct(value: float | None, digits: int = 0) -> str:
    return "na" if value is None else f"{100 * value:.{digits}f}%"


def _share(count: int, total: int) -> str:
    return "na" if not total else f"{count}/{total}"


def render(table: list[Cell], bound: dict[str, Bound], knobs: dict[str, KnobCalibration], where: str,
           truths: dict | None = None, by_kind: dict[str, dict[str, Bound]] | None = None) -> str:
    truths = truths or {}
    lines = [BEGIN, "", "## Study arrangements against known truths", "",
             f"Regenerate with `perflab accuracy --studies` (hours; resumable). Measured {where}.", "",
             "Each row is a set of real studies of a system whose added cost is known -- the base configuration "
             "against the same one with a knob raised to add 3%, 5% or 10% of CPU per transaction, or against "
             "itself (0%: an A/A) -- run as a user runs them (calibrated to 90% of the SUT's processor where the "
             "case has think times, randomized blocks, the default gates and criteria) in each arrangement. "
             "**truth**: the knob's cost measured alone at the study's load in runs the host's wander cannot "
             "blur (perflab.accuracy.truth: mixed runs, each transaction beside its knob twin, or alternating "
             "pairs), as the ratio of ITR (S) it makes (1 exactly at 0%); without one, the pooled "
             "one-at-a-time ratio over every block of that cell's one-at-a-time studies; **bias**: the "
             "arrangement's mean ratio less the "
             "truth, in points; **covered**: printed intervals holding the truth (the ones that decided; in "
             "brackets the arrangement's own before any widening); **claims**: WORSE or BETTER called -- false "
             "at 0%, the power to call the loss WORSE otherwise; **answered**: studies with a verdict (not exit "
             "4); **±**: the mean half-width of the printed interval, in points; **min**: machine minutes a "
             "study, calibration included.", ""]
    for case in sorted({c.case for c in table}):
        spec = CASES.get(case)
        knob = knobs.get(case)
        lines.append(f"### {case}: {spec.description if spec else ''}")
        lines.append("")
        if knob is not None:
            lines.append(f"Knob measured alone ({', '.join(knob.runs)}): {knob.base_ms:.4f} ms per transaction at 0, "
                         f"{1e6 * knob.per_unit_ms:.2f} ns per unit.")
            lines.append("")
        measured = truths.get(case)
        if measured is not None:
            lines.append(f"Truth: {measured.method} runs at {measured.users} users, knob {measured.knob}: "
                         f"+{100 * measured.per_unit * measured.knob:.2f}% CPU per transaction "
                         f"(± {100 * measured.se * measured.knob:.2f}, 1 se; each: "
                         f"{', '.join(f'{100 * v:+.2f}%' for v in measured.values)}; runs {', '.join(measured.runs)}).")
            lines.append("")
        lines.append("| arrangement | added | studies | truth | mean ratio | bias (pts) | covered | claims | answered "
                     "| ± (pts) | excluded runs | min |")
        lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for c in (c for c in table if c.case == case):
            truth = "na" if c.truth is None else (f"{c.truth.ratio:.4f}" + (f" ± {c.truth.se:.4f}" if c.truth.se else ""))
            mean = "na" if c.mean_log is None else f"{math.exp(c.mean_log):.4f}"
            bias = "na" if c.bias_points is None else f"{c.bias_points:+.2f}"
            covered = _share(c.covered, c.judged) + (f" ({_share(c.covered_design, c.judged)})"
                                                     if c.covered_design != c.covered else "")
            width = "na" if not c.widths else f"{sum(c.widths) / len(c.widths):.2f}"
            lines.append(f"| {c.arrangement} | +{100 * c.effect:g}% | {c.studies} | {truth} | {mean} | {bias} | "
                         f"{covered} | {_share(c.claims, c.studies)} | {_share(c.answered, c.studies)} | {width} | "
                         f"{c.excluded}/{c.runs} | {c.seconds / max(c.studies, 1) / 60:.1f} |")
        lines.append("")
    lines += ["### The bound each arrangement states", "",
              f"ln r_design = (1 + k) ln r_true + a (perflab.stats.bias). An arrangement that misses the target on "
              f"any cell (coverage below {100 * COVERAGE_TARGET:.0f}%, or a bias beyond {BIAS_TARGET_POINTS} points) "
              f"has its verdict intervals widened by its bound, and its reports say so.", "",
              "| arrangement | cells | k (magnification) | largest offset a | widened |", "|---|---:|---|---:|---|"]
    for b in bound.values():
        lines.append(f"| {b.arrangement} | {b.cells} | {b.k_low:+.3f} to {b.k_high:+.3f} | "
                     f"{100 * math.expm1(b.a_max):.2f}% | {'yes' if b.widened else 'no'} |")
    if by_kind:
        lines += ["", "A study of a target kind one case stands for states that case's own bound (below); a study "
                  "of any other kind states the pooled one above.", "",
                  "| target kind | arrangement | cells | k (magnification) | largest offset a | widened |",
                  "|---|---|---:|---|---:|---|"]
        for kind, kind_bounds in by_kind.items():
            for b in kind_bounds.values():
                lines.append(f"| {kind} | {b.arrangement} | {b.cells} | {b.k_low:+.3f} to {b.k_high:+.3f} | "
                             f"{100 * math.expm1(b.a_max):.2f}% | {'yes' if b.widened else 'no'} |")
    lines += ["", END]
    return "\n".join(lines) + "\n"


def with_section(document: str, section: str) -> str:
    """`document` with its accuracy-studies section replaced (or appended)."""
    if BEGIN in document and END in document:
        start = document.index(BEGIN)
        end = document.index(END) + len(END)
        return document[:start] + section.rstrip("\n") + document[end:]
    return document.rstrip("\n") + "\n\n" + section


def _entry(b: Bound, where: str, source: str) -> dict:
    return {"k_low": round(b.k_low, 4), "k_high": round(b.k_high, 4), "a_max": round(b.a_max, 5),
            "widened": b.widened, "measured": where, "source": source}


def bias_file(bound: dict[str, Bound], where: str, source: str,
              by_kind: dict[str, dict[str, Bound]] | None = None) -> str:
    """arrangement_bias.json: what perflab.study.arrangement.measured_bias reads -- per arrangement
    the pooled bound and, under `by_target`, each target kind's own."""
    arrangements = {}
    for b in bound.values():
        entry = _entry(b, where, source)
        kinds = {kind: _entry(kb[b.arrangement], f"{where}, {kind} only", source)
                 for kind, kb in (by_kind or {}).items() if b.arrangement in kb}
        if kinds:
            entry["by_target"] = kinds
        arrangements[b.arrangement] = entry
    return json.dumps({"format": 1, "arrangements": arrangements}, indent=1) + "\n"


def write(path: Path, text: str) -> None:
    from perflab.store.atomic import write_atomic

    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, lambda tmp: tmp.write_text(text))

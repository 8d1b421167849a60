"""The accuracy studies as a section of docs/accuracy.md: the cells, each host's fitted bounds and
their test on fresh studies. The bounds themselves live in each host's run store (store/bias.py)."""

from __future__ import annotations

import math
from pathlib import Path

from perflab.accuracy.cases import CASES
from perflab.accuracy.summary import Cell, CheckRow, pooled_check_rows
from perflab.records.bias import HostBound
from perflab.values import NA, formatted

BEGIN = "<!-- accuracy studies: `perflab accuracy --studies` rewrites from here -->"
END = "<!-- accuracy studies: end -->"


def _pct(value: float | None, digits: int = 0) -> str:
    return formatted(value, f".{digits}f", scale=100.0, suffix="%")


def _share(count: int, total: int) -> str:
    return "na" if not total else f"{count}/{total}"


def _level(value: float) -> str:
    from perflab.report.numbers import percent_level

    return percent_level(value)


def render(table: list[Cell], knobs: dict, where: str, truths: dict | None = None,
           bounds: dict[str, list[HostBound]] | None = None, checks: list[CheckRow] | None = None) -> str:
    """The page's section: per case the cells, then each host's fitted bounds, then the bounds'
    test on fresh studies. `knobs`, `truths`: keyed by (case, host key, session);
    `bounds`: per host description, its bounds."""
    truths = truths or {}
    lines = [BEGIN, "", "## Study arrangements against known truths", "",
             f"Regenerate with `perflab accuracy --studies` (resumable; `--quick` measures one host's duet bound "
             f"for SQLite in about 15 minutes, `--check` runs fresh studies with the bound on). {where}", "",
             "Each row is a set of real studies of a system whose added cost is known -- the base configuration "
             "against the same one with a knob raised to add 3%, 5% or 10% of CPU per transaction, or against "
             "itself (0%: an A/A) -- run as a user runs them (calibrated to 90% of the SUT's processor where the "
             "case has think times, randomized blocks, the default gates and criteria) in each arrangement. "
             "**truth**: the knob's cost measured alone at the study's load in runs the host's wander cannot "
             "blur (perflab.accuracy.truth: mixed runs, each transaction beside its knob twin, or alternating "
             "pairs), as the ratio of ITR (S) it makes (1 exactly at 0%), measured once per case, host and "
             "session; **bias**: the arrangement's mean ratio less the truth, in points; **covered**: printed "
             "intervals holding the truth (the ones that decided; in brackets the arrangement's own before any "
             "widening); **claims**: WORSE or BETTER called -- false at 0%, the power to call the loss WORSE "
             "otherwise; **answered**: studies with a verdict (not exit 4); **±**: the mean half-width of the "
             "printed interval, in points; **min**: machine minutes a study, calibration included.", ""]
    for case in sorted({c.case for c in table}):
        spec = CASES.get(case)
        lines.append(f"### {case}: {spec.description if spec else ''}")
        lines.append("")
        for key, knob in sorted(((k, v) for k, v in knobs.items() if k[0] == case), key=lambda kv: str(kv[0])):
            lines.append(f"Knob measured alone{_session(key)} ({', '.join(knob.runs)}): {knob.base_ms:.4f} ms per "
                         f"transaction at 0, {1e6 * knob.per_unit_ms:.2f} ns per unit.")
            lines.append("")
        for key, measured in sorted(((k, v) for k, v in truths.items() if k[0] == case), key=lambda kv: str(kv[0])):
            lines.append(f"Truth{_session(key)}: {measured.method} runs at {measured.users} users, knob "
                         f"{measured.knob}: +{100 * measured.per_unit * measured.knob:.2f}% CPU per transaction "
                         f"(± {100 * measured.se * measured.knob:.2f}, 1 se; each: "
                         f"{', '.join(f'{100 * v:+.2f}%' for v in measured.values)}; runs {', '.join(measured.runs)}).")
            lines.append("")
        lines.append("| arrangement | added | studies | truth | mean ratio | bias (pts) | covered | claims | answered "
                     "| ± (pts) | excluded runs | min |")
        lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for c in (c for c in table if c.case == case):
            truth = NA if c.truth is None else (f"{c.truth.ratio:.4f}" + (f" ± {c.truth.se:.4f}" if c.truth.se else ""))
            mean = formatted(None if c.mean_log is None else math.exp(c.mean_log), ".4f")
            bias = formatted(c.bias_points, "+.2f")
            covered = _share(c.covered, c.judged) + (f" ({_share(c.covered_design, c.judged)})"
                                                     if c.covered_design != c.covered else "")
            width = "na" if not c.widths else f"{sum(c.widths) / len(c.widths):.2f}"
            lines.append(f"| {c.arrangement} | +{100 * c.effect:g}% | {c.studies} | {truth} | {mean} | {bias} | "
                         f"{covered} | {_share(c.claims, c.studies)} | {_share(c.answered, c.studies)} | {width} | "
                         f"{c.excluded}/{c.runs} | {c.seconds / max(c.studies, 1) / 60:.1f} |")
        lines.append("")
    lines += ["### Each host's bound", "",
              "ln r_design = (1 + k) ln r_true + a (perflab.stats.bias), fitted per host, arrangement and target kind "
              "from that host's `fit` studies with a between-study spread of k and of a (restricted maximum "
              "likelihood), as a prediction box for the next study on that host at the level shown. A study in that "
              "arrangement on that host widens its verdict intervals by it (\"bias-bounded\"); on any other host it "
              "is not applied, and the study says its bias is not measured there.", ""]
    if not bounds:
        lines += ["No host has a bound yet.", ""]
    for host, host_bounds in (bounds or {}).items():
        lines += [f"**{host}**", "",
                  "| arrangement | kind | studies | days | k (fit ± se, spread) | k, next study | a, next study (pts) "
                  "| level |", "|---|---|---:|---|---|---|---|---:|"]
        for b in host_bounds:
            lines.append(f"| {b.arrangement} | {b.target} | {b.fit.studies} | {', '.join(b.days) or 'na'} | "
                         f"{b.fit.k:+.3f} ± {b.fit.k_se:.3f}, τ {b.fit.tau_k:.3f} | {b.k_low:+.3f} to {b.k_high:+.3f} | "
                         f"{100 * b.a_low:+.2f} to {100 * b.a_high:+.2f} | {_level(b.level)} |")
        lines.append("")
    lines += ["### The bounds' test: fresh studies", "",
              "Studies run after the bound was fitted, with it on, none of them used to fit it (`--check`). "
              "**covered**: printed intervals holding the truth, and the 95% Clopper-Pearson lower bound of the "
              "coverage; **bound applied**: the bound the studies' intervals were widened by (a bound refitted is "
              "tested on fresh studies of its own; in bold, the rows of every bound and host of an arrangement and kind "
              "summed: the test of the procedure -- fit the host's bound, then study with it on); **days**: the "
              "days the studies ran; **A/A EQUIVALENT**: the same configuration twice called "
              "EQUIVALENT; **gate fails at -1%**: a "
              "true change inside the ±3% margin that `--gate` would fail (WORSE or INCONCLUSIVE); **WORSE at -5%**: "
              "the power to call a 5% loss; **±**: mean half-width of the printed interval in points; **min**: "
              "machine minutes a study.", ""]
    if not checks:
        lines += ["No fresh studies yet.", ""]
    else:
        lines += ["| arrangement | kind | route | bound applied | days | studies | covered | lower bound "
                  "| A/A EQUIVALENT | gate fails at -1% | WORSE at -5% | ± (pts) | min |",
                  "|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for row in checks + pooled_check_rows(checks):
            width = "na" if not row.widths else f"{sum(row.widths) / len(row.widths):.2f}"
            bound = (f"**each host's own, {row.pooled} bounds on {len(row.hosts)} "
                     f"host{'s' if len(row.hosts) != 1 else ''}**" if row.pooled else row.bound or "none")
            lines.append(f"| {row.arrangement} | {row.kind} | {', '.join(sorted(row.routes)) or 'na'} | "
                         f"{bound} | {', '.join(sorted(row.days)) or 'na'} | {row.studies} | "
                         f"{_share(row.covered, row.judged)} | {_pct(row.coverage_lower, 1) if row.judged else 'na'} | "
                         f"{_share(row.aa_equivalent, row.aa)} | {_share(row.small_failed, row.small)} | "
                         f"{_share(row.large_worse, row.large)} | {width} | {row.seconds / max(row.studies, 1) / 60:.1f} |")
        lines.append("")
    lines += [END]
    return "\n".join(lines) + "\n"


def _session(key: tuple) -> str:
    """" (session 2026-12-07)" for a keyed record; nothing for perflab 0.2's one per case."""
    return f" (session {key[2]})" if len(key) > 2 and key[2] else ""


def with_section(document: str, section: str) -> str:
    """`document` with its accuracy-studies section replaced (or appended)."""
    if BEGIN in document and END in document:
        start = document.index(BEGIN)
        end = document.index(END) + len(END)
        return document[:start] + section.rstrip("\n") + document[end:]
    return document.rstrip("\n") + "\n\n" + section


def write(path: Path, text: str) -> None:
    from perflab.store.atomic import write_atomic

    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, lambda tmp: tmp.write_text(text))

"""The generated prose of a report: the measurement discussion and the General Observations.

House style is the seeds' (vmesa-methodology.md §4.2): every claim names its row in
parentheses and gives the change both absolutely and relatively ("decreased by 0.290 seconds
(35%)"). perflab adds what the seeds could not give: the confidence interval of the ratio and
the verdict against the stated margin (statistics-and-capacity.md §5.4), under the report's
error control: primary metrics carry the verdicts; a secondary metric's call is a verdict only
when its family was tested, and is otherwise labelled unadjusted.

Every number printed here is read from the study document (through `numbers`); the only
arithmetic is the registry's delta/percent_change when an entry lacks its own change. Nothing is
judged by eye: the words follow the verdict the statistics gave. Which rows play which part
(headline, cost, response, throughput, utilization) and their short names come from the
registry's roles and phrases.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from perflab.catalog.registry import GROUPS, REGISTRY
from perflab.records.study import ComparisonRecord, MetricComparison, StudyDocument, StudyRun
from perflab.report import numbers as fmt

#: A utilization drop smaller than this (relative) is not worth a caveat: the seeds called
#: differences under 1 % "equivalent" (vmesa-methodology.md §6.1).
UTIL_CAVEAT = 0.01
#: Paragraph order of the discussion: capacity first, as the seeds' discussions open with ITR.
ORDER = ("Throughput", "Response Time", "Proc. Usage", "Processor Util.", "Storage", "Paging", "I/O", "Servers")


@dataclass(frozen=True)
class Sentence:
    """One generated claim and the rows it is about (for tracing and for the JSON report)."""

    text: str
    keys: tuple[str, ...] = ()
    verdict: str | None = None
    group: str = ""

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["keys"] = list(self.keys)
        return data


# -- helpers -----------------------------------------------------------------------------------

def _cap(text: str) -> str:
    return text[:1].upper() + text[1:] if text else text


def name_of(entry: MetricComparison) -> str:
    """"internal throughput (ITR (S))", or the bare label when there is no phrase."""
    label = fmt.label_of(entry.key, entry)
    phrase = REGISTRY.phrase(entry.key)
    return f"{phrase} ({label})" if phrase else label


@dataclass(frozen=True)
class _Terms:
    """The comparison-wide words: margin and confidence, as the design states them."""

    margin: float | None
    confidence: float | None

    def margin_text(self) -> str:
        """"the ±3% margin"; just "the margin" when the study does not state it (never a default)."""
        return "the margin" if fmt.number(self.margin) is None else f"the {fmt.margin(self.margin)} margin"

    def level_text(self) -> str:
        """"90% CI", or plain "CI" when the level is not recorded."""
        return "CI" if fmt.number(self.confidence) is None else f"{fmt.percent_level(self.confidence)} CI"


def _terms(study: StudyDocument) -> _Terms:
    return _Terms(study.design.margin, study.design.confidence)


def _verb(absolute: float | None, relative: float | None) -> str | None:
    sign = absolute if absolute is not None else relative
    if sign is None or sign == 0:
        return None
    return "increased" if sign > 0 else "decreased"


def _change(entry: MetricComparison, *, absolute: bool = True) -> str:
    """"increased by 0.051 ms (5.0%)" / "decreased by 5.3%" / "did not change"."""
    a, r = fmt.changes(entry)
    verb = _verb(a, r)
    if verb is None:
        return "did not change"
    rel = fmt.pct(r, signed=False, entry=entry)
    if absolute and a is not None:
        return f"{verb} by {fmt.magnitude(a, entry.key, entry)} ({rel})"
    return f"{verb} by {rel}"


def _interval(entry: MetricComparison, terms: _Terms, blocks: bool = False) -> str:
    if fmt.number(entry.ci_low) is None or fmt.number(entry.ci_high) is None:
        return "[no interval]"
    extra = f", {entry.n_blocks} blocks" if blocks and entry.n_blocks else ""
    if entry.unsized:
        return f"[bias-bounded: the arrangement cannot size this change{extra}]"
    if entry.design_ci_low is not None:
        # No probability level: the design's interval at its level, widened by the bias bound.
        return f"[bias-bounded {fmt.ci_pct(entry.ci_low, entry.ci_high)}{extra}]"
    level = terms.level_text() if entry.level is None else f"{fmt.percent_level(entry.level)} CI"
    return f"[{level} {fmt.ci_pct(entry.ci_low, entry.ci_high)}{extra}]"


def verdict_clause(entry: MetricComparison, terms: _Terms, *, blocks: bool = False) -> str:
    """The interval and what it means: "[90% CI 4.1% to 6.5%]: BETTER"."""
    if entry.no_comparison:
        return f"({entry.no_comparison})"
    verdict = entry.verdict
    margin = terms.margin_text()
    interval = _interval(entry, terms, blocks)
    if verdict in ("BETTER", "WORSE"):
        tail = f", by more than {margin}" if entry.material else ""
        return f"{interval}: {verdict}{tail}"
    if verdict == "EQUIVALENT":
        low, high = fmt.number(entry.ci_low), fmt.number(entry.ci_high)
        detectable = low is not None and high is not None and (low > 1.0 or high < 1.0)
        tail = " (a detectable change, smaller than the margin)" if detectable else ""
        return f"{interval}: EQUIVALENT, within {margin}{tail}"
    if verdict == "INCONCLUSIVE":
        return f"{interval}: INCONCLUSIVE; {_noise(entry, margin)}"
    if entry.adjustment == "descriptive":
        return (f"{interval} (described, not judged: both runs of a block ran at once, and response times depend on "
                f"how they shared the machine)")
    if entry.verdict_unadjusted is not None and entry.adjustment in ("untested", "unadjusted"):
        return (f"{interval} (a secondary row: {entry.verdict_unadjusted.lower()} on its own; no claim is "
                f"made, as the primary verdicts did not open its family)")
    reason = entry.warnings[0].text if entry.warnings else "no interval"
    return f"(no verdict: {reason})"


def _noise(entry: MetricComparison, margin: str) -> str:
    if entry.blocks_needed is not None and entry.cv is not None:
        measured = f" ({entry.n_blocks} measured)" if entry.n_blocks else ""
        return (f"at the observed CV of {fmt.pct(entry.cv, signed=False)} the noise calls for at least "
                f"{entry.blocks_needed:,} blocks{measured}")
    if fmt.number(entry.ci_low) is not None:
        return f"the interval includes both no change and changes beyond {margin}"
    return entry.warnings[0].text if entry.warnings else "no interval could be computed"


def metric_sentence(entry: MetricComparison, terms: _Terms) -> Sentence:
    """One row, in the house style: name (row) change (absolute, relative) interval: verdict."""
    group = _group_of(entry)
    if not entry.directional:
        base, new = (fmt.quantity(v, entry.key, entry) for v in (entry.base_value, entry.new_value))
        _, r = fmt.changes(entry)
        text = f"{_cap(name_of(entry))} was {base} for the base and {new} for the new configuration ({fmt.pct(r)})."
        return Sentence(text, (entry.key,), None, group)
    text = f"{_cap(name_of(entry))} {_change(entry)} {verdict_clause(entry, terms)}."
    return Sentence(text, (entry.key,), entry.verdict, group)


def linked_sentence(cause: MetricComparison, itr: MetricComparison, terms: _Terms) -> Sentence | None:
    """"Processor busy time per command (PBT/CMD (S)) decreased by 0.051 ms (5.0%), raising
    internal throughput (ITR (S)) by 5.3% [90% CI 4.1% to 6.5%]: BETTER." -- only when the two
    moved in opposite directions, as ITR = 1000 · PROCESSORS / PBT/CMD says they must."""
    ca, cr = fmt.changes(cause)
    ia, ir = fmt.changes(itr)
    cv, iv = _verb(ca, cr), _verb(ia, ir)
    if cv is None or iv is None or cv == iv:
        return None
    effect = "raising" if iv == "increased" else "lowering"
    text = (f"{_cap(name_of(cause))} {_change(cause)}, {effect} {name_of(itr)} by {fmt.pct(ir, signed=False)} "
            f"{verdict_clause(itr, terms)}.")
    return Sentence(text, (cause.key, itr.key), itr.verdict, "Throughput")


def _group_of(entry: MetricComparison) -> str:
    if entry.group:
        return entry.group
    metric = fmt.metric_of(entry.key)
    return metric.group if metric is not None else ""


def _group_rank(group: str) -> int:
    if group in ORDER:
        return ORDER.index(group)
    if group in GROUPS:
        return len(ORDER) + GROUPS.index(group)
    return len(ORDER) + len(GROUPS)


# -- the measurement discussion ------------------------------------------------------------------

def _load_text(study: StudyDocument) -> str:
    load = study.design.load
    if load.users is not None:
        text = f"{load.users:,} users"
    elif load.rate is not None:
        text = f"an arrival rate of {load.rate:,g}/s"
    else:
        return ""
    if load.mode == "calibrated" and load.target_util is not None:
        text += f" (calibrated on the base to {fmt.fixed(load.target_util, 0)}% utilization)"
    return text


def runs_of(study: StudyDocument, configs: Iterable[str]) -> list[StudyRun]:
    return study.runs_of(list(configs))


def opening(study: StudyDocument, comparison: ComparisonRecord) -> Sentence:
    """What was run: the seeds' discussions begin with it."""
    runs = runs_of(study, (comparison.base, comparison.new))
    valid = [r for r in runs if not r.excluded]
    parts = [f"{comparison.new} was measured against the base {comparison.base}"]
    if study.design.blocks is not None:
        parts.append(f"in {study.design.blocks} interleaved blocks")
    load = _load_text(study)
    if load:
        parts.append(f"at {load}")
    text = " ".join(parts) + f"; {len(valid)} of {len(runs)} runs were valid."
    return Sentence(text, (), None, "")


def _paired(entries: dict[str, MetricComparison], role_a: str, role_b: str) -> list[tuple[str, str]]:
    """(capacity key, cost key) pairs by position in their registry roles."""
    return list(zip(REGISTRY.role(role_a), REGISTRY.role(role_b)))


def discuss(study: StudyDocument, comparison: ComparisonRecord) -> list[Sentence]:
    """The measurement discussion of one comparison, headline first, then row group by group."""
    terms = _terms(study)
    entries = [e for e in comparison.metrics if e.key]
    by_key = {e.key: e for e in entries}
    sentences = [opening(study, comparison)]
    used: set[str] = set()
    missing: list[MetricComparison] = []
    # Each ITR with the processor time per command that explains it.
    for itr_key, cost_key in _paired(by_key, "capacity", "cost"):
        itr, cause = by_key.get(itr_key), by_key.get(cost_key)
        if itr is None or not itr.has_values:
            continue
        linked = linked_sentence(cause, itr, terms) if cause is not None and cause.has_values else None
        if linked is not None:
            sentences.append(linked)
            used.update(linked.keys)
    rest = sorted((e for e in entries if e.key not in used),
                  key=lambda e: (e.role != "primary", _group_rank(_group_of(e)), entries.index(e)))
    for entry in rest:
        if not entry.has_values:
            if entry.no_comparison:
                sentences.append(Sentence(f"{_cap(name_of(entry))}: {entry.no_comparison}.", (entry.key,), None,
                                          _group_of(entry)))
            else:
                missing.append(entry)
            continue
        sentences.append(metric_sentence(entry, terms))
    if missing:
        sentences.append(Sentence(
            f"Not measured in one or both configurations (na): {', '.join(fmt.label_of(e.key, e) for e in missing)}.",
            tuple(e.key for e in missing), None, "na"))
    return sentences


def paragraphs(sentences: list[Sentence]) -> list[str]:
    """Sentences joined into one paragraph per row group, in order."""
    out: list[tuple[str, list[str]]] = []
    for sentence in sentences:
        if out and out[-1][0] == sentence.group:
            out[-1][1].append(sentence.text)
        else:
            out.append((sentence.group, [sentence.text]))
    return [" ".join(texts) for _, texts in out]


# -- General Observations --------------------------------------------------------------------

def entry_for(comparison: ComparisonRecord, keys: Iterable[str]) -> MetricComparison | None:
    """The first of `keys` the comparison has with values on both sides."""
    for key in keys:
        entry = comparison.entry(key)
        if entry is not None and entry.has_values:
            return entry
    return None


def headline(study: StudyDocument, comparison: ComparisonRecord) -> MetricComparison | None:
    """The comparison's headline: its first primary metric, else the registry's capacity key."""
    for key in list(study.design.primary_metrics) + list(REGISTRY.role("capacity")):
        entry = comparison.entry(key)
        if entry is not None and (entry.has_values or entry.no_comparison):
            return entry
    return None


def shared_cpus(study: StudyDocument) -> str | None:
    """How the driver and the SUT shared processors, if they did (the runs' records say so)."""
    if not study.design.shared_cpus:
        return None
    return study.design.placement or "driver and SUT on the same CPUs"


def caveats(study: StudyDocument, comparison: ComparisonRecord) -> list[str]:
    """What a reader must know before trusting the headline (never silently dropped)."""
    notes: list[str] = []
    for run in runs_of(study, (comparison.base, comparison.new)):
        if run.excluded:
            why = "; ".join(c.text for c in run.exclusions)
            notes.append(f"run {run.run_id} ({run.config}, block {run.block}) excluded: {why}")
    for keys in (list(study.design.primary_metrics) or REGISTRY.role("capacity"), REGISTRY.role("response"),
                 REGISTRY.role("throughput")):
        entry = entry_for(comparison, keys)
        if entry is None:
            continue
        for warning in entry.warnings:
            text = f"{fmt.label_of(entry.key, entry)}: {warning.text}"
            if text not in notes:
                notes.append(text)
    shared = shared_cpus(study)
    if shared:
        notes.append(f"driver and SUT shared processors: {shared}")
    util = entry_for(comparison, REGISTRY.role("utilization"))
    if util is not None:
        _, r = fmt.changes(util)
        if r is not None and r < -UTIL_CAVEAT:
            label = fmt.label_of(util.key, util)
            notes.append(f"{comparison.new} ran at lower utilization than the base ({label} "
                         f"{fmt.quantity(util.new_value, util.key, util)} against "
                         f"{fmt.quantity(util.base_value, util.key, util)}), which favours its "
                         f"response time; compare processor time per command rather than response time")
    return notes


def observation(study: StudyDocument, comparison: ComparisonRecord) -> dict[str, Any]:
    """One short paragraph per comparison: the primary verdict, response time, ETR, caveats."""
    terms = _terms(study)
    sentences: list[Sentence] = []
    head = headline(study, comparison)
    if head is not None and head.no_comparison:
        sentences.append(Sentence(f"{_cap(name_of(head))}: {head.no_comparison}.", (head.key,), None, "Throughput"))
    elif head is not None:
        sentences.append(Sentence(f"{_cap(name_of(head))} {_change(head, absolute=False)} "
                                  f"{verdict_clause(head, terms, blocks=True)}.", (head.key,), head.verdict,
                                  _group_of(head)))
    else:
        keys = tuple(study.design.primary_metrics) or REGISTRY.role("capacity")
        sentences.append(Sentence(f"{', '.join(REGISTRY.label_of(k) for k in keys)} was not measured (na).", keys))
    for key in REGISTRY.role("response") + REGISTRY.role("throughput"):
        entry = entry_for(comparison, (key,))
        if entry is not None and (head is None or entry.key != head.key):
            sentences.append(metric_sentence(entry, terms))
    harness = harness_sentence(study, comparison, terms)
    if harness is not None:
        sentences.append(harness)
    return {"base": comparison.base, "new": comparison.new, "title": f"{comparison.base} → {comparison.new}",
            "sentences": [s.to_dict() for s in sentences], "caveats": caveats(study, comparison)}


def harness_sentence(study: StudyDocument, comparison: ComparisonRecord, terms: _Terms) -> Sentence | None:
    """Which processor time the verdicts rest on: the SUT's processes include perflab's own worker
    code (its pipe I/O, decoding, wake-ups), which (S) rows carry and SUT/CMD (S) leaves out."""
    share, alone = comparison.entry("harness_pct"), comparison.entry("sut_cmd_s")
    if share is None or fmt.number(share.base_value) is None:
        return None
    primary = ", ".join(REGISTRY.label_of(k) for k in study.design.primary_metrics) or "the primary metrics"
    text = (f"The verdicts use {primary}, whose processor time is that of the SUT's processes, perflab's worker "
            f"included ({fmt.quantity(share.base_value, share.key, share)} of it in the base, "
            f"{fmt.quantity(share.new_value, share.key, share)} in the new configuration)")
    if alone is not None and alone.has_values:
        text += (f"; without it, {name_of(alone)} {_change(alone)} {verdict_clause(alone, terms)}")
    return Sentence(text + ".", ("harness_pct", "sut_cmd_s"), None, "Proc. Usage")


def study_notes(study: StudyDocument) -> list[str]:
    """Study-wide remarks: an interrupted study, the error control, the study's own warnings."""
    notes = [str(note) for note in (study.study or {}).get("notes") or []]
    if study.status != "complete":
        reason = f": {study.reason}" if study.reason else ""
        notes.append(f"The study is {study.status}{reason}; this report covers the runs it completed.")
    if study.verdict is not None and study.comparisons:
        primary = ", ".join(REGISTRY.label_of(k) for k in study.design.primary_metrics) or "none"
        alpha = study.design.alpha
        if alpha is None:  # study.json of perflab 0.1: Holm, and its own wording
            legacy = study.design.family_alpha
            level = "" if legacy is None else f" {100 * legacy:g}%"
            notes.append(f"Primary metric(s): {primary}. Claims of a change (WORSE, BETTER) are held together to a"
                         f"{level} error rate: Holm across the primary metrics of every comparison; secondary rows "
                         f"are tested only when every primary claim stands, otherwise their calls are labelled "
                         f"unadjusted. Answer: {study.verdict.meaning} (exit code {study.verdict.exit_code}).")
        else:
            notes.append(f"Primary metric(s): {primary}. Claims of a change (WORSE, BETTER) are held together to a "
                         f"{100 * alpha:g}% error rate: each primary row's interval is at 1 - alpha/k for the k primary "
                         f"hypotheses of the report, and that printed interval decides its verdict; secondary rows "
                         f"are tested the same way within their own family only when every primary claim stands, "
                         f"otherwise their calls are labelled untested. "
                         f"Answer: {study.verdict.meaning} (exit code {study.verdict.exit_code}).")
    if study.sweep is not None:
        points = study.sweep.points
        values = ", ".join(str(v) for v in study.sweep.values or [p.value for p in points])
        notes.append(f"Sweep over {study.sweep.factor} ({values}): {len(points)} points; the sweep table and "
                     f"chart give each metric against the factor.")
    if study.aa is not None:
        aa = study.aa
        cv = fmt.pct(aa.cv, signed=False, decimals=2)
        notes.append(f"A/A study: the base against itself. Observed CV of {REGISTRY.label_of(aa.metric)} {cv} over "
                     f"{aa.n_blocks} blocks; {aa.false_claims} claim(s) of a change (each one false); "
                     f"{fmt.fixed(aa.blocks_needed, 0)} blocks needed for EQUIVALENT at "
                     f"{fmt.margin(aa.margin)} with 80% probability.")
    hint = duet_hint(study)
    if hint:
        notes.append(hint)
    for warning in study.warnings:
        notes.append(f"Warning: {warning.text}")
    return notes


#: Block-to-block CV of a primary ratio above which runs one after the other are worth running
#: as a duet: about the host's own wander between windows on a VM (docs/noise.md §1).
DUET_HINT_CV = 0.01


def duet_hint(study: StudyDocument) -> str | None:
    """A study run one configuration at a time whose primary verdict is INCONCLUSIVE for noise
    is told what cancels most of it: the duet design (docs/studies.md)."""
    if study.design.duet or study.sweep is not None or len(study.comparisons) != 1:
        return None   # a duet runs exactly two configurations, and no sweep
    primary = set(study.design.primary_metrics)
    noisy = [(cv, m) for c in study.comparisons for m in c.metrics
             if m.key in primary and m.verdict == "INCONCLUSIVE" and (cv := m.cv) is not None and cv > DUET_HINT_CV]
    if not noisy:
        return None
    worst = max(noisy, key=lambda cv_m: cv_m[0])[1]
    return (f"{fmt.label_of(worst.key, worst)} scattered {fmt.pct(worst.cv, signed=False)} from block to block. "
            f"Runs one after the other each meet the host's speed of their own moment; a duet (`duet: true` in the "
            f"study file, or `perflab study --duet`) runs each block's two configurations at the same time on the "
            f"same CPUs, so a slow spell slows both and cancels from their ratio (docs/studies.md, \"Duet\").")


def generate(study: StudyDocument) -> dict[str, Any]:
    """All generated prose of a study, JSON-ready (report.json carries it beside the data)."""
    return {
        "general_observations": [observation(study, c) for c in study.comparisons],
        "study_notes": study_notes(study),
        "discussion": [{"base": c.base, "new": c.new, "sentences": [s.to_dict() for s in discuss(study, c)]}
                       for c in study.comparisons],
    }

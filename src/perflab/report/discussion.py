"""The generated prose of a report: the measurement discussion and the General Observations.

House style is the seeds' (vmesa-methodology.md §4.2): every claim names its row in
parentheses and gives the change both absolutely and relatively ("decreased by 0.290 seconds
(35%)"). perflab adds what the seeds could not give: the confidence interval of the ratio and
the verdict against the stated margin (statistics-and-capacity.md §5.4).

Every number printed here is read from the study dict (through `numbers`); the only arithmetic
is the registry's delta/percent_change when an entry lacks its own change. Nothing is judged by
eye: the words follow the verdict the statistics gave.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Iterable, Mapping

from perflab.report import numbers as fmt
from perflab.reduce.registry import GROUPS

#: Short noun phrases for the rows prose talks about. The registry's descriptions are full
#: definitions ("CPU time of the SUT's processes per command."), too long for a sentence; the
#: seeds' prose used names like "internal throughput (ITR (H))". Keys without a phrase are
#: named by their label alone.
PHRASES = {
    "itr_s": "internal throughput", "itr_h": "internal throughput",
    "itrr_s": "internal throughput ratio", "itrr_h": "internal throughput ratio",
    "etr_t": "external throughput", "etr": "the SUT's own transaction rate",
    "etr_ratio": "the internal/external count ratio",
    "avg_last_t": "external response time", "avg_first_t": "time to first response",
    "resp_p50_t": "median response time", "resp_p90_t": "90th percentile response time",
    "resp_p95_t": "95th percentile response time", "resp_p99_t": "99th percentile response time",
    "avg_service_t": "service time", "service_p90_t": "90th percentile service time",
    "avg_think_t": "think time", "error_pct_t": "the error rate", "errors_t": "errors",
    "pbt_cmd_s": "processor busy time per command", "pbt_cmd_h": "processor busy time per command",
    "cp_cmd_s": "kernel (CP) time per command", "cp_cmd_h": "kernel (CP) time per command",
    "emul_cmd_s": "user (emulation) time per command", "emul_cmd_h": "user (emulation) time per command",
    "instr_cmd_i": "pathlength", "cpi_i": "cycles per instruction",
    "total_s": "processor utilization", "total_h": "processor utilization",
    "util_proc_s": "processor utilization", "util_proc_h": "processor utilization",
    "tvr_s": "the total-to-user time ratio", "tvr_h": "the total-to-user time ratio",
    "driver_cpu": "the driver's CPU use", "wkset_s": "the working set",
    "reads_sec": "page reads per second", "writes_sec": "page writes per second",
    "page_cmd": "paging per command", "minflt_cmd_s": "minor faults per command",
    "vio_rate": "the I/O rate", "vio_cmd": "I/Os per command", "io_bytes_cmd": "device bytes per command",
    "io_bytes_cmd_s": "bytes read and written per command", "syscall_io_cmd_s": "I/O system calls per command",
    "net_bytes_cmd": "network bytes per command",
    "srv_tot_cpu_cmd_v": "component CPU time per command", "srv_cp_cpu_cmd_v": "component kernel time per command",
    "srv_virt_cpu_cmd_v": "component user time per command", "srv_wkset_v": "component working set",
}

#: ITR is 1000 · PROCESSORS / PBT/CMD (metrics.md): the seeds explain an ITR change by the
#: processor time per command that caused it, in one sentence.
CAUSES = {"itr_s": "pbt_cmd_s", "itr_h": "pbt_cmd_h"}
#: The headline of a comparison, in order of preference: the SUT's own ITR is the less noisy.
HEADLINE = ("itr_s", "itr_h")
RESPONSE = "avg_last_t"
THROUGHPUT = "etr_t"
UTILIZATION = ("util_proc_s", "util_proc_h")
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


def name_of(entry: Mapping[str, Any]) -> str:
    """"internal throughput (ITR (S))", or the bare label when there is no phrase."""
    key = entry.get("key")
    label = fmt.label_of(key, entry)
    phrase = PHRASES.get(str(key))
    return f"{phrase} ({label})" if phrase else label


@dataclass(frozen=True)
class _Terms:
    """The comparison-wide words: margin and confidence, as the design states them."""

    margin: Any
    confidence: Any

    def margin_of(self, entry: Mapping[str, Any]) -> str:
        """"the ±3% margin"; just "the margin" when the study does not state it (never a default)."""
        value = entry.get("margin", self.margin)
        return "the margin" if fmt.number(value) is None else f"the {fmt.margin(value)} margin"

    def level_of(self, entry: Mapping[str, Any]) -> str:
        """"90% CI", or plain "CI" when the level is not recorded."""
        value = entry.get("confidence", self.confidence)
        return "CI" if fmt.number(value) is None else f"{fmt.percent_level(value)} CI"


def _terms(study: Mapping[str, Any]) -> _Terms:
    design = study.get("design") or {}
    return _Terms(design.get("margin"), design.get("confidence"))


def _has_values(entry: Mapping[str, Any]) -> bool:
    return fmt.number(entry.get("base_value")) is not None and fmt.number(entry.get("new_value")) is not None


def _direction(entry: Mapping[str, Any]) -> str:
    direction = entry.get("direction")
    if direction is None:
        metric = fmt.metric_of(entry.get("key"))
        direction = metric.direction.value if metric is not None else "none"
    return str(getattr(direction, "value", direction))


def _verb(absolute: float | None, relative: float | None) -> str | None:
    sign = absolute if absolute is not None else relative
    if sign is None or sign == 0:
        return None
    return "increased" if sign > 0 else "decreased"


def _change(entry: Mapping[str, Any], *, absolute: bool = True) -> str:
    """"increased by 0.051 ms (5.0%)" / "decreased by 5.3%" / "did not change"."""
    a, r = fmt.changes(entry)
    verb = _verb(a, r)
    if verb is None:
        return "did not change"
    rel = fmt.pct(r, signed=False)
    if absolute and a is not None:
        return f"{verb} by {fmt.magnitude(a, entry.get('key'), entry)} ({rel})"
    return f"{verb} by {rel}"


def _interval(entry: Mapping[str, Any], terms: _Terms, blocks: bool = False) -> str:
    low, high = entry.get("ci_low"), entry.get("ci_high")
    if fmt.number(low) is None or fmt.number(high) is None:
        return "[no interval]"
    extra = ""
    if blocks and fmt.number(entry.get("n_blocks")) is not None:
        extra = f", {int(entry['n_blocks'])} blocks"
    return f"[{terms.level_of(entry)} {fmt.ci_pct(low, high)}{extra}]"


def verdict_clause(entry: Mapping[str, Any], terms: _Terms, *, blocks: bool = False) -> str:
    """The interval and what it means: "[90% CI 4.1% to 6.5%]: BETTER"."""
    verdict = entry.get("verdict")
    margin = terms.margin_of(entry)
    interval = _interval(entry, terms, blocks)
    warnings = [str(w) for w in entry.get("warnings") or []]
    if verdict in ("BETTER", "WORSE"):
        tail = f", by more than {margin}" if entry.get("material") else ""
        return f"{interval}: {verdict}{tail}"
    if verdict == "EQUIVALENT":
        low, high = fmt.number(entry.get("ci_low")), fmt.number(entry.get("ci_high"))
        detectable = low is not None and high is not None and (low > 1.0 or high < 1.0)
        tail = " (a detectable change, smaller than the margin)" if detectable else ""
        return f"{interval}: EQUIVALENT, within {margin}{tail}"
    if verdict == "INCONCLUSIVE":
        return f"{interval}: INCONCLUSIVE; {_noise(entry, margin, warnings)}"
    reason = warnings[0] if warnings else "no interval"
    return f"(no verdict: {reason})"


def _noise(entry: Mapping[str, Any], margin: str, warnings: list[str]) -> str:
    needed, cv, n = fmt.number(entry.get("blocks_needed")), fmt.number(entry.get("cv")), fmt.number(entry.get("n_blocks"))
    if needed is not None and cv is not None:
        measured = f" ({int(n)} measured)" if n is not None else ""
        return (f"at the observed CV of {fmt.pct(cv, signed=False)} the noise calls for at least "
                f"{int(needed)} blocks{measured}")
    if fmt.number(entry.get("ci_low")) is not None:
        return f"the interval includes both no change and changes beyond {margin}"
    return warnings[0] if warnings else "no interval could be computed"


def metric_sentence(entry: Mapping[str, Any], terms: _Terms) -> Sentence:
    """One row, in the house style: name (row) change (absolute, relative) interval: verdict."""
    key = str(entry.get("key"))
    group = _group_of(entry)
    if _direction(entry) not in ("higher", "lower"):
        base, new = (fmt.quantity(entry.get(k), key, entry) for k in ("base_value", "new_value"))
        _, r = fmt.changes(entry)
        text = f"{_cap(name_of(entry))} was {base} for the base and {new} for the new configuration ({fmt.pct(r)})."
        return Sentence(text, (key,), None, group)
    text = f"{_cap(name_of(entry))} {_change(entry)} {verdict_clause(entry, terms)}."
    return Sentence(text, (key,), entry.get("verdict"), group)


def linked_sentence(cause: Mapping[str, Any], itr: Mapping[str, Any], terms: _Terms) -> Sentence | None:
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
    return Sentence(text, (str(cause.get("key")), str(itr.get("key"))), itr.get("verdict"), "Throughput")


def _group_of(entry: Mapping[str, Any]) -> str:
    if entry.get("group"):
        return str(entry["group"])
    metric = fmt.metric_of(entry.get("key"))
    return metric.group if metric is not None else ""


def _group_rank(group: str) -> int:
    if group in ORDER:
        return ORDER.index(group)
    if group in GROUPS:
        return len(ORDER) + GROUPS.index(group)
    return len(ORDER) + len(GROUPS)


# -- the measurement discussion ------------------------------------------------------------------

def _load_text(study: Mapping[str, Any]) -> str:
    load = (study.get("design") or {}).get("load") or {}
    users, rate = load.get("users"), load.get("rate")
    if users is not None:
        text = f"{users} users"
    elif rate is not None:
        text = f"an arrival rate of {rate}/s"
    else:
        return ""
    if load.get("mode") == "calibrated" and load.get("target_util") is not None:
        text += f" (calibrated on the base to {fmt.fixed(load['target_util'], 0)}% utilization)"
    return text


def runs_of(study: Mapping[str, Any], configs: Iterable[str]) -> list[Mapping[str, Any]]:
    wanted = set(configs)
    return [r for r in study.get("runs") or [] if r.get("config") in wanted]


def is_excluded(run: Mapping[str, Any]) -> bool:
    return bool(run.get("excluded")) or run.get("valid") is False


def opening(study: Mapping[str, Any], comparison: Mapping[str, Any]) -> Sentence:
    """What was run: the seeds' discussions begin with it."""
    base, new = comparison.get("base"), comparison.get("new")
    runs = runs_of(study, (base, new))
    valid = [r for r in runs if not is_excluded(r)]
    blocks = (study.get("design") or {}).get("blocks")
    parts = [f"{new} was measured against the base {base}"]
    if blocks is not None:
        parts.append(f"in {blocks} interleaved blocks")
    load = _load_text(study)
    if load:
        parts.append(f"at {load}")
    text = " ".join(parts) + f"; {len(valid)} of {len(runs)} runs were valid."
    return Sentence(text, (), None, "")


def discuss(study: Mapping[str, Any], comparison: Mapping[str, Any]) -> list[Sentence]:
    """The measurement discussion of one comparison, headline first, then row group by group."""
    terms = _terms(study)
    entries = [e for e in comparison.get("metrics") or [] if e.get("key")]
    by_key = {str(e["key"]): e for e in entries}
    sentences = [opening(study, comparison)]
    used: set[str] = set()
    missing: list[str] = []
    # Each ITR with the processor time per command that explains it.
    for itr_key in HEADLINE:
        itr, cause = by_key.get(itr_key), by_key.get(CAUSES[itr_key])
        if itr is None or not _has_values(itr):
            continue
        linked = linked_sentence(cause, itr, terms) if cause is not None and _has_values(cause) else None
        if linked is not None:
            sentences.append(linked)
            used.update(linked.keys)
    rest = sorted((e for e in entries if str(e["key"]) not in used),
                  key=lambda e: (_group_rank(_group_of(e)), entries.index(e)))
    for entry in rest:
        if not _has_values(entry):
            missing.append(fmt.label_of(entry.get("key"), entry))
            continue
        sentences.append(metric_sentence(entry, terms))
    if missing:
        sentences.append(Sentence(f"Not measured in one or both configurations (na): {', '.join(missing)}.",
                                  tuple(str(e["key"]) for e in entries if not _has_values(e)), None, "na"))
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

def _entry(comparison: Mapping[str, Any], keys: Iterable[str]) -> Mapping[str, Any] | None:
    by_key = {e.get("key"): e for e in comparison.get("metrics") or []}
    for key in keys:
        entry = by_key.get(key)
        if entry is not None and _has_values(entry):
            return entry
    return None


def shared_cpus(study: Mapping[str, Any], configs: Iterable[str]) -> str | None:
    """How the driver and the SUT shared processors, if they did (the placement says so)."""
    wanted = set(configs)
    texts = [(study.get("design") or {}).get("placement")]
    for conf in study.get("configurations") or []:
        if conf.get("name") in wanted:
            hardware = conf.get("hardware") or {}
            texts.append(hardware.get("placement"))
            if hardware.get("shared_cpus"):
                return str(texts[-1] or "driver and SUT on the same CPUs")
    for text in texts:
        if text and "shared" in str(text).lower():
            return str(text)
    return None


def caveats(study: Mapping[str, Any], comparison: Mapping[str, Any]) -> list[str]:
    """What a reader must know before trusting the headline (never silently dropped)."""
    base, new = comparison.get("base"), comparison.get("new")
    notes: list[str] = []
    for run in runs_of(study, (base, new)):
        if is_excluded(run):
            reasons = run.get("exclusion_reasons") or run.get("invalid_reasons") or []
            why = "; ".join(str(r) for r in reasons) or str(run.get("reason") or "no reason recorded")
            notes.append(f"run {run.get('run_id')} ({run.get('config')}, block {run.get('block')}) excluded: {why}")
    for keys in (HEADLINE, (RESPONSE,), (THROUGHPUT,)):
        entry = _entry(comparison, keys)
        for warning in (entry or {}).get("warnings") or []:
            text = f"{fmt.label_of(entry.get('key'), entry)}: {warning}"
            if text not in notes:
                notes.append(text)
    shared = shared_cpus(study, (base, new))
    if shared:
        notes.append(f"driver and SUT shared processors: {shared}")
    util = _entry(comparison, UTILIZATION)
    if util is not None:
        _, r = fmt.changes(util)
        if r is not None and r < -UTIL_CAVEAT:
            label = fmt.label_of(util.get("key"), util)
            notes.append(f"{new} ran at lower utilization than the base ({label} "
                         f"{fmt.quantity(util.get('new_value'), util.get('key'), util)} against "
                         f"{fmt.quantity(util.get('base_value'), util.get('key'), util)}), which favours its "
                         f"response time; compare processor time per command rather than response time")
    return notes


def observation(study: Mapping[str, Any], comparison: Mapping[str, Any]) -> dict[str, Any]:
    """One short paragraph per comparison: ITR verdict, response time, ETR, caveats."""
    terms = _terms(study)
    sentences: list[Sentence] = []
    itr = _entry(comparison, HEADLINE)
    if itr is not None:
        sentences.append(Sentence(f"{_cap(name_of(itr))} {_change(itr, absolute=False)} "
                                  f"{verdict_clause(itr, terms, blocks=True)}.", (str(itr['key']),),
                                  itr.get("verdict"), "Throughput"))
    else:
        sentences.append(Sentence("Internal throughput (ITR (S), ITR (H)) was not measured (na).", HEADLINE))
    for key in (RESPONSE, THROUGHPUT):
        entry = _entry(comparison, (key,))
        if entry is not None:
            sentences.append(metric_sentence(entry, terms))
    return {"base": comparison.get("base"), "new": comparison.get("new"),
            "title": f"{comparison.get('base')} → {comparison.get('new')}",
            "sentences": [s.to_dict() for s in sentences], "caveats": caveats(study, comparison)}


def study_notes(study: Mapping[str, Any]) -> list[str]:
    """Study-wide remarks: an interrupted study, the study's own warnings, a sweep."""
    notes = []
    status = study.get("status")
    if status and status != "complete":
        reason = f": {study['reason']}" if study.get("reason") else ""
        notes.append(f"The study is {status}{reason}; this report covers the runs it completed.")
    sweep = study.get("sweep")
    if sweep:
        points = sweep.get("points") or []
        values = ", ".join(str(v) for v in sweep.get("values") or [p.get("value") for p in points])
        notes.append(f"Sweep over {sweep.get('factor')} ({values}): {len(points)} points; the sweep table and "
                     f"chart give each metric against the factor.")
    for warning in study.get("warnings") or []:
        notes.append(f"Warning: {warning}")
    return notes


def generate(study: Mapping[str, Any]) -> dict[str, Any]:
    """All generated prose of a study, JSON-ready (report.json carries it beside the data)."""
    comparisons = study.get("comparisons") or []
    return {
        "general_observations": [observation(study, c) for c in comparisons],
        "study_notes": study_notes(study),
        "discussion": [{"base": c.get("base"), "new": c.get("new"),
                        "sentences": [s.to_dict() for s in discuss(study, c)]} for c in comparisons],
    }

"""Run groups for `perflab compare`: which stored runs stand for A and which for B, judged by
the same rule as a study's.

A group is a comma-separated list of run references (ids, unique prefixes, paths), or
`label:NAME` (every run with that label), or `study:ID:CONFIG` (that configuration's runs in a
stored study). The result is a study document (kind "compare"), so the same reports apply.

Validity (perflab.study.validity): a run that belongs to a stored study keeps the decision the
study stored, however it is named -- by id, by label or as `study:ID:CONFIG` -- so `perflab
compare` of a study's runs gives the study's own verdicts, n and exit code (the study's
exclusions, criteria, arrangement and family of comparisons); any other run is judged with the
gates that apply to a single run (no utilization band: that needs a calibration target). A run
that cannot be read as a finished run (killed, still running) is kept as excluded, with the
reason, instead of refusing the group.

Pairing: by (study, block) when every run of both groups carries one and the groups share at
least MIN_BLOCKS of them. Otherwise the runs are not paired at all: Welch's interval on the
log values of the two groups, which does not cancel drift between runs, and the document says
so (pairing by order would invent blocks that were never run together).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import cast

from perflab import caveats as cav
from perflab.errors import InputError
from perflab.records.fingerprint import identity
from perflab.records.run import read_run_record
from perflab.records.study import Arrangement, Design, LoadRecord, StudyDocument, StudyRun, read_study_document
from perflab.reduce.function_diff import study_diffs
from perflab.reduce.profile_diff import profile_diffs
from perflab.reduce.reduce import RunMetrics, reduce_run
from perflab.reduce.window import Window
from perflab.stats.criteria import Criteria
from perflab.stats.verdict import MIN_BLOCKS
from perflab.store.catalog import Store, is_plain_name, shown_status
from perflab.study.compare import SOLO, default_primary, judge_all
from perflab.study.document import (
    StudyDocumentBuilder,
    gate_settings,
    new_configurations,
    now_iso,
    stored_criteria,
    workload_summary,
)
from perflab.study.validity import GateResult, GateSettings, RunValidity


@dataclass
class Group:
    name: str
    dirs: list[Path]
    study: StudyDocument | None = None   # set for study:ID:CONFIG
    config: str | None = None


@dataclass(frozen=True)
class GroupRef:
    """A run group as `perflab compare` and the dashboard's compare page name it, parsed once:
    `label:NAME`, `study:ID:CONFIG`, or run references (ids, unique prefixes, paths)."""

    text: str                       # the reference, its run list stripped of blanks
    label: str | None = None
    study: str | None = None
    config: str | None = None
    runs: tuple[str, ...] = ()


def parse_group(ref: str, which: str) -> GroupRef:
    """The reference `ref` given for group `which` ("A", "B"); InputError naming it when it is
    not one."""
    if ref.startswith("label:"):
        if not ref[len("label:"):]:
            raise InputError("expected label:NAME", field=which)
        return GroupRef(ref, label=ref[len("label:"):])
    if ref.startswith("study:"):
        parts = ref.split(":", 2)
        if len(parts) < 3 or not parts[1] or not parts[2]:
            raise InputError(f"expected study:ID:CONFIG, got {ref!r}", field=which)
        return GroupRef(ref, study=parts[1], config=parts[2])
    runs = tuple(p.strip() for p in ref.split(",") if p.strip())
    if not runs:
        raise InputError("no run given", field=which)
    return GroupRef(",".join(runs), runs=runs)


def _study(store: Store, ref: GroupRef, which: str) -> tuple[StudyDocument, str]:
    study_id, config = str(ref.study), str(ref.config)
    path = store.home / "studies" / study_id / "study.json"
    if not is_plain_name(study_id) or not path.is_file():
        raise InputError(f"no study {study_id!r} in {store.home / 'studies'}", field=which)
    doc = read_study_document(path)
    if doc.configuration(config) is None:
        names = [c.name for c in doc.configurations]
        raise InputError(f"study {study_id} has no configuration {config!r}; it has {names}", field=which)
    return doc, config


def resolve_group(store: Store, ref: str, which: str) -> Group:
    parsed = parse_group(ref, which)
    if parsed.label is not None:
        rows = [r for r in reversed(store.rows()) if r.label == parsed.label and r.shown_status != "running"]
        group = Group(parsed.label, [Path(r.path) for r in rows])
    elif parsed.study is not None:
        doc, config = _study(store, parsed, which)
        group = Group(config, [store.run_dir(r.run_id) for r in doc.runs_of(config)], doc, config)
    else:
        name = ref if len(ref) <= 40 else ref[:37] + "..."
        group = Group(name, [store.resolve(p) for p in parsed.runs])
    if not group.dirs:
        raise InputError(f"no runs found for {ref!r}", field=which)
    return group


def _judged(run_dir: Path, config: str, index: int, builder: StudyDocumentBuilder, is_base: bool) -> StudyRun:
    record = read_run_record(run_dir)
    try:
        metrics = reduce_run(run_dir)
    except InputError as exc:
        # A run killed or still running has no window: kept, excluded, with the reason.
        status = shown_status(record.status, record.pid)
        metrics = RunMetrics(record.run_id, record.status, Window(0.0, 0.0), {}, record=record)
        validity = RunValidity([GateResult("completed", "fail", caveat=cav.run_not_complete(status, exc.message))])
        return builder.add_run(record, metrics, config, record.config.block, index, is_base, validity)
    return builder.add_run(record, metrics, config, record.config.block, index, is_base)


def _stored(run: StudyRun, config: str) -> StudyRun:
    return run.model_copy(update={"config": config}, deep=True)


def pair_by_block(runs: list[StudyRun], studies: dict[str, str | None], names: tuple[str, str]) -> str | None:
    """Give each run a block number both groups agree on; returns a note when the runs cannot be
    paired (the comparison is then unpaired, Welch)."""
    keys = {}
    for run in runs:
        keys[run.run_id] = None if run.block is None else (studies.get(run.run_id), run.block)
    by_group = {n: [keys[r.run_id] for r in runs if r.config == n] for n in names}
    complete = all(k is not None for ks in by_group.values() for k in ks)
    unique = all(len(set(ks)) == len(ks) for ks in by_group.values())
    shared = set(by_group[names[0]]) & set(by_group[names[1]]) if complete else set()
    if complete and unique and len(shared) >= MIN_BLOCKS:
        numbering = {key: i for i, key in enumerate(sorted(shared | set(by_group[names[0]]) | set(by_group[names[1]]),
                                                           key=repr))}
        for run in runs:
            run.block = numbering[keys[run.run_id]]
        return None
    for run in runs:
        run.block = None
    unpaired = ("the runs are compared unpaired (Welch's interval on their log values), which does not cancel "
                "drift between runs")
    if not complete:
        return f"some runs belong to no study block: {unpaired}"
    if not unique:
        return f"a group holds runs of the same block of different studies: {unpaired}"
    return f"the groups share {len(shared)} study block(s) (need ≥ {MIN_BLOCKS} to pair by block): {unpaired}"


def _stored_study(store: Store, study_id: str | None, cache: dict[str, StudyDocument | None]) -> \
        StudyDocument | None:
    """The study a run belongs to, if it is in the store (read once per study)."""
    if study_id is None or not is_plain_name(study_id):
        return None
    if study_id not in cache:
        path = store.home / "studies" / study_id / "study.json"
        try:
            cache[study_id] = read_study_document(path) if path.is_file() else None
        except InputError:
            cache[study_id] = None
    return cache[study_id]


def _pair_arrangement(records: list) -> str | None:
    """The one arrangement every pair run of these records ran in (None: none, or several)."""
    kinds = {r.config.arrangement or "duet" for r in records if r.config.duet is not None}
    return next(iter(kinds)) if len(kinds) == 1 else None


def _bias_of(store: Store, arrangement: str, record):
    from perflab.study.arrangement import measured_bias

    kind = (record.workload.get("target") or {}).get("kind") or "unknown"
    return measured_bias(arrangement, str(kind), store.home, record.fingerprint)


def pair_design(store: Store, records: list):
    """What a comparison of runs from several studies may say when some ran as pairs (a duet's,
    by each run's own `duet` record): the pair's rules -- machine-wide rows belong to the pair,
    response rows are descriptive, the intervals bounded by the runs' host's bias bound for the
    arrangement -- instead of a solo study's. -> (design traits, a note), (None, None) for solo
    runs."""
    from perflab.study.arrangement import traits

    paired = [r for r in records if r.config.duet is not None]
    if not paired:
        return None, None
    arrangement = _pair_arrangement(records)
    if arrangement is None:
        return traits("duet", None), ("the runs ran as pairs of different arrangements (duet and split duet): their "
                                      "machine-wide rows have no verdict, and no bias bound applies")
    note = (f"the runs ran as pairs ({arrangement}) in their studies: the pair's rules apply -- machine-wide rows are "
            f"the pair's, response times descriptive" + ("" if len(paired) == len(records) else
                                                           "; some runs ran alone, so the groups mix arrangements"))
    return traits(arrangement, _bias_of(store, arrangement, paired[0])), note


def comparison_document(store: Store, a: str, b: str, criteria: Criteria | None = None,
                        metrics: list[str] | None = None, primary: list[str] | None = None) -> StudyDocument:
    """The study document of a comparison of stored runs. `criteria`, `metrics`, `primary`: None
    takes the study's own when every run comes from one study, else the defaults."""
    from perflab.catalog.registry import REGISTRY
    from perflab.study.arrangement import traits

    group_a, group_b = resolve_group(store, a, "A"), resolve_group(store, b, "B")
    name_a, name_b = group_a.name, group_b.name
    if name_a == name_b:
        name_a, name_b = f"A: {name_a}", f"B: {name_b}"
    if set(group_a.dirs) & set(group_b.dirs):
        raise InputError("A and B share runs; a comparison needs two different groups", field="A/B")
    records = {d: read_run_record(d) for d in group_a.dirs + group_b.dirs}
    studies: dict[str, StudyDocument | None] = {}
    owners = {d: _stored_study(store, r.study, studies) for d, r in records.items()}
    stored_runs = {d: next((x for x in doc.runs if x.run_id == records[d].run_id), None) if doc is not None else None
                   for d, doc in owners.items()}
    ids = {doc.study_id for d, doc in owners.items() if doc is not None and stored_runs[d] is not None}
    source = owners[group_a.dirs[0]] if len(ids) == 1 and all(stored_runs[d] is not None for d in owners) else None
    if source is not None:
        criteria = criteria or stored_criteria(source.design)
        primary = primary or source.design.primary_metrics or default_primary()
        gates = gate_settings(source.design)
        arrangement = source.design.arrangement or ("duet" if source.design.duet else "one-at-a-time")
        design = traits(arrangement, source.design.bias)
    else:
        criteria, primary, gates = criteria or Criteria(), primary or default_primary(), GateSettings()
        design, pair_note = pair_design(store, list(records.values()))
    keys = metrics or ((source.study or {}).get("metrics") if source is not None else None) or list(
        REGISTRY.role("compared"))
    doc = StudyDocument(kind="compare", name=f"compare {name_a} vs {name_b}", title=f"{name_a} -> {name_b}",
                        status="complete", created=now_iso(),
                        design=Design(load=LoadRecord(mode="stored runs")),
                        configurations=new_configurations([(name_a, {}), (name_b, {})]))
    builder = StudyDocumentBuilder(doc, gates, criteria, primary, keys, design if design is not None else SOLO)
    if source is not None:
        doc.design.arrangement, doc.design.duet, doc.design.bias = (source.design.arrangement, source.design.duet,
                                                                    source.design.bias)
    elif design is not None:
        first_record = next(iter(records.values()))
        pair_arrangement = _pair_arrangement(list(records.values())) or "duet"
        doc.design.arrangement, doc.design.duet = cast(Arrangement, pair_arrangement), True
        doc.design.bias = _bias_of(store, pair_arrangement, first_record)
        if pair_note:
            builder.warn(cav.note(cav.Code.PAIR_RULES, pair_note))
    study_of: dict[str, str | None] = {}
    for group, name in ((group_a, name_a), (group_b, name_b)):
        for index, run_dir in enumerate(group.dirs):
            record = records[run_dir]
            study_of[record.run_id] = record.study
            stored = stored_runs[run_dir]
            if stored is not None:
                # The study's own decision: its gates, its pooled steadiness, its pair checks
                # (re-derivable with perflab.study.validity and the study's stored gates).
                doc.runs.append(_stored(stored, name))
                conf, owner = doc.configuration(name), owners[run_dir]
                assert conf is not None and owner is not None  # the document's two; the study a stored run is from
                source_conf = owner.configuration(stored.config)
                if not conf.software and source_conf is not None:
                    conf.hardware, conf.software = dict(source_conf.hardware), dict(source_conf.software)
                    conf.changes = dict(source_conf.changes)
            else:
                _judged(run_dir, name, index, builder, is_base=False)
    note = pair_by_block(doc.runs, study_of, (name_a, name_b))
    if note:
        builder.warn(cav.note(cav.Code.UNPAIRED, note))
        builder.paired = False
    first = records[group_a.dirs[0]]
    doc.workload = workload_summary(first.workload, first.workload_path,
                                    {"stagger": first.config.stagger_s, "stabilization": first.config.stabilization_s,
                                     "measurement": first.config.measurement_s})
    doc.design.blocks = max(len(group_a.dirs), len(group_b.dirs))
    doc.design.schedule = [(r.block, r.config) for r in doc.runs]
    doc.design.placement = first.fingerprint.get("placement")
    doc.design.shared_cpus = any(r.config.shared_cpus for r in records.values())
    identities = {tuple(r.fingerprint.get(k) for k in identity("machine")) for r in records.values()}
    if len(identities) > 1:
        builder.warn(cav.note(cav.Code.DIFFERENT_MACHINES,
                              "the runs come from different machines or kernels (fingerprints differ): the comparison "
                              "mixes hardware with software"))
    configs_a = {run.config for d in group_a.dirs if (run := stored_runs[d]) is not None}
    configs_b = {run.config for d in group_b.dirs if (run := stored_runs[d]) is not None}
    if source is not None and len(configs_a) == 1 and len(configs_b) == 1 and source.configurations \
            and source.configurations[0].name in configs_a and configs_b <= {c.name for c in source.configurations[1:]}:
        # The study's family of comparisons, so the error control sees what the study saw -- with
        # the two named groups' runs only: a subset of a configuration's runs is that subset.
        config_a, config_b = next(iter(configs_a)), next(iter(configs_b))
        named = {r.run_id for r in doc.runs}
        renamed = [_stored(r, r.config) for r in source.runs
                   if r.config not in (config_a, config_b) or r.run_id in named]
        pairs = [(source.configurations[0].name, c.name) for c in source.configurations[1:]]
        comparisons, _ = judge_all(renamed, pairs, keys, primary, criteria, builder.design)
        chosen = next(c for c in comparisons if c.new == config_b)
        chosen.base, chosen.new = name_a, name_b
        from perflab.study.compare import study_verdict

        doc.comparisons, doc.verdict = [chosen], study_verdict([chosen], primary)
    else:
        builder.judge([(name_a, name_b)])
    doc.pathlength_diffs = study_diffs(doc, store.run_dir)   # where the pathlength went
    doc.profile_diffs = profile_diffs(doc, store.run_dir)   # where the CPU went, sampled
    return doc

"""Run groups for `perflab compare`: which stored runs stand for A and which for B, judged by
the same rule as a study's.

A group is a comma-separated list of run references (ids, unique prefixes, paths), or
`label:NAME` (every run with that label), or `study:ID:CONFIG` (that configuration's runs in a
stored study). The result is a study document (kind "compare"), so the same reports apply.

Validity (perflab.study.validity): runs of a study keep the decision the study stored --
`compare study:ID:A study:ID:B` gives the study's own verdicts and exit code, because it uses
the study's exclusions, criteria and family of comparisons; any other run is judged with the
gates that apply to a single run (no utilization band: that needs a calibration target).
A run that cannot be read as a finished run (killed, still running) is kept as excluded, with
the reason, instead of refusing the group.

Pairing: by (study, block) when every run of both groups carries one and the groups share at
least MIN_BLOCKS of them; otherwise by order within each group, and the document says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from perflab import caveats as cav
from perflab.errors import InputError
from perflab.records.run import read_run_record
from perflab.records.study import Design, LoadRecord, StudyDocument, StudyRun, read_study_document
from perflab.reduce.reduce import RunMetrics, reduce_run
from perflab.reduce.window import Window
from perflab.stats.criteria import Criteria
from perflab.stats.verdict import MIN_BLOCKS
from perflab.store.catalog import Store, is_plain_name
from perflab.study.compare import default_primary, judge_all
from perflab.study.document import StudyDocumentBuilder, gate_settings, new_configurations, now_iso, \
    workload_summary
from perflab.study.validity import GateSettings, RunValidity


@dataclass
class Group:
    name: str
    dirs: list[Path]
    study: StudyDocument | None = None   # set for study:ID:CONFIG
    config: str | None = None


def _study(store: Store, ref: str, which: str) -> tuple[StudyDocument, str]:
    parts = ref.split(":", 2)
    if len(parts) < 3 or not parts[1] or not parts[2]:
        raise InputError(f"expected study:ID:CONFIG, got {ref!r}", field=which)
    path = store.home / "studies" / parts[1] / "study.json"
    if not is_plain_name(parts[1]) or not path.is_file():
        raise InputError(f"no study {parts[1]!r} in {store.home / 'studies'}", field=which)
    doc = read_study_document(path)
    if doc.configuration(parts[2]) is None:
        names = [c.name for c in doc.configurations]
        raise InputError(f"study {parts[1]} has no configuration {parts[2]!r}; it has {names}", field=which)
    return doc, parts[2]


def resolve_group(store: Store, ref: str, which: str) -> Group:
    if ref.startswith("label:"):
        label = ref[len("label:"):]
        rows = [r for r in reversed(store.rows()) if r.label == label and r.shown_status != "running"]
        group = Group(label, [Path(r.path) for r in rows])
    elif ref.startswith("study:"):
        doc, config = _study(store, ref, which)
        group = Group(config, [store.run_dir(r.run_id) for r in doc.runs_of(config)], doc, config)
    else:
        parts = [p.strip() for p in ref.split(",") if p.strip()]
        name = ref if len(ref) <= 40 else ref[:37] + "..."
        group = Group(name, [store.resolve(p) for p in parts])
    if not group.dirs:
        raise InputError(f"no runs found for {ref!r}", field=which)
    return group


def _judged(run_dir: Path, config: str, index: int, builder: StudyDocumentBuilder, is_base: bool) -> StudyRun:
    record = read_run_record(run_dir)
    try:
        metrics = reduce_run(run_dir)
    except InputError as exc:
        # A run killed or still running has no window: kept, excluded, with the reason.
        status = "abandoned" if record.status == "running" else record.status
        metrics = RunMetrics(record.run_id, record.status, Window(0.0, 0.0), {}, record=record)
        validity = RunValidity(exclusions=[cav.run_not_complete(status, exc.message)])
        return builder.add_run(record, metrics, config, record.config.block, index, is_base, validity)
    return builder.add_run(record, metrics, config, record.config.block, index, is_base)


def _stored(run: StudyRun, config: str) -> StudyRun:
    return run.model_copy(update={"config": config}, deep=True)


def pair_by_block(runs: list[StudyRun], studies: dict[str, str | None], names: tuple[str, str]) -> str | None:
    """Give each run a block number both groups agree on; returns a note when pairing by order."""
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
    for name in names:
        for i, run in enumerate(r for r in runs if r.config == name):
            run.block = i
    if not complete:
        return "some runs belong to no study block: runs are paired by their order in each group"
    if not unique:
        return ("a group holds runs of the same block of different studies: runs are paired by their order in "
                "each group, not by block")
    return (f"the groups share {len(shared)} study block(s) (need ≥ {MIN_BLOCKS}): runs are paired by their order "
            "in each group")


def comparison_document(store: Store, a: str, b: str, criteria: Criteria | None = None,
                        metrics: list[str] | None = None, primary: list[str] | None = None) -> StudyDocument:
    """The study document of a comparison of stored runs. `criteria`, `metrics`, `primary`: None
    takes the study's own when both groups come from one study, else the defaults."""
    group_a, group_b = resolve_group(store, a, "A"), resolve_group(store, b, "B")
    name_a, name_b = group_a.name, group_b.name
    if name_a == name_b:
        name_a, name_b = f"A: {name_a}", f"B: {name_b}"
    if set(group_a.dirs) & set(group_b.dirs):
        raise InputError("A and B share runs; a comparison needs two different groups", field="A/B")
    one_study = group_a.study is not None and group_b.study is not None and \
        group_a.study.study_id == group_b.study.study_id
    source = group_a.study if one_study else None
    if source is not None:
        criteria = criteria or Criteria(source.design.margin or 0.03, source.design.confidence or 0.90,
                                        source.design.family_alpha or 0.05)
        primary = primary or source.design.primary_metrics or default_primary()
        gates = gate_settings(source.design)
    else:
        criteria, primary, gates = criteria or Criteria(), primary or default_primary(), GateSettings()
    from perflab.catalog.registry import REGISTRY

    keys = metrics or ((source.study or {}).get("metrics") if source is not None else None) or list(
        REGISTRY.role("compared"))
    doc = StudyDocument(kind="compare", name=f"compare {name_a} vs {name_b}", title=f"{name_a} -> {name_b}",
                        status="complete", created=now_iso(),
                        design=Design(load=LoadRecord(mode="stored runs")),
                        configurations=new_configurations([(name_a, {}), (name_b, {})]))
    builder = StudyDocumentBuilder(doc, gates, criteria, primary, keys)
    studies: dict[str, str | None] = {}
    for group, name in ((group_a, name_a), (group_b, name_b)):
        stored = {r.run_id: r for r in group.study.runs_of(group.config)} if group.study is not None else {}
        for index, run_dir in enumerate(group.dirs):
            record = read_run_record(run_dir)
            studies[record.run_id] = record.study
            if record.run_id in stored:
                # The study's own decision: same gates, same exclusions (re-derivable with
                # perflab.study.validity.judge_run and the study's stored gates).
                run = _stored(stored[record.run_id], name)
                doc.runs.append(run)
                conf = doc.configuration(name)
                if not conf.software:
                    source_conf = group.study.configuration(group.config)
                    conf.hardware, conf.software = dict(source_conf.hardware), dict(source_conf.software)
                    conf.changes = dict(source_conf.changes)
            else:
                _judged(run_dir, name, index, builder, is_base=False)
    note = pair_by_block(doc.runs, studies, (name_a, name_b))
    if note:
        builder.warn(cav.note(note))
    first = read_run_record(group_a.dirs[0])
    doc.workload = workload_summary(first.workload, first.workload_path,
                                    {"stagger": first.config.stagger_s, "stabilization": first.config.stabilization_s,
                                     "measurement": first.config.measurement_s})
    doc.design.blocks = max(len(group_a.dirs), len(group_b.dirs))
    doc.design.schedule = [(r.block, r.config) for r in doc.runs]
    doc.design.placement = first.fingerprint.get("placement")
    identities = {tuple(read_run_record(d).fingerprint.get(k) for k in ("cpu_model", "cores", "memory_bytes", "kernel"))
                  for d in group_a.dirs + group_b.dirs}
    if len(identities) > 1:
        builder.warn(cav.note("the runs come from different machines or kernels (fingerprints differ): the comparison "
                              "mixes hardware with software"))
    if one_study and source.configurations and source.configurations[0].name == group_a.config and \
            group_b.config in [c.name for c in source.configurations[1:]]:
        # The study's family of comparisons, so Holm sees what the study saw.
        renamed = [_stored(r, r.config) for r in source.runs]
        pairs = [(source.configurations[0].name, c.name) for c in source.configurations[1:]]
        comparisons, _ = judge_all(renamed, pairs, keys, primary, criteria)
        chosen = next(c for c in comparisons if c.new == group_b.config)
        chosen.base, chosen.new = name_a, name_b
        from perflab.study.compare import study_verdict

        doc.comparisons, doc.verdict = [chosen], study_verdict([chosen], primary)
    else:
        doc.comparisons, doc.verdict = judge_all(doc.runs, [(name_a, name_b)], keys, primary, criteria)
    return doc

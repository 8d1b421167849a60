"""A suite: one release change measured under several workloads, averaged (the LSPR's shape).

The z/OS LSPR table states a release's ITR change once per workload (OLTP, web, batch ...) and
then their average; VM/ESA's report measures one change through chapters of workloads. A
suite file names one study per workload; every one must compare the same two configurations
(one change). perflab runs them one after another -- each a complete study of its own, kept in
the store's studies/ with its own report -- and writes suite.json: each workload's rows for the
averaged metrics and, under them, the Average with its interval and verdict
(perflab.stats.across_workloads).

    name: sqlite-release-workloads
    studies:
      - {name: OLTP, study: oltp-study.yaml}
      - {name: Read-mostly, study: read-mostly-study.yaml}
      - {name: Batch, study: report-jobs-study.yaml}
    metrics: [itr_s, pbt_cmd_s]     # averaged; the first decides --gate (default: itr_s)
    margin: 0.03
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import Field

from perflab.catalog.registry import REGISTRY
from perflab.errors import EXIT_INTERRUPTED, EXIT_NO_COMPARISON, EXIT_OK, InputError, repeated
from perflab.records.study import MetricComparison, StudyDocument, StudyVerdict
from perflab.records.suite import AverageRow, SuiteDocument, SuiteMember
from perflab.stats.across_workloads import MemberRatio, average_ratio
from perflab.stats.criteria import DEFAULT_MARGIN
from perflab.store.atomic import write_json_atomic
from perflab.store.catalog import Store, new_run_id
from perflab.study.document import now_iso
from perflab.study.model import Study
from perflab.values import formatted
from perflab.workload.loader import line_of, read_yaml, validate_model
from perflab.workload.model import Strict, Workload


class SuiteEntry(Strict):
    name: str = Field(min_length=1, max_length=80, description="the workload's row in the suite's tables")
    study: str = Field(min_length=1, description="its study file, relative to the suite file")


class SuiteFile(Strict):
    name: str = Field(min_length=1)
    title: str | None = None
    studies: list[SuiteEntry] = Field(min_length=2, description="one study per workload, each comparing the same two "
                                                                "configurations")
    metrics: list[str] = Field(default_factory=lambda: [REGISTRY.role("capacity")[0]], min_length=1,
                               description="metric keys averaged over the workloads; the first answers the suite")
    margin: float = Field(default=DEFAULT_MARGIN, gt=0, lt=0.5, description="the average's equivalence margin")
    notes: list[str] = Field(default_factory=list, description="remarks printed with the General Observations")


@dataclass
class LoadedMember:
    entry: SuiteEntry
    path: Path
    study: Study
    workload: Workload


@dataclass
class LoadedSuite:
    path: Path
    suite: SuiteFile
    members: list[LoadedMember] = field(default_factory=list)

    @property
    def base(self) -> str:
        return self.members[0].study.configurations[0].name

    @property
    def new(self) -> str:
        return self.members[0].study.configurations[1].name


def _compared_keys(study: Study, workload: Workload) -> list[str]:
    """The metric keys a member's study compares (runner.StudyRunner.run's rule)."""
    return list(study.metrics or REGISTRY.role("batch" if workload.batch else "compared"))


def load_suite(path: Path) -> LoadedSuite:
    """Validate a suite file and every study it names, before anything runs: a mistake in the
    third workload's file is found now, not after the first two studies. Errors point at
    file:line (the suite's, or the member study's own)."""
    from perflab.study.load import load_study

    path = Path(path)
    data = read_yaml(path)
    suite = validate_model(SuiteFile, data, path)

    def located(message: str, *loc: str | int) -> InputError:
        where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc).lstrip(".")
        return InputError(message, file=path, line=line_of(data, loc), field=where)

    twice = repeated([e.name for e in suite.studies])
    if twice:
        first = min(twice, key=lambda n: twice[n][1])
        raise located(f"workload names must be unique: {first!r} is given again (first at studies[{twice[first][0]}])",
                      "studies", twice[first][1], "name")
    for i, key in enumerate(suite.metrics):
        if REGISTRY.get(key) is None:
            raise located(f"unknown metric {key!r} (perflab metrics lists the keys)", "metrics", i)
    loaded = LoadedSuite(path, suite)
    for i, entry in enumerate(suite.studies):
        member_path = (path.parent / entry.study).resolve()
        if not member_path.is_file():
            raise located(f"study file not found: {entry.study}", "studies", i, "study")
        study, workload, _ = load_study(member_path)
        if study.sweep is not None:
            raise located(f"{entry.study} sweeps {study.sweep.factor}: a suite's member compares two "
                          "configurations", "studies", i, "study")
        configs = [c.name for c in study.configurations]
        if len(configs) != 2:
            raise located(f"{entry.study} compares {len(configs)} configurations: a suite measures one change "
                          "(two configurations, the base first)", "studies", i, "study")
        if loaded.members and configs != [loaded.base, loaded.new]:
            raise located(f"{entry.study} compares {configs[0]!r} -> {configs[1]!r}, the first workload's study "
                          f"{loaded.base!r} -> {loaded.new!r}: a suite measures one change under several "
                          "workloads (name the configurations alike)", "studies", i, "study")
        compared = _compared_keys(study, workload)
        for j, key in enumerate(suite.metrics):
            if key not in compared:
                raise located(f"{entry.study} does not compare {key} (its study's `metrics` must include every "
                              "metric the suite averages)", "metrics", j)
        loaded.members.append(LoadedMember(entry, member_path, study, workload))
    return loaded


def average_rows(doc: SuiteDocument) -> list[AverageRow]:
    """The Average row of each averaged metric, from the members' rows."""
    rows = []
    for key in doc.metrics:
        entries: list[tuple[str, MetricComparison | None]] = [
            (m.name, next((r for r in m.rows if r.key == key), None)) for m in doc.members]
        first = next((e for _, e in entries if e is not None), None)
        metric = REGISTRY.get(key)
        direction = first.direction if first is not None else (metric.direction.value if metric else "none")
        higher = {"higher": True, "lower": False}.get(direction)
        ratios = [MemberRatio(name, e.ratio, e.ci_low, e.ci_high, e.level, e.design_ci_low is not None) if e is not None
                  else MemberRatio(name, None, None, None, None) for name, e in entries]
        avg = average_ratio(ratios, margin=doc.margin, higher_is_better=higher)
        rows.append(AverageRow(key=key, label=first.label if first is not None else REGISTRY.label_of(key),
                               unit=first.unit if first is not None else "", direction=direction,
                               ratio=avg.ratio, ci_low=avg.low, ci_high=avg.high, level=avg.level,
                               verdict=avg.verdict, material=avg.material, note=avg.note, reason=avg.reason))
    return rows


#: The exit code of the suite's primary average under --gate (as `perflab study --gate`).
GATE_CODES = {"EQUIVALENT": EXIT_OK, "BETTER": EXIT_OK, "WORSE": 1, "INCONCLUSIVE": 3}


def suite_verdict(doc: SuiteDocument) -> StudyVerdict:
    primary = doc.average[0] if doc.average else None
    if primary is None or primary.verdict is None:
        why = primary.reason if primary is not None and primary.reason else "no average"
        return StudyVerdict(exit_code=EXIT_NO_COMPARISON, meaning=f"no average of {doc.metrics[0]}: {why}")
    change = formatted(None if primary.ratio is None else primary.ratio - 1, "+.1f", scale=100.0, suffix="%")
    return StudyVerdict(exit_code=GATE_CODES[primary.verdict],
                        meaning=f"{primary.label} averaged over {len(doc.members)} workloads: {change}, "
                                f"{primary.verdict}")


#: Runs one member study: (study file, suite member name) -> its StudyDocument and directory.
StudyExecutor = Callable[[Path, str], tuple[StudyDocument, Path]]


class SuiteRunner:
    def __init__(self, path: Path, store: Store):
        self.loaded = load_suite(path)
        self.store = store
        suite = self.loaded.suite
        self.suite_id = new_run_id(suite.name)
        self.dir = store.home / "suites" / self.suite_id
        self.doc = SuiteDocument(
            suite_id=self.suite_id, name=suite.name, title=suite.title or f"{self.loaded.base} -> {self.loaded.new}",
            created=now_iso(), suite_path=str(self.loaded.path), base=self.loaded.base, new=self.loaded.new,
            margin=suite.margin, metrics=list(suite.metrics),
            members=[SuiteMember(name=m.entry.name, study_file=str(m.path), workload=m.workload.name,
                                 load=m.workload.describe_load(), arrangement=m.study.chosen_arrangement)
                     for m in self.loaded.members])

    def save(self) -> None:
        write_json_atomic(self.dir / "suite.json", self.doc.model_dump(mode="json"))

    def run(self, run_study: StudyExecutor) -> SuiteDocument:
        """Each member's study in the file's order, then the average. A member interrupted stops the
        suite (what ran is kept, marked interrupted); a member that raises leaves the suite failed."""
        self.dir.mkdir(parents=True, exist_ok=False)
        self.save()
        doc = self.doc
        try:
            for member, loaded in zip(doc.members, self.loaded.members, strict=True):
                member.status = "running"
                self.save()
                study, study_dir = run_study(loaded.path, member.name)
                member.study_id, member.status, member.verdict = study.study_id, study.status, study.verdict
                member.arrangement = study.design.arrangement or member.arrangement
                comparison = study.comparisons[0] if study.comparisons else None
                member.rows = [r for r in (comparison.metrics if comparison is not None else [])
                               if r.key in doc.metrics]
                self.save()
                if study.status == "interrupted":
                    doc.status, doc.reason = "interrupted", f"{member.name}'s study was interrupted: {study.reason}"
                    break
        except BaseException as exc:
            doc.status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
            doc.reason = doc.reason or f"{type(exc).__name__}: {exc}"
            raise
        finally:
            doc.average = average_rows(doc)
            doc.verdict = suite_verdict(doc) if doc.status != "interrupted" else StudyVerdict(
                exit_code=EXIT_INTERRUPTED, meaning=doc.reason or "interrupted")
            if doc.status == "running":
                doc.status = "complete"
            doc.finished = now_iso()
            self.save()
        return doc

"""The other tables next to the one being derived, indexed by run id.

Summary tables refer to runs measured in detail elsewhere (Table 3's pairs cite the run ids
whose ITR (H) gives each pair's ITRR; Table 1 cites runs whose AVG LAST (T) it repeats). When
those detail tables sit in the same directory, their printed values make the summary's
cross-references checkable. A sibling that cannot be read is listed, not silently dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from perflab.catalog.metric import Registry
from perflab.derive.checks import Gap, Outcome, Unknown
from perflab.derive.metric_table import MetricTable
from perflab.derive.table import Table, read_table
from perflab.errors import InputError


@dataclass
class Siblings:
    directory: Path
    metric_tables: list[MetricTable] = field(default_factory=list)
    summary_tables: list[Table] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    used: set[str] = field(default_factory=set)     # tables `printed` took a value from
    _runs: dict[str, list[tuple[MetricTable, int, bool]]] = field(default_factory=dict)

    @classmethod
    def load(cls, directory: Path, exclude: Path, registry: Registry) -> Siblings:
        found = cls(directory)
        # CSV transcriptions, and tables saved as printed (tab-separated: printed.py)
        for path in sorted(p for suffix in ("*.csv", "*.tsv") for p in directory.glob(suffix)):
            if path.resolve() == exclude.resolve():
                continue
            try:
                table = read_table(path)
            except InputError as exc:
                found.skipped.append((path.name, str(exc.message)))
                continue
            if table.layout == "parameter":
                continue      # its rows are parameter values (LRECL 80...): no run ids to cross-reference
            if table.layout != "metric":
                found.summary_tables.append(table)
                continue
            evaluator = MetricTable(table, registry)
            found.metric_tables.append(evaluator)
            for col in evaluator.run_columns:
                header = table.columns[col].strip()
                uncertain = header.endswith("?")
                run_id = header.rstrip("?").strip()
                found._runs.setdefault(run_id, []).append((evaluator, col, uncertain))
        return found

    def value(self, run_id: str, key: str) -> tuple[Outcome, str]:
        """A run's value of a metric from the first sibling table that has it, and that table's name."""
        for evaluator, col, uncertain in self._runs.get(run_id.strip(), []):
            outcome = evaluator.value("", key, col)
            if outcome is Gap.ABSENT:
                continue
            name = evaluator.table.path.name
            if uncertain:
                return Unknown(f"run id {run_id} is marked uncertain in {name}"), name
            return outcome, name
        return Gap.ABSENT, ""

    def printed(self, run_id: str, component: str, key: str) -> Outcome:
        """A run's *printed* value of a metric in the first sibling table that prints the row (a
        change is recomputed from printed cells only, changes.py); Gap.ABSENT when none does."""
        for evaluator, col, uncertain in self._runs.get(run_id.strip(), []):
            outcome = evaluator.printed(component, key, col)
            if outcome is Gap.ABSENT:
                continue
            name = evaluator.table.path.name
            self.used.add(name)
            if uncertain:
                return Unknown(f"run id {run_id} is marked uncertain in {name}")
            return outcome
        return Gap.ABSENT

    @property
    def names(self) -> list[str]:
        return [t.table.path.name for t in self.metric_tables] + [t.path.name for t in self.summary_tables]

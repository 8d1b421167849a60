"""The records stages hand each other: run.json (`RunRecord`) and study.json (`StudyDocument`).

Each is a pydantic model with a format version and one builder; readers use attributes, never
chains of `.get`. docs/architecture.md's field tables are generated from these models
(`perflab.records.reference`), so the documentation cannot drift from the files.
"""

from perflab.records.run import RUN_FORMAT, RunConfig, RunRecord, parse_run_record, read_run_record
from perflab.records.study import (
                                   STUDY_FORMAT,
                                   ComparisonRecord,
                                   MetricComparison,
                                   StudyDocument,
                                   StudyRun,
                                   parse_study_document,
                                   read_study_document,
)

__all__ = ["RUN_FORMAT", "STUDY_FORMAT", "ComparisonRecord", "MetricComparison", "RunConfig", "RunRecord",
           "StudyDocument", "StudyRun", "parse_run_record", "parse_study_document", "read_run_record",
           "read_study_document"]

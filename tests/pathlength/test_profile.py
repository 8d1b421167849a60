"""The sampled CPU profile (drive/profile.py, reduce/profile_diff.py): perf's report read into
shares with their Wilson intervals, two configurations' pooled profiles compared share by share
(Newcombe's interval), rendered as shares -- never counts -- in the study report."""

from __future__ import annotations

import pytest

from perflab.drive.profile import parse_report, shares, wilson, write_shares
from perflab.records.study import ComparisonRecord, StudyDocument, StudyRun
from perflab.reduce.profile_diff import newcombe, profile_diffs
from perflab.report.markdown import render_markdown

REPORT = """# To display the perf.data header info, please use --header/--header-only options.
#
# Samples: 300  of event 'cpu-clock'
#
 150        ;[kernel.kallsyms]   ;[k] finish_task_switch.isra.0
 100        ;nginx               ;[.] ngx_http_process_request_line
 50         ;libc.so.6           ;[.] __memmove_avx_unaligned_erms
"""


def test_perfs_report_is_read_into_shares_with_their_intervals():
    rows = parse_report(REPORT)
    assert rows == [("[kernel.kallsyms]", "finish_task_switch.isra.0", 150),
                    ("nginx", "ngx_http_process_request_line", 100),
                    ("libc.so.6", "__memmove_avx_unaligned_erms", 50)]
    table = shares(rows)
    assert [s.share for s in table] == pytest.approx([0.5, 1 / 3, 1 / 6])
    low, high = table[0].low, table[0].high
    assert low < 0.5 < high and high - low == pytest.approx(2 * 1.96 * (0.25 / 300) ** 0.5, rel=0.02)


def test_wilson_and_newcombe_intervals_against_known_values():
    # Newcombe (1998), Table II: 56/70 against 48/80, difference 0.2, method 10: [0.0524, 0.3339]
    low, high = newcombe(48, 80, 56, 70)
    assert (round(low, 4), round(high, 4)) == (0.0524, 0.3339)
    assert wilson(0, 10)[0] == 0.0 and wilson(10, 10)[1] == pytest.approx(1.0)


def _run_dir(tmp_path, name, rows):
    directory = tmp_path / name
    directory.mkdir()
    write_shares(shares(rows), directory)
    return directory


def test_a_study_compares_pooled_shares_and_says_they_are_not_counts(tmp_path):
    dirs = {"a1": _run_dir(tmp_path, "a1", [("nginx", "gzip_deflate", 10), ("[kernel.kallsyms]", "tcp", 90)]),
            "a2": _run_dir(tmp_path, "a2", [("nginx", "gzip_deflate", 14), ("[kernel.kallsyms]", "tcp", 86)]),
            "b1": _run_dir(tmp_path, "b1", [("nginx", "gzip_deflate", 60), ("[kernel.kallsyms]", "tcp", 40)]),
            "b2": _run_dir(tmp_path, "b2", [("nginx", "gzip_deflate", 56), ("[kernel.kallsyms]", "tcp", 44)])}
    doc = StudyDocument(name="s", status="complete", comparisons=[ComparisonRecord(base="A", new="B", metrics=[])],
                        runs=[StudyRun(run_id=r, config=r[0].upper(), block=int(r[1])) for r in dirs])
    (diff,) = profile_diffs(doc, lambda run_id: dirs[run_id])
    assert (diff.base_samples, diff.new_samples) == (200, 200)
    top = diff.functions[0]
    assert top.function in ("gzip_deflate", "tcp") and abs(top.new - top.base) == pytest.approx(0.46)
    gzip = next(r for r in diff.functions if r.function == "gzip_deflate")
    assert gzip.base == pytest.approx(0.12) and gzip.new == pytest.approx(0.58) and gzip.delta_low > 0.3
    assert {r.library for r in diff.libraries} == {"nginx", "the kernel"}
    doc.profile_diffs = [diff]
    markdown = render_markdown(doc)
    assert "#### Where the CPU went (sampled)" in markdown and "never a count of instructions" in markdown
    assert "| gzip_deflate | nginx | nginx | 12.0% | 58.0% | +46.0% |" in markdown

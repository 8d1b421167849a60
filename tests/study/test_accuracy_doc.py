"""`perflab accuracy` rewrites its own table in docs/accuracy.md and keeps the sections other
experiments measured (the known-cost knobs), which it cannot regenerate."""

from __future__ import annotations

from pathlib import Path

from perflab.accuracy.metrics_doc import KEPT_SECTIONS, with_kept_sections

REPO = Path(__file__).resolve().parents[2]


def test_the_knob_sections_survive_a_regenerated_table():
    old = f"# Accuracy\n\nold table\n\n{KEPT_SECTIONS}\n\n## Known-cost knobs\n\nmeasured\n"
    new = with_kept_sections("# Accuracy\n\nnew table\n", old)
    assert new == f"# Accuracy\n\nnew table\n\n{KEPT_SECTIONS}\n\n## Known-cost knobs\n\nmeasured\n"
    assert with_kept_sections("# Accuracy\n\nnew table\n", "# Accuracy\n\nold table\n") == "# Accuracy\n\nnew table\n"


def test_the_published_page_marks_its_kept_sections():
    text = (REPO / "docs" / "accuracy.md").read_text()
    assert text.index(KEPT_SECTIONS) < text.index("## Known-cost knobs")

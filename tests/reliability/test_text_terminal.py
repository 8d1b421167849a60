"""Issue 14, items 4 and 6 (terminal): user- and server-supplied text is printed as plain text.

A label, workload name or transaction name holding rich markup (`[/x]` raised MarkupError and
broke `runs`/`show` for the whole store, `[bold]` vanished, `:smile:` became an emoji) or
terminal control sequences (ESC[2J clears the screen, OSC 8 hides a hyperlink, C1 CSI) must
reach the terminal literally, control characters escaped as \\xNN."""

from __future__ import annotations

import io
import json

import pytest
from cli_helpers import perflab, write_workload
from rich.console import Console

# markup, an emoji code, a screen clear, an OSC 8 hyperlink, a C1 CSI, a BEL
HOSTILE = "[/x] :smile: [bold]b \x1b[2J \x1b]8;;http://evil.example/\x1b\\link\x1b]8;;\x1b\\ \x9b31m \x07"
# YAML double-quoted form of the same (YAML allows no raw control characters)
HOSTILE_YAML = r'"[/x] :smile: [bold]b \e[2J \e]8;;http://evil.example/\e\\link\e]8;;\e\\ \x9b31m \a"'

WORKLOAD = f"""
name: {HOSTILE_YAML}
target: {{kind: python}}
transactions:
  - {{name: {HOSTILE_YAML}, call: "perflab.sut.synthetic:noop"}}
scripts: [{{name: s, steps: [{HOSTILE_YAML}]}}]
think: 0.01
load: {{users: 2}}
timing: {{measurement: 1s, stabilization: 0s}}
placement: {{workers: 1}}
"""

CONTROL = [chr(c) for c in [*range(0x00, 0x09), *range(0x0b, 0x20), *range(0x7f, 0xa0)]]


def assert_plain(text: str, *, must_show: bool = True) -> None:
    """No traceback, no raw control character, the hostile text shown literally."""
    assert "Traceback" not in text and "MarkupError" not in text, text
    raw = [hex(ord(c)) for c in text if c in CONTROL]
    assert not raw, f"raw control characters reached the terminal: {raw}"
    assert "\N{SMILING FACE WITH OPEN MOUTH AND SMILING EYES}" not in text
    if must_show:
        assert "[/x] :smile: [bold]b \\x1b[2J" in text, text
        assert "\\x1b]8;;http://evil.example/" in text and "\\x9b31m" in text and "\\x07" in text


@pytest.fixture(scope="module")
def hostile_store(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile")
    path = write_workload(tmp, WORKLOAD)
    store = tmp / "store"
    runs = []
    for suffix in ("", " B"):
        r = perflab("run", path, "--label", HOSTILE + suffix, "--no-monitor", "--quiet", store=store, timeout=120)
        assert r.returncode == 0, r.stderr
        assert_plain(r.stderr)
        runs.append(r.stdout.strip())
    return tmp, store, runs


def test_runs_lists_a_hostile_label_literally(hostile_store):
    _, store, _ = hostile_store
    r = perflab("runs", store=store)
    assert r.returncode == 0, r.stderr
    assert_plain(r.stdout + r.stderr)


def test_show_prints_hostile_names_literally(hostile_store):
    _, store, runs = hostile_store
    for ref in ("last", runs[0]):
        r = perflab("show", ref, store=store)
        assert r.returncode == 0, r.stderr
        assert_plain(r.stdout + r.stderr)


def test_compare_of_hostile_labels_prints_them_literally(hostile_store):
    tmp, store, _ = hostile_store
    r = perflab("compare", f"label:{HOSTILE}", f"label:{HOSTILE} B", "--out", tmp / "report", store=store)
    assert r.returncode in (0, 3, 4), r.stderr
    assert_plain(r.stdout + r.stderr)


def test_a_hostile_bad_value_in_an_error_is_one_plain_line(tmp_path):
    r = perflab("show", HOSTILE, store=tmp_path / "store")
    assert r.returncode == 2
    assert_plain(r.stderr, must_show=False)
    assert "[/x] :smile: [bold]b" in r.stderr


# -- the renderers, in process ---------------------------------------------------------------

def _console() -> tuple[Console, io.StringIO]:
    from perflab.safe_text import console

    buffer = io.StringIO()
    return console(file=buffer, width=400), buffer


def test_the_cli_consoles_do_not_turn_codes_into_emoji():
    from perflab.cli.capacity import out as capacity_out
    from perflab.cli.main import err, out

    for c in (out, err, capacity_out):
        buffer = io.StringIO()
        c.file = buffer
        try:
            c.print(":smile: [bold]x[/bold]")
        finally:
            c.file = None
        assert buffer.getvalue().strip() == ":smile: x"


def test_study_output_prints_hostile_configuration_names_literally():
    from report.study_data import BASE, NEW, make_study

    from perflab.records.study import parse_study_document
    from perflab.report.terminal import render_verdicts

    text = json.dumps(make_study())
    for name, tail in ((BASE, ""), (NEW, " B")):
        text = text.replace(json.dumps(name)[1:-1], json.dumps(HOSTILE + tail)[1:-1])
    study = json.loads(text)
    study["warnings"].append("SUT said: " + HOSTILE)
    study["verdict"]["meaning"] = HOSTILE
    c, buffer = _console()
    render_verdicts(parse_study_document(study), c)
    assert_plain(buffer.getvalue())


def test_study_progress_prints_hostile_configuration_names_literally():
    from perflab.report.progress import StudyProgress
    from perflab.study.events import CalibrationStepDone, Progress, RunEnded, RunStarted

    c, buffer = _console()
    progress = StudyProgress(c)
    progress.event(Progress(index=0, total=2, elapsed=0.0))
    progress.event(RunStarted(config=HOSTILE, purpose="calibrate", block=0, users=4))
    progress.event(CalibrationStepDone(users=4, rate=None, util_proc_s=50.0, etr_t=10.0))
    progress.event(RunStarted(config=HOSTILE, purpose="measure", block=0, users=4))
    progress.event(RunEnded(config=HOSTILE, block=0, run_id="r", status="complete", excluded=True, reasons=[HOSTILE],
                            etr_t=1.0))
    progress.started(HOSTILE, HOSTILE)
    progress.close()
    assert_plain(buffer.getvalue())


def test_run_progress_fields_are_plain_text():
    from types import SimpleNamespace

    from perflab.report.progress import RunProgress

    c, buffer = _console()
    progress = RunProgress(c)
    engine = SimpleNamespace(phases=SimpleNamespace(name_at=lambda t: HOSTILE, window_end=1.0),
                             recorder=SimpleNamespace(completed=1, errors=0))
    progress.tick(engine, 0.5)
    progress.close()
    assert_plain(buffer.getvalue(), must_show=False)
    assert "[/x] :smile: [bold]b" in buffer.getvalue()

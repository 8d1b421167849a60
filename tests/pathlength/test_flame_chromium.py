"""The differential flame graph in a real browser: the report opens from disk in headless
Chromium (no network; the page's policy admits its one script by its hash), the script draws every
frame, and a frame named in the address (`#flame=NAME`, what a click does) is zoomed to the full
width with its ancestors above it and its children below."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import programs

from perflab.report.write import write_reports

from report import dom
from .test_function_diff import _diff, _document

CHROMIUM = Path(programs.path("chromium"))
WIDTH = 1200


def _dump(html: Path, fragment: str, profile: Path) -> list[dom.Element]:
    result = subprocess.run(
        [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", f"--user-data-dir={profile}", "--dump-dom",
         html.resolve().as_uri() + fragment],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    return dom.parse(result.stdout)


def _frames(elements: list[dom.Element]) -> dict[str, list[dom.Element]]:
    """Each drawn frame's rectangle, by the frame's name."""
    frames: dict[str, list[dom.Element]] = {}
    groups = [e for e in elements if e.tag == "g" and "frame" in e.classes]
    rects = [e for e in elements if e.tag == "rect"]
    assert len(groups) == len(rects)
    for group, rect in zip(groups, rects):
        frames.setdefault(group.attrs["data-name"], []).append(rect)
    return frames


@programs.needs("chromium")
def test_the_flame_graph_draws_and_zooms_in_headless_chromium(tmp_path):
    diff = _diff(loop=2002.0)
    html = write_reports(_document(diff), tmp_path / "report")["html"]
    elements = _dump(html, "", tmp_path / "profile")
    holder = dom.by_id(elements, "flame")
    assert holder is not None and holder.attrs["data-zoom"] == "all" and holder.attrs["data-side"] == "new"
    frames = _frames(elements)
    assert int(holder.attrs["data-frames"]) == len(diff.flame.nodes) == sum(len(v) for v in frames.values())
    # widths are the new configuration's: the loop's frame is 2,002 of the 3,173 instructions
    (loop,) = frames["perflab_known_loop"]
    assert float(loop.attrs["width"]) + 0.5 == \
        pytest_approx(WIDTH * 2002.0 / diff.new_total)
    assert re.match(r"rgb\(240,", loop.attrs["fill"])             # it grew: red
    (vdbe,) = frames["sqlite3VdbeExec"]
    assert vdbe.attrs["fill"] == "rgb(228,224,214)"               # unchanged: neutral
    # zoomed to SQLite's interpreter: it fills the width; its ancestors stay above, full width
    zoomed = _dump(html, "#flame=sqlite3VdbeExec", tmp_path / "profile")
    holder = dom.by_id(zoomed, "flame")
    assert holder.attrs["data-zoom"] == "sqlite3VdbeExec"
    frames = _frames(zoomed)
    assert set(frames) == {"all", "_PyEval_EvalFrameDefault", "APSWCursor_step", "sqlite3VdbeExec"}
    for name in frames:
        (rect,) = frames[name]
        assert float(rect.attrs["width"]) == WIDTH - 0.5, name
    depths = {name: float(rects[0].attrs["y"]) for name, rects in frames.items()}
    assert depths["all"] < depths["_PyEval_EvalFrameDefault"] < depths["APSWCursor_step"] < depths["sqlite3VdbeExec"]


def pytest_approx(value: float):
    import pytest

    return pytest.approx(value, abs=0.02)

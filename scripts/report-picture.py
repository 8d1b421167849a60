#!/usr/bin/env python3
"""A picture of a study report for the README: opens report.html in Debian's Chromium (headless,
through Playwright; the report is self-contained, so no server) and saves the top of the page
as PNG.

    .venv/bin/python scripts/report-picture.py perflab-runs/studies/ID/report.html docs/img/main-job-report.png
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path, help="a study's report.html")
    parser.add_argument("picture", type=Path, help="the PNG to write")
    parser.add_argument("--width", type=int, default=1100, help="viewport width, CSS pixels")
    parser.add_argument("--height", type=int, default=1400, help="how much of the page, CSS pixels")
    args = parser.parse_args()
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(chromium).exists():
        print("report-picture: chromium is not installed (apt-get install chromium)", file=sys.stderr)
        return 2
    if not args.report.is_file():
        print(f"report-picture: {args.report}: no such report", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    args.picture.parent.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, headless=True,
                                             args=["--no-sandbox", "--disable-gpu", "--no-first-run"])
        page = browser.new_page(viewport={"width": args.width, "height": args.height})
        page.goto(args.report.resolve().as_uri())
        page.screenshot(path=str(args.picture), full_page=False)
        browser.close()
    print(args.picture)
    return 0


if __name__ == "__main__":
    sys.exit(main())

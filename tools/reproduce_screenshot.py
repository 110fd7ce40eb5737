"""A screenshot of a ``nuggetbench reproduce --report`` page at 1,300 px, for docs/guide.md
(docs/img/reproduce.png). Needs Debian's Chromium and playwright. Run::

    PYTHONPATH=src python tools/reproduce_screenshot.py PAGE.html [--out docs/img/reproduce.png]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from playwright.sync_api import sync_playwright

WIDTH = 1300


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("page", type=Path)
    parser.add_argument("--out", type=Path, default=Path("docs/img/reproduce.png"))
    parser.add_argument("--height", type=int, default=900)
    args = parser.parse_args()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": WIDTH, "height": args.height})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("request", lambda r: r.url.startswith("file:") or errors.append(r.url))
        page.goto(args.page.resolve().as_uri())
        width = page.evaluate("document.documentElement.scrollWidth")
        if width > WIDTH:
            errors.append(f"the page is {width} px wide in a {WIDTH} px window")
        page.screenshot(path=str(args.out))
        browser.close()
    if errors:
        raise SystemExit(f"page errors or requests off disk: {errors}")
    print(args.out)


if __name__ == "__main__":
    main()

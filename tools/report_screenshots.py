"""Screenshots of each view of the HTML report, for docs/guide.md (docs/img/report-*.png).

Built from synthetic folders only (tests/report_fixtures.py: invented text in the BEIR, FreshStack
and fastbook formats), so no benchmark text enters the repository. Needs Debian's Chromium and
playwright. Run::

    PYTHONPATH=src python tools/report_screenshots.py [--out docs/img]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from playwright.sync_api import sync_playwright  # noqa: E402

from nuggetbench import report  # noqa: E402
from nuggetbench.experiment import run_experiment  # noqa: E402
from report_fixtures import beir_folder, fastbook_root, freshstack_folder  # noqa: E402

SYSTEMS = ["bm25", "bm25:k1=0.9,b=0.4", "bm25:k1=2.0,b=0.9"]


def _shots(path: Path, out: Path, views: dict[str, str]) -> None:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 820})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(path.as_uri())
        for name, hash_ in views.items():
            page.evaluate(f"location.hash = {hash_!r}")
            page.wait_for_timeout(300)
            page.screenshot(path=str(out / f"report-{name}.png"))
            print(out / f"report-{name}.png")
        browser.close()
    if errors:
        raise SystemExit(f"page errors: {errors}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "img"))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        os.environ["NUGGETBENCH_HOME"] = str(tmp / "home")
        beir = beir_folder(tmp, n_queries=60, n_docs=400)
        run_experiment(str(beir), SYSTEMS, k=100, outdir=tmp / "beir", cache_runs=False)
        _shots(
            report.html(tmp / "beir"),
            out,
            {"summary": "summary", "perquery": "perquery", "query": "q=q3", "depth": "depth"},
        )
        fresh = freshstack_folder(tmp, n_queries=30, n_docs=300)
        run_experiment(str(fresh), SYSTEMS[:2], k=100, outdir=tmp / "fresh", cache_runs=False)
        _shots(report.html(tmp / "fresh"), out, {"nuggets": "nuggets", "nuggets-query": "q=3"})
        os.environ["NUGGETBENCH_DATA"] = str(fastbook_root(tmp))
        run_experiment("fastbook", SYSTEMS[:2], k=50, outdir=tmp / "fb", cache_runs=False)
        _shots(report.html(tmp / "fb"), out, {"spans": "q=1_2"})


if __name__ == "__main__":
    main()

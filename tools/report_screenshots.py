"""Screenshots of each view of the HTML report at 1,300 px, and the paper figures, for
docs/guide.md (docs/img/report-*.png, docs/img/figure-*.png).

The views that show texts are built from synthetic folders only (tests/report_fixtures.py:
invented text in the BEIR, FreshStack and fastbook formats, six systems with long spec names), so
no benchmark text enters the repository. With ``--scifact OUTDIR`` (a ``nuggetbench run`` folder
of beir/scifact, e.g. ``nuggetbench run beir/scifact -r bm25 -r bm25:k1=0.9,b=0.4 -r
bm25:stemmer=none -r bm25:k1=0.05,b=0.0 -o OUTDIR``), the views that show numbers (summary with
the pairwise marks, the per-query table sorted by rank-biased overlap with its query texts blanked
out, depth curves to the runs' depth) and the paper figures are taken from it. The one-system
report is the synthetic fastbook folder's (its chunking ceiling and chunker in the summary).
Needs Debian's Chromium and playwright (and matplotlib for the figures). Run::

    PYTHONPATH=src python tools/report_screenshots.py [--out docs/img] [--scifact OUTDIR]
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
from report_fixtures import SIX, beir_folder, fastbook_root, freshstack_folder  # noqa: E402

WIDTH = 1300


#: Blanks the query texts of the per-query table (benchmark text stays out of the repository).
MASK = "document.querySelectorAll('#pq-table td.text').forEach(td => td.textContent = '(text not shown)')"


def _shots(path: Path, out: Path, views: dict[str, str]) -> None:
    """*views*: file stem -> location hash, then ``|``-separated steps: a CSS selector scrolled
    to the top, ``all`` (every system side by side), ``click:SELECTOR`` (a header to sort by)
    and ``mask`` (blank the per-query texts)."""
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": WIDTH, "height": 820})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(path.as_uri())
        for name, spec in views.items():
            hash_, *rest = spec.split("|")
            page.evaluate(f"location.hash = {hash_!r}")
            page.wait_for_timeout(300)
            for step in rest:
                if step == "all":
                    page.check("#qv-all")
                elif step.startswith("click:"):
                    page.click(step[len("click:") :])
                elif step == "mask":
                    page.evaluate(MASK)
                else:
                    page.evaluate(
                        f"window.scrollTo(0, document.querySelector({step!r})"
                        ".getBoundingClientRect().top + window.scrollY - 110)"
                    )
                page.wait_for_timeout(200)
            width = page.evaluate("document.documentElement.scrollWidth")
            if width > WIDTH:
                errors.append(f"{name}: the page is {width} px wide in a {WIDTH} px window")
            page.screenshot(path=str(out / f"report-{name}.png"))
            print(out / f"report-{name}.png")
        browser.close()
    if errors:
        raise SystemExit(f"page errors: {errors}")


def _figures(source: Path, out: Path) -> None:
    """The paper figures (``write_plots``) as PNG at 150 dpi, small enough for the docs."""
    import matplotlib.pyplot as plt

    from nuggetbench.report.figures import figures

    data = report.report_data(source)
    for stem, make in figures(data).items():
        fig = make()
        fig.savefig(out / f"figure-{stem}.png", dpi=150, bbox_inches="tight", pad_inches=0.03)
        plt.close(fig)
        print(out / f"figure-{stem}.png")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "img"))
    parser.add_argument("--scifact", default=None, help="a `nuggetbench run` folder of SciFact")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        os.environ["NUGGETBENCH_HOME"] = str(tmp / "home")
        beir = beir_folder(tmp, n_queries=120, n_docs=400)
        run_experiment(str(beir), SIX, k=100, outdir=tmp / "beir", cache_runs=False)
        views = {  # the query view opens on the largest difference between A and B
            "perquery": "perquery",
            "query": "query",
            "query-side": "query|#qv .cols",
            "query-all": "query|#qv .cols|all",
        }
        if not args.scifact:
            views = {"summary": "summary", **views, "depth": "depth"}
        _shots(report.html(tmp / "beir"), out, views)
        if args.scifact:
            html = report.html(Path(args.scifact), tmp / "scifact.html")
            rbo = 'click:#pq-table th[data-sort="rbo"]'
            _shots(
                html,
                out,
                {
                    "summary": "summary",
                    "perquery-rbo": f"perquery|{rbo}|mask|#rank-note",
                    "depth": "depth",
                },
            )
        _figures(Path(args.scifact) if args.scifact else tmp / "beir", out)
        fresh = freshstack_folder(tmp, n_queries=30, n_docs=300)
        run_experiment(str(fresh), SIX[:2], k=100, outdir=tmp / "fresh", cache_runs=False)
        _shots(report.html(tmp / "fresh"), out, {"nuggets": "nuggets", "nuggets-query": "q=3"})
        os.environ["NUGGETBENCH_DATA"] = str(fastbook_root(tmp))
        run_experiment("fastbook", ["bm25"], k=50, outdir=tmp / "fb", cache_runs=False)
        _shots(
            report.html(tmp / "fb"),
            out,
            {
                "spans": "q=1_2",
                "spans-docs": "q=1_2|#qv .cols",
                "one-system": "summary",
                "one-system-perquery": "perquery",
            },
        )


if __name__ == "__main__":
    main()

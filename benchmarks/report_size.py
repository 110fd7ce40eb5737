"""Size and load time of the HTML report at MS MARCO dev scale (synthetic data).

Writes a synthetic BEIR-layout folder (``--queries`` queries, 6 words each; ``--docs`` passages of
20-90 words, ~400 characters on average like MS MARCO passages; 1-2 relevant passages per query),
runs three BM25 variants on it with ``run_experiment`` (depth ``--k``), builds the report and
prints: the seconds to build it, its size in MB, and (when ``/usr/bin/chromium`` and playwright
are there) the seconds Chromium takes to load it from disk and to render the per-query table and
one query view. Run::

    python benchmarks/report_size.py [--queries 7000] [--docs 60000] [--k 100] [--keep DIR]
    python benchmarks/report_size.py --outdir OUTDIR     # an existing `nuggetbench run` folder
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import tempfile
import time
from pathlib import Path


def _words(rng: random.Random, vocab: list[str], n: int) -> str:
    return " ".join(rng.choice(vocab) for _ in range(n))


def make_folder(folder: Path, n_queries: int, n_docs: int, seed: int = 0) -> None:
    """A BEIR-layout folder: corpus.jsonl, queries.jsonl, qrels/test.tsv."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(20_000)]
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    texts = [_words(rng, vocab, rng.randint(20, 90)) for _ in range(n_docs)]  # ~55 words
    with open(folder / "corpus.jsonl", "w") as fh:
        for i, text in enumerate(texts):
            row = {"_id": f"d{i}", "title": _words(rng, vocab, 5), "text": text}
            fh.write(json.dumps(row) + "\n")
    with open(folder / "queries.jsonl", "w") as fq, open(folder / "qrels" / "test.tsv", "w") as fr:
        fr.write("query-id\tcorpus-id\tscore\n")
        for q in range(n_queries):
            relevant = rng.sample(range(n_docs), rng.choice((1, 1, 1, 2)))
            # 3 words of a relevant passage and 3 random words: retrieval finds it, not always first
            words = rng.sample(texts[relevant[0]].split(), 3) + [
                rng.choice(vocab) for _ in range(3)
            ]
            fq.write(json.dumps({"_id": f"q{q}", "text": " ".join(words)}) + "\n")
            for d in relevant:
                fr.write(f"q{q}\td{d}\t1\n")


def _browser_times(path: Path) -> dict[str, float] | None:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    if not Path("/usr/bin/chromium").exists():
        return None
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        t0 = time.perf_counter()
        page.goto(path.as_uri(), wait_until="load")
        page.wait_for_selector("#summary.on")
        t1 = time.perf_counter()
        page.click("nav a[data-view=perquery]")
        page.wait_for_selector("#pq-table tbody tr")
        t2 = time.perf_counter()
        page.click("#pq-table th[data-sort^='d:']")
        page.wait_for_selector("#pq-table th.asc")
        t3 = time.perf_counter()
        page.click("#pq-table tbody tr a.qlink")
        page.wait_for_selector("#qv .doc")
        t4 = time.perf_counter()
        browser.close()
    if errors:
        raise RuntimeError(f"page errors: {errors}")
    return {"load": t1 - t0, "per_query_table": t2 - t1, "sort": t3 - t2, "query_view": t4 - t3}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=7000)
    parser.add_argument("--docs", type=int, default=60_000)
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--keep", default=None, help="keep the folder and report here")
    parser.add_argument("--outdir", default=None, help="measure the report of this output folder")
    args = parser.parse_args()

    from nuggetbench import report
    from nuggetbench.experiment import run_experiment

    if args.outdir:
        t0 = time.perf_counter()
        path = report.html(args.outdir, Path(args.outdir) / "report.html")
        print(f"report.html built in {time.perf_counter() - t0:.1f} s")
        print(f"report size: {path.stat().st_size / 1e6:.2f} MB ({path.stat().st_size} bytes)")
        print("chromium: " + ", ".join(f"{k} {v:.2f} s" for k, v in _browser_times(path).items()))
        return

    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="nb_report_size_"))
    try:
        data = root / "data"
        if not (data / "corpus.jsonl").exists():
            make_folder(data, args.queries, args.docs)
        specs = ["bm25", "bm25:k1=0.9,b=0.4", "bm25:k1=1.2,b=0.5"]
        t0 = time.perf_counter()
        exp = run_experiment(str(data), specs, k=args.k, outdir=root / "out", cache_runs=False)
        t1 = time.perf_counter()
        path = report.html(root / "out", root / "out" / "report.html")
        t2 = time.perf_counter()
        size = path.stat().st_size
        print(f"queries {exp.n_queries}, systems {len(specs)}, depth {args.k}")
        print(f"run_experiment: {t1 - t0:.1f} s; report.html built in {t2 - t1:.1f} s")
        print(f"report size: {size / 1e6:.1f} MB ({size} bytes) at {path}")
        times = _browser_times(path)
        if times:
            print("chromium: " + ", ".join(f"{k} {v:.2f} s" for k, v in times.items()))
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

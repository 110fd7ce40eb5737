"""Benchmark: nuggetbench vs pytrec_eval on a large run (reading the files + evaluating).

Generates (seeded) a qrels file and a run of 10,000 queries x 1,000 documents as TREC files in a
temporary folder, then times

(a) nuggetbench: ``read_qrels`` + ``read_run`` + ``evaluate(nDCG@10 AP R@100 RR)``;
(b) pytrec_eval: ``parse_qrel`` + ``parse_run`` + ``RelevanceEvaluator(...).evaluate``;

prints both times and their ratio, and checks that the means agree (1e-9).

Usage::

    python benchmarks/measures.py [--queries 10000] [--depth 1000] [--repeat 1] [--folder DIR]

Needs the dev extra (pytrec-eval-terrier). Imports of both libraries happen before timing.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

MEASURES = {"nDCG@10": "ndcg_cut_10", "AP": "map", "R@100": "recall_100", "RR": "recip_rank"}


def _write_table(path: Path, columns: dict[str, np.ndarray]) -> None:
    """Space-separated lines without header or quoting."""
    try:
        import pyarrow as pa
        import pyarrow.csv as pcsv
    except ImportError:  # pragma: no cover
        import pandas as pd

        pd.DataFrame(columns).to_csv(path, sep=" ", header=False, index=False)
        return
    table = pa.table(columns)
    pcsv.write_csv(
        table,
        path,
        write_options=pcsv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none"),
    )


def generate(
    folder: Path,
    *,
    n_queries: int = 10_000,
    depth: int = 1_000,
    n_docs: int = 1_000_000,
    judged: int = 50,
    seed: int = 0,
) -> tuple[Path, Path]:
    """Write ``qrels.txt`` and ``run.txt`` into *folder*; returns their paths.

    Each query retrieves *depth* distinct documents (of *n_docs*) with scores rounded to 4
    decimals (so some tie); it has about *judged* judgments with grades 0-3, half of them on
    documents of its top 100, half on random documents.
    """
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    doc_names = np.char.add("D", np.char.zfill(np.arange(n_docs).astype(str), 7)).astype(object)
    qids = np.arange(1, n_queries + 1).astype(str).astype(object)
    # distinct documents per query: a random offset walk over a shuffled collection
    perm = rng.permutation(n_docs)
    starts = rng.integers(0, n_docs, n_queries)
    steps = rng.integers(1, 7, (n_queries, depth)).cumsum(axis=1)
    docs = perm[(starts[:, None] + steps) % n_docs]
    scores = np.round(np.sort(rng.random((n_queries, depth)) * 30.0, axis=1)[:, ::-1], 4)
    shuffle = rng.permuted(
        np.tile(np.arange(depth), (n_queries, 1)), axis=1
    )  # file order != rank order
    docs = np.take_along_axis(docs, shuffle, axis=1)
    scores = np.take_along_axis(scores, shuffle, axis=1)
    ranks = np.tile(np.arange(1, depth + 1), n_queries)
    _write_table(
        folder / "run.txt",
        {
            "q": np.repeat(qids, depth),
            "q0": np.full(n_queries * depth, "Q0", dtype=object),
            "d": doc_names[docs.ravel()],
            "r": ranks,
            "s": scores.ravel(),
            "t": np.full(n_queries * depth, "bench", dtype=object),
        },
    )
    top_k = min(100, depth)
    best = np.take_along_axis(docs, np.argsort(-scores, axis=1)[:, :top_k], axis=1)
    half = judged // 2
    top = np.take_along_axis(best, rng.integers(0, top_k, (n_queries, half)), axis=1)
    rand = rng.integers(0, n_docs, (n_queries, judged - half))
    jd = np.concatenate([top, rand], axis=1)
    jq = np.repeat(np.arange(n_queries), judged)
    jd = jd.ravel()
    key = jq.astype(np.int64) * n_docs + jd
    _, first = np.unique(key, return_index=True)
    first.sort()
    _write_table(
        folder / "qrels.txt",
        {
            "q": qids[jq[first]],
            "it": np.zeros(len(first), dtype=np.int64),
            "d": doc_names[jd[first]],
            "g": rng.integers(0, 4, len(first)),
        },
    )
    return folder / "qrels.txt", folder / "run.txt"


def run_nuggetbench(qrels_path: Path, run_path: Path) -> tuple[float, dict[str, float]]:
    from nuggetbench.data import read_qrels, read_run
    from nuggetbench.measures import evaluate

    start = time.perf_counter()
    qrels = read_qrels(qrels_path)
    run = read_run(run_path)
    results = evaluate(qrels, run, list(MEASURES), profile="trec_eval")
    seconds = time.perf_counter() - start
    return seconds, {m: results.mean(m) for m in MEASURES}


def run_pytrec_eval(qrels_path: Path, run_path: Path) -> tuple[float, dict[str, float]]:
    import pytrec_eval

    start = time.perf_counter()
    with open(qrels_path) as fh:
        qrels = pytrec_eval.parse_qrel(fh)
    with open(run_path) as fh:
        run = pytrec_eval.parse_run(fh)
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels, {"ndcg_cut.10", "map", "recall.100", "recip_rank"}
    )
    per_query = evaluator.evaluate(run)
    seconds = time.perf_counter() - start
    means = {
        m: float(np.mean([v[name] for v in per_query.values()])) for m, name in MEASURES.items()
    }
    return seconds, means


def _warm_up(folder: Path) -> None:
    """Import everything both sides use (pandas, pyarrow, pytrec_eval) outside the timings."""
    small = folder / "warmup"
    qrels_path, run_path = generate(small, n_queries=20, depth=50, n_docs=5_000, judged=10, seed=1)
    run_nuggetbench(qrels_path, run_path)
    run_pytrec_eval(qrels_path, run_path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--depth", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=1, help="best of N timings per tool")
    parser.add_argument("--folder", type=Path, default=None, help="keep the files here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="nb-bench-") as tmp:
        folder = args.folder or Path(tmp)
        start = time.perf_counter()
        qrels_path, run_path = generate(folder, n_queries=args.queries, depth=args.depth)
        print(
            f"generated {args.queries} queries x {args.depth} docs in {time.perf_counter() - start:.1f} s "
            f"({run_path.stat().st_size / 1e6:.0f} MB run, {qrels_path.stat().st_size / 1e6:.1f} MB qrels)"
        )
        _warm_up(folder)
        ours = min(
            (run_nuggetbench(qrels_path, run_path) for _ in range(args.repeat)), key=lambda r: r[0]
        )
        rss_ours = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        theirs = min(
            (run_pytrec_eval(qrels_path, run_path) for _ in range(args.repeat)), key=lambda r: r[0]
        )
    print(f"nuggetbench  read + evaluate: {ours[0]:6.2f} s   (peak RSS so far {rss_ours:.0f} MB)")
    print(f"pytrec_eval  parse + evaluate: {theirs[0]:6.2f} s")
    print(f"ratio pytrec_eval / nuggetbench: {theirs[0] / ours[0]:.2f}x")
    worst = max(abs(ours[1][m] - theirs[1][m]) for m in MEASURES)
    for m in MEASURES:
        print(f"  {m:8s} nuggetbench {ours[1][m]:.6f}  pytrec_eval {theirs[1][m]:.6f}")
    if worst > 1e-9:
        print(f"MEANS DIFFER (max difference {worst:.3g})")
        return 1
    print(f"means agree (max difference {worst:.1e})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

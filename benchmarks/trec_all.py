"""Benchmark: ``-m all_trec`` in nuggetbench vs the trec_eval-equivalent pytrec_eval call.

Generates (seeded, with ``benchmarks/measures.py``'s generator) a qrels file and a run of
10,000 queries x 1,000 documents as TREC files in a temporary folder, then times, once each:

(a) nuggetbench: ``read_qrels`` + ``read_run`` + ``evaluate(["all_trec"], profile="trec_eval")``
    (every measure trec_eval prints: 93 numbers per query);
(b) pytrec_eval: ``parse_qrel`` + ``parse_run`` +
    ``RelevanceEvaluator(qrels, pytrec_eval.supported_measures).evaluate(run)``;

prints both times, their ratio, and the largest difference of the means over the measures both
compute (``iprec_at_recall``/``11pt_avg`` compared with ``legacy=true``, pytrec_eval's rounding).

Usage::

    python benchmarks/trec_all.py [--queries 10000] [--depth 1000]
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measures import generate  # noqa: E402

LEGACY = [f"IPrec(recall={r / 10},legacy=true)" for r in range(11)] + ["IPrecAvg(legacy=true)"]
RENAMED = {f"iprec_at_recall_{r / 10:.2f}": LEGACY[r] for r in range(11)}
RENAMED["11pt_avg"] = LEGACY[-1]


def run_nuggetbench(qrels_path: Path, run_path: Path, legacy: bool):
    from nuggetbench.data import read_trec_qrels as read_qrels
    from nuggetbench.data import read_trec_run as read_run
    from nuggetbench.measures import score as evaluate

    start = time.perf_counter()
    qrels, run = read_qrels(qrels_path), read_run(run_path)
    read = time.perf_counter() - start
    results = evaluate(qrels, run, ["all_trec"], profile="trec_eval")
    seconds = time.perf_counter() - start
    extra = evaluate(qrels, run, LEGACY, profile="trec_eval") if legacy else None
    return (seconds, read), results, extra


def run_pytrec_eval(qrels_path: Path, run_path: Path):
    import pytrec_eval

    start = time.perf_counter()
    with open(qrels_path) as fh:
        qrels = pytrec_eval.parse_qrel(fh)
    with open(run_path) as fh:
        run = pytrec_eval.parse_run(fh)
    read = time.perf_counter() - start
    per_query = pytrec_eval.RelevanceEvaluator(qrels, pytrec_eval.supported_measures).evaluate(run)
    return (time.perf_counter() - start, read), per_query


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--depth", type=int, default=1_000)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="nb-bench-") as tmp:
        folder = Path(tmp)
        qrels_path, run_path = generate(folder, n_queries=args.queries, depth=args.depth)
        warm = generate(folder / "warm", n_queries=20, depth=50, n_docs=5000, judged=10, seed=1)
        run_nuggetbench(*warm, legacy=False)
        run_pytrec_eval(*warm)
        ours, results, extra = run_nuggetbench(qrels_path, run_path, legacy=True)
        theirs, per_query = run_pytrec_eval(qrels_path, run_path)
    print(f"{args.queries} queries x {args.depth} docs")
    print(
        f"nuggetbench  read + evaluate all_trec ({len(results.measures)} measures): {ours[0]:6.2f} s"
        f"  (read {ours[1]:.2f} s, evaluate {ours[0] - ours[1]:.2f} s)"
    )
    print(
        f"pytrec_eval  parse + evaluate supported_measures:        {theirs[0]:6.2f} s"
        f"  (parse {theirs[1]:.2f} s, evaluate {theirs[0] - theirs[1]:.2f} s)"
    )
    print(f"ratio pytrec_eval / nuggetbench: {theirs[0] / ours[0]:.2f}x")
    worst, compared = 0.0, 0
    for key in next(iter(per_query.values())):
        if key in ("runid", "relstring", "num_q"):
            continue
        source = extra if key in RENAMED else results
        ours_q = dict(zip(source.query_ids, source.per_query[RENAMED.get(key, key)].tolist()))
        for qid, values in per_query.items():
            value = ours_q[qid]
            if key.startswith("gm_"):
                value = math.log(max(value, 1e-5))
            if not (math.isnan(value) and math.isnan(values[key])):
                worst = max(worst, abs(value - values[key]))
            compared += 1
    print(f"{compared} per-query values compared, max difference {worst:.1e}")
    return 0 if worst <= 1e-9 else 1


if __name__ == "__main__":
    sys.exit(main())

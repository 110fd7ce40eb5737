"""What the trap checks cost ``nb.evaluate`` (it runs them to warn what ``nuggetbench evaluate``
prints): the median of 5 calls on in-memory values, with and without the checks.

    PYTHONPATH=src python benchmarks/nb_evaluate_checks.py [N_QUERIES] [DOCS_PER_QUERY]

A synthetic run (default 10,000 queries x 100 documents = 1M entries, ranked by score) and
qrels (20 graded judgments per query); prints the seconds of ``nb.evaluate`` and of
``check_findings`` alone.
"""

from __future__ import annotations

import statistics
import sys
import time
import warnings

import numpy as np

import nuggetbench as nb
from nuggetbench.data import Qrels, Run
from nuggetbench.data.checks import check_findings, unlogged


def _data(n_queries: int, per_query: int) -> tuple[Qrels, Run]:
    rng = np.random.default_rng(0)
    qids = np.repeat([f"q{q}" for q in range(n_queries)], per_query)
    docs = np.concatenate([rng.choice(5000, per_query, replace=False) for _ in range(n_queries)])
    scores = np.tile(np.arange(per_query, 0, -1, dtype=np.float64), n_queries)
    run = Run(qids, np.char.add("d", docs.astype(str)), scores)
    jq = np.repeat([f"q{q}" for q in range(n_queries)], 20)
    jd = np.concatenate([rng.choice(5000, 20, replace=False) for _ in range(n_queries)])
    qrels = Qrels(jq, np.char.add("d", jd.astype(str)), rng.integers(0, 3, len(jq)))
    return qrels, run


def _median(fn, repeat: int = 5) -> float:
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    n_queries = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    per_query = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    qrels, run = _data(n_queries, per_query)
    warnings.simplefilter("ignore")

    def checks() -> None:
        with unlogged():
            check_findings(qrels, run)

    total = _median(lambda: nb.evaluate(qrels, run, "nDCG@10 AP"))
    alone = _median(checks)
    print(
        f"{run.n_entries:,} run entries: nb.evaluate {total:.3f} s, of which checks {alone:.3f} s"
    )


if __name__ == "__main__":
    main()

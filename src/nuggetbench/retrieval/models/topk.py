"""Bounded-memory exact top-k over a queries x documents score matrix that is never materialised.

Scores are computed block by block (``query_block x doc_block`` at most) by a caller-supplied
function and merged into a running top-k per query, so memory is bounded by the block size and
``k``, not by ``queries x corpus``. Selection is exact *including ties*: among equal scores the
document preferred by trec_eval's rule (higher doc id in string order) is kept, via a per-document
integer ``tie_key`` (larger wins; see :func:`tie_keys`).

Used by the dense, learned-sparse and late-interaction retrievers, with and without a per-query
candidate restriction (``doc_filter``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from nuggetbench.data import Run
from nuggetbench.data.ranking import factorize_sorted

log = logging.getLogger(__name__)

_SELECT_ROWS = 64

ScoreFn = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""``score(query_rows, doc_rows) -> scores`` of shape ``(len(query_rows), len(doc_rows))``."""


@dataclass
class TopKStats:
    """What a search did: blocks scored and the largest block (elements), for tests and benchmarks."""

    blocks: int = 0
    max_block_elements: int = 0
    shapes: list[tuple[int, int]] = field(default_factory=list)


def tie_keys(doc_ids: Sequence[str] | np.ndarray) -> np.ndarray:
    """int64 key per document, larger for a larger doc id (trec_eval keeps it first among ties)."""
    _, codes = factorize_sorted(np.asarray(doc_ids, dtype=object))
    return codes.astype(np.int64)


def select_topk(
    scores: np.ndarray, ids: np.ndarray, ties: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-*k* of each row by (score desc, tie key desc).

    Args:
        scores: shape (r, m).
        ids: int64 ids, shape (r, m) or (m,) (shared by all rows).
        ties: int64 tie keys aligned with *ids* (same shape).
        k: how many to keep, >= 1.

    Returns:
        ``(ids, scores)`` of shape (r, min(k, m)); row order is unspecified (callers rank later).
    """
    r, m = scores.shape
    if m <= k:
        return (np.broadcast_to(ids, (r, m)).copy(), scores.copy())
    kth = np.partition(scores, m - k, axis=1)[:, m - k : m - k + 1]
    mask = scores >= kth
    counts = mask.sum(axis=1)
    rows, cols = np.nonzero(mask)
    ids_full = ids.ndim == 2
    if (counts == k).all():
        sel_cols = cols.reshape(r, k)
        out_scores = np.take_along_axis(scores, sel_cols, axis=1)
        out_ids = np.take_along_axis(ids, sel_cols, axis=1) if ids_full else ids[sel_cols]
        return out_ids, out_scores
    # ties at the k-th score: order the candidates of each row and keep the first k
    cand_scores = scores[rows, cols]
    cand_ties = ties[rows, cols] if ids_full else ties[cols]
    order = np.lexsort((-cand_ties, -cand_scores, rows))
    rows, cols = rows[order], cols[order]
    starts = np.searchsorted(rows, np.arange(r))
    rank = np.arange(len(rows)) - starts[rows]
    keep = rank < k
    sel_cols = cols[keep].reshape(r, k)
    out_scores = np.take_along_axis(scores, sel_cols, axis=1)
    out_ids = np.take_along_axis(ids, sel_cols, axis=1) if ids_full else ids[sel_cols]
    return out_ids, out_scores


def block_topk(
    score: ScoreFn,
    n_queries: int,
    n_docs: int,
    k: int,
    *,
    tie_key: np.ndarray,
    query_block: int = 1024,
    doc_block: int = 16384,
    stats: TopKStats | None = None,
    progress: Callable[[int], None] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-*k* documents of every query, scoring at most ``query_block x doc_block`` at once.

    Args:
        score: ``score(query_rows, doc_rows)`` returning a float array (len(query_rows), len(doc_rows));
            rows are int64 index arrays (contiguous ranges).
        n_queries, n_docs: matrix size.
        k: depth, >= 1.
        tie_key: int64, shape (n_docs,): larger wins among equal scores (see :func:`tie_keys`).
        query_block, doc_block: block shape (memory is O(query_block x doc_block + query_block x k)).
        stats: filled with the number and size of blocks.
        progress: called with the number of documents scored after each block of the last query block.

    Returns:
        ``(doc_index, scores)``, both of shape (n_queries, min(k, n_docs)); row order unspecified.
    """
    kk = min(k, n_docs)
    out_ids = np.empty((n_queries, kk), dtype=np.int64)
    out_scores = np.empty((n_queries, kk), dtype=np.float64)
    if kk == 0 or n_queries == 0:
        return out_ids, out_scores
    query_block = max(1, int(query_block))
    doc_block = max(kk, int(doc_block))
    for q0 in range(0, n_queries, query_block):
        q_rows = np.arange(q0, min(q0 + query_block, n_queries), dtype=np.int64)
        best_ids: np.ndarray | None = None
        best_scores: np.ndarray | None = None
        for d0 in range(0, n_docs, doc_block):
            d_rows = np.arange(d0, min(d0 + doc_block, n_docs), dtype=np.int64)
            block = np.asarray(score(q_rows, d_rows))
            if stats is not None:
                stats.blocks += 1
                stats.max_block_elements = max(stats.max_block_elements, block.size)
                stats.shapes.append(block.shape)
            ids, sc = _select_by_rows(block, d_rows, tie_key[d_rows], kk)
            del block
            if best_ids is None:
                best_ids, best_scores = ids, sc
            else:
                best_ids, best_scores = _merge_by_rows(best_ids, best_scores, ids, sc, tie_key, kk)
            if progress is not None:
                progress(len(d_rows) * len(q_rows))
        out_ids[q_rows] = best_ids
        out_scores[q_rows] = best_scores
    return out_ids, out_scores


def _select_by_rows(scores, ids, ties, k):
    """:func:`select_topk` over slices of rows (keeps its temporaries small next to *scores*)."""
    out_ids = np.empty((scores.shape[0], min(k, scores.shape[1])), dtype=np.int64)
    out_sc = np.empty(out_ids.shape, dtype=np.float64)
    for r in range(0, scores.shape[0], _SELECT_ROWS):
        i, s = select_topk(scores[r : r + _SELECT_ROWS], ids, ties, k)
        out_ids[r : r + _SELECT_ROWS], out_sc[r : r + _SELECT_ROWS] = i, s
    return out_ids, out_sc


def _merge_by_rows(ids_a, sc_a, ids_b, sc_b, tie_key, k):
    """Top *k* of the union of two (rows, k) candidate sets, row slice by row slice (in place of a)."""
    for r in range(0, ids_a.shape[0], _SELECT_ROWS):
        sl = slice(r, r + _SELECT_ROWS)
        both = np.concatenate([ids_a[sl], ids_b[sl]], axis=1)
        i, s = select_topk(np.concatenate([sc_a[sl], sc_b[sl]], axis=1), both, tie_key[both], k)
        ids_a[sl], sc_a[sl] = i, s
    return ids_a, sc_a


def split_by_filter(
    query_ids: Sequence[str],
    doc_filter: Mapping[str, Collection[str]] | None,
    doc_lookup: Mapping[str, int],
) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]], int]:
    """Split queries into unrestricted ones and groups sharing the same candidate documents.

    Args:
        query_ids: the queries, in search order.
        doc_filter: ``{query_id: candidate doc ids}``; queries absent are unrestricted.
        doc_lookup: ``doc_id -> row`` of the index.

    Returns:
        ``(free_rows, groups, n_unknown)``: row numbers (into *query_ids*) of unrestricted queries;
        a list of ``(query_rows, candidate_doc_rows)`` (candidate rows sorted, unique); and the
        number of candidate ids absent from the index (ignored, logged).
    """
    if not doc_filter:
        return np.arange(len(query_ids), dtype=np.int64), [], 0
    free: list[int] = []
    groups: dict[bytes, tuple[list[int], np.ndarray]] = {}
    unknown = 0
    for i, qid in enumerate(query_ids):
        cands = doc_filter.get(qid)
        if cands is None:
            free.append(i)
            continue
        rows = []
        for d in cands:
            j = doc_lookup.get(d)
            if j is None:
                unknown += 1
            else:
                rows.append(j)
        arr = np.unique(np.asarray(rows, dtype=np.int64))
        key = arr.tobytes()
        if key in groups:
            groups[key][0].append(i)
        else:
            groups[key] = ([i], arr)
    if unknown:
        log.warning(
            "doc_filter names %d candidate documents that are not in the corpus; they are ignored "
            "(they cannot be retrieved)",
            unknown,
        )
    return (
        np.asarray(free, dtype=np.int64),
        [(np.asarray(q, dtype=np.int64), c) for q, c in groups.values()],
        unknown,
    )


def search_topk(
    score: ScoreFn,
    query_ids: Sequence[str],
    doc_ids: Sequence[str] | np.ndarray,
    k: int,
    *,
    doc_filter: Mapping[str, Collection[str]] | None = None,
    doc_lookup: Mapping[str, int] | None = None,
    tie_key: np.ndarray | None = None,
    query_block: int = 1024,
    doc_block: int = 16384,
    stats: TopKStats | None = None,
    name: str | None = None,
    metadata: dict | None = None,
) -> Run:
    """Top-*k* search of every query over all documents (or its ``doc_filter`` candidates) -> Run.

    Args:
        score: ``score(query_rows, doc_rows) -> (len(query_rows), len(doc_rows))`` scores, where rows
            index *query_ids* and *doc_ids*.
        query_ids: shape (q,); doc_ids: shape (n,).
        k: depth.
        doc_filter: optional per-query candidates (queries absent are unrestricted).
        doc_lookup: ``doc_id -> row`` (built when omitted and a filter is given).
        tie_key: from :func:`tie_keys` (computed when omitted).
        query_block, doc_block, stats: see :func:`block_topk`.
        name, metadata: of the returned run.

    Returns:
        A :class:`Run` with every query (a query whose candidates are all unknown has no entries).
    """
    doc_ids = np.asarray(doc_ids, dtype=object)
    if tie_key is None:
        tie_key = tie_keys(doc_ids)
    if doc_filter and doc_lookup is None:
        doc_lookup = {d: i for i, d in enumerate(doc_ids.tolist())}
    free, groups, _ = split_by_filter(query_ids, doc_filter, doc_lookup or {})
    q_parts: list[np.ndarray] = []
    d_parts: list[np.ndarray] = []
    s_parts: list[np.ndarray] = []
    qids = np.asarray(list(query_ids), dtype=object)
    if len(free):
        ids, sc = block_topk(
            lambda qr, dr: score(free[qr], dr),
            len(free),
            len(doc_ids),
            k,
            tie_key=tie_key,
            query_block=query_block,
            doc_block=doc_block,
            stats=stats,
        )
        q_parts.append(np.repeat(qids[free], ids.shape[1]))
        d_parts.append(ids.ravel())
        s_parts.append(sc.ravel())
    for q_rows, cands in groups:
        if len(cands) == 0:
            continue
        ids, sc = block_topk(
            lambda qr, dr, q_rows=q_rows, cands=cands: score(q_rows[qr], cands[dr]),
            len(q_rows),
            len(cands),
            k,
            tie_key=tie_key[cands],
            query_block=query_block,
            doc_block=doc_block,
            stats=stats,
        )
        q_parts.append(np.repeat(qids[q_rows], ids.shape[1]))
        d_parts.append(cands[ids.ravel()])
        s_parts.append(sc.ravel())
    return make_run(qids, q_parts, d_parts, s_parts, doc_ids, name=name, metadata=metadata)


def make_run(
    all_qids: np.ndarray,
    q_parts: list[np.ndarray],
    d_parts: list[np.ndarray],
    s_parts: list[np.ndarray],
    doc_ids: np.ndarray,
    *,
    name: str | None,
    metadata: dict | None,
) -> Run:
    """A Run from per-part (query id, doc row, score) columns; queries with no entry are kept empty."""
    if q_parts:
        q = np.concatenate(q_parts)
        d = doc_ids[np.concatenate(d_parts)]
        s = np.concatenate(s_parts).astype(np.float64)
    else:
        q = np.array([], dtype=object)
        d = np.array([], dtype=object)
        s = np.array([], dtype=np.float64)
    run = Run(q, d, s, name=name, metadata=metadata)
    missing = set(all_qids.tolist()) - set(run.query_ids)
    if missing:
        run = with_empty_queries(run, sorted(missing))
    return run


def with_empty_queries(run: Run, missing: list[str]) -> Run:
    qids, starts, docids, scores = run.arrays()
    lengths = dict(zip(qids.tolist(), np.diff(starts).tolist()))
    lengths.update({q: 0 for q in missing})
    new_q = np.array(sorted(lengths), dtype=object)
    new_starts = np.concatenate([[0], np.cumsum([lengths[q] for q in new_q.tolist()])]).astype(
        np.int64
    )
    return Run.from_ranked_arrays(
        new_q,
        new_starts,
        docids,
        scores,
        name=run.name,
        metadata=run.metadata,
        input_sorted=run.input_sorted,
    )

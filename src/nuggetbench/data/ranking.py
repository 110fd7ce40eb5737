"""The one ranking rule of nuggetbench (trec_eval's).

Within a query, documents are ordered by score descending; ties are broken by doc id in
**descending** string order (``strcmp`` on the docno, as trec_eval's ``form_res_rels.c`` does).
Any rank column of an input file is ignored. Every ranking in the package goes through
:func:`rank_order`; profiles that sort differently (ndeval's rank column, pyndeval's ascending
doc ids, FreshStack's input order) pass an explicit ``tie_break``: ``"docid_desc"`` (the rule),
``"docid_asc"`` (pyndeval) or ``"input"`` (ties keep the order in which the entries arrived, as a
stable sort of a ``{doc: score}`` dict in Python does; it needs the input positions,
``Run.input_order``).
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from nuggetbench.data.lookup import objects_at

TieBreak = Literal["docid_desc", "docid_asc", "input"]
#: The tie orders a profile can name.
TIE_BREAKS = ("docid_desc", "docid_asc", "input")


def factorize_sorted(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(uniques, codes)`` with *uniques* sorted ascending and ``uniques[codes] == values``."""
    import pandas as pd

    codes, uniques = pd.factorize(np.asarray(values, dtype=object), sort=True)
    return np.asarray(uniques, dtype=object), codes.astype(np.int64, copy=False)


def rank_order(
    query_codes: np.ndarray,
    scores: np.ndarray,
    doc_ids: np.ndarray,
    *,
    tie_break: TieBreak = "docid_desc",
    positions: np.ndarray | None = None,
) -> np.ndarray:
    """Permutation that groups entries by query (ascending code) and ranks them within each query.

    Args:
        query_codes: int array, shape (n,), the query of each entry.
        scores: float array, shape (n,).
        doc_ids: object/str array, shape (n,).
        tie_break: ``"docid_desc"`` (trec_eval, the default), ``"docid_asc"`` (pyndeval) or
            ``"input"`` (ties ordered by *positions* ascending: FreshStack's ``sorted(...,
            reverse=True)`` over a dict in file order).
        positions: int array (n,), the input position of each entry; required for ``"input"``.

    Returns:
        int64 array of shape (n,): apply it to the three arrays to obtain the ranked order.

    Raises:
        ValueError: ``tie_break="input"`` without *positions*, or an unknown *tie_break*.
    """
    import pandas as pd

    n = len(scores)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if tie_break == "input":
        if positions is None:
            raise ValueError("tie_break='input' needs the entries' input positions")
        q = np.asarray(query_codes, dtype=np.int64)
        return np.lexsort((np.asarray(positions), -np.asarray(scores, dtype=np.float64), q))
    if tie_break not in TIE_BREAKS:
        raise ValueError(f"unknown tie_break {tie_break!r}; use one of {TIE_BREAKS}")
    codes, uniques = pd.factorize(np.asarray(doc_ids, dtype=object))
    order = rank_codes(
        query_codes, scores, np.asarray(uniques, dtype=object), codes, tie_break=tie_break
    )
    return np.arange(n, dtype=np.int64) if order is None else order


def score_order(query_codes: np.ndarray, scores: np.ndarray) -> np.ndarray | None:
    """The first half of :func:`rank_codes`: a permutation that groups the entries by query code
    ascending and orders each query's entries by score descending, entries of equal scores in
    any order; ``None`` when the entries are in that order already.

    It needs no doc id, so a reader computes it while the doc ids are still being factorised
    (:func:`.formats.trec.read_trec_run`), and hands it to :func:`rank_codes`.

    Args:
        query_codes: int array (n,).
        scores: float array (n,), no NaN.

    Returns:
        int64 permutation (n,), or ``None`` for the identity.
    """
    q = np.asarray(query_codes, dtype=np.int64)
    s = np.asarray(scores, dtype=np.float64)
    if len(s) < 2:
        return None
    same = q[1:] == q[:-1]
    scores_ok = not (same & (s[1:] > s[:-1])).any()
    contiguous = int((~same).sum()) + 1 == _n_distinct(q)
    if scores_ok and bool((q[1:] >= q[:-1]).all()):
        return None
    if scores_ok and contiguous:
        return np.argsort(q, kind="stable")  # contiguous queries in another order
    order = _sort_blocks(q, s, same) if contiguous else None
    return np.lexsort((-s, q)) if order is None else order


_UNSET: Any = object()


def rank_codes(
    query_codes: np.ndarray,
    scores: np.ndarray,
    doc_uniques: np.ndarray,
    doc_codes: np.ndarray,
    *,
    tie_break: TieBreak = "docid_desc",
    order: np.ndarray | None = _UNSET,
) -> np.ndarray | None:
    """:func:`rank_order` on factorised doc ids; ``None`` when the entries are already ranked.

    The rule is the same (query code ascending, score descending, doc id descending or, with
    ``tie_break="docid_asc"``, ascending; entries equal on all three keep their input order),
    computed without sorting everything: when each query's entries are contiguous with
    non-increasing scores (a retriever's usual output) only the groups of tied scores are
    sorted by doc id.

    Args:
        query_codes: int array (n,).
        scores: float array (n,), no NaN.
        doc_uniques: object array (u,) of doc ids, in any order (or a pyarrow string array: only
            the ids of tied entries are converted).
        doc_codes: int array (n,), ``doc_uniques[doc_codes]`` = the doc id of each entry.
        tie_break: as :func:`rank_order`.
        order: :func:`score_order` of these *query_codes* and *scores* when the caller has it
            (``None`` included: the identity); computed here otherwise.

    Returns:
        int64 permutation (n,), or ``None`` for the identity.
    """
    q = np.asarray(query_codes, dtype=np.int64)
    s = np.asarray(scores, dtype=np.float64)
    n = len(s)
    if n < 2:
        return None
    if order is _UNSET:
        order = score_order(q, s)
    if order is not None:
        q, s = q[order], s[order]
    tie = (q[1:] == q[:-1]) & (s[1:] == s[:-1])
    if not tie.any():
        return order
    member = np.zeros(n, dtype=bool)
    member[:-1] |= tie
    member[1:] |= tie
    pos = np.flatnonzero(member)
    continues = np.zeros(len(pos), dtype=bool)
    continues[1:] = tie[pos[1:] - 1]
    group = np.cumsum(~continues)
    codes = np.asarray(doc_codes)[pos if order is None else order[pos]]
    involved, inverse = np.unique(codes, return_inverse=True)
    string_rank = np.empty(len(involved), dtype=np.int64)
    string_rank[np.argsort(objects_at(doc_uniques, involved), kind="stable")] = np.arange(
        len(involved)
    )
    key = string_rank[inverse.reshape(-1)]
    if tie_break == "docid_desc":
        key = -key
    original = pos if order is None else order[pos]  # equal keys keep their input order
    within = np.lexsort((original, key, group))
    perm = np.arange(n, dtype=np.int64)
    perm[pos] = pos[within]
    return perm if order is None else order[perm]


def _sort_blocks(q: np.ndarray, s: np.ndarray, same: np.ndarray) -> np.ndarray | None:
    """Order by (query, score descending) when each query's entries are contiguous.

    Sorts each query's block as a row of a padded matrix (much faster than a global lexsort);
    ``None`` when the blocks are too uneven for that. The order inside groups of equal scores
    is arbitrary here; :func:`rank_codes` settles it afterwards.
    """
    n = len(s)
    block_starts = np.flatnonzero(np.concatenate([[True], ~same]))
    block_len = np.diff(np.append(block_starts, n))
    width = int(block_len.max())
    if len(block_len) * width > 2 * n + 4096:
        return None
    row_order = np.argsort(q[block_starts], kind="stable")
    if int(block_len.min()) == width:  # equal blocks (a fixed depth): no padding
        within = np.argsort((-s).reshape(len(block_len), width), axis=1)[row_order]
        within += block_starts[row_order][:, None]
        return within.reshape(-1)
    # blocks are contiguous and in file order, so a row-major mask scatters them in place
    filled = np.arange(width) < block_len[:, None]
    keys = np.full((len(block_len), width), np.inf)
    keys[filled] = -s
    within = np.argsort(keys, axis=1)[row_order]
    valid = within < block_len[row_order][:, None]
    return (within + block_starts[row_order][:, None])[valid]


def _n_distinct(values: np.ndarray) -> int:
    low, high = int(values.min()), int(values.max())
    if high - low <= 4 * len(values):
        return int(np.count_nonzero(np.bincount(values - low)))
    return len(np.unique(values))


def is_ranked(query_codes: np.ndarray, scores: np.ndarray, doc_ids: np.ndarray) -> bool:
    """True when the entries are already grouped by query and ranked by :func:`rank_order`."""
    n = len(scores)
    if n < 2:
        return True
    order = rank_order(query_codes, scores, doc_ids)
    return bool(np.array_equal(order, np.arange(n)))

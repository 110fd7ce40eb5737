"""The one ranking rule of nuggetbench (trec_eval's).

Within a query, documents are ordered by score descending; ties are broken by doc id in
**descending** string order (``strcmp`` on the docno, as trec_eval's ``form_res_rels.c`` does).
Any rank column of an input file is ignored. Every ranking in the package goes through
:func:`rank_order`; profiles that sort differently (ndeval's rank column, pyndeval's ascending
doc ids) pass an explicit ``tie_break``.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

TieBreak = Literal["docid_desc", "docid_asc"]


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
) -> np.ndarray:
    """Permutation that groups entries by query (ascending code) and ranks them within each query.

    Args:
        query_codes: int array, shape (n,), the query of each entry.
        scores: float array, shape (n,).
        doc_ids: object/str array, shape (n,).
        tie_break: ``"docid_desc"`` (trec_eval, the default) or ``"docid_asc"`` (pyndeval/FreshStack).

    Returns:
        int64 array of shape (n,): apply it to the three arrays to obtain the ranked order.
    """
    _, doc_codes = factorize_sorted(doc_ids)
    doc_key = -doc_codes if tie_break == "docid_desc" else doc_codes
    # lexsort: last key is primary
    return np.lexsort((doc_key, -np.asarray(scores, dtype=np.float64), np.asarray(query_codes)))


def is_ranked(query_codes: np.ndarray, scores: np.ndarray, doc_ids: np.ndarray) -> bool:
    """True when the entries are already grouped by query and ranked by :func:`rank_order`."""
    n = len(scores)
    if n < 2:
        return True
    order = rank_order(query_codes, scores, doc_ids)
    return bool(np.array_equal(order, np.arange(n)))

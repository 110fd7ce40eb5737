"""bm25s' stored scores computed from token counts, vectorised (no per-document Python loop).

Both bm25s layouts store, for every (document, token) pair, ``idf(token) * tfc(tf, |d|)`` in
float32, exactly as ``bm25s.BM25.index`` does (``bm25s.scoring._build_scores_and_indices_for_
matrix``): the idf and non-occurrence arrays come from bm25s' own functions
(:mod:`nuggetbench.text.bm25s_private`), and :func:`pair_scores` applies bm25s' term-frequency
function to whole arrays with the operand types bm25s uses per document (``tf`` float32, ``|d|``
an integer, the average length a float64 scalar, ``idf`` float32; the product rounded to
float32), so every stored score equals bm25s' bit for bit (``tests/test_bm25_single_build.py``
compares the arrays with a ``bm25s.BM25`` index for every method).
"""

from __future__ import annotations

import numpy as np

from nuggetbench.text.bm25s_private import private_api

__all__ = ["NONOCCURRENCE_METHODS", "idf_array", "nonoccurrence_array", "pair_scores", "pairs_of"]

NONOCCURRENCE_METHODS = ("bm25l", "bm25+")
"""Variants that give a document a score for query terms it lacks (bm25s' non-occurrence array)."""


def pairs_of(tokens: np.ndarray, lens: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct (token, document) pairs of a batch, sorted by token then document, with
    their counts: ``(tokens, documents, counts)``, int64 arrays of the same length.

    Args:
        tokens: the token ids of every document, document after document.
        lens: tokens per document, shape ``(n,)``."""
    n = max(len(lens), 1)
    doc = np.repeat(np.arange(len(lens), dtype=np.int64), lens)
    key = tokens.astype(np.int64) * n + doc
    uniq, counts = np.unique(key, return_counts=True)
    return uniq // n, uniq % n, counts


def idf_array(df: np.ndarray, n_docs: int, method: str) -> np.ndarray:
    """float32 ``(vocabulary,)``: bm25s' idf of each token from its document frequency *df*
    (0 where ``df == 0``), over *n_docs* documents."""
    api = private_api()
    return api.build_idf_array(
        doc_frequencies={t: int(c) for t, c in enumerate(df.tolist())},
        n_docs=n_docs,
        compute_idf_fn=api.select_idf_scorer(method),
        dtype="float32",
    )


def nonoccurrence_array(
    df: np.ndarray, n_docs: int, method: str, k1: float, b: float, delta: float, avg_doc_len
) -> np.ndarray | None:
    """bm25s' non-occurrence score per token (float32 ``(vocabulary,)``) for ``bm25l`` and
    ``bm25+``; ``None`` for the other methods."""
    if method not in NONOCCURRENCE_METHODS:
        return None
    api = private_api()
    return api.build_nonoccurrence_array(
        doc_frequencies={t: int(c) for t, c in enumerate(df.tolist())},
        n_docs=n_docs,
        compute_idf_fn=api.select_idf_scorer(method),
        calculate_tfc_fn=api.select_tfc_scorer(method),
        l_d=avg_doc_len,
        l_avg=avg_doc_len,
        k1=k1,
        b=b,
        delta=delta,
        dtype="float32",
    )


def pair_scores(
    counts: np.ndarray,
    doc_lens: np.ndarray,
    idf: np.ndarray,
    *,
    method: str,
    k1: float,
    b: float,
    delta: float,
    avg_doc_len: np.float64,
    nonoccurrence: np.ndarray | None = None,
) -> np.ndarray:
    """float32 stored scores of pairs (one per element): ``idf * tfc(counts, doc_lens)``, less
    the token's *nonoccurrence* score for bm25l/bm25+ (bm25s subtracts it at index time and
    adds the query's sum back at search time).

    Args:
        counts: occurrences of the token in the document (any integer dtype).
        doc_lens: the document's length in tokens (int64).
        idf: float32, the token's idf; nonoccurrence: float32, the token's, or ``None``.
        method, k1, b, delta: the BM25 variant; avg_doc_len: float64 mean document length.
    """
    tfc = private_api().select_tfc_scorer(method)(
        tf_array=counts.astype(np.float32),
        l_d=doc_lens,
        l_avg=np.float64(avg_doc_len),
        k1=k1,
        b=b,
        delta=delta,
    )
    scores = idf * tfc
    if nonoccurrence is not None:
        scores -= nonoccurrence
    return scores.astype(np.float32)

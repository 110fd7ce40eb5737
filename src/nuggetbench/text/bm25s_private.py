"""The private functions of bm25s that nuggetbench relies on, in one place.

bm25s has no public API for its scoring pieces or its stopword lists by language code, and
nuggetbench needs them to give bm25s' own numbers where bm25s itself is not called: the sharded
BM25 index scores each shard with bm25s' idf and term-frequency functions from the *global*
statistics (every stored score equals the single index's, bit for bit), and the analyzers take
bm25s' stopword lists. They are reached only through :func:`private_api`, which fails loudly
(naming the installed version and the tested range) when bm25s moves them; the range is pinned in
``pyproject.toml`` and ``tests/test_bm25s_private.py`` checks both the names and the numbers
against a ``bm25s.BM25`` index.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

TESTED = ">=0.2.10,<0.4"
"""The bm25s versions these private functions are tested with (the pin in ``pyproject.toml``)."""


@dataclass(frozen=True)
class PrivateApi:
    """bm25s' private functions, by role.

    Attributes:
        infer_stopwords: ``(name) -> list of words``: a language code (``"en"``) or a list.
        build_idf_array: ``(doc_frequencies={token id: df}, n_docs=, compute_idf_fn=,
            dtype=) -> float array (vocabulary,)``.
        select_idf_scorer: ``(method) -> idf function`` (Kamphuis et al., ECIR 2020).
        select_tfc_scorer: ``(method) -> function(tf_array=, l_d=, l_avg=, k1=, b=, delta=)``.
        build_nonoccurrence_array: ``(doc_frequencies=, n_docs=, compute_idf_fn=,
            calculate_tfc_fn=, l_d=, l_avg=, k1=, b=, delta=, dtype=) -> float array
            (vocabulary,)``: bm25l/bm25+'s score of a term a document lacks.
    """

    infer_stopwords: Callable[..., Any]
    build_idf_array: Callable[..., Any]
    select_idf_scorer: Callable[..., Any]
    select_tfc_scorer: Callable[..., Any]
    build_nonoccurrence_array: Callable[..., Any]


def private_api() -> PrivateApi:
    """bm25s' private functions (see the module doc).

    Raises:
        ImportError: bm25s is missing, or it no longer has one of them (the message names the
            installed version and :data:`TESTED`).
    """
    import bm25s

    try:
        from bm25s.scoring import (
            _build_idf_array,
            _build_nonoccurrence_array,
            _select_idf_scorer,
            _select_tfc_scorer,
        )
        from bm25s.tokenization import _infer_stopwords
    except ImportError as exc:
        raise ImportError(
            f"bm25s {getattr(bm25s, '__version__', '?')} no longer has a private function "
            f"nuggetbench uses ({exc}); nuggetbench is tested with bm25s{TESTED}: "
            f"pip install 'bm25s{TESTED}'"
        ) from exc
    return PrivateApi(
        _infer_stopwords,
        _build_idf_array,
        _select_idf_scorer,
        _select_tfc_scorer,
        _build_nonoccurrence_array,
    )


__all__ = ["PrivateApi", "TESTED", "private_api"]

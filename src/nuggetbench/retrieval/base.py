"""Retrieval protocols: ``Retriever``, ``Index``, ``Reranker``.

Small structural protocols with keyword-only options, so any object with the right methods
works (no base class to inherit)::

    index = retriever.index(corpus)            # Retriever -> Index
    run = index.search(queries, k=1000)        # Index -> Run
    run = reranker.rerank(queries, run, corpus, k=100)

``doc_filter`` is an optional ``{query_id: collection of doc_ids}``: each listed query is
scored only against its candidates (BIRCO pools, fastbook's chapter restriction); queries that
are not listed search the whole corpus.

Composition (``retriever >> reranker``, fusion) is built on these protocols in a later layer.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Protocol, runtime_checkable

from ..data import Corpus, Queries, Run

DocFilter = Mapping[str, Collection[str]]
"""``{query_id: candidate doc ids}``; queries absent from the mapping are unrestricted."""


@runtime_checkable
class Index(Protocol):
    """A searchable index built by :meth:`Retriever.index`."""

    name: str

    def search(
        self,
        queries: Queries,
        k: int,
        *,
        doc_filter: DocFilter | None = None,
        show_progress: bool = False,
    ) -> Run:
        """Return the top *k* documents of every query.

        Args:
            queries: ``query_id -> text``.
            k: depth (documents per query, >= 1). A corpus smaller than *k* returns what it has.
            doc_filter: optional per-query candidate restriction (see the module docstring).
            show_progress: show progress bars.

        Returns:
            A :class:`Run` with one entry list per query (possibly empty), named after the
            retriever's canonical spec.
        """
        ...


@runtime_checkable
class Retriever(Protocol):
    """Something that indexes a corpus; ``name`` is its canonical spec (``bm25:k1=0.9,b=0.4``)."""

    name: str

    def index(self, corpus: Corpus, *, show_progress: bool = False) -> Index:
        """Index *corpus* (or load a cached index of it) and return the :class:`Index`."""
        ...


@runtime_checkable
class Reranker(Protocol):
    """Something that re-scores the candidates of a run."""

    name: str

    def rerank(
        self, queries: Queries, run: Run, corpus: Corpus, k: int, *, show_progress: bool = False
    ) -> Run:
        """Re-score the top *k* candidates of each query of *run*; return the new run."""
        ...


def check_k(k: int) -> int:
    """Validate a search depth: an ``int`` >= 1.

    Raises:
        InputError: *k* is not a positive integer.
    """
    import numbers

    from ..errors import InputError

    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
        raise InputError(f"k (the search depth) must be a positive integer, got {k!r}")
    return int(k)

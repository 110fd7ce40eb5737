"""Retrieval protocols: ``Retriever``, ``Index``, ``Reranker``.

Small structural protocols with keyword-only options, so any object with the right methods
works (no base class to inherit)::

    index = retriever.index(corpus)                          # Retriever -> Index
    run = index.search(queries, k=1000, objective=None)      # Index -> Run
    run = reranker.rerank(queries, run, corpus, k=100)       # Reranker: Run -> Run

``doc_filter`` is an optional ``{query_id: collection of doc_ids}``: each listed query is
scored only against its candidates (BIRCO pools, fastbook's chapter restriction); queries that
are not listed search the whole corpus.

``objective`` is a task instruction (BIRCO's "+O" setting). Every index and reranker accepts it;
a retriever that can use it declares ``uses_objective = True`` (dense prompts it, BM25 expands
the query with it), the others ignore it, and the experiment notes that it had no effect.
:func:`search` and :func:`rerank` call the protocol methods, passing ``objective`` only when one
is given (so indexes written before the protocol had it keep working).

Composition (``retriever >> reranker``, fusion) is in :mod:`.compose`; caching wrappers in
:mod:`.caching`; spec strings in :mod:`.spec`.
"""

from __future__ import annotations

import numbers
from collections.abc import Collection, Mapping
from typing import Any, Protocol, runtime_checkable

from nuggetbench.data import Corpus, Queries, Run
from nuggetbench.errors import InputError

__all__ = [
    "IndexBase",
    "DocFilter",
    "Index",
    "Reranker",
    "Retriever",
    "check_k",
    "rerank",
    "search",
    "uses_objective",
]

DocFilter = Mapping[str, Collection[str]]
"""``{query_id: candidate doc ids}``; queries absent from the mapping are unrestricted."""


class IndexBase:
    """What every built index of nuggetbench shares, so no index reaches into its retriever.

    Attributes:
        retriever: the retriever that built it: ``name`` is its canonical spec, and
            :meth:`tokenize` its public ``tokenize`` (for retrievers that tokenize queries).
        doc_ids: the indexed documents' ids, in index order (``len(index)`` is their number).

    Subclasses implement :meth:`search` with the :class:`Index` signature.
    """

    retriever: Any
    doc_ids: Any

    @property
    def name(self) -> str:
        """The retriever's canonical spec."""
        return self.retriever.name

    def __len__(self) -> int:
        return len(self.doc_ids)

    def tokenize(self, texts: list[str]) -> Any:
        """*texts* (queries) tokenized as the retriever tokenized the documents
        (``retriever.tokenize(texts)``; lexical retrievers only: model-backed ones encode)."""
        return self.retriever.tokenize(texts)

    def search(
        self,
        queries: Queries,
        k: int,
        *,
        doc_filter: DocFilter | None = None,
        show_progress: bool = False,
        objective: str | None = None,
    ) -> Run:
        """The top *k* documents of each query (see :class:`Index`)."""
        raise NotImplementedError


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
        objective: str | None = None,
    ) -> Run:
        """Return the top *k* documents of every query.

        Args:
            queries: ``query_id -> text``.
            k: depth (documents per query, >= 1). A corpus smaller than *k* returns what it has.
            doc_filter: optional per-query candidate restriction (see the module docstring).
            show_progress: show progress bars.
            objective: optional task instruction; ignored unless the retriever ``uses_objective``.

        Returns:
            A :class:`Run` with one entry list per query (possibly empty), named after the
            retriever's canonical spec.

        Raises:
            InputError: *k* is not a positive integer.
        """
        ...


@runtime_checkable
class Retriever(Protocol):
    """Something that indexes a corpus.

    Attributes:
        name: its canonical spec (``bm25:k1=0.9,b=0.4``).
        uses_objective: whether its index uses the ``objective`` of a search (optional
            attribute; absent means ``False``).
    """

    name: str

    def index(self, corpus: Corpus, *, show_progress: bool = False) -> Index:
        """Index *corpus* (or load a cached index of it) and return the :class:`Index`."""
        ...


@runtime_checkable
class Reranker(Protocol):
    """Something that re-scores the candidates of a run."""

    name: str

    def rerank(
        self,
        queries: Queries,
        run: Run,
        corpus: Corpus,
        k: int,
        *,
        show_progress: bool = False,
        objective: str | None = None,
    ) -> Run:
        """Re-score the top *k* candidates of each query of *run*; return the new run."""
        ...


def uses_objective(component: Any) -> bool:
    """Whether a retriever or reranker declares that it uses a task objective."""
    return bool(getattr(component, "uses_objective", False))


def search(
    index: Index,
    queries: Queries,
    k: int,
    *,
    doc_filter: DocFilter | None = None,
    show_progress: bool = False,
    objective: str | None = None,
) -> Run:
    """``index.search(queries, k, ...)``, passing ``objective`` only when one is given."""
    extra = {"objective": objective} if objective is not None else {}
    return index.search(queries, k, doc_filter=doc_filter, show_progress=show_progress, **extra)


def rerank(
    reranker: Reranker,
    queries: Queries,
    run: Run,
    corpus: Corpus,
    k: int,
    *,
    show_progress: bool = False,
    objective: str | None = None,
) -> Run:
    """``reranker.rerank(...)``, passing ``objective`` only when one is given."""
    extra = {"objective": objective} if objective is not None else {}
    return reranker.rerank(queries, run, corpus, k, show_progress=show_progress, **extra)


def check_k(k: int) -> int:
    """Validate a search depth: an ``int`` >= 1.

    Raises:
        InputError: *k* is not a positive integer.
    """
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
        raise InputError(f"k (the search depth) must be a positive integer, got {k!r}")
    return int(k)

"""Plumbing shared by the model-backed retrievers (dense, sparse, ColBERT, cross-encoder).

* :class:`ModelBacked`: device / precision / OOM back-off set-up, lazy model loading, the identity
  fields every model-backed retriever records, and the run a reranker returns;
* :class:`BlockIndex`: the bookkeeping of an index searched exhaustively in blocks with a running
  top-k (:func:`~.topk.search_topk`);
* :func:`encode_by_length`: encode a corpus longest document first, in chunks, with a progress bar.

Nothing here imports torch or sentence-transformers at module import time.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from nuggetbench.data import Corpus, Queries, Run
from nuggetbench.retrieval.models import embcache
from nuggetbench.retrieval.models.loading import (
    BatchBackoff,
    load_model,
    pick_device,
    progress_bar,
    resolve_model,
    split_depth,
    text_lengths,
    use_fp16,
)
from nuggetbench.retrieval.models.topk import TopKStats, search_topk, tie_keys, with_empty_queries
from nuggetbench.retrieval.protocols import IndexBase
from nuggetbench.spec import Options, format_colon_spec


class ModelBacked:
    """Mixin of the retrievers wrapping one sentence-transformers model.

    A subclass sets ``PREFIX`` (spec prefix), ``LOADER`` (the sentence-transformers class, e.g.
    ``"SentenceTransformer"``) and ``WHAT`` (the model's name in messages), and in ``__init__``
    sets ``model_name``, ``ref`` (:class:`~._models.ModelRef`) and ``options`` (with
    ``trust_remote_code``) before calling :meth:`_setup_model`.
    """

    PREFIX: str
    LOADER: str
    WHAT: str
    options: Options

    OPTIONS: type[Options]

    def _configure(
        self, model: str, options: Options | None, kwargs: dict[str, Any], *, depth: bool = False
    ) -> None:
        """Set ``options`` (``OPTIONS(**kwargs)`` unless given), ``model_name`` and ``ref`` (the
        model resolved before any work); with *depth*, a ``MODEL@N`` suffix sets ``options.depth``
        and ``depth``.

        Raises:
            SpecError: an option of the wrong type or out of range.
            ModelError: the model cannot be found.
        """
        name = str(model)
        opts = options if options is not None else self.OPTIONS(**kwargs)
        if depth:
            name, at = split_depth(name)
            if at is not None:
                opts = replace(opts, depth=at)
            self.depth = int(opts.depth)
        self.options = opts
        self.model_name = name
        self.ref = resolve_model(name, revision=opts["revision"], what=self.WHAT)

    def _spec_name(self, label: str, options: Options) -> str:
        """``PREFIX:label[,opt=value...]`` with the options that differ from their defaults."""
        return format_colon_spec(self.PREFIX, options.changed(), first=label)

    def _setup_model(self, *, action: str = "encoding") -> None:
        """Set ``device``, ``fp16``, ``backoff`` (OOM batch halving) and the unloaded model from
        ``self.options`` (``device``, ``fp16``, ``batch_size``)."""
        self.device = pick_device(self.options["device"])
        self.fp16 = use_fp16(self.options["fp16"], self.device)
        self.backoff = BatchBackoff(
            self.options["batch_size"], what=f"{action} with {self.model_name}"
        )
        self._model = None

    def _loaded_model(self, **kwargs: Any):
        """The model, loaded on first use (*kwargs* go to :func:`~._models.load_model`).

        Raises:
            ModelError: sentence-transformers is missing or the model cannot be loaded.
        """
        if self._model is None:
            self._model = load_model(
                self.LOADER,
                self.ref,
                device=self.device,
                fp16=self.fp16,
                trust_remote_code=self.options["trust_remote_code"],
                what=self.WHAT,
                **kwargs,
            )
            self._on_load()
        return self._model

    def _on_load(self) -> None:
        """Hook run once after the model is loaded."""

    def _model_identity(self) -> dict[str, Any]:
        """``kind``, ``model``, ``model_fingerprint`` and ``precision`` (cache-key fields)."""
        return {
            "kind": self.PREFIX,
            "model": self.model_name,
            "model_fingerprint": self.ref.fingerprint,
            "precision": "fp16" if self.fp16 else "fp32",
        }

    def _corpus_key(
        self, corpus: Corpus, doc_ids: list[str], *, drop: tuple[str, ...] = ()
    ) -> dict:
        """Cache key of the document vectors of *corpus*: :meth:`identity` less the *drop* fields
        (those that affect queries only), plus the corpus fingerprint, size and id digest."""
        key = {
            **self.identity(),
            "corpus": corpus.fingerprint(),
            "n_docs": len(doc_ids),
            "doc_ids": embcache.doc_ids_digest(doc_ids),
        }
        for field in drop:
            key.pop(field)
        return key

    def _reranked_run(
        self, queries: Queries, run: Run, k: int, q_col: Any, d_col: Any, scores: Any
    ) -> Run:
        """The run of re-scored ``(query, doc, score)`` columns, named ``<first stage> >> <name>``;
        queries of *queries* without an entry are kept with no results."""
        out = Run(
            q_col,
            d_col,
            scores,
            name=f"{run.name} >> {self.name}" if run.name else self.name,
            metadata={
                "reranker": self.name,
                "model_fingerprint": self.ref.fingerprint,
                "depth": k,
                "first_stage": run.name,
            },
        )
        missing = sorted(set(queries) - set(out.query_ids))
        return with_empty_queries(out, missing) if missing else out


class BlockIndex(IndexBase):
    """Base of the indexes searched exactly in blocks with a running top-k.

    Attributes:
        retriever: the retriever that built the index (encodes queries, holds the options
            ``query_block`` and ``doc_block``).
        doc_ids: (n_docs,) object array, the ids of the rows.
        cache_path: where the document vectors are cached (``None``: in memory only).
        from_cache: whether the vectors were loaded from the cache rather than encoded (the
            run metadata's ``index_from_cache``, as BM25's: the index seconds of a run are
            then a load's, not an encoding's).
        stats: :class:`~.topk.TopKStats` of the last search.
    """

    def __init__(
        self,
        retriever: Any,
        doc_ids: list[str],
        *,
        cache_path: str | None = None,
        from_cache: bool = False,
    ):
        self.retriever = retriever
        self.doc_ids = np.asarray(doc_ids, dtype=object)
        self.cache_path = cache_path
        self.from_cache = from_cache
        self._ties = tie_keys(self.doc_ids)
        self._lookup: dict[str, int] | None = None
        self.stats = TopKStats()

    def _check_dim(self, stored: int, got: int) -> None:
        """Raise :class:`~nuggetbench.errors.CacheError` when query vectors have *got* dimensions
        and the document vectors *stored*."""
        if got != stored:
            embcache.check_dim(
                stored, got, self.cache_path or "(memory)", self.retriever.model_name
            )

    def _meta(self, **fields: Any) -> dict[str, Any]:
        """Run metadata: ``retriever``, ``model``, ``model_fingerprint``, ``index_from_cache``,
        then *fields*."""
        r = self.retriever
        return {
            "retriever": r.name,
            "model": r.model_name,
            "model_fingerprint": r.ref.fingerprint,
            "index_from_cache": self.from_cache,
            **fields,
        }

    def _search_blocks(
        self,
        score: Callable[[np.ndarray, np.ndarray], np.ndarray],
        qids: list[str],
        k: int,
        doc_filter: Mapping[str, Collection[str]] | None,
        meta: dict[str, Any],
    ) -> Run:
        """:func:`~.topk.search_topk` over all rows with ``score(query rows, doc rows)``."""
        if doc_filter and self._lookup is None:
            self._lookup = {d: i for i, d in enumerate(self.doc_ids.tolist())}
        self.stats = TopKStats()
        r = self.retriever
        return search_topk(
            score,
            qids,
            self.doc_ids,
            k,
            doc_filter=doc_filter,
            doc_lookup=self._lookup,
            tie_key=self._ties,
            query_block=r.options["query_block"],
            doc_block=r.options["doc_block"],
            stats=self.stats,
            name=r.name,
            metadata=meta,
        )


def contiguous(rows: np.ndarray) -> bool:
    """True when *rows* (ascending) is a non-empty run ``a, a+1, ..., b`` (sliceable)."""
    return len(rows) > 0 and int(rows[-1]) - int(rows[0]) + 1 == len(rows)


def encode_in_length_order(
    texts_of: Callable[[list[str]], list[str]],
    doc_ids: list[str],
    lengths: np.ndarray,
    encode: Callable[[list[str]], Any],
    store: Callable[[np.ndarray, Any], None],
    *,
    chunk: int,
    progress: Callable[[int], Any] | None = None,
    step: int | None = None,
) -> np.ndarray:
    """Encode documents longest first (stable), *chunk* at a time: ``store(rows, encode(texts))``.

    Args:
        texts_of: ``texts_of(ids) -> list[str]``.
        doc_ids: all ids, in index order.
        lengths: text length (characters) of each document, shape (n,).
        encode: ``encode(texts) -> vectors of those texts``.
        store: receives the (chunk,) int array of rows of *doc_ids* and their vectors.
        chunk: documents per encode call.
        progress: optional callable receiving the number of documents done after each call.
        step: with *progress*, documents per call when smaller than *chunk* (the model's batch
            size: the bar then moves every batch rather than every chunk; the documents being
            in length order already, the batches are the same).

    Returns:
        The encoding order, (n,) int array of rows.
    """
    order = np.argsort(-lengths, kind="stable")
    stride = min(chunk, step) if progress is not None and step else chunk
    for start in range(0, len(order), stride):
        rows = order[start : start + stride]
        store(rows, encode(texts_of([doc_ids[i] for i in rows.tolist()])))
        if progress is not None:
            progress(len(rows))
    return order


def encode_by_length(
    corpus: Corpus,
    doc_ids: list[str],
    *,
    with_title: bool,
    chunk: int,
    encode: Callable[[list[str]], Any],
    store: Callable[[np.ndarray, Any], None],
    show_progress: bool,
    desc: str,
    step: int | None = None,
) -> np.ndarray:
    """:func:`encode_in_length_order` over *corpus* (texts with or without titles), with a
    progress bar titled *desc* (documents done, documents/s, ETA) moving every *step* documents
    when *show_progress*; returns the encoding order."""
    lengths = text_lengths(corpus, len(doc_ids), with_title=with_title)
    bar = progress_bar(show_progress, len(doc_ids), desc)
    try:
        return encode_in_length_order(
            lambda ids: corpus.texts(ids, with_title=with_title),
            doc_ids,
            lengths,
            encode,
            store,
            chunk=chunk,
            progress=bar.update if bar is not None else None,
            step=step,
        )
    finally:
        if bar is not None:
            bar.close()

"""Learned sparse retrieval with sentence-transformers ``SparseEncoder`` models (``sparse:MODEL``).

SPLADE-style models map a text to a vocabulary-sized non-negative vector. Documents are encoded
(longest first, in chunks, batch halved on out-of-memory) into a scipy CSR matrix ``(n_docs, vocab)``
cached as ``matrix.npz`` (:mod:`.embcache`). A query block is densified and multiplied with the CSR
document rows block by block (sparse x dense products), keeping a running exact top-k
(:mod:`.topk`), so memory is bounded by ``query_block x (vocab + doc_block)``.

``idf=true`` re-weights each query term by ``idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))`` at
query time (``N`` documents, ``df(t)`` documents with a non-zero weight for ``t``; the BM25 idf, as in
the learned-sparse retrieval recipe of sentence-transformers / SPLADE-v3-style IDF weighting).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from typing import Any

import numpy as np

from nuggetbench.data import Corpus, Queries, Run
from nuggetbench.retrieval.compose.pipeline import Composable
from nuggetbench.retrieval.models import embcache
from nuggetbench.retrieval.models.plumbing import (
    BlockIndex,
    ModelBacked,
    contiguous,
    encode_by_length,
)
from nuggetbench.retrieval.options import SparseOptions
from nuggetbench.retrieval.protocols import check_k

log = logging.getLogger(__name__)


def to_csr(tensor) -> Any:
    """A torch sparse (COO) or dense 2-D tensor / array -> ``scipy.sparse.csr_matrix`` float32."""
    import scipy.sparse as sp

    if sp.issparse(tensor):
        return sp.csr_matrix(tensor, dtype=np.float32)
    try:
        import torch

        if isinstance(tensor, torch.Tensor):
            if tensor.is_sparse:
                t = tensor.coalesce().cpu()
                idx = t.indices().numpy()
                vals = t.values().float().numpy()
                return sp.csr_matrix(
                    (vals, (idx[0], idx[1])), shape=tuple(t.shape), dtype=np.float32
                )
            return sp.csr_matrix(tensor.float().cpu().numpy())
        if isinstance(tensor, list) and tensor and isinstance(tensor[0], torch.Tensor):
            return sp.vstack(
                [to_csr(t.unsqueeze(0) if t.dim() == 1 else t) for t in tensor]
            ).tocsr()
    except ImportError:  # pragma: no cover
        pass
    return sp.csr_matrix(np.asarray(tensor, dtype=np.float32))


def idf_weights(doc_matrix) -> np.ndarray:
    """``ln(1 + (N - df + 0.5) / (df + 0.5))`` per vocabulary entry, shape (vocab,), float32."""
    n = doc_matrix.shape[0]
    df = np.bincount(doc_matrix.indices, minlength=doc_matrix.shape[1]).astype(np.float64)
    return np.log1p((n - df + 0.5) / (df + 0.5)).astype(np.float32)


class SparseRetriever(ModelBacked, Composable):
    """A SparseEncoder (SPLADE-style) retriever (spec ``sparse:MODEL[,option=value...]``).

    Args:
        model: hub id or local folder of a sentence-transformers SparseEncoder (checked at construction).
        options: a :class:`~nuggetbench.retrieval.options.SparseOptions` (``idf``: multiply query
            weights by the corpus idf, see the module docstring; the others as dense), or its
            fields as keyword arguments.
    """

    PREFIX = "sparse"
    LOADER = "SparseEncoder"
    WHAT = "sparse model"

    OPTIONS = SparseOptions

    def __init__(self, model: str, options: SparseOptions | None = None, /, **kwargs: Any):
        self._configure(model, options, kwargs)
        self.name = self._spec_name(self.model_name, self.options)
        self._setup_model()
        self.encode_calls = 0

    @property
    def model(self):
        """The loaded ``SparseEncoder`` (loaded on first use)."""
        return self._loaded_model(max_length=self.options["max_length"])

    def identity(self) -> dict:
        return {
            **self._model_identity(),
            "idf": self.options["idf"],
            "max_length": self.options["max_length"],
            "with_title": self.options["with_title"],
        }

    def _encode(self, texts: list[str], batch_size: int, *, query: bool) -> Any:
        fn = self.model.encode_query if query else self.model.encode_document
        return to_csr(
            fn(
                texts,
                batch_size=batch_size,
                convert_to_tensor=True,
                convert_to_sparse_tensor=True,
                show_progress_bar=False,
            )
        )

    def encode_queries(self, texts: list[str]):
        """CSR ``(len(texts), vocab)`` query vectors."""
        return self.backoff(lambda items, bs: self._encode(items, bs, query=True), texts)

    def index(self, corpus: Corpus, *, show_progress: bool = False) -> SparseIndex:
        """Encode *corpus* (or load its cached CSR matrix) and return a :class:`SparseIndex`."""
        import scipy.sparse as sp

        doc_ids = corpus.doc_ids()
        key = self._corpus_key(corpus, doc_ids, drop=("idf",))
        artifact = embcache.Artifact("embeddings/sparse", key, label=self.model_name)
        cached = embcache.load_sparse(artifact, len(doc_ids)) if self.options["cache"] else None
        if cached is not None:
            log.info("loaded cached sparse vectors %s", artifact.path)
            return SparseIndex(
                self, doc_ids, cached[0], cache_path=str(artifact.path), from_cache=True
            )
        parts = []

        def encode(texts: list[str]) -> Any:
            self.encode_calls += 1
            return self.backoff(lambda items, bs: self._encode(items, bs, query=False), texts)

        order = encode_by_length(
            corpus,
            doc_ids,
            with_title=self.options["with_title"],
            chunk=self.options["chunk"],
            encode=encode,
            store=lambda rows, matrix: parts.append(matrix),
            show_progress=show_progress,
            desc="encoding corpus (sparse)",
            step=self.options["batch_size"],
        )
        vocab = parts[0].shape[1] if parts else 0
        stacked = sp.vstack(parts).tocsr() if parts else sp.csr_matrix((0, vocab), dtype=np.float32)
        matrix = stacked[np.argsort(order)] if len(order) else stacked
        matrix = sp.csr_matrix(matrix, dtype=np.float32)
        matrix.sort_indices()
        if self.options["cache"]:
            embcache.save_sparse(artifact, matrix)
        return SparseIndex(
            self, doc_ids, matrix, cache_path=str(artifact.path) if self.options["cache"] else None
        )


class SparseIndex(BlockIndex):
    """Document CSR matrix plus the retriever that encodes queries.

    Attributes:
        matrix: ``scipy.sparse.csr_matrix`` (n_docs, vocab) float32.
        idf: per-term idf (vocab,) when the retriever uses ``idf=true``, else ``None``.
        stats: :class:`~nuggetbench.retrieval.models.topk.TopKStats` of the last search.
    """

    def __init__(
        self,
        retriever: SparseRetriever,
        doc_ids: list[str],
        matrix,
        *,
        cache_path: str | None = None,
        from_cache: bool = False,
    ):
        super().__init__(retriever, doc_ids, cache_path=cache_path, from_cache=from_cache)
        self.matrix = matrix
        self.idf = idf_weights(matrix) if retriever.options["idf"] else None

    def search(
        self,
        queries: Queries,
        k: int,
        *,
        doc_filter: Mapping[str, Collection[str]] | None = None,
        show_progress: bool = False,
        objective: str | None = None,
    ) -> Run:
        """Top-*k* documents per query by the dot product of sparse vectors (see :class:`SparseRetriever`).

        Raises:
            CacheError: the model's vocabulary size differs from the cached matrix's.
        """
        import scipy.sparse as sp

        k = check_k(k)
        qids = list(queries)
        q = (
            self.retriever.encode_queries([queries[x] for x in qids])
            if qids
            else sp.csr_matrix((0, self.matrix.shape[1]), dtype=np.float32)
        )
        if qids:
            self._check_dim(self.matrix.shape[1], q.shape[1])
        if self.idf is not None:
            q = sp.csr_matrix(q.multiply(self.idf[None, :]), dtype=np.float32)
        matrix = self.matrix
        dense_cache: dict[bytes, np.ndarray] = {}

        def score(q_rows: np.ndarray, d_rows: np.ndarray) -> np.ndarray:
            key = q_rows.tobytes()
            qd = dense_cache.get(key)
            if qd is None:
                dense_cache.clear()
                qd = dense_cache[key] = q[q_rows].toarray()
            docs = matrix[d_rows[0] : d_rows[-1] + 1] if contiguous(d_rows) else matrix[d_rows]
            return np.asarray(docs @ qd.T).T

        meta = self._meta(idf=bool(self.retriever.options["idf"]), k=k)
        return self._search_blocks(score, qids, k, doc_filter, meta)

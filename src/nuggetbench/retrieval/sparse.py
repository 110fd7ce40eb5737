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

from ..data import Corpus, Queries, Run
from ..errors import InputError
from . import embcache
from ._models import BatchBackoff, load_model, pick_device, resolve_model, spec_name, use_fp16
from .pipeline import Composable
from .topk import TopKStats, search_topk, tie_keys

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


class SparseRetriever(Composable):
    """A SparseEncoder (SPLADE-style) retriever (spec ``sparse:MODEL[,option=value...]``).

    Args:
        model: hub id or local folder of a sentence-transformers SparseEncoder (checked at construction).
        idf: multiply query weights by the corpus idf (see the module docstring).
        batch_size, max_length, device, fp16, with_title, chunk, cache, revision, trust_remote_code:
            as :class:`~nuggetbench.retrieval.dense.DenseRetriever`.
        query_block, doc_block: block shape of the search.
    """

    PREFIX = "sparse"

    def __init__(
        self,
        model: str,
        *,
        idf: bool = False,
        batch_size: int = 32,
        max_length: int | None = None,
        device: str = "auto",
        fp16: bool | None = None,
        with_title: bool = True,
        query_block: int = 256,
        doc_block: int = 16384,
        chunk: int = 4096,
        cache: bool = True,
        revision: str | None = None,
        trust_remote_code: bool = False,
    ):
        if batch_size < 1 or query_block < 1 or doc_block < 1 or chunk < 1:
            raise InputError("batch_size, query_block, doc_block and chunk must be >= 1")
        self.model_name = str(model)
        self.ref = resolve_model(self.model_name, revision=revision, what="sparse model")
        self.options: dict[str, Any] = dict(
            idf=idf,
            batch_size=batch_size,
            max_length=max_length,
            device=device,
            fp16=fp16,
            with_title=with_title,
            query_block=query_block,
            doc_block=doc_block,
            chunk=chunk,
            cache=cache,
            revision=revision,
            trust_remote_code=trust_remote_code,
        )
        from .spec import spec_options

        self.name = spec_name(self.PREFIX, self.model_name, self.options, spec_options(type(self)))
        self.device = pick_device(device)
        self.fp16 = use_fp16(fp16, self.device)
        self.backoff = BatchBackoff(batch_size, what=f"encoding with {self.model_name}")
        self._model = None
        self.encode_calls = 0

    @property
    def model(self):
        """The loaded ``SparseEncoder`` (loaded on first use)."""
        if self._model is None:
            self._model = load_model(
                "SparseEncoder",
                self.ref,
                device=self.device,
                fp16=self.fp16,
                max_length=self.options["max_length"],
                trust_remote_code=self.options["trust_remote_code"],
                what="sparse model",
            )
        return self._model

    def identity(self) -> dict:
        return {
            "kind": self.PREFIX,
            "model": self.model_name,
            "model_fingerprint": self.ref.fingerprint,
            "precision": "fp16" if self.fp16 else "fp32",
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

        from ._models import progress_bar, text_lengths

        doc_ids = corpus.doc_ids()
        key = {
            **self.identity(),
            "corpus": corpus.fingerprint(),
            "n_docs": len(doc_ids),
            "doc_ids": embcache.doc_ids_digest(doc_ids),
        }
        key.pop("idf")
        artifact = embcache.Artifact("embeddings/sparse", key, label=self.model_name)
        cached = embcache.load_sparse(artifact, len(doc_ids)) if self.options["cache"] else None
        if cached is not None:
            log.info("loaded cached sparse vectors %s", artifact.path)
            return SparseIndex(self, doc_ids, cached[0], cache_path=str(artifact.path))
        with_title = self.options["with_title"]
        lengths = text_lengths(corpus, len(doc_ids), with_title=with_title)
        order = np.argsort(-lengths, kind="stable")
        bar = progress_bar(show_progress, len(doc_ids), "encoding corpus (sparse)")
        parts = []
        try:
            for start in range(0, len(order), self.options["chunk"]):
                rows = order[start : start + self.options["chunk"]]
                texts = corpus.texts([doc_ids[i] for i in rows.tolist()], with_title=with_title)
                self.encode_calls += 1
                parts.append(
                    self.backoff(lambda items, bs: self._encode(items, bs, query=False), texts)
                )
                if bar is not None:
                    bar.update(len(rows))
        finally:
            if bar is not None:
                bar.close()
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


class SparseIndex:
    """Document CSR matrix plus the retriever that encodes queries.

    Attributes:
        matrix: ``scipy.sparse.csr_matrix`` (n_docs, vocab) float32.
        idf: per-term idf (vocab,) when the retriever uses ``idf=true``, else ``None``.
        stats: :class:`~nuggetbench.retrieval.topk.TopKStats` of the last search.
    """

    def __init__(
        self,
        retriever: SparseRetriever,
        doc_ids: list[str],
        matrix,
        *,
        cache_path: str | None = None,
    ):
        self.retriever = retriever
        self.name = retriever.name
        self.doc_ids = np.asarray(doc_ids, dtype=object)
        self.matrix = matrix
        self.cache_path = cache_path
        self.idf = idf_weights(matrix) if retriever.options["idf"] else None
        self._ties = tie_keys(self.doc_ids)
        self._lookup: dict[str, int] | None = None
        self.stats = TopKStats()

    def search(
        self,
        queries: Queries,
        k: int,
        *,
        doc_filter: Mapping[str, Collection[str]] | None = None,
        show_progress: bool = False,
    ) -> Run:
        """Top-*k* documents per query by the dot product of sparse vectors (see :class:`SparseRetriever`).

        Raises:
            CacheError: the model's vocabulary size differs from the cached matrix's.
        """
        import scipy.sparse as sp

        from .base import check_k

        k = check_k(k)
        qids = list(queries)
        q = (
            self.retriever.encode_queries([queries[x] for x in qids])
            if qids
            else sp.csr_matrix((0, self.matrix.shape[1]), dtype=np.float32)
        )
        if qids and q.shape[1] != self.matrix.shape[1]:
            embcache.check_dim(
                self.matrix.shape[1],
                q.shape[1],
                self.cache_path or "(memory)",
                self.retriever.model_name,
            )
        if self.idf is not None:
            q = sp.csr_matrix(q.multiply(self.idf[None, :]), dtype=np.float32)
        if doc_filter and self._lookup is None:
            self._lookup = {d: i for i, d in enumerate(self.doc_ids.tolist())}
        matrix = self.matrix
        dense_cache: dict[bytes, np.ndarray] = {}

        def score(q_rows: np.ndarray, d_rows: np.ndarray) -> np.ndarray:
            key = q_rows.tobytes()
            qd = dense_cache.get(key)
            if qd is None:
                dense_cache.clear()
                qd = dense_cache[key] = q[q_rows].toarray()
            docs = (
                matrix[d_rows[0] : d_rows[-1] + 1]
                if int(d_rows[-1]) - int(d_rows[0]) + 1 == len(d_rows)
                else matrix[d_rows]
            )
            return np.asarray(docs @ qd.T).T

        self.stats = TopKStats()
        r = self.retriever
        meta = {
            "retriever": r.name,
            "model": r.model_name,
            "model_fingerprint": r.ref.fingerprint,
            "idf": bool(r.options["idf"]),
            "k": k,
        }
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

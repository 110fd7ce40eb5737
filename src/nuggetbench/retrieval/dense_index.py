"""The index side of dense retrieval: corpus embeddings searched exactly in blocks (or with faiss).

See :mod:`nuggetbench.retrieval.dense` for the retriever, prompts and caching.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING

import numpy as np

from ..data import Queries, Run
from ..errors import InputError
from ._common import BlockIndex, contiguous
from .base import check_k
from .topk import make_run

if TYPE_CHECKING:  # pragma: no cover
    from .dense import DenseRetriever


class DenseIndex(BlockIndex):
    """Corpus embeddings plus the retriever that encodes queries (see :class:`DenseRetriever`).

    Attributes:
        embeddings: (n_docs, dim) float32 array (memory-mapped when cached).
        doc_ids: ids of the rows.
        stats: :class:`~nuggetbench.retrieval.topk.TopKStats` of the last exact search.
    """

    def __init__(
        self,
        retriever: DenseRetriever,
        doc_ids: list[str],
        embeddings: np.ndarray,
        *,
        cache_path: str | None = None,
    ):
        super().__init__(retriever, doc_ids, cache_path=cache_path)
        self.embeddings = embeddings
        self._faiss = None

    def search(
        self,
        queries: Queries,
        k: int,
        *,
        doc_filter: Mapping[str, Collection[str]] | None = None,
        show_progress: bool = False,
        objective: str | None = None,
    ) -> Run:
        """Top-*k* documents per query by inner product (cosine when normalised).

        Args:
            queries: ``query_id -> text``.
            k: depth (>= 1).
            doc_filter: ``{query_id: candidate doc ids}``; listed queries score only their candidates.
            show_progress: progress bar for query encoding.
            objective: task objective for this search (overrides the retriever's).

        Returns:
            A :class:`Run` named after the retriever; metadata records model, prompts and normalisation.

        Raises:
            CacheError: the model's embedding size differs from the cached corpus embeddings'.
        """

        k = check_k(k)
        qids = list(queries)
        q = self.retriever.encode_queries(
            [queries[x] for x in qids], objective=objective, show_progress=show_progress
        )
        if len(qids):
            self._check_dim(self.embeddings.shape[1], q.shape[1])
        r = self.retriever
        meta = self._meta(
            prompts=list(r.prompts_used()),
            normalize=r._normalize(),
            k=k,
            objective=objective or r.options["objective"],
        )
        if r.options["faiss"] and not doc_filter:
            return self._faiss_search(qids, q, k, meta)
        emb = self.embeddings

        def score(q_rows: np.ndarray, d_rows: np.ndarray) -> np.ndarray:
            docs = emb[d_rows[0] : d_rows[-1] + 1] if contiguous(d_rows) else emb[d_rows]
            return q[q_rows] @ np.asarray(docs, dtype=np.float32).T

        return self._search_blocks(score, qids, k, doc_filter, meta)

    def _faiss_search(self, qids: list[str], q: np.ndarray, k: int, meta: dict) -> Run:
        try:
            import faiss
        except ImportError as exc:
            raise InputError("faiss=... needs faiss: pip install 'nuggetbench[faiss]'") from exc
        if self._faiss is None:
            index = faiss.index_factory(
                self.embeddings.shape[1],
                self.retriever.options["faiss"],
                faiss.METRIC_INNER_PRODUCT,
            )
            data = np.ascontiguousarray(self.embeddings, dtype=np.float32)
            if not index.is_trained:
                index.train(data)
            index.add(data)
            self._faiss = index
        scores, ids = self._faiss.search(
            np.ascontiguousarray(q, dtype=np.float32), min(k, len(self.doc_ids))
        )
        keep = ids >= 0
        qcol = np.repeat(np.asarray(qids, dtype=object), ids.shape[1]).reshape(ids.shape)[keep]

        return make_run(
            np.asarray(qids, dtype=object),
            [qcol],
            [ids[keep]],
            [scores[keep]],
            self.doc_ids,
            name=self.retriever.name,
            metadata={**meta, "faiss": self.retriever.options["faiss"]},
        )

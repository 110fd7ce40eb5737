"""The index side of dense retrieval: corpus embeddings searched exactly in blocks (or with faiss).

See :mod:`nuggetbench.retrieval.dense.retriever` for the retriever, prompts and caching.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING

import numpy as np

from nuggetbench.data import Queries, Run
from nuggetbench.errors import InputError
from nuggetbench.retrieval import distributed
from nuggetbench.retrieval.models.plumbing import BlockIndex, contiguous
from nuggetbench.retrieval.models.topk import make_run, select_topk
from nuggetbench.retrieval.protocols import check_k

if TYPE_CHECKING:  # pragma: no cover
    from nuggetbench.retrieval.dense.retriever import DenseRetriever


class DenseIndex(BlockIndex):
    """Corpus embeddings plus the retriever that encodes queries (see :class:`DenseRetriever`).

    Attributes:
        embeddings: (n_docs, dim) float32 array (memory-mapped when cached).
        doc_ids: ids of the rows.
        stats: :class:`~nuggetbench.retrieval.models.topk.TopKStats` of the last exact search.
    """

    def __init__(
        self,
        retriever: DenseRetriever,
        doc_ids: list[str],
        embeddings: np.ndarray,
        *,
        cache_path: str | None = None,
        from_cache: bool = False,
    ):
        super().__init__(retriever, doc_ids, cache_path=cache_path, from_cache=from_cache)
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
            normalize=r.normalizes(),
            k=k,
            objective=objective or r.options["objective"],
        )
        if (r.options["faiss"] or r.options["index"] != "exact") and not doc_filter:
            return self._faiss_search(qids, q, k, meta)
        emb = self.embeddings
        ray_mapper = distributed.active_ray()
        if ray_mapper is not None and not doc_filter and _npy_file(emb):
            # exact search over the same blocks, by Ray tasks reading the memory-mapped file
            return distributed.search_dense(
                ray_mapper,
                _npy_file(emb),
                len(self.doc_ids),
                q,
                qids,
                self.doc_ids,
                self._ties,
                k,
                query_block=r.options["query_block"],
                doc_block=r.options["doc_block"],
                span=r.options["shard_docs"] or 8 * r.options["doc_block"],
                name=r.name,
                metadata=meta,
                show_progress=show_progress,
            )

        def score(q_rows: np.ndarray, d_rows: np.ndarray) -> np.ndarray:
            docs = emb[d_rows[0] : d_rows[-1] + 1] if contiguous(d_rows) else emb[d_rows]
            return q[q_rows] @ np.asarray(docs, dtype=np.float32).T

        return self._search_blocks(score, qids, k, doc_filter, meta)

    def _faiss_search(self, qids: list[str], q: np.ndarray, k: int, meta: dict) -> Run:
        """Top-*k* from the faiss index: ``k + TIE_MARGIN`` candidates per query, cut to *k* in
        trec_eval's order (score descending, doc id descending), so a flat index ranks as the
        exact search does (its scores agree to float32 rounding: faiss sums in its own order)."""
        if self._faiss is None:
            self._faiss = build_faiss(
                self.embeddings,
                faiss_factory(self.retriever.options, len(self.doc_ids)),
                block=self.retriever.options["doc_block"],
            )
        set_search_params(self._faiss, self.retriever.options)
        scores, ids = self._faiss.search(
            np.ascontiguousarray(q, dtype=np.float32), min(k + TIE_MARGIN, len(self.doc_ids))
        )
        keep = ids >= 0
        ties = np.where(keep, self._ties[np.where(keep, ids, 0)], -1)
        scores = np.where(keep, scores, -np.inf)
        pos = np.broadcast_to(np.arange(ids.shape[1], dtype=np.int64), ids.shape)
        top, _ = select_topk(scores, pos, ties, min(k, ids.shape[1]))
        rows = np.arange(ids.shape[0])[:, None]
        ids, scores, keep = ids[rows, top], scores[rows, top], keep[rows, top]
        qcol = np.repeat(np.asarray(qids, dtype=object), ids.shape[1]).reshape(ids.shape)[keep]
        opts = self.retriever.options
        label = opts["faiss"] or opts["index"]
        return make_run(
            np.asarray(qids, dtype=object),
            [qcol],
            [ids[keep]],
            [scores[keep]],
            self.doc_ids,
            name=self.retriever.name,
            metadata={**meta, "faiss": faiss_factory(opts, len(self.doc_ids)), "index": label},
        )


TIE_MARGIN = 32
"""Extra candidates asked of faiss per query, so that documents tied at the k-th score are cut in
trec_eval's order rather than faiss' (id ascending)."""


def _npy_file(emb: np.ndarray) -> str | None:
    """The ``.npy`` file *emb* maps whole (what cluster tasks can open), else ``None``."""
    name = getattr(emb, "filename", None) if isinstance(emb, np.memmap) else None
    if not name or not str(name).endswith(".npy"):
        return None
    try:
        whole = np.load(name, mmap_mode="r")
    except (OSError, ValueError):
        return None
    return str(name) if whole.shape == emb.shape and whole.dtype == emb.dtype else None


def _faiss():
    try:
        import faiss  # lazy: optional extra
    except ImportError as exc:
        raise InputError(
            "index=flat|ivf|hnsw (or faiss=...) needs faiss: pip install 'nuggetbench[faiss]'"
        ) from exc
    return faiss


def faiss_factory(options, n_docs: int) -> str:
    """The faiss ``index_factory`` string of the dense options: ``faiss=...`` when given, else
    ``Flat`` (``index=flat``), ``IVF<nlist>,Flat`` (``index=ivf``; ``nlist=0``: about
    ``4 * sqrt(n_docs)``, at most ``n_docs``) or ``HNSW<hnsw_m>`` (``index=hnsw``)."""
    if options["faiss"]:
        return options["faiss"]
    kind = options["index"]
    if kind == "ivf":
        nlist = options["nlist"] or int(round(4 * np.sqrt(max(n_docs, 1))))
        return f"IVF{max(1, min(nlist, n_docs))},Flat"
    if kind == "hnsw":
        return f"HNSW{options['hnsw_m']}"
    return "Flat"


def build_faiss(embeddings: np.ndarray, factory: str, *, block: int = 16384, seed: int = 0):
    """A faiss inner-product index over *embeddings* ``(n, dim)`` (memory-mapped is fine).

    Vectors are added *block* rows at a time, so the transient float32 copy is one block; an index
    that needs training (IVF) is trained on at most ``256 * nlist`` rows drawn without replacement
    by ``numpy.random.default_rng(seed)`` (faiss' own guidance is 39 to 256 points per centroid).

    Raises:
        InputError: faiss is not installed, or the factory string is not one faiss knows.
    """
    faiss = _faiss()
    n, dim = embeddings.shape
    try:
        index = faiss.index_factory(int(dim), factory, faiss.METRIC_INNER_PRODUCT)
    except RuntimeError as exc:
        raise InputError(f"faiss index {factory!r}: {exc}") from exc
    if not index.is_trained:
        nlist = int(getattr(faiss.extract_index_ivf(index), "nlist", 1)) if "IVF" in factory else 1
        take = min(n, 256 * max(nlist, 1))
        rows = np.sort(np.random.default_rng(seed).choice(n, size=take, replace=False))
        index.train(np.ascontiguousarray(embeddings[rows], dtype=np.float32))
    for start in range(0, n, block):
        index.add(np.ascontiguousarray(embeddings[start : start + block], dtype=np.float32))
    return index


def set_search_params(index, options) -> None:
    """Apply ``nprobe`` (IVF) and ``ef_search`` (HNSW) of the dense options to a faiss index."""
    faiss = _faiss()
    try:
        ivf = faiss.extract_index_ivf(index)
    except RuntimeError:
        ivf = None
    if ivf is not None:
        ivf.nprobe = int(options["nprobe"])
    hnsw = getattr(index, "hnsw", None)
    if hnsw is not None:
        hnsw.efSearch = max(int(options["ef_search"]), 1)


def recall_against_exact(approx: Run, exact: Run, k: int) -> float:
    """Mean over the queries of *exact* of ``|top-k(approx) & top-k(exact)| / |top-k(exact)|``
    (queries with no exact result are skipped; 1.0 when none has one).

    The recall of an approximate nearest-neighbour index against exact search at depth *k*
    (the measure of ann-benchmarks and faiss' benchmarks, "k-recall@k")."""
    vals = []
    for qid in exact.query_ids:
        truth = exact.doc_ids(qid)[:k]
        if len(truth) == 0:
            continue
        got = set(approx.doc_ids(qid)[:k])
        vals.append(len(got & set(truth)) / len(truth))
    return float(np.mean(vals)) if vals else 1.0

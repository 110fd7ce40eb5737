"""The searchable BM25 index returned by :meth:`nuggetbench.retrieval.bm25.retriever.BM25.index`.

Which documents a search returns: only those that score above a document containing none of
the query terms (as Lucene returns only matching documents), so a query may get fewer than
*k* results, and a query with no term in the index vocabulary gets none. A query restricted to a
candidate pool (``doc_filter``, the rerank setting of BIRCO or fastbook's chapters) is different:
every candidate is ranked, those without a query term at the no-match score (ties broken by doc
id as everywhere), because a pool's ranking must cover the pool.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from nuggetbench.data import Queries, Run
from nuggetbench.retrieval.models.loading import stage_bar
from nuggetbench.retrieval.protocols import DocFilter, IndexBase, check_k
from nuggetbench.text.analyzers import get_analyzer

if TYPE_CHECKING:  # pragma: no cover
    from nuggetbench.retrieval.bm25.retriever import BM25

log = logging.getLogger(__name__)

NUMBA_THRESHOLD = 2e8
"""``backend=auto`` uses numba when queries x documents reaches this (measured break-even)."""


def tokenize_texts(
    texts: list[str], *, tokenizer: tuple[str, str, str], return_ids: bool, show_progress: bool
):
    """Tokenize *texts* as a :class:`~.bm25.BM25` with ``tokenizer = (analyzer, stemmer,
    stopwords)`` does: a named analyzer (:mod:`nuggetbench.text.analyzers`), or ``bm25s.tokenize``
    with PyStemmer's *stemmer* (``"none"``: none) and *stopwords* (``"none"``: none).

    Returns bm25s' ``Tokenized`` (``ids`` lists and ``vocab``) when *return_ids*, else the token
    lists."""
    analyzer, stemmer_name, stopwords = tokenizer
    if analyzer not in ("auto", "bm25s"):
        return get_analyzer(analyzer).tokenize(
            texts, return_ids=return_ids, show_progress=show_progress
        )
    import bm25s

    stemmer = None
    if stemmer_name != "none":
        import Stemmer

        stemmer = Stemmer.Stemmer(stemmer_name)
    return bm25s.tokenize(
        texts,
        stopwords=[] if stopwords == "none" else stopwords,
        stemmer=stemmer,
        return_ids=return_ids,
        show_progress=show_progress,
    )


def numba_available() -> bool:
    """Whether numba can be imported (without importing it)."""
    import importlib.util

    return importlib.util.find_spec("numba") is not None


def trec_top(scores: np.ndarray, k: int, ids_at: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """Positions into *scores* (shape ``(m,)``) of its first *k* in trec_eval's order (score
    descending, doc id descending), in no particular order; *ids_at* gives the doc ids at some of
    those positions (an object array), and is asked only for the ties at the k-th score. Both
    the single and the sharded index cut a ranking with it, so a tie at the k-th place is cut
    the same way whatever the layout."""
    if len(scores) <= k:
        return np.arange(len(scores))
    kth = np.partition(scores, len(scores) - k)[len(scores) - k]
    sure = np.flatnonzero(scores > kth)
    ties = np.flatnonzero(scores == kth)
    need = k - len(sure)
    if len(ties) > need:
        ties = ties[np.argsort(ids_at(ties), kind="stable")[::-1][:need]]
    return np.concatenate([sure, ties])


def _compact(codes: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(ids that *codes* use, codes into them)``: positions into *ids* (int64 (n,)) renumbered
    over the ids that occur, in their order in *ids*."""
    used = np.zeros(len(ids), dtype=bool)
    used[codes] = True
    renumber = np.cumsum(used) - 1
    return ids[used], renumber[codes]


class BM25Index(IndexBase):
    """A built (or loaded) BM25 index; :meth:`search` returns a :class:`Run`.

    Attributes:
        retriever: the :class:`BM25` that built it.
        bm25: the underlying ``bm25s.BM25`` object.
        doc_ids: corpus doc ids in index order.
        from_cache: whether it was loaded from the cache.
    """

    def __init__(self, retriever: BM25, bm25: Any, doc_ids: list[str], *, from_cache: bool):
        self.retriever = retriever
        self.bm25 = bm25
        self.doc_ids = doc_ids
        self._doc_array = np.array(doc_ids, dtype=object)
        self._position: dict[str, int] | None = None
        self.from_cache = from_cache

    def search(
        self,
        queries: Queries,
        k: int,
        *,
        doc_filter: DocFilter | None = None,
        show_progress: bool = False,
        objective: str | None = None,
    ) -> Run:
        """Top *k* documents per query (see the module docstring for which documents are returned).

        Args:
            queries: ``query_id -> text``.
            k: depth (>= 1); larger than the corpus is fine.
            doc_filter: optional ``{query_id: candidate doc ids}``: those queries are scored only
                against their candidates (ids absent from the corpus are ignored, with a warning).
            show_progress: progress bars for tokenization and retrieval.
            objective: a task objective (BIRCO's "+O"): BM25 has no instruction channel, so the
                objective text is prepended to every query (query expansion by the objective's
                terms), as the dense retriever does for models without an instruction prompt.

        Returns:
            A run named after :attr:`name`, whose metadata holds the parameters, the bm25s
            version and ``index_from_cache``. A query that retrieves nothing (no known term, or
            no matching candidate) is absent from it, as from a TREC run file.
        """
        import bm25s

        k = check_k(k)
        qids = list(queries)
        texts = [queries[q] for q in qids]
        if objective:
            texts = [f"{objective}\n{t}" for t in texts]
        bar = stage_bar(show_progress, f"bm25 search ({len(qids)} queries)", 2)
        bar.step("tokenizing")  # one bar for the stage, not bm25s' four
        tokens = self.tokenize(texts)
        bar.step("retrieving")
        vocab = self.bm25.vocab_dict
        token_ids = [[vocab[t] for t in toks if t in vocab and t != ""] for toks in tokens]
        filtered = doc_filter or {}
        batch = [i for i, q in enumerate(qids) if token_ids[i] and q not in filtered]
        single = [i for i, q in enumerate(qids) if q in filtered]
        parts = self._search_batch(token_ids, batch, k) + self._search_pools(
            token_ids, single, [filtered[qids[i]] for i in single], k
        )
        bar.close()
        empty = [qids[i] for i, t in enumerate(token_ids) if not t]
        if empty:
            log.info(
                "%d queries have no term in the index vocabulary and retrieve nothing", len(empty)
            )
        q, d, s = (
            (np.concatenate([p[j] for p in parts]) for j in range(3))
            if parts
            else (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0))
        )
        # codes into the queries and documents that occur (no id is hashed or compared again)
        qu, qcodes = _compact(q, np.array(qids, dtype=object))
        du, dcodes = _compact(d, self._doc_array)
        metadata = {
            "retriever": self.name,
            "params": self.retriever.params,
            "bm25s_version": bm25s.__version__,
            "k": k,
            "index_from_cache": self.from_cache,
            "backend": self._backend(len(batch)),
            "queries_without_known_terms": len(empty),
            "objective": bool(objective),
        }
        scores = s.astype(np.float64)
        return Run.from_codes(qu, qcodes, du, dcodes, scores, name=self.name, metadata=metadata)

    def _search_batch(
        self, token_ids: list[list[int]], batch: list[int], k: int
    ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """bm25s' top-k of the unrestricted queries *batch* (positions into *token_ids*): a list
        of ``(query positions, doc rows, scores)``, without documents that share no query term.

        bm25s cuts a tie at the k-th score arbitrarily (``argpartition``), so one more than *k* is
        retrieved: a query whose k-th and (k+1)-th scores differ keeps the k best, one whose
        scores tie there is ranked over the whole index and cut by :func:`trec_top` (doc id
        descending), as the sharded index cuts it: the run does not depend on the layout."""
        if not batch:
            return []
        kk = min(k + 1, len(self.doc_ids))
        backend = self._backend(len(batch))
        threads = (
            (-1 if self.retriever.threads == 0 else self.retriever.threads)
            if backend == "numba"
            else 0
        )
        self.bm25.backend = backend
        try:
            indices, scores = self.bm25.retrieve(
                [token_ids[i] for i in batch],
                k=kk,
                sorted=False,
                show_progress=False,
                n_threads=threads,
            )
        finally:
            self.bm25.backend = "numpy"
        indices = np.asarray(indices)
        scores = np.asarray(scores)
        floor = np.array([self._no_match_score(token_ids[i]) for i in batch])
        keep = scores > floor[:, None]
        tied = np.zeros(len(batch), dtype=bool)
        if kk > k:  # drop each row's (k+1)-th; a row whose two lowest scores tie is redone
            low = scores.argmin(axis=1)
            lowest = scores[np.arange(len(batch)), low]
            tied = ((scores == lowest[:, None]).sum(axis=1) > 1) & (lowest > floor)
            keep[np.arange(len(batch)), low] = False
            keep[tied] = False
        rows = np.repeat(np.asarray(batch, dtype=np.int64), keep.sum(axis=1))
        out = [(rows, indices[keep].astype(np.int64, copy=False), scores[keep])]
        for j in np.flatnonzero(tied):
            full = np.asarray(self.bm25.get_scores(token_ids[batch[j]]))
            pos = np.flatnonzero(full > floor[j])
            pos = pos[trec_top(full[pos], k, lambda t, pos=pos: self._doc_array[pos[t]])]
            out.append((np.full(len(pos), batch[j], dtype=np.int64), pos, full[pos]))
        return out

    def _search_pools(
        self, token_ids: list[list[int]], single: list[int], pools: list[Any], k: int
    ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """The queries *single* restricted to their candidate *pools*: every candidate in the
        corpus scored (a whole pool is ranked, shared terms or not), cut to *k*."""
        out = []
        missing = 0
        for i, pool in zip(single, pools):
            cand, n_missing = self._candidates(pool)
            missing += n_missing
            if not len(cand):
                continue
            if token_ids[i]:
                sub = np.asarray(self.bm25.get_scores(token_ids[i]))[cand]
            else:
                sub = np.zeros(len(cand))
            if len(cand) > k:
                top = trec_top(sub, k, lambda t, cand=cand: self._doc_array[cand[t]])
                cand, sub = cand[top], sub[top]
            rows = np.full(len(cand), i, dtype=np.int64)
            out.append((rows, np.asarray(cand, dtype=np.int64), sub))
        if missing:
            log.warning(
                "doc_filter names %d candidate(s) absent from the corpus; they were ignored "
                "(they cannot be retrieved)",
                missing,
            )
        return out

    def _backend(self, n_queries: int) -> str:
        choice = self.retriever.backend
        if choice == "auto":
            large = n_queries * len(self.doc_ids) >= NUMBA_THRESHOLD
            choice = "numba" if large and numba_available() else "numpy"
        return choice

    def _no_match_score(self, token_ids: list[int]) -> float:
        """The score of a document containing none of the query terms (0 except bm25l/bm25+)."""
        nonocc = getattr(self.bm25, "nonoccurrence_array", None)
        if nonocc is None:
            return 0.0
        s0 = float(nonocc[np.asarray(token_ids)].sum())
        return s0 + 1e-5 * abs(s0)

    def _candidates(self, doc_ids) -> tuple[np.ndarray, int]:
        if self._position is None:
            self._position = {d: i for i, d in enumerate(self.doc_ids)}
        pos = self._position
        found = [pos[d] for d in doc_ids if d in pos]
        unique = np.unique(np.asarray(found, dtype=np.int64))
        return unique, len(doc_ids) - len(found)

    def __repr__(self) -> str:
        return f"<BM25Index {self.name}: {len(self)} documents{' (cached)' if self.from_cache else ''}>"

"""The single BM25 index: built on every core, kept in bm25s' format, searched by :mod:`.topk`.

**Building** (:func:`build_single`): the corpus is read once, in order; its texts are tokenized in
batches by worker processes (:func:`.tokens.tokenize_corpus`: every usable core, or
``bm25:threads=N``), each batch coming back as its distinct (token, document, count) pairs, and
merged in corpus order into one vocabulary (first-occurrence numbering, whatever the number of
workers). From the document frequencies and lengths, every pair's score is computed at once
(:func:`.scoring.pair_scores`, bm25s' formula and operand types) and placed in bm25s' CSC matrix
by a counting sort (the batches come in document order, so each token's documents stay sorted).
The result is the matrix ``bm25s.BM25.index`` builds, bit for bit (the vocabulary numbered by
first occurrence instead of bm25s' hash-seed-dependent order), in a ``bm25s.BM25`` object, saved
in bm25s' own format. The parent holds the document ids, the batches' pairs (about 12 bytes a
distinct (document, token) pair) and the matrix, never the texts of the whole corpus nor
Python lists of tokens.

**Which documents a search returns**: only those that score above a document containing none
of the query terms (as Lucene returns only matching documents), so a query may get fewer than
*k* results, and a query with no term in the index vocabulary gets none. A query restricted to
a candidate pool (``doc_filter``, the rerank setting of BIRCO or fastbook's chapters) is
different: every candidate is ranked, those without a query term at the no-match score (ties
broken by doc id as everywhere), because a pool's ranking must cover the pool.

**Searching**: :func:`.topk.candidates` (a compiled kernel on *threads* threads, or numpy) gives
each query every document at or above its k-th best score, and :func:`.topk.trec_top` cuts ties
at the k-th score by doc id (score descending, doc id descending: trec_eval's order), as the
sharded index does, so the run does not depend on the layout.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import numpy as np

from nuggetbench._atomic import atomic_write
from nuggetbench.data import Corpus, Queries, Run
from nuggetbench.errors import InputError
from nuggetbench.retrieval.bm25.engine import Settings
from nuggetbench.retrieval.bm25.scoring import (
    idf_array,
    nonoccurrence_array,
    pair_scores,
)
from nuggetbench.retrieval.bm25.tokens import Batch, Vocabulary, tokenize_corpus, worker_count
from nuggetbench.retrieval.bm25.topk import candidates, choose_backend, trec_top
from nuggetbench.retrieval.models.loading import stage_bar
from nuggetbench.retrieval.protocols import DocFilter, IndexBase, check_k
from nuggetbench.store import Artifact

__all__ = ["BM25Index", "build_matrix", "build_single"]

log = logging.getLogger(__name__)


# --- building --------------------------------------------------------------------------------
class _NoIndexableTerm(InputError):
    """:func:`build_matrix` found no token in any document (the caller names the corpus)."""


def build_matrix(batches, settings: Settings) -> tuple[Any, int]:
    """``(bm25s.BM25 object, documents)`` from the :class:`~.tokens.Batch` es of a corpus (with
    pairs, in corpus order): the matrix ``bm25s.BM25.index`` would build (module docstring).

    Raises:
        InputError: no document has a token (the message is completed by the caller).
    """
    import bm25s

    vocab = Vocabulary()
    kept: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
    lens_parts: list[np.ndarray] = []
    df_parts: list[tuple[np.ndarray, np.ndarray]] = []
    n_docs = 0
    for batch in batches:
        groups, sizes, docs, counts = _merge(batch, vocab, n_docs)
        kept.append((groups, sizes, docs, counts))
        df_parts.append((groups, sizes))
        lens_parts.append(batch.lens)
        n_docs += len(batch.lens)
    n_vocab = len(vocab)
    if n_vocab == 0:
        raise _NoIndexableTerm("no document has an indexable term")
    df = np.zeros(n_vocab, dtype=np.int64)
    for groups, sizes in df_parts:
        df[groups] += sizes  # a batch names each token once
    lens = np.concatenate(lens_parts).astype(np.int64)
    avg_doc_len = np.float64(lens.sum()) / np.float64(n_docs)  # bm25s' mean, exactly
    idf = idf_array(df, n_docs, settings.method)
    nonocc = nonoccurrence_array(
        df, n_docs, settings.method, settings.k1, settings.b, settings.delta, avg_doc_len
    )
    indptr = np.zeros(n_vocab + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    data = np.empty(int(indptr[-1]), dtype=np.float32)
    indices = np.empty(int(indptr[-1]), dtype=np.int32)
    fill = indptr[:-1].copy()
    for j in range(len(kept)):  # document order: each token's documents stay sorted
        groups, sizes, docs, counts = kept[j]
        kept[j] = None  # type: ignore[call-overload]  # freed as it is placed
        starts = np.cumsum(sizes) - sizes
        dest = np.repeat(fill[groups] - starts, sizes) + np.arange(len(docs))
        fill[groups] += sizes
        tokens = np.repeat(groups, sizes)
        data[dest] = pair_scores(
            counts,
            lens[docs],
            idf[tokens],
            method=settings.method,
            k1=settings.k1,
            b=settings.b,
            delta=settings.delta,
            avg_doc_len=avg_doc_len,
            nonoccurrence=None if nonocc is None else nonocc[tokens],
        )
        indices[dest] = docs
    vocab_dict = vocab.ids
    if "" not in vocab_dict:  # bm25s' empty token (no column)
        vocab_dict[""] = n_vocab
    model = bm25s.BM25(
        k1=settings.k1, b=settings.b, delta=settings.delta, method=settings.method, backend="numpy"
    )
    model.scores = {"data": data, "indices": indices, "indptr": indptr, "num_docs": n_docs}
    model.vocab_dict = vocab_dict
    model.unique_token_ids_set = set(vocab_dict.values())
    model.nonoccurrence_array = nonocc
    return model, n_docs


def _merge(batch: Batch, vocab: Vocabulary, offset: int):
    """A batch's pairs in the global numbering: ``(token of each group, group sizes, documents
    (int32, corpus positions), counts)``; the pairs come grouped by token."""
    remap, _ = vocab.remap(batch.words)
    tok, doc, counts = batch.pairs  # type: ignore[misc]
    if not len(tok):
        empty = np.zeros(0, dtype=np.int64)
        return remap[:0].astype(np.int64), empty, doc, counts
    first = np.flatnonzero(np.diff(tok, prepend=-1))
    sizes = np.diff(np.append(first, len(tok)))
    groups = remap[tok[first]].astype(np.int64)
    return groups, sizes, doc + np.int32(offset), counts


def build_single(
    settings: Settings, corpus: Corpus, artifact: Artifact | None, *, show_progress: bool
) -> BM25Index:
    """The single index of *corpus* (loaded from *artifact* when cached there, else built and
    saved there; ``None``: not cached).

    Raises:
        InputError: the corpus is empty, or no document has a single indexable term.
    """
    if artifact is not None and artifact.path.exists():
        loaded = _load(settings, artifact, corpus)
        if loaded is not None:
            return loaded
        artifact.discard()  # unreadable or partial: rebuilt below
    doc_ids: list[str] = []

    def texts():
        for doc in corpus.iter_documents():
            doc_ids.append(doc.doc_id)
            yield doc.full_text

    n = len(corpus)
    if n == 0:
        raise InputError(f"cannot index an empty corpus ({corpus.name or corpus!r})")
    workers = worker_count(settings.threads, n)
    with stage_bar(
        show_progress, f"bm25 index ({n} docs, {workers} process{'es' if workers != 1 else ''})", 1
    ) as bar:
        bar.step("tokenizing and scoring")
        batches = tokenize_corpus(texts(), settings.tokenizer, workers=workers, pairs=True)
        try:
            model, _ = build_matrix(batches, settings)
        except _NoIndexableTerm:  # not the corpus reader's errors (they name file and line)
            raise InputError(
                f"cannot index the corpus{' ' + repr(corpus.name) if corpus.name else ''}: "
                f"none of its {len(doc_ids)} documents has an indexable term (every title "
                f"and text is empty or made of stop words after {settings.analyzer!r} analysis "
                f"with stopwords={settings.stopwords!r}); check the corpus's text fields, or "
                "index with bm25:stopwords=none"
            ) from None
    if not doc_ids:
        raise InputError(f"cannot index an empty corpus ({corpus.name or corpus!r})")
    if artifact is not None:
        _save(settings, artifact, model, doc_ids, corpus)
    return BM25Index(settings, model, doc_ids, from_cache=False)


def _save(settings: Settings, artifact: Artifact, model: Any, doc_ids: list[str], corpus) -> None:
    import bm25s

    try:
        with artifact.build() as (staging, meta):
            model.save(str(staging), show_progress=False)
            with atomic_write(staging / "doc_ids.json") as fh:
                fh.write(json.dumps(doc_ids, ensure_ascii=False))  # dumps: json's C encoder
            meta.update(
                retriever=settings.name,
                params=settings.params,
                corpus_fingerprint=corpus.fingerprint(),
                n_docs=len(doc_ids),
                bm25s_version=bm25s.__version__,
                **settings.plan_meta(corpus),
            )
    except OSError as exc:
        log.warning("could not cache the BM25 index in %s: %s", artifact.path, exc)


def _load(settings: Settings, artifact: Artifact, corpus: Corpus) -> BM25Index | None:
    import bm25s

    folder = artifact.path
    try:
        meta = artifact.meta()
        if meta is None:
            raise ValueError("no meta.json for these parameters")
        doc_ids = json.loads((folder / "doc_ids.json").read_text(encoding="utf-8"))
        if meta.get("corpus_fingerprint") != corpus.fingerprint() or meta.get("n_docs") != len(
            doc_ids
        ):
            raise ValueError("meta.json does not describe this corpus")
        model = bm25s.BM25.load(
            str(folder), mmap=False, load_vocab=True, show_progress=False, backend="numpy"
        )
        if int(model.scores["num_docs"]) != len(doc_ids):
            raise ValueError("the index and doc_ids.json differ in length")
    except (OSError, ValueError, KeyError) as exc:
        log.warning("ignoring the unreadable BM25 cache %s (%s); re-indexing", folder, exc)
        return None
    log.info("loaded the cached BM25 index %s", folder)
    return BM25Index(settings, model, doc_ids, from_cache=True)


# --- searching -------------------------------------------------------------------------------
def _compact(codes: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(ids that *codes* use, codes into them)``: positions into *ids* (int64 (n,)) renumbered
    over the ids that occur, in their order in *ids*."""
    used = np.zeros(len(ids), dtype=bool)
    used[codes] = True
    renumber = np.cumsum(used) - 1
    return ids[used], renumber[codes]


class BM25Index(IndexBase):
    """A built (or loaded) single BM25 index; :meth:`search` returns a :class:`Run`.

    Attributes:
        retriever: the retriever (its :class:`~.engine.Settings`) that built it.
        bm25: the underlying ``bm25s.BM25`` object (its ``scores`` matrix and ``vocab_dict``).
        doc_ids: corpus doc ids in index order.
        from_cache: whether it was loaded from the cache.
    """

    def __init__(self, retriever: Settings, bm25: Any, doc_ids: list[str], *, from_cache: bool):
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
            version, ``index_from_cache`` and the search ``backend``. A query that retrieves
            nothing (no known term, or no matching candidate) is absent from it, as from a TREC
            run file.
        """
        import bm25s

        k = check_k(k)
        qids = list(queries)
        texts = [queries[q] for q in qids]
        if objective:
            texts = [f"{objective}\n{t}" for t in texts]
        bar = stage_bar(show_progress, f"bm25 search ({len(qids)} queries)", 2)
        bar.step("tokenizing")
        tokens = self.tokenize(texts)
        bar.step("retrieving")
        vocab = self.bm25.vocab_dict
        token_ids = [[vocab[t] for t in toks if t in vocab and t != ""] for toks in tokens]
        filtered = doc_filter or {}
        batch = [i for i, q in enumerate(qids) if token_ids[i] and q not in filtered]
        single = [i for i, q in enumerate(qids) if q in filtered]
        backend = choose_backend(self.retriever.backend, len(batch), len(self.doc_ids))
        parts = self._search_batch(token_ids, batch, k, backend) + self._search_pools(
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
            "backend": backend,
            "queries_without_known_terms": len(empty),
            "objective": bool(objective),
        }
        scores = s.astype(np.float64)
        return Run.from_codes(qu, qcodes, du, dcodes, scores, name=self.name, metadata=metadata)

    def _search_batch(
        self, token_ids: list[list[int]], batch: list[int], k: int, backend: str
    ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """The top *k* of the unrestricted queries *batch* (positions into *token_ids*):
        ``[(query positions, doc rows, scores)]``, without documents that share no query term,
        a tie at the k-th score cut by doc id (:func:`.topk.trec_top`)."""
        if not batch:
            return []
        shift, floor = self._no_match([token_ids[i] for i in batch])
        counts, docs, scores = candidates(
            self.bm25.scores,
            [token_ids[i] for i in batch],
            k,
            backend=backend,
            threads=self.retriever.threads,
            shift=shift,
            floor=floor,
        )
        rows = np.repeat(np.asarray(batch, dtype=np.int64), counts)
        over = np.flatnonzero(counts > k)  # ties at the k-th score: cut by doc id
        if not len(over):
            return [(rows, docs, scores)]
        ends = np.cumsum(counts)
        keep = np.ones(len(docs), dtype=bool)
        for j in over:
            lo, hi = int(ends[j] - counts[j]), int(ends[j])
            pos = docs[lo:hi]
            top = trec_top(scores[lo:hi], k, lambda t, pos=pos: self._doc_array[pos[t]])
            mask = np.zeros(hi - lo, dtype=bool)
            mask[top] = True
            keep[lo:hi] = mask
        return [(rows[keep], docs[keep], scores[keep])]

    def _no_match(self, token_ids: list[list[int]]) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Per query, bm25s' non-occurrence sum (float32, added to every document's score) and
        the score a document needs to count as matching (the sum plus a relative 1e-5); both
        ``None`` for the methods without a non-occurrence score (0 and 0)."""
        nonocc = getattr(self.bm25, "nonoccurrence_array", None)
        if nonocc is None:
            return None, None
        shift = np.array([nonocc[np.asarray(ids)].sum() for ids in token_ids], dtype=np.float32)
        s0 = shift.astype(np.float64)
        return shift, s0 + 1e-5 * np.abs(s0)

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

    def _candidates(self, doc_ids) -> tuple[np.ndarray, int]:
        if self._position is None:
            self._position = {d: i for i, d in enumerate(self.doc_ids)}
        pos = self._position
        found = [pos[d] for d in doc_ids if d in pos]
        unique = np.unique(np.asarray(found, dtype=np.int64))
        return unique, len(doc_ids) - len(found)

    def __repr__(self) -> str:
        return f"<BM25Index {self.name}: {len(self)} documents{' (cached)' if self.from_cache else ''}>"

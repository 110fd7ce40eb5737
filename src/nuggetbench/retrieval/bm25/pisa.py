"""BM25 on `PISA <https://github.com/pisa-engine/pisa>`_ through `pyterrier-pisa
<https://github.com/terrierteam/pyterrier_pisa>`_ (``bm25:backend=pisa``).

The optional ``pisa`` extra (``pip install 'nuggetbench[pisa]'``) brings pyterrier-pisa, whose
wheel ships PISA compiled as one extension module, ``pyterrier_pisa._pisathon`` (no Java). We
call that module's functions, the ones pyterrier-pisa's ``PisaIndexer`` and ``PisaRetrieve`` call
(``index``, ``prepare_index``, ``retrieve``), with the corpus and queries nuggetbench already
holds; the module is loaded from its file, so PyTerrier's Python layer (PyTerrier, pandas,
ir_datasets: about 2 s of imports) is not imported.

**BM25 variant** (PISA's ``include/pisa/scorer/bm25.hpp``, in float32)::

    score(d, q) = sum over distinct terms t of q present in d of
                  max(1e-6, ln((N - df + 0.5) / (df + 0.5))) * (1 + k1)
                  * tf / (tf + k1 * (1 - b + b * len(d) / avgdl))

with ``N`` the documents indexed (empty ones included), ``df`` the documents holding ``t``,
``tf`` its count in ``d``, ``len(d)`` the tokens of ``d`` after stemming *with stop words kept*
(PISA removes stop words from queries only), and ``avgdl`` the mean of ``len(d)``. Unlike
Lucene's ``ln(1 + (N - df + 0.5) / (df + 0.5))``, the IDF of a term in more than half of the
documents is floored at 1e-6; a query term counts once however often it occurs
(pyterrier-pisa's ``query_weighted=False``); the scores are not quantised (pyterrier-pisa's
``precompute_impact=False``), so they are the float32 formula, which
``tests/test_retrieval_pisa.py`` recomputes with numpy. Text is cut by PISA's English tokenizer
(ASCII letters and digits; other characters split words), lower-cased and stemmed by PISA's
Porter2 (``stemmer=english``, the Snowball English algorithm) or Krovetz, or not stemmed.

**The index** is two artifacts of the store (:mod:`nuggetbench.store`): ``pisa/index`` (PISA's
inverted index and lexicons, and ``doc_ids.json``), keyed by the corpus fingerprint, the stemmer
and pyterrier-pisa's version; and ``pisa/bm25`` (the block-max scores for BM25(k1, b) and the
index compressed with ``encoding``), keyed by the first's key, ``k1``, ``b`` and ``encoding``,
built from hard links to the first's files. So another ``k1``/``b`` re-scores without re-indexing,
and each artifact is built in its staging folder and renamed into place (a killed build leaves
nothing). Both builds run PISA in a child process (PISA prints its progress on the standard
output, which a library must not write to): documents go to it through a pipe as
``<ordinal> <title text>`` lines (PISA's ``plaintext`` format; ordinals, so any doc id works).

**Searching** is PISA's ``retrieve`` (``threads`` threads) with the query ``algorithm``
(``block_max_wand`` by default; ``block_max_maxscore``, ``maxscore``, ``wand`` and ``ranked_or``
give the same top k, ``ranked_and`` and ``block_max_ranked_and`` only documents holding every
query term). Only documents holding a query term are returned. **Ties**: PISA's top-k heap
evicts among equal scores in heap order, so the cut at the k-th score follows nuggetbench's rule
instead (score descending, doc id descending, trec_eval's): ``k + max(16, k // 8)`` are asked
for, and a query whose k-th score is also its last is asked again, 4 times deeper, until its last
score is lower than the k-th; then the ties at the k-th score are cut by doc id (ranks of the doc
ids, ``doc_ranks.npy``, computed while PISA builds the index). Equal means equal float32 scores as PISA sums them: the
pruning algorithms (all but ``ranked_or``) add a document's term scores in the order their
cursors reach it, so with three or more query terms two documents equal by the formula can
differ in the last bit (and a document's score by one ulp between two depths); ``ranked_or``
adds them in query order.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from nuggetbench.data import Corpus, Queries, Run
from nuggetbench.errors import SpecError
from nuggetbench.progress import Meter
from nuggetbench.retrieval.bm25 import pisa_engine
from nuggetbench.retrieval.bm25.engine import Engine
from nuggetbench.retrieval.bm25.pisa_engine import (
    BUILT_FROM,
    CACHE_FORMAT,
    EXTRA,
    SEARCHED,
    STEMMERS,
    PisaSettings,
    index_into,
    index_key,
    pisa_version,
    pisathon,
    score_into,
    stop_list,
)
from nuggetbench.retrieval.options import PISA_STOPWORDS
from nuggetbench.retrieval.protocols import DocFilter, check_k
from nuggetbench.store import Artifact

__all__ = [
    "OPTIONS",
    "PisaIndex",
    "PisaSettings",
    "build_pisa_index",
    "engine_build",
    "engine_params",
    "engine_versions",
    "ENGINE",
]

log = logging.getLogger(__name__)


OPTIONS = ("k1", "b", "stemmer", "stopwords", "algorithm", "encoding", "threads", "cache")
"""The ``bm25`` options this backend honours (the others are refused when changed)."""
_RESULT_OPTIONS = ("k1", "b", "stemmer", "stopwords", "algorithm", "encoding")


def engine_params(settings: Any) -> dict[str, Any]:
    """What changes a ``backend=pisa`` run (the run's ``params``, the spec's name): ``k1``,
    ``b``, ``backend``, ``stemmer``, ``stopwords``, ``algorithm``, ``encoding``; *settings* is
    the retriever (its options as attributes)."""
    out = {k: getattr(settings, k) for k in _RESULT_OPTIONS}
    return {"k1": out.pop("k1"), "b": out.pop("b"), "backend": "pisa", **out}


def engine_versions(settings: Any) -> dict[str, Any]:
    """pyterrier-pisa's version and our analysis, for the run cache's identity."""
    return index_key(settings.stemmer)


def engine_check(opts: Any) -> Any:
    """The options with PISA's canonical stemmer (``porter2`` is written ``english``).

    Raises:
        SpecError: the stemmer is not one of PISA's (english/porter2, krovetz, none).
    """
    stemmer = opts.stemmer.strip().lower()
    if stemmer not in STEMMERS:
        raise SpecError(
            f"bm25: backend=pisa stems with PISA's own stemmers: stemmer=english (Porter2), "
            f"krovetz or none (got {opts.stemmer!r})"
        )
    return replace(opts, stemmer="english" if stemmer == "porter2" else stemmer)


def engine_build(settings: Any, corpus: Corpus, *, show_progress: bool = False) -> PisaIndex:
    """The index of *corpus* for the retriever *settings* (:func:`build_pisa_index`)."""
    names = ("k1", "b", "stemmer", "stopwords", "algorithm", "encoding", "threads")
    return build_pisa_index(
        corpus,
        PisaSettings(**{k: getattr(settings, k) for k in names}),
        cache=settings.cache,
        name=settings.name,
        params=settings.params,
        show_progress=show_progress,
    )


def _cached_base(corpus: Corpus, settings: PisaSettings, show: bool) -> tuple[Artifact, bool]:
    """The ``pisa/index`` artifact of *corpus* (built when absent); whether it was cached."""
    base = Artifact(
        "pisa/index",
        index_key(settings.stemmer),
        {"corpus": corpus.fingerprint()},
        label=f"pisa-{settings.stemmer}",
    )
    if base.path.exists():
        files = (*SEARCHED, *BUILT_FROM)
        if base.meta() is not None and all((base.path / n).is_file() for n in files):
            return base, True
        base.discard()
    with base.build() as (staging, meta):
        meta.update(
            index_into(staging, corpus, settings.stemmer, settings.n_threads, show),
            corpus_fingerprint=corpus.fingerprint(),
        )
    return base, False


def build_pisa_index(
    corpus: Corpus,
    settings: PisaSettings,
    *,
    cache: bool = True,
    name: str = "bm25:backend=pisa",
    params: dict[str, Any] | None = None,
    show_progress: bool = False,
) -> PisaIndex:
    """The PISA index of *corpus* for *settings* (built, or read back from the artifact store).

    Args:
        corpus: the documents (``title + " " + text`` of each is indexed).
        settings: BM25 and PISA parameters (:class:`PisaSettings`).
        cache: keep both artifacts in the store (else a temporary folder, removed with the
            index object).
        name, params: the retriever's canonical spec and parameters (the run's name/metadata).
        show_progress: a documents/s bar while indexing.

    Raises:
        InputError: the corpus is empty, or none of its documents has an indexable term.
        ModelError: pyterrier-pisa is missing, or PISA failed (its output is quoted).
    """
    pisathon()  # the extra is installed, before any work
    common = dict(settings=settings, name=name, params=params or {})
    if not cache:
        tmp = tempfile.TemporaryDirectory(prefix="nuggetbench-pisa-")
        info = index_into(
            Path(tmp.name) / "index", corpus, settings.stemmer, settings.n_threads, show_progress
        )
        info.update(score_into(Path(tmp.name) / "bm25", Path(tmp.name) / "index", settings))
        return PisaIndex(Path(tmp.name) / "bm25", info=info, from_cache=False, keep=tmp, **common)
    base, base_cached = _cached_base(corpus, settings, show_progress)
    scored = Artifact(
        "pisa/bm25",
        {
            "pisa_format": CACHE_FORMAT,
            "index": base.key,
            "k1": settings.k1,
            "b": settings.b,
            "encoding": settings.encoding,
        },
        {"corpus": corpus.fingerprint()},
        label=f"pisa-k1={settings.k1},b={settings.b}",
    )
    if scored.path.exists():
        meta = scored.meta()
        if meta is not None and all((scored.path / f).is_file() for f in meta.get("files", [])):
            log.info("loaded the cached PISA index %s", scored.path)
            return PisaIndex(scored.path, info=meta, from_cache=True, **common)
        scored.discard()
    with scored.build() as (staging, meta):
        counts = base.meta() or {}
        meta.update({k: counts.get(k) for k in ("n_docs", "n_terms", "pyterrier_pisa")})
        meta.update(score_into(staging, base.path, settings), retriever=name)
    return PisaIndex(scored.path, info=scored.meta() or {}, from_cache=base_cached, **common)


BATCH_QUERIES = 1000
"""Queries per ``retrieve`` call (bounds the result buffers; one progress-bar step)."""


def _query_text(text: str) -> str:
    """*text* as PISA's ``retrieve`` can read it (no NUL, valid UTF-8)."""
    if "\x00" in text:
        text = text.replace("\x00", " ")
    if not text.isascii():
        text = text.encode("utf-8", "replace").decode("utf-8")  # lone surrogates
    return text


def _compact(codes: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(ids that *codes* use, codes into them)``."""
    used = np.zeros(len(ids), dtype=bool)
    used[codes] = True
    renumber = np.cumsum(used) - 1
    return ids[used], renumber[codes]


class PisaIndex:
    """A PISA index of a corpus, scored for BM25(k1, b); :meth:`search` returns a :class:`Run`.

    Attributes:
        path: the ``pisa/bm25`` folder (block-max scores, compressed index, lexicons, doc ids).
        settings: the :class:`PisaSettings` it was built and is searched with.
        info: what the build recorded (``n_docs``, ``n_terms``, ``files``, versions).
        from_cache: whether the inverted index was read back from the artifact store.
    """

    def __init__(
        self,
        path: Path,
        *,
        settings: PisaSettings,
        name: str,
        params: dict[str, Any],
        info: dict[str, Any],
        from_cache: bool,
        keep: Any = None,
    ):
        self.path = Path(path)
        self.settings = settings
        self.name = name
        self.params = params
        self.info = info
        self.from_cache = from_cache
        self._keep = keep  # a TemporaryDirectory removed with the index (cache=false)
        self._doc_ids: np.ndarray | None = None
        self._doc_ranks: np.ndarray | None = None
        self._context: Any = None

    def __len__(self) -> int:
        return int(self.info.get("n_docs", 0))

    @property
    def doc_ranks(self) -> np.ndarray:
        """Each document's rank in ascending doc id order (int32, index order): the tie-break."""
        if self._doc_ranks is None:
            self._doc_ranks = np.load(self.path / "doc_ranks.npy")
        return self._doc_ranks

    @property
    def doc_ids(self) -> np.ndarray:
        """The corpus's doc ids in index order (PISA's document numbers), an object array."""
        if self._doc_ids is None:
            with open(self.path / "doc_ids.json", encoding="utf-8") as fh:
                self._doc_ids = np.array(json.load(fh), dtype=object)
        return self._doc_ids

    def context(self) -> Any:
        """PISA's retrieval context on this index (mapped once), with the stop list."""
        if self._context is None:
            pisa = pisathon()
            context = pisa.RetrievalContext()
            words = stop_list(self.settings.stopwords)
            with tempfile.TemporaryDirectory(prefix="nuggetbench-pisa-") as tmp:
                stops = ""
                if words:
                    stops = os.path.join(tmp, "stopwords.txt")
                    Path(stops).write_text("".join(f"{w}\n" for w in words), encoding="utf-8")
                pisa.prepare_index(
                    context,
                    str(self.path),
                    self.settings.encoding,
                    "bm25",
                    STEMMERS[self.settings.stemmer],
                    bm25_k1=self.settings.k1,
                    bm25_b=self.settings.b,
                    stop_fname=stops,
                )
            self._context = context
        return self._context

    def retrieve(self, texts: list[str], depth: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """PISA's top *depth* of each text: ``(text positions, document numbers, scores)``
        (int64, int64, float32), grouped by text, each group by score descending."""
        n = len(texts)
        query_at = np.empty(n * depth, dtype=np.int32)
        docnos = np.empty(n * depth, dtype=object)
        ranks = np.empty(n * depth, dtype=np.int32)
        scores = np.empty(n * depth, dtype=np.float32)
        size = pisathon().retrieve(
            self.context(),
            self.settings.algorithm,
            list(enumerate(texts)),
            k=depth,
            threads=self.settings.n_threads,
            query_weighted=0,
            pretokenised=False,
            result_qidxs=query_at,
            result_docnos=docnos,
            result_ranks=ranks,
            result_scores=scores,
        )
        order = np.argsort(query_at[:size], kind="stable")  # threads interleave the queries
        return (
            query_at[:size][order].astype(np.int64),
            docnos[:size][order].astype(np.int64),
            scores[:size][order],
        )

    def search(
        self,
        queries: Queries,
        k: int,
        *,
        doc_filter: DocFilter | None = None,
        show_progress: bool = False,
        objective: str | None = None,
    ) -> Run:
        """PISA's top *k* documents per query, the cut at the k-th score by doc id descending
        (module docstring).

        Args:
            queries: ``query_id -> text`` (tokenized, stemmed and stopped by PISA).
            k: depth (>= 1).
            doc_filter: not supported (PISA searches the whole index); use the bm25s backend.
            show_progress: a bar over the queries.
            objective: a task objective, prepended to every query (as the bm25s backend does).

        Returns:
            A run named after the retriever; a query that matches nothing is absent from it.

        Raises:
            SpecError: *doc_filter* was given.
        """
        k = check_k(k)
        if doc_filter:
            raise SpecError(
                "bm25: backend=pisa cannot rank candidate pools (doc_filter); use the bm25s "
                "backend (bm25 without backend=pisa) for this dataset"
            )
        qids = list(queries)
        texts = [
            _query_text(f"{objective}\n{queries[q]}" if objective else queries[q]) for q in qids
        ]
        bar = Meter("pisa search", len(qids), "query") if show_progress else None
        parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        deeper = 0
        try:
            for start in range(0, len(texts), BATCH_QUERIES):
                part, redone = self._search_part(texts[start : start + BATCH_QUERIES], k)
                parts.append((part[0] + start, part[1], part[2]))
                deeper += redone
                if bar is not None:
                    bar.update(min(BATCH_QUERIES, len(texts) - start))
        finally:
            if bar is not None:
                bar.close()
        q, d, s = (
            (np.concatenate([p[j] for p in parts]) for j in range(3))
            if parts
            else (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32))
        )
        qu, qcodes = _compact(q, np.array(qids, dtype=object))
        du, dcodes = _compact(d, self.doc_ids)
        metadata = {
            "retriever": self.name,
            "params": self.params,
            "backend": "pisa",
            "pyterrier_pisa": pisa_version(),
            "k": k,
            "index_from_cache": self.from_cache,
            "ties_searched_deeper": deeper,
            "objective": bool(objective),
        }
        return Run.from_codes(
            qu, qcodes, du, dcodes, s.astype(np.float64), name=self.name, metadata=metadata
        )

    def _search_part(
        self, texts: list[str], k: int
    ) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], int]:
        """The top *k* of each of *texts*: ``((text positions, document numbers, scores),
        number of queries searched deeper)``. PISA is asked for ``k + margin``; a query whose
        k-th score is still the last one's is asked again, 4 times deeper, until it is not."""
        todo = np.arange(len(texts))
        depth = k + max(16, k // 8)
        out = []
        deeper = 0
        while len(todo):
            q, d, s = self.retrieve([texts[i] for i in todo], depth)
            counts = np.bincount(q, minlength=len(todo))
            starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
            has = counts > 0
            kth = np.full(len(todo), np.inf, dtype=np.float32)
            kth[has] = s[starts[has] + np.minimum(counts[has], k) - 1]
            again = counts == depth
            again[again] = kth[again] == s[starts[again] + depth - 1]
            if depth >= len(self):
                again[:] = False
            done = ~again[q]
            keep = self._cut(q[done], d[done], s[done], kth, k)
            out.append((todo[q[done][keep]], d[done][keep], s[done][keep]))
            todo = todo[again]
            deeper += len(todo)
            depth *= 4
        return tuple(np.concatenate([o[j] for o in out]) for j in range(3)), deeper

    def _cut(
        self, q: np.ndarray, d: np.ndarray, s: np.ndarray, kth: np.ndarray, k: int
    ) -> np.ndarray:
        """Which of the entries (grouped by query *q*, by score descending) are the top *k* of
        their query by (score, doc id) descending, *kth* being each query's k-th score."""
        keep = s > kth[q]
        ties = np.flatnonzero(s == kth[q])
        if not len(ties):
            return keep
        need = k - np.bincount(q[keep], minlength=len(kth))
        order = np.lexsort((-self.doc_ranks[d[ties]], q[ties]))  # by query, doc id descending
        ties = ties[order]
        group = q[ties]
        first = np.searchsorted(group, group)  # each tie's query's first tie
        keep[ties[np.arange(len(ties)) - first < need[group]]] = True
        return keep

    def __repr__(self) -> str:
        cached = " (cached)" if self.from_cache else ""
        return f"<PisaIndex {self.name}: {len(self)} documents{cached}>"


def _available() -> bool:
    return pisa_engine.pisa_available()  # looked up at each call (tests replace it)


ENGINE = Engine(
    name="pisa",
    options=OPTIONS,
    available=_available,
    extra=EXTRA,
    requires="pyterrier-pisa",
    about="uses PISA's BM25 and English tokenizer",
    params=engine_params,
    versions=engine_versions,
    build=engine_build,
    own=("algorithm", "encoding"),
    own_values=(("stopwords", PISA_STOPWORDS),),
    check=engine_check,
)
"""``bm25:backend=pisa`` for the retriever (:data:`.retriever.ENGINES`)."""

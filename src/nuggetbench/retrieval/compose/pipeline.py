"""Composition of retrievers and rerankers: ``retriever >> reranker`` pipelines and fusion.

Python::

    pipe = BM25() >> CrossEncoderReranker("cross-encoder/ms-marco-MiniLM-L-6-v2", depth=100)
    run = pipe.index(corpus).search(queries, k=10)
    both = Fusion([BM25(), DenseRetriever(MODEL)], method="rrf")

A stage after ``>>`` is a reranker (an object with ``rerank``); a retriever used there (e.g.
``bm25 >> dense:MODEL``) re-scores the candidates through its index with a ``doc_filter``
(:class:`IndexReranker`). The first stage of a pipeline retrieves ``max(k, depth)`` documents (the
first reranker's depth, default 100), each reranker re-scores the top ``depth`` of what it
receives, and the documents below its depth stay under the re-scored ones, in the order it
received them (:func:`under_head`, as rank_llm and RankGPT keep the candidates after their window):
``bm25 >> reranker(depth=20)`` searched at ``k=1000`` is 1000 documents deep, its top 20
reranked, so its recall at any depth is the first stage's and only the top is reordered. The
pipeline returns the top ``k`` of the last stage.

The kept documents' scores are the reranked head's lowest score minus ``step * i`` (``i = 1, 2,
...`` down the kept ones; ``step`` is 1, or ``2**-20`` of that score's magnitude when that is
larger): below every re-scored document and strictly decreasing, so trec_eval (which ranks by
score) keeps the first stage's order under the head. A query the reranker returned nothing for
keeps the first stage's order from ``-1``.

:class:`Fusion` searches each input retriever and fuses the runs with
:func:`~nuggetbench.retrieval.compose.fusion.fuse` (the formulas live there). Pipelines and fusions serve
their inputs from the run cache (:class:`~.caching.CachedRetriever`) unless told not to. Spec
strings for all of this are parsed by :mod:`.spec`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from nuggetbench.data import Corpus, Queries, Run
from nuggetbench.errors import InputError, SpecError
from nuggetbench.retrieval.compose.caching import CachedRetriever, retriever_identity
from nuggetbench.retrieval.compose.fusion import PRESETS, fuse
from nuggetbench.retrieval.protocols import check_k, rerank, search, uses_objective

log = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_DEPTH",
    "Composable",
    "Fusion",
    "FusionIndex",
    "IndexReranker",
    "Pipeline",
    "PipelineIndex",
    "as_reranker",
    "under_head",
]

DEFAULT_DEPTH = 100


class Composable:
    """Mixin: ``self >> reranker`` builds a :class:`Pipeline`; ``retriever >> self`` too (``__rrshift__``
    lets rerankers compose with retrievers that do not inherit this mixin)."""

    def __rshift__(self, other: Any) -> Pipeline:
        return Pipeline(self, other)

    def __rrshift__(self, other: Any) -> Pipeline:
        return Pipeline(other, self)


class IndexReranker(Composable):
    """Use a retriever as a reranker: its index scores each query's candidates via ``doc_filter``.

    Args:
        retriever: any Retriever.
        depth: candidates re-scored per query.
    """

    def __init__(self, retriever: Any, *, depth: int = DEFAULT_DEPTH):
        self.retriever = retriever
        self.depth = int(depth)
        self.name = retriever.name
        self.uses_objective = uses_objective(retriever)
        self._index: tuple[str, Any] | None = None

    def identity(self) -> Any:
        inner = retriever_identity(self.retriever)
        return None if inner is None else {"rerank_with": inner, "depth": self.depth}

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
        fp = corpus.fingerprint()
        if self._index is None or self._index[0] != fp:
            self._index = (fp, self.retriever.index(corpus, show_progress=show_progress))
        cands = {q: run.doc_ids(q)[:k] for q in queries if q in run}
        cands.update({q: [] for q in queries if q not in run})
        return search(
            self._index[1],
            queries,
            k,
            doc_filter=cands,
            show_progress=show_progress,
            objective=objective,
        )


def as_reranker(stage: Any) -> Any:
    """*stage* if it can rerank, else a retriever wrapped in :class:`IndexReranker`.

    Raises:
        SpecError: *stage* has neither ``rerank`` nor ``index``.
    """
    if hasattr(stage, "rerank"):
        return stage
    if hasattr(stage, "index"):
        return IndexReranker(stage)
    raise SpecError(f"{stage!r} cannot follow '>>': it is neither a reranker nor a retriever")


class Pipeline(Composable):
    """A first-stage retriever followed by rerankers (see the module docstring).

    Args:
        first: a Retriever (or a Pipeline, which is flattened).
        *stages: rerankers (retrievers are wrapped in :class:`IndexReranker`).
        cache_runs: serve the first stage from the run cache (:class:`~.caching.CachedRetriever`)
            so pipelines sharing a first stage, or a later experiment, reuse its run.
    """

    def __init__(self, first: Any, *stages: Any, cache_runs: bool = True):
        if isinstance(first, Pipeline):
            stages = (*first.stages, *stages)
            first = first.first
        if not hasattr(first, "index"):
            raise SpecError(
                f"the first stage of a pipeline must be a retriever, got {getattr(first, 'name', first)!r}"
            )
        more: list[Any] = []
        for s in stages:
            if isinstance(s, Pipeline):
                raise SpecError("a pipeline cannot follow '>>'; compose stages left to right")
            more.append(as_reranker(s))
        self.first = first
        self.stages = more
        self.uses_objective = uses_objective(first) or any(uses_objective(s) for s in more)
        self.cache_runs = cache_runs
        self.name = " >> ".join([first.name, *(s.name for s in more)])

    def identity(self) -> Any:
        parts = [retriever_identity(self.first), *(retriever_identity(s) for s in self.stages)]
        if None in parts:
            return None
        return {
            "pipeline": parts,
            "depths": [getattr(s, "depth", DEFAULT_DEPTH) for s in self.stages],
            "below_depth": "kept in the first stage's order",  # runs cut at the depth: not served
        }

    def index(self, corpus: Corpus, *, show_progress: bool = False) -> PipelineIndex:
        first = CachedRetriever(self.first) if self.cache_runs else self.first
        return PipelineIndex(self, first.index(corpus, show_progress=show_progress), corpus)


class PipelineIndex:
    """Index side of :class:`Pipeline`."""

    def __init__(self, pipeline: Pipeline, first_index: Any, corpus: Corpus):
        self.pipeline = pipeline
        self.first_index = first_index
        self.corpus = corpus
        self.name = pipeline.name

    def search(
        self,
        queries: Queries,
        k: int,
        *,
        doc_filter=None,
        show_progress: bool = False,
        objective: str | None = None,
    ) -> Run:
        k = check_k(k)
        stages = self.pipeline.stages
        depth = getattr(stages[0], "depth", DEFAULT_DEPTH) if stages else k
        run = search(
            self.first_index,
            queries,
            max(k, depth),  # the run is as deep as asked: a reranker reorders its top only
            doc_filter=doc_filter,
            show_progress=show_progress,
            objective=objective if uses_objective(self.pipeline.first) else None,
        )
        if stages and run.n_entries == 0:  # named by the error of an empty run (why_empty)
            first = getattr(self.pipeline.first, "name", None) or run.name
            return run.with_name(
                self.name, {**run.metadata, "pipeline": self.name, "empty_stage": first}
            )
        for stage in stages:
            d = int(getattr(stage, "depth", DEFAULT_DEPTH))
            head = rerank(
                stage,
                queries,
                run,
                self.corpus,
                d,
                show_progress=show_progress,
                objective=objective if uses_objective(stage) else None,
            )
            run = under_head(head, run)
        return run.truncate(k).with_name(self.name, {**run.metadata, "pipeline": self.name})


def under_head(head: Run, before: Run) -> Run:
    """*head* (a reranker's top of each query) with the documents of *before* it does not
    hold under it, in *before*'s order (see the module docstring for their scores).

    Args:
        head: the re-scored documents (ranked, as every :class:`Run`).
        before: the run the reranker received.

    Returns:
        A run with *before*'s queries (those without documents too), *head*'s name and
        metadata; each query's documents are *head*'s, then the rest of *before*'s.
    """
    hq, hs, hd, hsc = head.arrays()
    where = {q: i for i, q in enumerate(hq.tolist())}
    bq, bs, bd, bsc = before.arrays()
    missing = set(where) - set(bq.tolist())  # a reranker adds no query
    if missing:
        raise InputError(f"the reranker returned queries it was not given: {sorted(missing)[:3]}")
    docs, scores, starts = [], [], [0]
    for i, q in enumerate(bq.tolist()):
        j = where.get(q)
        lo, hi = (int(hs[j]), int(hs[j + 1])) if j is not None else (0, 0)
        top = set(hd[lo:hi].tolist())
        first = int(bs[i])
        if top == set(bd[first : first + hi - lo].tolist()):  # the usual case: its top, reordered
            rest = np.arange(first + hi - lo, int(bs[i + 1]))
        else:
            rest = np.array(
                [p for p in range(first, int(bs[i + 1])) if bd[p] not in top], dtype=np.int64
            )
        low = float(hsc[hi - 1]) if hi > lo else 0.0  # the head's lowest score
        step = max(1.0, abs(low) * 2.0**-20)
        docs += [hd[lo:hi], bd[rest]]
        scores += [hsc[lo:hi], low - step * np.arange(1, len(rest) + 1, dtype=np.float64)]
        starts.append(starts[-1] + hi - lo + len(rest))
    return Run.from_ranked_arrays(
        bq,
        np.asarray(starts, dtype=np.int64),
        np.concatenate(docs) if docs else hd[:0],
        np.concatenate(scores).astype(np.float64) if scores else hsc[:0],
        name=head.name,
        metadata=head.metadata,
    )


class Fusion(Composable):
    """A retriever that fuses the runs of several retrievers (spec ``fuse(a, b; method=rrf,...)``).

    Args:
        retrievers: the input retrievers (any objects following the Retriever protocol).
        method, depth, norm, weights, k, preset: as :func:`fuse`. Each input is searched to
            ``max(k_search, depth)`` where ``k_search`` is the depth asked of the fused search.
        cache_runs: serve the inputs from the run cache (:class:`~.caching.CachedRetriever`), so
            fusions and pipelines sharing an input retrieve with it once.
    """

    def __init__(
        self,
        retrievers: Sequence[Any],
        *,
        method: str | None = None,
        depth: int | None = None,
        norm: str | None = None,
        weights: Sequence[float] | None = None,
        k: float = 60,
        preset: str | None = None,
        cache_runs: bool = True,
    ):
        if not retrievers:
            raise InputError("a fusion needs at least one retriever")
        self.retrievers = list(retrievers)
        self.cache_runs = cache_runs
        self.uses_objective = any(uses_objective(r) for r in self.retrievers)
        self.params = {
            "method": method,
            "depth": depth,
            "norm": norm,
            "weights": list(weights) if weights is not None else None,
            "k": k,
            "preset": preset,
        }
        # validate early (before any indexing) on an empty run
        fuse([Run([], [], [])] * len(self.retrievers), **self.params)
        opts = [
            f"{key}={'/'.join(map(str, v)) if isinstance(v, list) else v}"
            for key, v in self.params.items()
            if v is not None and not (key == "k" and v == 60)
        ]
        self.name = (
            "fuse("
            + ", ".join(r.name for r in self.retrievers)
            + ("; " + ",".join(opts) if opts else "")
            + ")"
        )

    def identity(self) -> dict:
        inputs = [retriever_identity(r) for r in self.retrievers]
        if None in inputs:
            return None
        # a preset's values are part of what it computes (freshstack's rounding, its epsilon)
        preset = PRESETS.get(self.params["preset"] or "")
        extra = {"preset_values": preset} if preset else {}
        return {"fusion": self.params, "inputs": inputs, **extra}

    @property
    def depth_dependent(self) -> bool:
        """True when the fused top *k* depends on *k* (no explicit depth: inputs are searched to *k*)."""
        return self.params["depth"] is None and self.params["preset"] is None

    def index(self, corpus: Corpus, *, show_progress: bool = False) -> FusionIndex:
        inputs = [CachedRetriever(r) if self.cache_runs else r for r in self.retrievers]
        return FusionIndex(self, [r.index(corpus, show_progress=show_progress) for r in inputs])


class FusionIndex:
    """Index side of :class:`Fusion`."""

    def __init__(self, fusion: Fusion, indexes: list[Any]):
        self.fusion = fusion
        self.indexes = indexes
        self.name = fusion.name

    def search(
        self,
        queries: Queries,
        k: int,
        *,
        doc_filter=None,
        show_progress: bool = False,
        objective: str | None = None,
    ) -> Run:
        depth = self.fusion.params["depth"]
        if depth is None and self.fusion.params["preset"]:
            depth = PRESETS[self.fusion.params["preset"]]["depth"]
        inner_k = max(k, depth or k)
        runs = [
            search(
                ix,
                queries,
                inner_k,
                doc_filter=doc_filter,
                show_progress=show_progress,
                objective=objective if uses_objective(r) else None,
            )
            for ix, r in zip(self.indexes, self.fusion.retrievers)
        ]
        return fuse(runs, **self.fusion.params, name=self.fusion.name).truncate(k)

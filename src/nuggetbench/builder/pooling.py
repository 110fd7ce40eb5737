"""Pooling: the chunks each question's nuggets are judged against (FreshStack, Thakur et al., 2025).

For every question, each *technique* gives a query text:

* inference settings: ``subq`` (the LLM's sub-questions, concatenated) and ``hyde`` (the LLM's
  closed-book answer);
* oracle settings: ``answer`` (the accepted answer) and ``nuggets`` (the nuggets, concatenated);
* ``question`` (title and body) is available too but not in the paper's list.

Each technique's text is searched with every retriever of the plan (BM25 and any dense models,
built by :func:`nuggetbench.retrieval.spec.parse_retriever`) to ``depth`` (100), the runs are fused
per technique with :func:`nuggetbench.retrieval.compose.fusion.fuse` (preset ``freshstack``: min-max
normalised scores summed over the top 100 of each retriever), and the pool of a question is the
top ``pool_depth`` (20) of each technique's fusion, de-duplicated, in technique order then rank.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nuggetbench.data import Corpus, Queries, Run
from nuggetbench.errors import InputError
from nuggetbench.retrieval.compose.fusion import fuse
from nuggetbench.retrieval.spec import parse_retriever

log = logging.getLogger(__name__)

TECHNIQUES = ("subq", "hyde", "answer", "nuggets", "question")
DEFAULT_TECHNIQUES = ("subq", "hyde", "answer", "nuggets")


@dataclass(frozen=True)
class PoolOptions:
    """Retrievers (spec strings), techniques, per-retriever ``depth`` and per-technique ``pool_depth``."""

    retrievers: tuple[str, ...] = ("bm25",)
    techniques: tuple[str, ...] = DEFAULT_TECHNIQUES
    depth: int = 100
    pool_depth: int = 20

    def __post_init__(self) -> None:
        unknown = [t for t in self.techniques if t not in TECHNIQUES]
        if unknown:
            raise InputError(
                f"[pooling] unknown technique(s) {unknown}; choose from {', '.join(TECHNIQUES)}"
            )
        if not self.techniques or not self.retrievers:
            raise InputError("[pooling] needs at least one technique and one retriever")
        if self.depth < 1 or self.pool_depth < 1:
            raise InputError("[pooling] depth and pool_depth must be >= 1")


@dataclass
class PoolResult:
    """``pool``: ``{qid: [doc_id, ...]}``; ``by_technique``: ``{technique: {qid: [doc_id, ...]}}``
    (the top ``pool_depth`` of each fused run)."""

    pool: dict[str, list[str]] = field(default_factory=dict)
    by_technique: dict[str, dict[str, list[str]]] = field(default_factory=dict)

    def sizes(self) -> dict[str, Any]:
        sizes = [len(v) for v in self.pool.values()] or [0]
        return {
            "questions": len(self.pool),
            "pooled_pairs": sum(sizes),
            "min": min(sizes),
            "max": max(sizes),
            "mean": round(sum(sizes) / max(1, len(self.pool)), 2),
        }


def build_pool(
    corpus: Corpus,
    texts: Mapping[str, Mapping[str, str]],
    options: PoolOptions = PoolOptions(),
    *,
    indexes: Sequence[Any] | None = None,
    show_progress: bool = False,
) -> PoolResult:
    """Retrieve, fuse per technique, and pool.

    Args:
        corpus: the chunks.
        texts: ``{technique: {qid: query text}}`` (a question missing from a technique, or with an
            empty text, gets nothing from it).
        options: :class:`PoolOptions`.
        indexes: prebuilt indexes, one per retriever of *options* (built from *corpus* otherwise).

    Returns:
        :class:`PoolResult` with questions in the order of the first technique's mapping.

    Raises:
        UnknownNameError / SpecError: a bad retriever spec.
    """

    if indexes is None:
        indexes = [
            parse_retriever(spec).index(corpus, show_progress=show_progress)
            for spec in options.retrievers
        ]
    result = PoolResult()
    order: list[str] = []
    for tech in options.techniques:
        for q in texts.get(tech, {}):
            if q not in order:
                order.append(q)
    for tech in options.techniques:
        queries = Queries(
            {q: t for q, t in texts.get(tech, {}).items() if t and t.strip()}, name=tech
        )
        if not len(queries):
            result.by_technique[tech] = {}
            continue
        runs = [ix.search(queries, options.depth, show_progress=show_progress) for ix in indexes]
        fused: Run = fuse(runs, preset="freshstack", depth=options.depth, name=f"pool:{tech}")
        top = fused.truncate(options.pool_depth)
        result.by_technique[tech] = {q: top.doc_ids(q) if q in top else [] for q in queries}
    for q in order:
        seen: list[str] = []
        for tech in options.techniques:
            for d in result.by_technique.get(tech, {}).get(q, []):
                if d not in seen:
                    seen.append(d)
        result.pool[q] = seen
    return result


__all__ = ["PoolOptions", "PoolResult", "build_pool", "TECHNIQUES", "DEFAULT_TECHNIQUES"]

"""Nugget measures: ``Coverage@k`` (alias ``AC_Recall@k``) and ``AC_MRR@k``.

They read nugget-level judgments, ``ctx.qrels.nuggets`` (a
:class:`~nuggetbench.data.NuggetQrels`), so they serve any nugget dataset: FreshStack's judged
nuggets, or fastbook's answer components once their evidence spans are judged against a chunked
corpus (:func:`nuggetbench.corpus.judge_spans`).

* ``Coverage@k``: the fraction of a query's nuggets supported by at least one of its top *k*
  documents, over **all** the query's nuggets (supported by some document or not). FreshStack's
  Coverage (Thakur et al., 2025) and fastbook-benchmark's "Modified Recall@k" /
  "Answer Component Recall@k" (Bakshi, 2024). It differs from ndeval's ``StRecall`` (subtopic
  recall), whose denominator counts only the subtopics some judged document covers.
* ``AC_MRR@k``: fastbook-benchmark's "Modified MRR@k" / "Answer Component MRR@k": each nugget's
  first supporting document in the top *k* is found; the value is ``1 / (the largest of those
  ranks)``, i.e. one over the depth needed for every nugget to be supported, and 0 when any nugget
  has no supporting document in the top *k* (so a nugget without evidence, e.g. an answer
  component with an empty context, makes it 0).

Parameters (both measures): ``drop_extraneous`` (default False) leaves out nuggets whose metadata
flags ``extraneous_answer``; ``drop_implicit`` (default False) leaves out nuggets whose
``explicit_context`` is false. The defaults follow the fastbook author's scoring (every component
counts). A query left with no nuggets scores 0.

The ``fastbook`` profile averages over every query that declares nuggets (so a query none of
whose nuggets any passage supports still counts, with 0), with trec_eval's tie order.

Tied scores: FreshStack's ``coverage()`` sorts each query's ``{doc: score}`` dict (filled in run
file order) with Python's stable sort, so ties keep the file order; the ``freshstack`` profile
does the same (``tie_break_for("Coverage") == "input"``, read from ``Run.input_order``). The
fastbook author scores the passage lists his search engines return (the ``fastbook`` profile: doc
id descending). Only runs with tied scores at the cutoff can differ. Without ``@k`` both measures
read the whole ranking (the author's functions default to ``cutoff=10``: write ``AC_MRR@10``).
FreshStack rounds each query's Coverage to 5 decimals and the mean to 4; values here are unrounded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from nuggetbench.errors import InputError
from nuggetbench.measures.params import DROP_EXTRANEOUS, DROP_IMPLICIT, params_table
from nuggetbench.measures.registry import MeasureFamily, register

if TYPE_CHECKING:  # pragma: no cover
    from nuggetbench.data import NuggetQrels
    from nuggetbench.measures.context import EvalContext
    from nuggetbench.measures.measure import Measure

__all__ = ["Coverage", "ACMRR", "nugget_first_ranks", "coverage_values", "ac_mrr_values"]


def _flag(value) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return bool(value)


def _kept(nugget, drop_extraneous: bool, drop_implicit: bool) -> bool:
    meta = nugget.metadata or {}
    if drop_extraneous and _flag(meta.get("extraneous_answer", False)):
        return False
    return not (
        drop_implicit and "explicit_context" in meta and not _flag(meta["explicit_context"])
    )


def nugget_first_ranks(
    nuggets: NuggetQrels,
    query_ids: Sequence[str],
    entry_qidx: np.ndarray,
    entry_rank: np.ndarray,
    entry_doc: np.ndarray,
    *,
    drop_extraneous: bool = False,
    drop_implicit: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Rank of each nugget's first supporting document among the given ranked entries.

    Args:
        nuggets: nugget judgments (support > 0 means the document supports the nugget).
        query_ids: the evaluated queries, shape (Q,).
        entry_qidx, entry_rank, entry_doc: the ranked run entries already cut at *k*, shape (n,):
            index into *query_ids*, 1-based rank, doc id.
        drop_extraneous, drop_implicit: leave those nuggets out (see the module docstring).

    Returns:
        ``(n_nuggets, first)``: int64 ``(Q,)`` counts of kept nuggets per query, and float64
        ``(N,)`` first-supporting ranks of the kept nuggets (``inf`` when none among the
        entries), with ``N = n_nuggets.sum()``, grouped by query in *query_ids* order.
    """
    import pandas as pd

    qindex = {q: i for i, q in enumerate(query_ids)}
    nug_ids: list[str] = []
    nug_q: list[int] = []
    for q in query_ids:
        for nug in nuggets.nuggets_of(q):
            if _kept(nug, drop_extraneous, drop_implicit):
                nug_ids.append(nug.nugget_id)
                nug_q.append(qindex[q])
    n_nuggets = np.bincount(np.asarray(nug_q, dtype=np.int64), minlength=len(query_ids)).astype(
        np.int64
    )
    first = np.full(len(nug_ids), np.inf)
    if not nug_ids or not len(entry_doc):
        return n_nuggets, first
    jq, jn, jd, js = nuggets.arrays()
    supported = js > 0
    judged = pd.DataFrame(
        {
            "q": pd.Index(query_ids).get_indexer(jq[supported]),
            "n": jn[supported],
            "d": jd[supported],
        }
    )
    entries = pd.DataFrame(
        {
            "q": np.asarray(entry_qidx, dtype=np.int64),
            "d": np.asarray(entry_doc, dtype=object),
            "rank": np.asarray(entry_rank, dtype=np.int64),
        }
    )
    hits = judged[judged["q"] >= 0].merge(entries, on=["q", "d"], how="inner")
    best = hits.groupby("n", sort=False)["rank"].min()
    position = pd.Series(np.arange(len(nug_ids)), index=pd.Index(nug_ids))
    found = best.index.intersection(position.index)
    first[position.loc[found].to_numpy()] = best.loc[found].to_numpy(dtype=np.float64)
    return n_nuggets, first


def coverage_values(n_nuggets: np.ndarray, first: np.ndarray) -> np.ndarray:
    """Per-query Coverage from :func:`nugget_first_ranks` output: supported / all (0 when none)."""
    qidx = np.repeat(np.arange(len(n_nuggets)), n_nuggets)
    supported = np.bincount(
        qidx, weights=np.isfinite(first).astype(np.float64), minlength=len(n_nuggets)
    )
    return np.divide(supported, n_nuggets, out=np.zeros(len(n_nuggets)), where=n_nuggets > 0)


def ac_mrr_values(n_nuggets: np.ndarray, first: np.ndarray) -> np.ndarray:
    """Per-query AC_MRR from :func:`nugget_first_ranks` output: 1 / deepest first rank, 0 if any
    nugget is unsupported (or the query has none)."""
    qidx = np.repeat(np.arange(len(n_nuggets)), n_nuggets)
    deepest = np.zeros(len(n_nuggets))
    np.maximum.at(deepest, qidx, first)
    ok = (n_nuggets > 0) & np.isfinite(deepest)
    out = np.zeros(len(n_nuggets))
    out[ok] = 1.0 / deepest[ok]
    return out


def _nuggets_of(ctx: EvalContext, measure: Measure) -> NuggetQrels:
    nuggets = ctx.qrels.nuggets
    if nuggets is None:
        raise InputError(
            f"{measure} needs nugget-level judgments (qrels.nuggets): evaluate on a "
            "nugget dataset (fastbook, freshstack/...) or with a nugget qrels file"
        )
    return nuggets


class _NuggetFamily(MeasureFamily):
    params = params_table(DROP_EXTRANEOUS, DROP_IMPLICIT)
    cutoff = "optional"

    def ranks(self, ctx: EvalContext, measure: Measure) -> tuple[np.ndarray, np.ndarray]:
        nuggets = _nuggets_of(ctx, measure)
        # the profile's tie order for this family (FreshStack: input order), cut at k
        view = ctx.ranked(cutoff=measure.cutoff, tie_break=ctx.profile.tie_break_for(self.name))
        docs = ctx.run.arrays()[2][view.run_index]
        return nugget_first_ranks(
            nuggets,
            list(ctx.query_ids),
            view.qidx,
            view.rank + 1,
            docs,
            drop_extraneous=measure.param("drop_extraneous"),
            drop_implicit=measure.param("drop_implicit"),
        )


class Coverage(_NuggetFamily):
    """Fraction of a query's nuggets supported by at least one of the top k (all nuggets count)."""

    name = "Coverage"
    aliases = ("AC_Recall", "Modified_Recall")
    description = (
        "fraction of the query's nuggets supported within the top k, over all its nuggets "
        "(FreshStack Coverage; fastbook Answer Component Recall)"
    )

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        return coverage_values(*self.ranks(ctx, measure))


class ACMRR(_NuggetFamily):
    """1 / the depth at which every nugget has a supporting document; 0 if one has none in top k."""

    name = "AC_MRR"
    aliases = ("Modified_MRR",)
    description = (
        "1 / rank of the deepest first-supporting document over the query's nuggets, 0 if "
        "a nugget is unsupported in the top k (fastbook Answer Component MRR)"
    )

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        return ac_mrr_values(*self.ranks(ctx, measure))


register(Coverage())
register(ACMRR())

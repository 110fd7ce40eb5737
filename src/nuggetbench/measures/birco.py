"""The ``birco`` profile and the ``RRmax`` family: BIRCO's ``rank2metric.py``, reproduced.

BIRCO (Wang et al., 2024, https://github.com/BIRCO-benchmark/BIRCO) scores a rank file
``{qid: [doc, ...]}`` with ``evaluation/rank2metric.py`` (functions in ``evaluation/util.py``):

=========  ===================================================================================
BIRCO      nuggetbench under ``--profile birco``
=========  ===================================================================================
NDCG@10    ``nDCG@10``: linear gain = grade, ``1/log2(rank+1)`` discount, ideal ranking over the
           query's pool (trec_eval's ``ndcg_cut.10``)
MRR@10     ``RRmax@10``: 1/rank of the first document whose grade equals the pool's maximum
           grade, 0 when none is in the top 10
R@5..100   ``R@5``, ``R@10``, ``R@20``, ``R@100``: relevant (grade >= 1) in the top k / relevant
MAP        ``AP``: trec_eval's average precision over the whole ranking
=========  ===================================================================================

Values are multiplied by 100. ``rank2metric.py --boot True`` reports, for each measure, the mean
and the standard deviation (``ddof=0``) of 1000 bootstrap means drawn with ``numpy.random.seed(42)``
and ``numpy.random.choice(n, n, replace=True)`` over the per-query values *in the order of the
qrel dict*; :func:`nuggetbench.compare.birco_bootstrap` and
:func:`nuggetbench.compare.birco_summary` do exactly that (every bootstrap lives in ``compare/``).
The ``birco`` profile is in :mod:`nuggetbench.measures.profiles`.

Where the profile differs from trec_eval (and from upstream's crashes):

- Only queries with at least one document of grade >= 1 are evaluated (R@k and MAP skip the
  others upstream; its NDCG divides by zero on them, so upstream can only score inputs where every
  query has one). ``trec_eval -c`` would average such queries as 0.
- ``RRmax`` takes the query's maximum grade as the relevance threshold (upstream's
  ``reciprocal_rank``); trec_eval's ``recip_rank`` uses a fixed threshold (``-l``, default 1).
  Upstream's loop leaves out the *last* pooled document when every document has the maximum
  grade; that corner case (absent from the BIRCO test sets) is not reproduced.
- Values are scaled by 100; the bootstrap is BIRCO's legacy-RandomState one, not
  :mod:`nuggetbench.compare`'s seeded ``Generator``.
- A rank file keeps its own order (scores ``n..1``, no ties); upstream crashes on a query missing
  from the rank file, nuggetbench scores it on an empty ranking (0) and reports it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from nuggetbench.measures.profiles import BIRCO_MEASURES
from nuggetbench.measures.registry import MeasureFamily, register

if TYPE_CHECKING:  # pragma: no cover
    from nuggetbench.measures.context import EvalContext
    from nuggetbench.measures.measure import Measure

__all__ = ["RRMax", "BIRCO_MEASURES"]


class RRMax(MeasureFamily):
    """Reciprocal rank of the first document graded with the query's maximum grade (BIRCO MRR).

    Per query: ``g* = max grade`` over the judged documents (the BIRCO pool); the value is
    ``1 / rank`` of the first retrieved document with grade ``g*`` within the cutoff, 0 when there
    is none or when ``g* < 1`` (no relevant document). Source: ``reciprocal_rank`` in BIRCO's
    ``evaluation/util.py``.
    """

    name = "RRmax"
    aliases = ("MRRmax", "RR_max")
    params: ClassVar[dict[str, Any]] = {}
    cutoff = "optional"
    description = (
        "reciprocal rank of the first document with the query's maximum grade (BIRCO's MRR)"
    )

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        nq = len(ctx.query_ids)
        jq, grades = ctx.judged_grades()
        best = np.full(nq, np.iinfo(np.int64).min, dtype=np.int64)
        if len(jq):
            np.maximum.at(best, jq, grades)
        view = ctx.ranked(rel=1, cutoff=measure.cutoff)
        target = best[view.qidx]
        hit = (view.grade == target) & (target >= 1)
        out = np.zeros(nq, dtype=np.float64)
        if hit.any():
            q, r = view.qidx[hit], view.rank[hit]
            first = np.ones(len(q), dtype=bool)
            first[1:] = q[1:] != q[:-1]  # entries are grouped by query and ranked
            out[q[first]] = 1.0 / (r[first] + 1.0)
        return out


register(RRMax())

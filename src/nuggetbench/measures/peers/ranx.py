"""ranx's metrics that trec_eval has no name for: ``hits``, ``f1`` and ``dcg``.

Source: ranx 0.3.21 ``ranx/metrics/hits.py``, ``f1.py`` and ``ndcg.py``. A document is relevant
when judged with a grade ``>= rel`` (ranx's ``rel_lvl``); the ranking is the profile's (ranx sorts
by score with numba's unstable sort, so its ties have no set order).

* ``Hits@k``: relevant documents in the top k (ranx ``hits@k``); without k, in the whole ranking.
  Averaged over queries like every rate (``NumRelRet`` is the trec_eval count, summed).
* ``F1@k``: ``2 P R / (P + R)`` with ``P = hits@k / k`` and ``R = hits@k / relevant`` (ranx
  ``f1@k``); without k, ``P`` over the retrieved documents (trec_eval's ``set_F``).
* ``DCG@k``: the discounted gain ``sum_i g_i / log2(i + 2)`` that ``nDCG`` divides by the ideal
  one, same parameters (``dcg``, ``gains``, ``judged_only``): ranx ``dcg@k`` (gain = grade) and
  ``dcg_burges@k`` (``dcg=exp-log2``).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from nuggetbench.measures.context import EvalContext
from nuggetbench.measures.gains import sum_by_query
from nuggetbench.measures.measure import Measure
from nuggetbench.measures.params import JUDGED_ONLY, REL
from nuggetbench.measures.registry import MeasureFamily, register
from nuggetbench.measures.trec.adhoc import NDCG
from nuggetbench.spec import params_table

__all__: list[str] = []

_SOURCE = "ranx 0.3.21 ranx.metrics"


def _hits(ctx: EvalContext, measure: Measure) -> tuple[np.ndarray, np.ndarray]:
    """Relevant documents in the top k and the documents there, float64 (Q,) each."""
    view = ctx.ranked(
        rel=measure.param("rel"), judged_only=measure.param("judged_only"), cutoff=measure.cutoff
    )
    return view.count(view.relevant), view.num_ret.astype(np.float64)


class Hits(MeasureFamily):
    name = "Hits"
    aliases = ("hits",)
    params: ClassVar[dict[str, Any]] = params_table(REL, JUDGED_ONLY)
    cutoff = "optional"
    scalable = False
    description = "relevant documents in the top k, averaged over queries (ranx hits@k)"
    source = _SOURCE

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        return _hits(ctx, measure)[0]


class F1(MeasureFamily):
    name = "F1"
    aliases = ("f1",)
    params: ClassVar[dict[str, Any]] = params_table(REL, JUDGED_ONLY)
    cutoff = "optional"
    description = "harmonic mean of P@k and R@k (ranx f1@k); without k, of the retrieved set"
    source = _SOURCE

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        hits, retrieved = _hits(ctx, measure)
        k = retrieved if measure.cutoff is None else np.full_like(hits, float(measure.cutoff))
        relevant = ctx.num_rel(measure.param("rel"))
        p = np.zeros_like(hits)
        np.divide(hits, k, out=p, where=k > 0)
        r = np.zeros_like(hits)
        np.divide(hits, relevant, out=r, where=relevant > 0)
        out = np.zeros_like(hits)
        np.divide(2.0 * p * r, p + r, out=out, where=(p + r) > 0)
        return out


class DCG(NDCG):
    name = "DCG"
    aliases = ("dcg",)
    description = "discounted cumulative gain, not normalised (ranx dcg@k / dcg_burges@k)"
    source = _SOURCE

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        dcg, gains = measure.param("dcg"), measure.param("gains")
        full = ctx.ranked(rel=1, judged_only=measure.param("judged_only"))
        q, rank, weight, *_ = ctx.per_view(
            full, f"ndcg terms {dcg} {gains}", lambda: self._terms(ctx, full, dcg, gains)
        )
        keep = rank < measure.cutoff if measure.cutoff is not None else slice(None)
        return sum_by_query(q[keep], weights=weight[keep], minlength=len(ctx.query_ids))


for _family in (Hits(), F1(), DCG()):
    register(_family)

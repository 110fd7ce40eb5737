"""trec_eval's experimental graded measures ``G``, ``ndcg_rel`` and ``Rndcg``, vectorised.

Gains as in :mod:`nuggetbench.measures.gains` (linear by default, trec_eval's gain map with
``gains='1=3,2=9'``). With ``g_i`` the gain at rank i (1-based), ``I_i`` the ideal ranking's gain
at rank i (0 past its positive gains), ``DCG@i`` / ``IDCG@i`` the discounted sums
``sum g / log2(rank + 1)`` over the first i ranks, and ``P`` the number of positive ideal gains:

* ``G`` (m_G.c): ``sum_i g_i / log2(2 + C_i - S_i)`` over ranks with ``g_i != 0``, where
  ``C_i = sum_{j<=i} max(I_j, 1)`` and ``S_i = sum_{j<=i} g_j``; divided by ``sum I``.
* ``NDCGRel`` (trec_eval ``ndcg_rel``, m_ndcg_rel.c): the mean, over the P relevant documents,
  of ``DCG@i / IDCG@min(i, P)`` at the rank i of each retrieved one with ``g_i > 0``, and
  ``DCG@n / IDCG@P`` (n retrieved) for each one not retrieved.
* ``Rndcg`` (m_Rndcg.c): the mean of ``DCG@b / IDCG@b`` over the ranks b at which the ideal gain
  changes (the last being b = P), plus ``DCG@n / IDCG@P`` when more than P + 1 documents were
  retrieved; 0 when the query has no relevant document (``grade >= rel``).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from ..spec import params_table
from .base import Measure
from .context import EvalContext, Ranked
from .gains import GAINS, cumsum_by_query, grade_gains, ideal_gains, position_in_query
from .params import JUDGED_ONLY, REL
from .registry import MeasureFamily, register

__all__: list[str] = []


class _Graded:
    """The flat arrays of one graded evaluation: run gains and the ideal ranking."""

    def __init__(self, ctx: EvalContext, measure: Measure):
        gains = measure.param("gains")
        self.n = len(ctx.query_ids)
        self.view: Ranked = ctx.ranked(judged_only=measure.param("judged_only"))
        self.gain = grade_gains(self.view.grade, "linear", gains)
        self.iq, self.ig, self.istarts = ideal_gains(ctx, "linear", gains)
        self.npos = np.diff(self.istarts)
        self.ipos = position_in_query(self.iq, self.n)

    def ideal_at_entries(self) -> np.ndarray:
        """The ideal gain at each run entry's rank (0 past the positive ones), float64 (n,)."""
        v = self.view
        inside = v.rank < self.npos[v.qidx]
        idx = np.where(inside, self.istarts[:-1][v.qidx] + v.rank, 0)
        return np.where(inside, self.ig[idx] if len(self.ig) else 0.0, 0.0)

    def run_dcg(self) -> np.ndarray:
        """DCG through each entry (inclusive), float64 (n,)."""
        v = self.view
        return cumsum_by_query(self.gain / np.log2(v.rank + 2.0), v.starts)

    def ideal_dcg(self) -> np.ndarray:
        """IDCG through each ideal position (inclusive), float64 (m,)."""
        return cumsum_by_query(self.ig / np.log2(self.ipos + 2.0), self.istarts)

    def run_dcg_end(self, rdcg: np.ndarray) -> np.ndarray:
        """DCG of each whole ranking, float64 (Q,)."""
        out = np.zeros(self.n, dtype=np.float64)
        ends = self.view.starts[1:] - 1
        has = self.view.num_ret > 0
        out[has] = rdcg[ends[has]]
        return out

    def ideal_full(self, idcg: np.ndarray) -> np.ndarray:
        """IDCG over all positive ideal gains, float64 (Q,)."""
        out = np.zeros(self.n, dtype=np.float64)
        has = self.npos > 0
        out[has] = idcg[self.istarts[1:][has] - 1]
        return out


class G(MeasureFamily):
    name = "G"
    aliases = ("trec_G",)
    params: ClassVar[dict[str, Any]] = params_table(GAINS, JUDGED_ONLY)
    cutoff = "forbidden"
    description = "normalised gain G (Buckley 2008; trec_eval G)"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        gr = _Graded(ctx, measure)
        v = gr.view
        cost = cumsum_by_query(np.maximum(gr.ideal_at_entries(), 1.0), v.starts)
        got = cumsum_by_query(gr.gain, v.starts)
        nz = gr.gain != 0
        terms = gr.gain[nz] / np.log2(2.0 + cost[nz] - got[nz])
        total = np.bincount(v.qidx[nz], weights=terms, minlength=gr.n)
        ideal = np.bincount(gr.iq, weights=gr.ig, minlength=gr.n)
        out = np.zeros(gr.n, dtype=np.float64)
        np.divide(total, ideal, out=out, where=ideal > 0)
        return out


class NDCGRel(MeasureFamily):
    name = "NDCGRel"
    aliases = ("ndcg_rel",)
    params: ClassVar[dict[str, Any]] = params_table(GAINS, JUDGED_ONLY)
    cutoff = "forbidden"
    description = "nDCG averaged over the relevant documents (trec_eval ndcg_rel)"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        gr = _Graded(ctx, measure)
        v = gr.view
        rdcg, idcg = gr.run_dcg(), gr.ideal_dcg()
        hit = (gr.gain > 0) & (gr.npos[v.qidx] > 0)
        q = v.qidx[hit]
        at = gr.istarts[:-1][q] + np.minimum(v.rank[hit], gr.npos[q] - 1)
        total = np.bincount(q, weights=rdcg[hit] / idcg[at], minlength=gr.n)
        found = np.bincount(q, minlength=gr.n)
        full = gr.ideal_full(idcg)
        rest = np.zeros(gr.n, dtype=np.float64)
        np.divide(gr.run_dcg_end(rdcg), full, out=rest, where=full > 0)
        total += (gr.npos - found) * rest
        out = np.zeros(gr.n, dtype=np.float64)
        np.divide(total, gr.npos, out=out, where=(total > 0) & (gr.npos > 0))
        return out


class Rndcg(MeasureFamily):
    name = "Rndcg"
    aliases = ("R_ndcg",)
    params: ClassVar[dict[str, Any]] = params_table(GAINS, REL, JUDGED_ONLY)
    cutoff = "forbidden"
    description = "nDCG averaged at the ranks where the ideal gain changes (trec_eval Rndcg)"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        gr = _Graded(ctx, measure)
        v = gr.view
        rdcg, idcg = gr.run_dcg(), gr.ideal_dcg()
        # boundaries b (1-based count of ideal ranks before the change): gain changes, and b = P
        change = np.zeros(len(gr.ig), dtype=bool)
        change[1:] = (gr.ig[1:] != gr.ig[:-1]) & (gr.iq[1:] == gr.iq[:-1])
        last = np.zeros(len(gr.ig), dtype=bool)
        last[gr.istarts[1:][gr.npos > 0] - 1] = True
        bq = np.concatenate((gr.iq[change], gr.iq[last]))
        b = np.concatenate((gr.ipos[change], gr.ipos[last] + 1))
        ideal_b = np.concatenate((idcg[np.flatnonzero(change) - 1], idcg[last]))
        upto = np.minimum(b, v.num_ret[bq])
        src = rdcg if len(rdcg) else np.zeros(1)
        run_b = np.where(upto > 0, src[np.maximum(v.starts[:-1][bq] + upto - 1, 0)], 0.0)
        total = np.bincount(bq, weights=run_b / ideal_b, minlength=gr.n)
        points = np.bincount(bq, minlength=gr.n).astype(np.float64)
        extra = (v.num_ret > gr.npos + 1) & (gr.npos > 0)
        full = gr.ideal_full(idcg)
        total[extra] += gr.run_dcg_end(rdcg)[extra] / full[extra]
        points[extra] += 1
        out = np.zeros(gr.n, dtype=np.float64)
        ok = (points > 0) & (ctx.num_rel(measure.param("rel")) > 0)
        np.divide(total, points, out=out, where=ok)
        return out


for _family in (G(), NDCGRel(), Rndcg()):
    register(_family)

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

from nuggetbench.measures.context import EvalContext, Ranked
from nuggetbench.measures.gains import (
    GAINS,
    cumsum_by_query,
    grade_gains,
    ideal_gains,
    position_in_query,
    sum_by_query,
)
from nuggetbench.measures.measure import Measure
from nuggetbench.measures.params import JUDGED_ONLY, REL
from nuggetbench.measures.registry import MeasureFamily, register
from nuggetbench.spec import params_table

__all__: list[str] = []


class _Graded:
    """One graded evaluation: the run entries with a non-zero gain (few) and the ideal ranking.

    Entries without gain add nothing to a DCG, so the sums run over the non-zero ones only and
    their ranks say where they sit.
    """

    def __init__(self, ctx: EvalContext, measure: Measure):
        gains = measure.param("gains")
        self.n = len(ctx.query_ids)
        view: Ranked = ctx.ranked(judged_only=measure.param("judged_only"))
        self.num_ret = view.num_ret
        gain = grade_gains(view.grade, "linear", gains)
        nz = gain != 0
        self.q, self.rank, self.gain = view.qidx[nz], view.rank[nz], gain[nz]
        self.starts = np.zeros(self.n + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.q, minlength=self.n), out=self.starts[1:])
        self.iq, self.ig, self.istarts = ideal_gains(ctx, "linear", gains)
        self.npos = np.diff(self.istarts)
        self.ipos = position_in_query(self.iq, self.n)

    def run_dcg(self) -> np.ndarray:
        """DCG through each non-zero entry (inclusive), float64 (m,)."""
        return cumsum_by_query(self.gain / np.log2(self.rank + 2.0), self.starts)

    def ideal_dcg(self) -> np.ndarray:
        """IDCG through each ideal position (inclusive), float64 (p,)."""
        return cumsum_by_query(self.ig / np.log2(self.ipos + 2.0), self.istarts)

    def run_dcg_end(self) -> np.ndarray:
        """DCG of each whole ranking, float64 (Q,)."""
        terms = self.gain / np.log2(self.rank + 2.0)
        return sum_by_query(self.q, weights=terms, minlength=self.n)

    def run_dcg_at(self, q: np.ndarray, b: np.ndarray) -> np.ndarray:
        """DCG of the first *b* ranks of queries *q* (int64 (k,) each), float64 (k,)."""
        width = np.int64(int(max(self.num_ret.max(initial=0), b.max(initial=0))) + 1)
        keys = self.q * width + self.rank
        cum = np.concatenate(([0.0], np.cumsum(self.gain / np.log2(self.rank + 2.0))))
        hi = np.searchsorted(keys, q * width + b)
        lo = self.starts[q]
        return cum[hi] - cum[lo]

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
        # C_i = sum_{j<=i} max(I_j, 1) = (i + 1) + sum_{j<=min(i, P-1)} max(I_j - 1, 0)
        extra = cumsum_by_query(np.maximum(gr.ig - 1.0, 0.0), gr.istarts)
        has = gr.npos[gr.q] > 0
        at = gr.istarts[:-1][gr.q] + np.minimum(gr.rank, gr.npos[gr.q] - 1)
        cost = gr.rank + 1.0 + np.where(has, extra[np.where(has, at, 0)] if len(extra) else 0, 0)
        got = cumsum_by_query(gr.gain, gr.starts)
        terms = gr.gain / np.log2(2.0 + cost - got)
        total = sum_by_query(gr.q, weights=terms, minlength=gr.n)
        ideal = sum_by_query(gr.iq, weights=gr.ig, minlength=gr.n)
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
        rdcg, idcg = gr.run_dcg(), gr.ideal_dcg()
        hit = (gr.gain > 0) & (gr.npos[gr.q] > 0)
        q = gr.q[hit]
        at = gr.istarts[:-1][q] + np.minimum(gr.rank[hit], gr.npos[q] - 1)
        total = sum_by_query(q, weights=rdcg[hit] / idcg[at], minlength=gr.n)
        found = np.bincount(q, minlength=gr.n)
        full = gr.ideal_full(idcg)
        rest = np.zeros(gr.n, dtype=np.float64)
        np.divide(gr.run_dcg_end(), full, out=rest, where=full > 0)
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
        idcg = gr.ideal_dcg()
        # boundaries b (1-based count of ideal ranks before the change): gain changes, and b = P
        change = np.zeros(len(gr.ig), dtype=bool)
        change[1:] = (gr.ig[1:] != gr.ig[:-1]) & (gr.iq[1:] == gr.iq[:-1])
        last = np.zeros(len(gr.ig), dtype=bool)
        last[gr.istarts[1:][gr.npos > 0] - 1] = True
        bq = np.concatenate((gr.iq[change], gr.iq[last]))
        b = np.concatenate((gr.ipos[change], gr.ipos[last] + 1))
        ideal_b = np.concatenate((idcg[np.flatnonzero(change) - 1], idcg[last]))
        run_b = gr.run_dcg_at(bq, b)
        total = sum_by_query(bq, weights=run_b / ideal_b, minlength=gr.n)
        points = np.bincount(bq, minlength=gr.n).astype(np.float64)
        extra = (gr.num_ret > gr.npos + 1) & (gr.npos > 0)
        full = gr.ideal_full(idcg)
        total[extra] += gr.run_dcg_end()[extra] / full[extra]
        points[extra] += 1
        out = np.zeros(gr.n, dtype=np.float64)
        ok = (points > 0) & (ctx.num_rel(measure.param("rel")) > 0)
        np.divide(total, points, out=out, where=ok)
        return out


for _family in (G(), NDCGRel(), Rndcg()):
    register(_family)

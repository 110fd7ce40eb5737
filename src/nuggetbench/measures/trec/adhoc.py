"""trec_eval's ad hoc measures, computed by us over numpy arrays (vectorised across queries).

Definitions follow trec_eval 9.0.8 (``m_*.c`` of usnistgov/trec_eval), ranking by score
descending then doc id descending, relevance threshold ``rel`` = trec_eval's ``-l`` (default 1),
``judged_only`` = trec_eval's ``-J`` (documents without a non-negative judgment are dropped and
the rest re-ranked). ``R`` below is the number of judged documents with ``grade >= rel``.

=============  ================  ================================================================
family         trec_eval         value per query
=============  ================  ================================================================
nDCG           ndcg              sum_i g_i / log2(i+2) over the ranking (0-based i, gain g = grade
                                 when > 0), divided by the same sum over the ideal ranking (every
                                 positive judgment, grades descending); ``rel`` is not used,
                                 as in trec_eval (Jarvelin & Kekalainen, TOIS 2002);
                                 ``dcg=exp-log2``: g = 2^grade - 1 (gdeval); ``gains='1=3,2=9'``:
                                 trec_eval's gain map (``ndcg.1=3,2=9``), see ``gains.py``
nDCG@k         ndcg_cut.k        the same over the top k of both rankings
AP             map               sum of precision at each relevant retrieved doc / R
AP@k           map_cut.k         the same over the top k (still divided by R)
RR             recip_rank        1 / rank of the first relevant doc (0 if none)
RR@k           --                the same, 0 when the first relevant doc is below k
P@k            P.k               relevant docs in the top k / k
R@k            recall.k          relevant docs in the top k / R (0 when R = 0)
Success@k      success.k         1 when a relevant doc is in the top k
Rprec          Rprec             relevant docs in the top R / R
Bpref          bpref             Buckley & Voorhees, SIGIR 2004, as m_bpref.c: for each relevant
                                 retrieved doc, 1 - min(n, R) / min(N, R) with n the judged
                                 non-relevant docs above it and N all judged non-relevant docs
                                 (1 when n = 0); summed and divided by R
NumRet         num_ret           retrieved docs (summed over queries, like trec_eval's ``all``)
NumRel         num_rel           R (summed)
NumRelRet      num_rel_ret       relevant retrieved docs (summed)
Judged@k       --                ir_measures' judgment rate: docs of the top k that appear in the
                                 qrels (any grade) / min(k, retrieved); 0 when nothing retrieved
=============  ================  ================================================================

Every value is 0 for a judged query with an empty ranking, except NumRel.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from nuggetbench.measures.context import UNJUDGED, EvalContext, Ranked
from nuggetbench.measures.gains import DCG, GAINS, grade_gains, ideal_gains, sum_by_query
from nuggetbench.measures.measure import Measure
from nuggetbench.measures.params import JUDGED_ONLY, REL, params_table
from nuggetbench.measures.registry import MeasureFamily, register
from nuggetbench.spec import Param

_REL: dict[str, Any] = params_table(REL)
_REL_JUDGED: dict[str, Any] = params_table(REL, JUDGED_ONLY)


def _safe_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.zeros(len(num), dtype=np.float64)
    np.divide(num, den, out=out, where=den > 0)
    return out


def _view(ctx: EvalContext, measure: Measure, cutoff: int | None = None) -> Ranked:
    return ctx.ranked(
        rel=measure.param("rel"), judged_only=measure.param("judged_only"), cutoff=cutoff
    )


def _position_in_query(q: np.ndarray, n_queries: int) -> np.ndarray:
    """0-based position of each entry among its query's entries; *q*: (m,) query indexes, grouped."""
    counts = np.bincount(q, minlength=n_queries)
    first = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=first[1:])
    return np.arange(len(q), dtype=np.int64) - first[q]


def _relevant_positions(view: Ranked) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(qidx, rank, nth)`` of relevant entries; ``nth`` = 1-based count among the query's relevant."""
    q = view.qidx[view.relevant]
    r = view.rank[view.relevant]
    return q, r, _position_in_query(q, len(view.starts) - 1) + 1


def _relevant_retrieved(ctx: EvalContext, measure: Measure) -> np.ndarray:
    """Per-query relevant documents in the top ``measure.cutoff``, float64 (Q,), a fresh copy
    (counted once per view: ``P@k``, ``R@k``, ``num_rel_ret``... share it)."""
    view = _view(ctx, measure, measure.cutoff)
    counted = ctx.per_view(view, "relevant_retrieved", lambda: view.count(view.relevant))
    return counted.copy()


class NDCG(MeasureFamily):
    name = "nDCG"
    aliases = ("ndcg", "NDCG")
    params: ClassVar[dict[str, Any]] = params_table(JUDGED_ONLY, DCG, GAINS)
    cutoff = "optional"
    description = (
        "normalised DCG, log2(rank+1) discount; gain = grade (trec_eval ndcg / ndcg_cut.k), "
        "2^grade - 1 (dcg=exp-log2) or trec_eval's gain map (gains='1=3,2=9')"
    )

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        k = measure.cutoff
        dcg, gains = measure.param("dcg"), measure.param("gains")
        # the top-k view is the whole ranking's entries of rank < k, in the same order: the
        # discounted gains are computed once per ranking and cut for each k (same sums)
        full = ctx.ranked(rel=1, judged_only=measure.param("judged_only"))
        q, rank, weight, iq, irank, iweight = ctx.per_view(
            full, f"ndcg terms {dcg} {gains}", lambda: self._terms(ctx, full, dcg, gains)
        )
        n = len(ctx.query_ids)
        if k is None:
            return _safe_div(
                sum_by_query(q, weights=weight, minlength=n),
                sum_by_query(iq, weights=iweight, minlength=n),
            )
        keep, ikeep = rank < k, irank < k
        dcg_sum = sum_by_query(q[keep], weights=weight[keep], minlength=n)
        idcg = sum_by_query(iq[ikeep], weights=iweight[ikeep], minlength=n)
        return _safe_div(dcg_sum, idcg)

    @staticmethod
    def _terms(ctx: EvalContext, view: Ranked, dcg: str, gains: str) -> tuple[np.ndarray, ...]:
        """``(qidx, rank, discounted gain)`` of the entries of *view* with a non-zero gain, and
        the same for the ideal ranking (``irank`` its position inside the query)."""
        if dcg in ("linear", "log2") and not gains:
            pos = view.grade > 0
            gain = view.grade[pos].astype(np.float64)
            iq, ig = ctx.ideal_gains()
        else:  # trec_eval m_ndcg.c: every non-zero gain counts, negative ones included
            gain = grade_gains(view.grade, dcg, gains)
            pos = gain != 0
            gain = gain[pos]
            iq, ig, _ = ideal_gains(ctx, dcg, gains)
        rank = view.rank[pos]
        irank = _position_in_query(iq, len(ctx.query_ids))
        return (
            view.qidx[pos],
            rank,
            gain / np.log2(rank + 2.0),
            iq,
            irank,
            ig / np.log2(irank + 2.0),
        )


class AP(MeasureFamily):
    name = "AP"
    aliases = ("map", "MAP")
    params = _REL_JUDGED
    cutoff = "optional"
    description = "average precision (trec_eval map / map_cut.k)"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        view = _view(ctx, measure, measure.cutoff)
        q, r, nth = _relevant_positions(view)
        total = sum_by_query(q, weights=nth / (r + 1.0), minlength=len(ctx.query_ids))
        return _safe_div(total, ctx.num_rel(measure.param("rel")))


class RR(MeasureFamily):
    name = "RR"
    aliases = ("recip_rank", "MRR")
    params = _REL_JUDGED
    cutoff = "optional"
    description = "reciprocal rank of the first relevant document (trec_eval recip_rank)"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        view = _view(ctx, measure, measure.cutoff)
        q, r, nth = _relevant_positions(view)
        first = nth == 1
        out = np.zeros(len(ctx.query_ids), dtype=np.float64)
        out[q[first]] = 1.0 / (r[first] + 1.0)
        return out


class P(MeasureFamily):
    name = "P"
    aliases = ("Precision",)
    params = _REL_JUDGED
    cutoff = "required"
    description = "precision at k, divided by k (trec_eval P.k)"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        return _relevant_retrieved(ctx, measure) / float(measure.cutoff)


class R(MeasureFamily):
    name = "R"
    aliases = ("recall", "Recall")
    params = _REL_JUDGED
    cutoff = "required"
    description = "recall at k (trec_eval recall.k)"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        return _safe_div(_relevant_retrieved(ctx, measure), ctx.num_rel(measure.param("rel")))


class Success(MeasureFamily):
    name = "Success"
    aliases = ("success",)
    params = _REL_JUDGED
    cutoff = "optional"
    description = (
        "1 if a relevant document is in the top k (trec_eval success.k; ranx hit_rate@k); "
        "without k, in the whole ranking"
    )

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        return (_relevant_retrieved(ctx, measure) > 0).astype(np.float64)


class Rprec(MeasureFamily):
    name = "Rprec"
    aliases = ("R-prec",)
    params = _REL_JUDGED
    cutoff = "forbidden"
    description = "precision at rank R, R = number of relevant documents (trec_eval Rprec)"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        view = _view(ctx, measure)
        nrel = ctx.num_rel(measure.param("rel"))
        within = view.relevant & (view.rank < nrel[view.qidx])
        return _safe_div(view.count(within), nrel)


class Bpref(MeasureFamily):
    name = "Bpref"
    aliases = ("bpref",)
    params = _REL
    cutoff = "forbidden"
    description = "binary preference (Buckley & Voorhees 2004; trec_eval bpref)"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        rel = measure.param("rel")
        view = ctx.ranked(rel=rel)
        nonrel = ((view.grade >= 0) & (view.grade < rel)).astype(np.int64)
        before = np.cumsum(nonrel) - nonrel  # judged non-relevant entries strictly before, flat
        base = np.zeros(len(ctx.query_ids), dtype=np.int64)
        nonempty = view.num_ret > 0
        base[nonempty] = before[view.starts[:-1][nonempty]]
        q = view.qidx[view.relevant]
        above = (before[view.relevant] - base[q]).astype(np.float64)
        nrel = ctx.num_rel(rel)
        nnon = ctx.num_judged_nonrel(rel)
        denom = np.minimum(nnon, nrel)[q]
        term = np.ones(len(q), dtype=np.float64)
        some = above > 0
        term[some] = 1.0 - np.minimum(above[some], nrel[q][some]) / denom[some]
        return _safe_div(sum_by_query(q, weights=term, minlength=len(ctx.query_ids)), nrel)


#: ir_measures' ``NumRet(rel=...)``: a filter of its own, not trec_eval's ``-l`` (a profile's
#: ``rel`` leaves ``NumRet`` a count of every retrieved document, as trec_eval's ``num_ret``).
NUMRET_REL = Param(
    "rel",
    int,
    None,
    "count only documents judged >= rel (ir_measures: NumRelRet is NumRet(rel=1)); "
    "none: every retrieved document",
)


class NumRet(MeasureFamily):
    name = "NumRet"
    aliases = ("num_ret",)
    params: ClassVar[dict[str, Any]] = params_table(NUMRET_REL, JUDGED_ONLY)
    cutoff = "forbidden"
    aggregate = "sum"
    scalable = False
    description = "number of retrieved documents (trec_eval num_ret)"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        rel = measure.param("rel")
        if rel is None:
            return ctx.num_ret(judged_only=measure.param("judged_only"))
        view = ctx.ranked(rel=rel, judged_only=measure.param("judged_only"))
        return view.count(view.relevant)


class NumRel(MeasureFamily):
    name = "NumRel"
    aliases = ("num_rel",)
    params = _REL
    cutoff = "forbidden"
    aggregate = "sum"
    scalable = False
    description = "number of judged relevant documents (trec_eval num_rel)"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        return ctx.num_rel(measure.param("rel"))


class NumRelRet(MeasureFamily):
    name = "NumRelRet"
    aliases = ("num_rel_ret",)
    params = _REL
    cutoff = "forbidden"
    aggregate = "sum"
    scalable = False
    description = "number of relevant retrieved documents (trec_eval num_rel_ret)"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        view = ctx.ranked(rel=measure.param("rel"))
        return view.count(view.relevant)


class Judged(MeasureFamily):
    name = "Judged"
    params: ClassVar[dict[str, Any]] = {}
    cutoff = "optional"
    description = "fraction of the top k that is judged (ir_measures Judged@k)"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        view = ctx.ranked(cutoff=measure.cutoff)
        judged = view.count(view.grade != UNJUDGED)
        return _safe_div(judged, view.num_ret.astype(np.float64))


for _family in (
    NDCG(),
    AP(),
    RR(),
    P(),
    R(),
    Success(),
    Rprec(),
    Bpref(),
    NumRet(),
    NumRel(),
    NumRelRet(),
    Judged(),
):
    register(_family)

"""trec_eval's set measures, counts, utility and rank-biased precision, vectorised over queries.

Definitions follow trec_eval's ``m_*.c`` (usnistgov/trec_eval). With ``r`` the relevant retrieved
documents, ``n`` the retrieved ones and ``R`` the judged relevant ones (``grade >= rel``):

==================  ======================  ====================================================
family              trec_eval               value per query
==================  ======================  ====================================================
SetP                set_P                   r / n (m_set_P.c)
SetRelP             set_relative_P          r / min(n, R) (m_set_rel_P.c)
SetR                set_recall              r / R (m_set_recall.c)
SetAP               set_map                 (r / n) (r / R) (m_set_map.c)
SetF                set_F                   (beta^2 + 1) P R / (beta^2 P + R), P = r / n,
                                            R = r / R (van Rijsbergen; m_set_F.c)
Utility             utility                 a r + b (n - r) + c (R - r) + d (N + r - n - R)
                                            with the collection size N = 0 (trec_eval's -N
                                            default; m_utility.c); 0 for a query absent from
                                            the run, as trec_eval -c
NumQ                num_q                   1 per evaluated query (summed)
NumNonrelJudgedRet  num_nonrel_judged_ret   retrieved with 0 <= grade < rel (summed)
TrecRBP             rbp                     (1 - p) sum_i g_i p^(i-1), g the gain of each level
                                            scaled to [0, 1] when a gain falls outside
                                            (Moffat & Zobel, TOIS 2008; m_rbp.c)
TrecRBPResid        rbp_resid               when an unjudged document was retrieved:
                                            p^n + (1 - p) sum over unjudged of p^(i-1)
                                            (m_rbp_resid.c); else 0
==================  ======================  ====================================================
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from nuggetbench.measures.context import EvalContext, Ranked
from nuggetbench.measures.gains import GAINS, gain_table, grade_gains, sum_by_query
from nuggetbench.measures.measure import Measure
from nuggetbench.measures.params import JUDGED_ONLY, REL
from nuggetbench.measures.registry import MeasureFamily, register
from nuggetbench.spec import Param, params_table

__all__: list[str] = []

_REL_JUDGED: dict[str, Any] = params_table(REL, JUDGED_ONLY)
BETA_F = Param("beta", float, 1.0, "weight of recall against precision in F", minimum=0)
PERSISTENCE = Param(
    "p", float, 0.9, "persistence: the chance of reading on to the next rank", minimum=0, below=1
)
UTILITY = [
    Param("a", float, 1.0, "worth of a relevant retrieved document"),
    Param("b", float, -1.0, "worth of a non-relevant retrieved document"),
    Param("c", float, 0.0, "worth of a relevant document not retrieved"),
    Param("d", float, 0.0, "worth of a non-relevant document not retrieved (collection size 0)"),
]


def _div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.zeros(len(num), dtype=np.float64)
    np.divide(num, den, out=out, where=den > 0)
    return out


def _counts(
    ctx: EvalContext, measure: Measure
) -> tuple[Ranked, np.ndarray, np.ndarray, np.ndarray]:
    """``(view, r, n, R)``: the view, relevant retrieved, retrieved, relevant; float64 (Q,)."""
    view = ctx.ranked(rel=measure.param("rel"), judged_only=measure.param("judged_only"))
    return (
        view,
        view.count(view.relevant),
        view.num_ret.astype(np.float64),
        ctx.num_rel(measure.param("rel")),
    )


class SetP(MeasureFamily):
    name = "SetP"
    aliases = ("set_P",)
    params: ClassVar[dict[str, Any]] = params_table(
        REL,
        Param(
            "relative",
            bool,
            False,
            "divide by min(retrieved, R) instead: SetRelP (ir_measures' SetP(relative=True))",
        ),
        JUDGED_ONLY,
    )
    cutoff = "forbidden"
    description = "precision of the whole retrieved set (trec_eval set_P)"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        _, r, n, big_r = _counts(ctx, measure)
        return _div(r, np.minimum(n, big_r) if measure.param("relative") else n)


class SetRelP(MeasureFamily):
    name = "SetRelP"
    aliases = ("set_relative_P",)
    params = _REL_JUDGED
    cutoff = "forbidden"
    description = "relevant retrieved / min(retrieved, R) (trec_eval set_relative_P)"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        _, r, n, big_r = _counts(ctx, measure)
        return _div(r, np.minimum(n, big_r))


class SetR(MeasureFamily):
    name = "SetR"
    aliases = ("set_recall",)
    params = _REL_JUDGED
    cutoff = "forbidden"
    description = "recall of the whole retrieved set (trec_eval set_recall)"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        _, r, _, big_r = _counts(ctx, measure)
        return _div(r, big_r)


class SetAP(MeasureFamily):
    name = "SetAP"
    aliases = ("set_map",)
    params = _REL_JUDGED
    cutoff = "forbidden"
    description = "set precision x set recall (trec_eval set_map)"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        _, r, n, big_r = _counts(ctx, measure)
        # r * r / (n * R) in one division, as m_set_map.c (0.05625 stays 0.0563 at 4 decimals)
        return _div(r * r, n * big_r)


class SetF(MeasureFamily):
    name = "SetF"
    aliases = ("set_F",)
    params: ClassVar[dict[str, Any]] = params_table(BETA_F, REL, JUDGED_ONLY)
    cutoff = "forbidden"
    description = "F measure of the retrieved set (trec_eval set_F)"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        _, r, n, big_r = _counts(ctx, measure)
        b2 = measure.param("beta") ** 2
        p, rec = _div(r, n), _div(r, big_r)
        return _div((b2 + 1.0) * p * rec, b2 * p + rec)


class Utility(MeasureFamily):
    name = "Utility"
    aliases = ("utility",)
    params: ClassVar[dict[str, Any]] = params_table(*UTILITY, REL, JUDGED_ONLY)
    cutoff = "forbidden"
    description = "a r + b (n - r) + c (R - r) + d (r - n - R): set utility (trec_eval utility)"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        _, r, n, big_r = _counts(ctx, measure)
        a, b, c, d = (measure.param(k) for k in "abcd")
        value = a * r + b * (n - r) + c * (big_r - r) + d * (r - n - big_r)
        return np.where(ctx.num_ret() > 0, value, 0.0)


class NumQ(MeasureFamily):
    name = "NumQ"
    aliases = ("num_q",)
    params: ClassVar[dict[str, Any]] = {}
    cutoff = "forbidden"
    aggregate = "sum"
    scalable = False
    description = "number of evaluated queries (trec_eval num_q)"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        return np.ones(len(ctx.query_ids), dtype=np.float64)


class NumNonrelJudgedRet(MeasureFamily):
    name = "NumNonrelJudgedRet"
    aliases = ("num_nonrel_judged_ret",)
    params = _REL_JUDGED
    cutoff = "forbidden"
    aggregate = "sum"
    scalable = False
    description = "retrieved documents judged non-relevant (trec_eval num_nonrel_judged_ret)"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        view, _, _, _ = _counts(ctx, measure)
        return view.count((view.grade >= 0) & (view.grade < measure.param("rel")))


def _rbp_gains(ctx: EvalContext, view: Ranked, gains: str) -> np.ndarray:
    """Gains of *view*'s entries scaled per query to [0, 1] as m_rbp.c does, float64 (n,).

    The gains of a query are its levels 0..top (top: its highest judged grade), each mapped by
    *gains* or kept, plus every gain of the map; when one falls outside [0, 1] they are all
    scaled by (g - min) / (max - min). Unjudged entries have gain 0.
    """
    n = len(ctx.query_ids)
    jq, jgrades = ctx.judged_grades()
    top = np.full(n, -1, dtype=np.int64)  # highest non-negative level judged per query
    keep = jgrades >= 0
    np.maximum.at(top, jq[keep], jgrades[keep])
    top = np.maximum(top, 0)
    table = gain_table(gains)
    lo = np.full(n, min(table.values(), default=np.inf))
    hi = np.full(n, max(table.values(), default=-np.inf))
    unmapped_min = next(level for level in range(len(table) + 1) if level not in table)
    lo = np.where(unmapped_min <= top, np.minimum(lo, unmapped_min), lo)
    found = np.zeros(n, dtype=bool)  # the highest level <= top that the map leaves alone
    for j in range(len(table) + 1):
        level = top - j
        free = ~found & (level >= 0) & ~np.isin(level, list(table))
        hi[free] = np.maximum(hi[free], level[free])
        found |= free
    judged = view.grade >= 0
    q = view.qidx[judged]
    g = grade_gains(view.grade[judged], "linear", gains)
    span = np.where(hi > lo, hi - lo, 1.0)
    scale = (lo < 0) | (hi > 1)
    out = np.zeros(len(view.grade), dtype=np.float64)
    out[judged] = np.where(scale[q], (g - lo[q]) / span[q], g)
    return out


class TrecRBP(MeasureFamily):
    name = "TrecRBP"
    aliases = ("TrecRbp", "rbp")  # trec_eval's name; RBP is cwl_eval's (ir_measures)
    params: ClassVar[dict[str, Any]] = params_table(PERSISTENCE, GAINS, JUDGED_ONLY)
    cutoff = "forbidden"
    description = "rank-biased precision over graded gains scaled to [0, 1] (trec_eval rbp)"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        p = measure.param("p")
        view = ctx.ranked(judged_only=measure.param("judged_only"))
        g = _rbp_gains(ctx, view, measure.param("gains"))  # 0 on unjudged entries
        nz = g != 0
        terms = g[nz] * np.power(p, view.rank[nz])
        return (1.0 - p) * sum_by_query(view.qidx[nz], weights=terms, minlength=len(ctx.query_ids))


class TrecRBPResid(MeasureFamily):
    name = "TrecRBPResid"
    aliases = ("TrecRbpResid", "rbp_resid")
    params: ClassVar[dict[str, Any]] = params_table(PERSISTENCE, JUDGED_ONLY)
    cutoff = "forbidden"
    description = "rbp's residual: the weight of unjudged and unseen ranks (trec_eval rbp_resid)"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        p = measure.param("p")
        view = ctx.ranked(judged_only=measure.param("judged_only"))
        judged = view.grade >= 0  # few: the unjudged mass is every rank's minus theirs
        n = view.num_ret.astype(np.float64)
        every = (1.0 - np.power(p, n)) / (1.0 - p)
        seen = np.power(p, view.rank[judged])
        mass = every - sum_by_query(view.qidx[judged], weights=seen, minlength=len(ctx.query_ids))
        value = np.power(p, n) + (1.0 - p) * mass
        return np.where(view.count(judged) < n, value, 0.0)


for _family in (
    SetP(),
    SetRelP(),
    SetR(),
    SetAP(),
    SetF(),
    Utility(),
    NumQ(),
    NumNonrelJudgedRet(),
    TrecRBP(),
    TrecRBPResid(),
):
    register(_family)

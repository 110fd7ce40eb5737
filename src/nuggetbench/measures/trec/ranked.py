"""trec_eval's other ranked measures, vectorised over the flat arrays of ``EvalContext``.

Definitions follow trec_eval's ``m_*.c`` (usnistgov/trec_eval; the file is named with each family);
``R`` is the number of judged documents with ``grade >= rel``, ``rel`` is trec_eval's ``-l`` and
``judged_only`` its ``-J``. Ranks are 1-based in the formulas below.

============  ====================  ==========================================================
family        trec_eval             value per query
============  ====================  ==========================================================
IPrec         iprec_at_recall_r     interpolated precision at recall r: the highest precision at
                                    or after the k-th relevant document, k = round(r R)
                                    (``lround``, trec_eval 10.0; ``legacy=true``:
                                    floor(r R + 0.9), trec_eval <= 9.0.8 and pytrec_eval);
                                    0 when fewer than k relevant are retrieved; NaN (0/0)
                                    when judged_only leaves nothing (m_iprec_at_recall.c)
IPrecAvg      11pt_avg              mean of IPrec over the recall points (m_11pt_avg.c)
RprecMult     Rprec_mult_m          precision at c = floor(m R + 0.9), 0 when c = 0
                                    (m_Rprec_mult.c)
RelP@k        relative_P_k          relevant in the top k / min(k, R), 0 when R = 0 (m_rel_P.c)
InfAP         infAP                 Yilmaz & Aslam, CIKM 2006, as m_infap.c (epsilon 1e-5)
BinG          binG                  sum over relevant retrieved of 1 / log2(2 + nonrelevant
                                    above it), divided by R (m_binG.c)
GMAP          gm_map                AP per query, aggregated by the geometric mean of
                                    max(AP, 1e-5) (m_gm_map.c, meas_avg.c)
GMBpref       gm_bpref              the same for Bpref (m_gm_bpref.c)
Unj@k         unj_k                 unjudged (no or a negative grade) in the top k / k
                                    (m_unjudged.c)
============  ====================  ==========================================================
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from nuggetbench.errors import SpecError
from nuggetbench.measures.context import UNJUDGED, EvalContext, Ranked
from nuggetbench.measures.gains import cumsum_by_query, position_in_query, sum_by_query
from nuggetbench.measures.measure import Measure
from nuggetbench.measures.params import JUDGED_ONLY, LEGACY, REL
from nuggetbench.measures.profiles import trec_eval_version
from nuggetbench.measures.registry import MeasureFamily, get_family, register
from nuggetbench.spec import Param, params_table

__all__ = ["iprec_values", "recall_points"]

#: trec_eval's INFAP_EPSILON.
INFAP_EPSILON = 0.00001
_REL_JUDGED: dict[str, Any] = params_table(REL, JUDGED_ONLY)
RECALL = Param("recall", float, 0.0, "recall level r in [0, 1]", minimum=0, maximum=1)
RECALLS = Param(
    "recalls",
    str,
    "0.0,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1.0",
    "the recall points averaged, comma-separated (quoted)",
)
MULT = Param("mult", float, 1.0, "multiple m of R: precision at floor(m R + 0.9)", minimum=0)


def _view(ctx: EvalContext, measure: Measure, cutoff: int | None = None) -> Ranked:
    return ctx.ranked(
        rel=measure.param("rel"), judged_only=measure.param("judged_only"), cutoff=cutoff
    )


def _group_suffix_max(values: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Max of *values* (each in [0, 1]) over each entry and the later entries of its query."""
    if not len(values):
        return values
    off = 2.0 * (q.max() - q).astype(np.float64)  # grows along the reversed order
    rev = (values + off)[::-1]
    return (np.maximum.accumulate(rev) - off[::-1])[::-1]


def recall_points(text: str, where: str = "recalls") -> list[float]:
    """The recall points of ``IPrecAvg(recalls='0.25,0.5,0.75')``, each in [0, 1].

    Raises:
        SpecError: a point is not a number in [0, 1], or none is given.
    """
    points = []
    for part in text.split(","):
        try:
            value = float(part)
        except ValueError:
            raise SpecError(f"{where}: {part!r} is not a number") from None
        if not 0 <= value <= 1:
            raise SpecError(f"{where}: recall point {value} is outside [0, 1]")
        points.append(value)
    if not points:
        raise SpecError(f"{where}: give at least one recall point")
    return points


def _iprec_state(ctx: EvalContext, rel: int, judged_only: bool):
    """Per-query arrays shared by every recall point (cached on the context)."""
    key = ("iprec", int(rel), bool(judged_only))
    if key not in ctx._cache:
        view = ctx.ranked(rel=rel, judged_only=judged_only)
        n = len(ctx.query_ids)
        q = view.qidx[view.relevant]
        nth = position_in_query(q, n) + 1
        smax = _group_suffix_max(nth / (view.rank[view.relevant] + 1.0), q)
        first = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(q, minlength=n), out=first[1:])
        # 0/0 where judged_only empties a ranking; trec_eval 10.0 ranks one unjudged document
        # for a judged query missing from the run (-c), so judged_only empties that one too
        scored = ctx.num_ret() > 0
        if judged_only and trec_eval_version(ctx.profile) != "9.0.8":
            scored = np.ones_like(scored)
        empty = (view.num_ret == 0) & scored
        ctx._cache[key] = (smax, first, np.diff(first), ctx.num_rel(rel), empty)
    return ctx._cache[key]


def iprec_values(
    ctx: EvalContext, rel: int, judged_only: bool, points: list[float], legacy: bool = False
) -> np.ndarray:
    """Interpolated precision at each recall point, float64 (Q, len(points)) (m_iprec_at_recall.c).

    *legacy*: the k-th relevant document is k = floor(r R + 0.9) (trec_eval up to 9.0.8, and
    pytrec_eval) instead of trec_eval 10.0's round(r R).
    """
    smax, first, rel_ret, nrel, empty = _iprec_state(ctx, rel, judged_only)
    out = np.zeros((len(ctx.query_ids), len(points)), dtype=np.float64)
    for j, r in enumerate(points):
        # trec_eval 10.0: lround(r R); up to 9.0.8 (and pytrec_eval): (long)(r R + 0.9)
        k = np.floor(r * nrel + (0.9 if legacy else 0.5)).astype(np.int64)
        ok = (rel_ret > 0) & (k <= rel_ret)
        idx = first[:-1] + np.maximum(k, 1) - 1
        out[ok, j] = smax[idx[ok]]
        # a ranking emptied by judged_only: trec_eval's num_rel_ret / num_ret is 0/0 where k = 0
        out[empty & (k <= rel_ret), j] = np.nan
    return out


def relevant_above(ctx: EvalContext, view: Ranked, rel: int, judged_only: bool, cut: np.ndarray):
    """Per-query number of relevant entries ranked above the float (Q,) *cut*, float64 (Q,).

    Searches the (few) relevant entries' sorted ``(query, rank)`` keys instead of all entries.
    """
    key = ("relevant_keys", int(rel), bool(judged_only))
    if key not in ctx._cache:
        width = np.int64(int(view.num_ret.max(initial=0)) + 1)
        ctx._cache[key] = (view.qidx[view.relevant] * width + view.rank[view.relevant], width)
    keys, width = ctx._cache[key]
    qs = np.arange(len(ctx.query_ids), dtype=np.int64)
    lo = np.searchsorted(keys, qs * width)
    cut = np.clip(np.ceil(cut), 0, width).astype(np.int64)
    hi = np.searchsorted(keys, qs * width + cut)
    return (hi - lo).astype(np.float64)


class IPrec(MeasureFamily):
    name = "IPrec"
    aliases = ("IPrec_at_recall",)
    params: ClassVar[dict[str, Any]] = params_table(RECALL, REL, JUDGED_ONLY, LEGACY)
    cutoff = "forbidden"
    at_param = "recall"  # ir_measures' IPrec@0.1, computed by pytrec_eval (trec_eval 9's k)
    at_implies = (("legacy", True),)
    description = (
        "interpolated precision at a recall level (trec_eval iprec_at_recall); IPrec@r is "
        "ir_measures' spelling, with its pytrec_eval's legacy=true"
    )

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        points = [measure.param("recall")]
        rel, judged_only, legacy = (measure.param(k) for k in ("rel", "judged_only", "legacy"))
        return iprec_values(ctx, rel, judged_only, points, legacy)[:, 0]


class IPrecAvg(MeasureFamily):
    name = "IPrecAvg"
    aliases = ("ircl_avg",)
    params: ClassVar[dict[str, Any]] = params_table(RECALLS, REL, JUDGED_ONLY, LEGACY)
    cutoff = "forbidden"
    description = "interpolated precision averaged over recall points (trec_eval 11pt_avg)"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        points = recall_points(measure.param("recalls"), where=f"measure {measure}")
        rel, judged_only, legacy = (measure.param(k) for k in ("rel", "judged_only", "legacy"))
        return iprec_values(ctx, rel, judged_only, points, legacy).mean(axis=1)


class RprecMult(MeasureFamily):
    name = "RprecMult"
    aliases = ("R_prec_mult",)
    params: ClassVar[dict[str, Any]] = params_table(MULT, REL, JUDGED_ONLY)
    cutoff = "forbidden"
    description = "precision at floor(m R + 0.9) (trec_eval Rprec_mult)"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        rel, judged_only = measure.param("rel"), measure.param("judged_only")
        view = _view(ctx, measure)
        cut = np.floor(measure.param("mult") * ctx.num_rel(rel) + 0.9)
        out = np.zeros(len(ctx.query_ids), dtype=np.float64)
        np.divide(relevant_above(ctx, view, rel, judged_only, cut), cut, out=out, where=cut > 0)
        return out


class RelP(MeasureFamily):
    name = "RelP"
    aliases = ("relative_P",)
    params = _REL_JUDGED
    cutoff = "required"
    description = "relevant in the top k / min(k, R) (trec_eval relative_P)"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        view = _view(ctx, measure, measure.cutoff)
        nrel = ctx.num_rel(measure.param("rel"))
        den = np.minimum(float(measure.cutoff), nrel)
        out = np.zeros(len(ctx.query_ids), dtype=np.float64)
        np.divide(view.count(view.relevant), den, out=out, where=den > 0)
        return out


class InfAP(MeasureFamily):
    name = "infAP"
    aliases = ("InfAP",)
    params = _REL_JUDGED
    cutoff = "forbidden"
    description = "inferred AP (Yilmaz & Aslam 2006; trec_eval infAP)"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        rel = measure.param("rel")
        view = _view(ctx, measure)
        n = len(ctx.query_ids)
        pool = view.grade != UNJUDGED  # documents outside the pool are skipped (few are in it)
        q, g, j = view.qidx[pool], view.grade[pool], view.rank[pool].astype(np.float64)
        starts = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(q, minlength=n), out=starts[1:])
        is_rel = (g >= rel) & (g >= 0)
        before = []  # judged relevant, judged non-relevant, in the pool unjudged: strictly before
        for flag in (is_rel, (g >= 0) & (g < rel), g < 0):
            f = flag.astype(np.float64)
            before.append((cumsum_by_query(f, starts) - f)[is_rel])
        rel_before, non_before, pool_before = before
        j = j[is_rel]
        term = 1.0 / (j + 1.0) + (j / (j + 1.0)) * (
            (rel_before + non_before + pool_before) / np.maximum(j, 1.0)
        ) * ((rel_before + INFAP_EPSILON) / (rel_before + non_before + 2 * INFAP_EPSILON))
        term = np.where(j == 0, 1.0, term)
        total = sum_by_query(q[is_rel], weights=term, minlength=n)
        nrel = ctx.num_rel(rel)
        out = total.copy()
        np.divide(total, nrel, out=out, where=nrel > 0)
        return out


class BinG(MeasureFamily):
    name = "binG"
    aliases = ("BinG",)
    params = _REL_JUDGED
    cutoff = "forbidden"
    description = "binary G: relevant docs discounted by the non-relevant above (trec_eval binG)"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        view = _view(ctx, measure)
        q = view.qidx[view.relevant]
        nth = position_in_query(q, len(ctx.query_ids)) + 1
        terms = 1.0 / np.log2(3.0 + view.rank[view.relevant] - nth)
        total = sum_by_query(q, weights=terms, minlength=len(ctx.query_ids))
        nrel = ctx.num_rel(measure.param("rel"))
        out = np.zeros(len(ctx.query_ids), dtype=np.float64)
        np.divide(total, nrel, out=out, where=nrel > 0)
        return out


class GMAP(MeasureFamily):
    name = "GMAP"
    aliases = ("gm_map",)
    params = _REL_JUDGED
    cutoff = "forbidden"
    aggregate = "gmean"
    description = "AP, aggregated by the geometric mean of max(AP, 1e-5) (trec_eval gm_map)"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        return get_family("AP").compute(ctx, Measure("AP", None, measure.params))


class GMBpref(MeasureFamily):
    name = "GMBpref"
    aliases = ("gm_bpref",)
    params: ClassVar[dict[str, Any]] = params_table(REL)
    cutoff = "forbidden"
    aggregate = "gmean"
    description = "Bpref, aggregated by the geometric mean of max(bpref, 1e-5) (trec_eval gm_bpref)"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        return get_family("Bpref").compute(ctx, Measure("Bpref", None, measure.params))


class Unj(MeasureFamily):
    name = "Unj"
    aliases = ("unj",)
    params: ClassVar[dict[str, Any]] = params_table(JUDGED_ONLY)
    cutoff = "required"
    description = "fraction of the top k without a non-negative judgment (trec_eval unj)"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        view = ctx.ranked(judged_only=measure.param("judged_only"), cutoff=measure.cutoff)
        return view.count(view.grade < 0) / float(measure.cutoff)


for _family in (
    IPrec(),
    IPrecAvg(),
    RprecMult(),
    RelP(),
    InfAP(),
    BinG(),
    GMAP(),
    GMBpref(),
    Unj(),
):
    register(_family)

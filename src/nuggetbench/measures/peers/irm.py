"""ir_measures' own measures: ``Compat`` (provider ``compat``) and ``Accuracy`` (``accuracy``).

Sources: ir_measures 0.4.3 ``providers/compat_provider.py`` and
``providers/accuracy_provider.py``.

``Compat(p=0.95, normalize=True)`` (Clarke, Vtyurina & Smucker, TOIS 2021): the rank-biased
overlap of the run's whole ranking with an ideal ranking, to the depth
``D = max(retrieved, relevant)``::

    RBO = sum_{i<D} p^i |ranking[:i+1] & ideal[:i+1]| / (i + 1)  /  sum_{i<D} p^i

divided, with ``normalize``, by the RBO of the ideal ranking with itself. The ideal ranking holds
the documents judged above 0, grade descending; documents of one grade by the run's score
descending (0 for one the run does not hold, as the provider does), then in the run's order.
``ranking`` is the profile's order (trec_eval's doc id descending by default; the provider sorts
ties by doc id ascending: a profile with ``tie_break="docid_asc"`` reproduces it).

``Accuracy@k`` (rel=1): the chance that a relevant document of the top k (all when no k) is
ranked above a non-relevant one of the top k: ``1 - mean over relevant d of n_d / N``, with
``n_d`` the non-relevant (or unjudged) documents above d and ``N`` those in the top k. A query
with no relevant document in the top k scores 0 (ir_measures leaves it out of its mean); one
whose top k is all relevant scores 1 (ir_measures divides by zero there). Not BEIR's
``Accuracy@k``, which is ``Success@k``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from nuggetbench.measures.context import EvalContext
from nuggetbench.measures.gains import cumsum_by_query, position_in_query, sum_by_query
from nuggetbench.measures.measure import Measure
from nuggetbench.measures.params import REL
from nuggetbench.measures.registry import MeasureFamily, register
from nuggetbench.spec import Param, params_table

__all__: list[str] = []


class Compat(MeasureFamily):
    name = "Compat"
    params: ClassVar[dict[str, Any]] = params_table(
        Param("p", float, 0.95, "persistence of the rank-biased overlap", minimum=0.0, maximum=1.0),
        Param("normalize", bool, True, "divide by the ideal ranking's own overlap"),
    )
    cutoff = "forbidden"
    description = "compatibility: rank-biased overlap with the ideal ranking (Clarke et al. 2021)"
    source = "ir_measures 0.4.3 provider compat"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        p = float(measure.param("p"))
        n = len(ctx.query_ids)
        view = ctx.ranked()
        nret = view.num_ret.astype(np.int64)
        # the ideal ranking: retrieved positives keyed by (grade, score, rank), the others after
        # the retrieved ones of their grade and score (they never meet the ranking)
        qidx_all, grades = ctx.judged_grades()
        pos_all = grades > 0
        npos = np.bincount(qidx_all[pos_all], minlength=n).astype(np.int64)
        hit = view.grade > 0
        hq, hg, hrank = view.qidx[hit], view.grade[hit], view.rank[hit]
        hscore = ctx.run.arrays()[3][view.run_index[hit]].astype(np.float64)
        mq, mg = _unretrieved(qidx_all[pos_all], grades[pos_all], hq, hg, n)
        q = np.concatenate((hq, mq))
        g = np.concatenate((hg, mg))
        s = np.concatenate((hscore, np.zeros(len(mq))))
        late = np.concatenate((np.zeros(len(hq)), np.ones(len(mq))))
        r = np.concatenate((hrank, np.zeros(len(mq), dtype=np.int64)))
        order = np.lexsort((r, late, -s, -g, q))
        ideal_pos = np.empty(len(q), dtype=np.int64)
        ideal_pos[order] = position_in_query(q[order], n)
        meet = np.maximum(hrank, ideal_pos[: len(hq)])  # in both prefixes from depth meet on
        depth = np.maximum(nret, npos)
        top = int(depth.max(initial=0))
        power = p ** np.arange(top, dtype=np.float64)
        a = np.concatenate(([0.0], np.cumsum(power / np.arange(1, top + 1))))  # sum p^i/(i+1)
        b = np.concatenate(([0.0], np.cumsum(power)))  # sum p^i
        score = sum_by_query(hq, a[depth[hq]] - a[meet], n)
        norm = b[depth]
        out = np.zeros(n, dtype=np.float64)
        np.divide(score, norm, out=out, where=norm > 0)
        if measure.param("normalize"):
            best = (b[npos] + npos * (a[depth] - a[npos])) / np.where(norm > 0, norm, 1.0)
            np.divide(out, best, out=out, where=best > 0)
        return out


def _unretrieved(
    qidx: np.ndarray, grades: np.ndarray, hq: np.ndarray, hg: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray]:
    """``(qidx, grade)`` of one entry per positive judgment the run does not hold: per (query,
    grade), the judged count less the retrieved count."""
    width = int(max(grades.max(initial=0), hg.max(initial=0))) + 1
    judged = np.bincount(qidx * width + grades, minlength=n * width)
    found = np.bincount(hq * width + hg, minlength=n * width)
    missing = judged - found
    keys = np.repeat(np.arange(n * width), missing)
    return keys // width, keys % width


class Accuracy(MeasureFamily):
    name = "Accuracy"
    params: ClassVar[dict[str, Any]] = params_table(REL)
    cutoff = "optional"
    description = (
        "chance that a relevant document of the top k is ranked above a non-relevant one "
        "(ir_measures Accuracy; not BEIR's Accuracy@k = Success@k)"
    )
    source = "ir_measures 0.4.3 provider accuracy"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        n = len(ctx.query_ids)
        view = ctx.ranked(rel=measure.param("rel"), cutoff=measure.cutoff)
        nonrel = (~view.relevant).astype(np.float64)
        above = cumsum_by_query(nonrel, view.starts) - nonrel
        rel = view.relevant
        found = np.bincount(view.qidx[rel], minlength=n).astype(np.float64)
        total_nonrel = sum_by_query(view.qidx, nonrel, n)
        above_sum = sum_by_query(view.qidx[rel], above[rel], n)
        out = np.zeros(n, dtype=np.float64)
        some = found > 0
        out[some] = 1.0
        both = some & (total_nonrel > 0)
        out[both] = 1.0 - above_sum[both] / (total_nonrel[both] * found[both])
        return out


for _family in (Compat(), Accuracy()):
    register(_family)

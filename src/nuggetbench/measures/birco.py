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
qrel dict*; :func:`birco_bootstrap` and :func:`birco_summary` do exactly that.

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

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ..errors import InputError
from .profiles import Profile, register_profile
from .registry import MeasureFamily, register

if TYPE_CHECKING:  # pragma: no cover
    from ..data.qrels import Qrels
    from ..data.run import Run
    from .base import Measure
    from .context import EvalContext
    from .results import Results

__all__ = ["RRMax", "BIRCO_MEASURES", "BIRCO_PROFILE", "birco_bootstrap", "birco_summary"]

#: rank2metric.py's measures, in its print order (its MRR@10 is ``RRmax@10``).
BIRCO_MEASURES = ("R@5", "R@10", "R@20", "R@100", "nDCG@10", "RRmax@10", "AP")


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
        jq, _, grades = ctx.judgments()
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


def _queries_with_relevant(qrels: Qrels, run: Run) -> Iterable[str]:
    """Judged queries with at least one document of grade >= 1."""
    qids, starts, _, grades = qrels.arrays()
    if not len(qids):
        return []
    has = np.add.reduceat((grades >= 1).astype(np.int64), starts[:-1]) > 0
    has &= np.diff(starts) > 0
    return qids[has].tolist()


BIRCO_PROFILE = Profile(
    name="birco",
    description="BIRCO rank2metric.py: queries with a relevant (grade >= 1) document, values x100; "
    "its MRR@10 is RRmax@10; bootstrap via nuggetbench.measures.birco.birco_summary",
    average_over="qrels",
    scale=100.0,
    select_queries=_queries_with_relevant,
    options={"measures": BIRCO_MEASURES, "bootstrap": {"n_resamples": 1000, "seed": 42, "ddof": 0}},
)


def birco_bootstrap(
    values: Sequence[float] | np.ndarray, *, n_resamples: int = 1000, seed: int = 42
) -> tuple[float, float]:
    """BIRCO's ``bootstrap_stats``: mean and std (ddof=0) of bootstrap means.

    Draws ``n_resamples`` index vectors with a legacy ``numpy.random.RandomState(seed)`` (the same
    stream as ``numpy.random.seed(seed)``) via ``choice(n, n, replace=True)``, one after the other,
    without touching numpy's global state.

    Args:
        values: per-query values, shape (n,), *in the order BIRCO lists the queries* (its qrel
            dict order; for a ``birco/<name>`` dataset: ``list(dataset.queries)``).
        n_resamples: number of resamples (BIRCO: 1000).
        seed: RandomState seed (BIRCO: 42).

    Returns:
        ``(mean of resampled means, std of resampled means)``.

    Raises:
        InputError: no values.
    """
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1 or len(arr) == 0:
        raise InputError("birco_bootstrap needs a non-empty 1-d array of per-query values")
    rs = np.random.RandomState(seed)
    n = len(arr)
    means = np.empty(n_resamples, dtype=np.float64)
    for i in range(n_resamples):
        means[i] = arr[rs.choice(n, n, replace=True)].mean()
    return float(means.mean()), float(means.std())


def birco_summary(
    results: Results, order: Sequence[str] | None = None, *, n_resamples: int = 1000, seed: int = 42
) -> dict[str, tuple[float, float]]:
    """``{measure: (bootstrap mean, bootstrap std)}`` as ``rank2metric.py --boot True`` prints them.

    Args:
        results: from ``evaluate(..., profile="birco")`` (values already x100).
        order: query ids in BIRCO's order (``list(dataset.queries)``); evaluated queries are taken
            in this order (default: ``results.query_ids``, sorted, which changes the resamples).
        n_resamples, seed: see :func:`birco_bootstrap`.

    Raises:
        InputError: *order* lacks some evaluated query.
    """
    qids = list(results.query_ids)
    if order is not None:
        pos = {q: i for i, q in enumerate(qids)}
        missing = sorted(set(qids) - set(order))
        if missing:
            raise InputError(f"order lacks {len(missing)} evaluated queries, e.g. {missing[:3]}")
        index = np.array([pos[q] for q in order if q in pos], dtype=np.int64)
    else:
        index = np.arange(len(qids))
    return {
        m: birco_bootstrap(
            np.asarray(results.per_query[m])[index], n_resamples=n_resamples, seed=seed
        )
        for m in results.measures
    }


register(RRMax())
register_profile(BIRCO_PROFILE, replace=True)

"""BEIR's custom measures: ``R_cap@k`` and ``Hole@k`` (``beir.retrieval.custom_metrics``, 2.2.0).

BEIR's ``EvaluateRetrieval.evaluate_custom`` also gives ``MRR@k`` (here ``RR@k``, which parses
``MRR@k`` too) and ``Accuracy@k`` (here ``Success@k``); the ``beir`` profile
(:func:`nuggetbench.measures.profiles.beir_profile`) gives all four BEIR's tie order (input
order) and averaging (the sum over the run's queries divided by the number of judged queries).

* ``R_cap@k`` (Thakur et al., BEIR, 2021: "capped recall"): relevant (grade >= 1) documents in
  the top *k* divided by ``min(R, k)``, ``R`` the query's relevant documents; 0 when ``R = 0``
  (BEIR divides by zero there).
* ``Hole@k``: the share of the top *k* (divided by *k*, however many were retrieved) that no
  query's judgments name: documents outside the judged pool of the whole qrels.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from nuggetbench.measures.registry import MeasureFamily, register

if TYPE_CHECKING:  # pragma: no cover
    from nuggetbench.measures.context import EvalContext
    from nuggetbench.measures.measure import Measure

__all__ = ["RCap", "Hole"]


class RCap(MeasureFamily):
    """Capped recall: relevant in the top k / min(relevant, k) (BEIR's ``recall_cap``)."""

    name = "R_cap"
    aliases = ("Recall_cap", "recall_cap")
    params: ClassVar[dict[str, Any]] = {}
    cutoff = "required"
    description = "relevant documents in the top k divided by min(relevant, k) (BEIR R_cap@k)"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        k = int(measure.cutoff)
        view = ctx.ranked(rel=1, cutoff=k)
        found = view.count(view.relevant)
        cap = np.minimum(ctx.num_rel(1), float(k))
        return np.divide(found, cap, out=np.zeros_like(found), where=cap > 0)


class Hole(MeasureFamily):
    """Share of the top k that the qrels never judge, for any query (BEIR's ``hole``)."""

    name = "Hole"
    aliases = ("hole",)
    params: ClassVar[dict[str, Any]] = {}
    cutoff = "required"
    description = "share of the top k (over k) judged for no query of the qrels (BEIR Hole@k)"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        import pandas as pd

        k = int(measure.cutoff)
        view = ctx.ranked(cutoff=k)
        docs = ctx.run.arrays()[2][view.run_index]
        judged = pd.Index(pd.unique(ctx.qrels.arrays()[2]))
        unjudged = judged.get_indexer(docs) < 0
        return view.count(unjudged) / float(k)


register(RCap())
register(Hole())

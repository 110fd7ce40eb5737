"""gdeval's expected reciprocal rank, ``ERR@k`` (the TREC Web track's ``gdeval.pl``).

Source: ``gdeval.pl`` 1.2a as ir_measures 0.4.3 ships it (``ir_measures/bin/gdeval.pl``, provider
``gdeval``), the same ``err`` as the TREC Web track's gdeval behind
``../shared/data/ndeval/expected/gdeval.*``. Chapelle et al., CIKM 2009::

    ERR@k = sum_{i<k} R_i / (i + 1) * prod_{j<i} (1 - R_j),   R = (2^g - 1) / 2^max_grade

with ``g`` the document's grade when judged above 0 (else 0) and ``max_grade`` gdeval's
``$MAX_JUDGMENT`` (4). gdeval refuses qrels with a grade above it; so does this family (give
``ERR(max_grade=N)`` for a larger scale). Without a cutoff the whole ranking counts (ir_measures'
gdeval provider needs one). gdeval's ``ndcg@k`` is ``nDCG(dcg=exp-log2)@k``.

Ranking: the profile's order; gdeval sorts by score descending, then doc id descending (its
``runOrder``), which is trec_eval's order and the default profile's. A query without a grade above
0 scores 0 (gdeval prints no line for it; ir_measures then reports 0).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from nuggetbench.errors import InputError
from nuggetbench.measures.context import EvalContext
from nuggetbench.measures.gains import cumsum_by_query
from nuggetbench.measures.measure import Measure
from nuggetbench.measures.registry import MeasureFamily, register
from nuggetbench.spec import Param, params_table

__all__: list[str] = []

MAX_GRADE = Param(
    "max_grade",
    int,
    4,
    "highest grade, R = (2^g - 1) / 2^max_grade (gdeval's MAX_JUDGMENT)",
    minimum=1,
)


class ERR(MeasureFamily):
    name = "ERR"
    params: ClassVar[dict[str, Any]] = params_table(MAX_GRADE)
    cutoff = "optional"
    description = "expected reciprocal rank (Chapelle et al. 2009), gdeval's err@k"
    source = "gdeval.pl 1.2a (ir_measures 0.4.3 provider gdeval; TREC Web track gdeval)"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        top = int(measure.param("max_grade"))
        _, grades = ctx.judged_grades()
        if len(grades) and int(grades.max()) > top:
            raise InputError(
                f"measure {measure}: the qrels hold grade {int(grades.max())}, above "
                f"max_grade={top} (gdeval refuses grades above 4); give ERR(max_grade="
                f"{int(grades.max())})" + (f"@{measure.cutoff}" if measure.cutoff else "")
            )
        view = ctx.ranked(cutoff=measure.cutoff)
        g = np.where(view.grade > 0, view.grade, 0).astype(np.float64)
        r = (np.exp2(g) - 1.0) / 2.0**top
        # prod_{j<i} (1 - R_j) through logs: 1 - R >= 2^-max_grade > 0 for every grade allowed
        logs = np.log1p(-r)
        before = np.exp(cumsum_by_query(logs, view.starts) - logs)
        terms = r / (view.rank + 1.0) * before
        out = np.bincount(view.qidx, weights=terms, minlength=len(ctx.query_ids))
        return out.astype(np.float64)


register(ERR())

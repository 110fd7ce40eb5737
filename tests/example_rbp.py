"""A measure family added the way docs/contributing.md shows: this module plus one registry line
(``FAMILY_MODULES.append("example_rbp")``).

Rank-biased precision (Moffat & Zobel, "Rank-biased precision for measurement of retrieval
effectiveness", TOIS 2008): ``SimpleRBP = (1 - p) * sum_i rel_i * p^(i-1)`` over the ranks ``i`` of the
top ``k`` (all when no cutoff), ``rel_i`` = 1 when the grade is at least ``rel``: the textbook
formula, without the 1000-rank normalisation of cwl_eval that the built-in ``RBP`` reproduces.
"""

from __future__ import annotations

import numpy as np

from nuggetbench.measures import MeasureFamily, register
from nuggetbench.measures.params import REL
from nuggetbench.spec import Param, params_table

P = Param(
    "p", float, 0.8, "persistence: the chance of reading on to the next rank", minimum=0, below=1
)


class SimpleRBP(MeasureFamily):
    name = "SimpleRBP"
    params = params_table(P, REL)
    cutoff = "optional"
    description = "rank-biased precision (Moffat & Zobel 2008), binary gains, no depth window"

    def compute(self, ctx, measure):
        p = measure.param("p")
        view = ctx.ranked(rel=measure.param("rel"), cutoff=measure.cutoff)
        gains = view.relevant * (1.0 - p) * np.power(p, view.rank)
        out = np.zeros(len(ctx.query_ids))
        np.add.at(out, view.qidx, gains)
        return out


register(SimpleRBP())

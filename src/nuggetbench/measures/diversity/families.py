"""Diversity measure families (ndeval's measures at any cutoff) and the ndeval / FreshStack profiles.

Families (computed by :mod:`nuggetbench.measures.diversity.core`, which documents the formulas;
they read the nugget judgments ``ctx.qrels.nuggets``, nuggets playing ndeval's subtopics):

=================  =====================  ==========================================
family             parameters (default)   ndeval column
=================  =====================  ==========================================
``alpha_nDCG@k``   alpha=0.5, rel=1       ``alpha-nDCG@k``
``alpha_DCG@k``    alpha=0.5, rel=1       ``alpha-DCG@k`` (ideal-ideal normalised)
``ERR_IA@k``       alpha=0.5, rel=1       ``ERR-IA@k``
``nERR_IA@k``      alpha=0.5, rel=1       ``nERR-IA@k``
``P_IA@k``         rel=1                  ``P-IA@k``
``StRecall@k``     rel=1                  ``strec@k``
``NRBP``           alpha=0.5, beta=0.5    ``NRBP``
``nNRBP``          alpha=0.5, beta=0.5    ``nNRBP``
``AP_IA``          rel=1                  ``MAP-IA``
=================  =====================  ==========================================

Any cutoff is allowed (ndeval stops at 20). ndeval's spellings (``alpha-nDCG``, ``strec``,
``MAP-IA``...) are accepted as aliases. ``ERR_IA`` takes ``alpha`` because ndeval's ``-alpha``
changes it (it is the probability of stopping at a relevant document).

``StRecall`` ignores subtopics that no document supports; ``Coverage`` (see
:mod:`nuggetbench.measures.coverage`) counts all of a query's nuggets.

Profiles (ordering and averaging, read by these families from ``ctx.profile``):

* ``ndeval``: each query ordered by the run file's rank column (read the run with
  ``read_run(path, keep_rank=True)``); averaged over the run's queries that are judged.
* ``ndeval -c``: the same order; every judged query averaged, a missing one scoring 0.
* ``ndeval -traditional``: score descending, doc id descending (trec_eval's order).
* ``freshstack``: FreshStack's ``alpha_ndcg()``: each query's top 20 by score with ties in run
  file order (``options["diversity_cut"]``), then that cut ordered by score descending, doc id
  ascending (pyndeval's order); every query that has nuggets averaged, a query missing from the
  run scoring 0.

``ndeval_profile(complete=..., traditional=..., depth=...)`` builds the other combinations,
``depth`` being ndeval's ``-M`` (cut each ranking before scoring).
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from nuggetbench.data.ranking import rank_order
from nuggetbench.errors import InputError
from nuggetbench.measures.diversity.core import DiversityScorer, RankedEntries, SubtopicTable
from nuggetbench.measures.params import ALPHA, BETA, REL, params_table
from nuggetbench.measures.profiles import Profile
from nuggetbench.measures.registry import MeasureFamily, register
from nuggetbench.spec import Param

if TYPE_CHECKING:  # pragma: no cover
    from nuggetbench.data.run import Run
    from nuggetbench.measures.context import EvalContext
    from nuggetbench.measures.measure import Measure

__all__ = ["diversity_scorer"]

_STATE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _precut(run: Run, cut: Mapping) -> Run:
    """The entries of *run* within the top ``cut["depth"]`` of their query when ties are ordered
    by ``cut["order"]`` (FreshStack keeps the top k by a stable sort in file order, then gives that
    cut to pyndeval, which orders it again)."""
    qids, starts, docids, scores = run.arrays()
    if not len(docids):
        return run
    order = str(cut.get("order", "input"))
    depth = int(cut["depth"])
    lengths = np.diff(starts)
    qcodes = np.repeat(np.arange(len(qids)), lengths)
    positions = run.input_order if order == "input" else None
    perm = rank_order(qcodes, scores, docids, tie_break=order, positions=positions)
    rank = np.arange(len(docids)) - np.repeat(starts[:-1], lengths)  # perm keeps query blocks
    keep = np.zeros(len(docids), dtype=bool)
    keep[perm[rank < depth]] = True
    return run if keep.all() else run.filter_entries(keep)


def _order(profile: Profile) -> tuple[str, int | None]:
    options = profile.options or {}
    order = options.get("diversity_order")
    if order is None:
        order = "docid_asc" if profile.tie_break == "docid_asc" else "trec"
    depth = options.get("depth")
    return order, (int(depth) if depth is not None else None)


def diversity_scorer(
    ctx: EvalContext, rel: int = 1, measure: Measure | None = None
) -> DiversityScorer:
    """The (cached) :class:`DiversityScorer` of *ctx* at relevance threshold *rel*.

    The run is ordered as the profile says (``options["diversity_order"]``: ``"rank"``,
    ``"trec"`` or ``"docid_asc"``; else from ``tie_break``) and cut at ``options["depth"]``.

    Raises:
        InputError: the qrels have no nugget judgments, or the profile orders by the rank column
            and the run has none.
    """
    nuggets = ctx.qrels.nuggets
    if nuggets is None:
        name = f"{measure} needs" if measure is not None else "diversity measures need"
        raise InputError(
            f"{name} nugget-level judgments (qrels.nuggets): evaluate with diversity qrels "
            "(topic subtopic docno judgment), a FreshStack queries file or a nugget dataset"
        )
    state = _STATE.setdefault(ctx, {})
    judged_only = bool(measure is not None and dict(measure.params).get("judged_only", False))
    key = ("scorer", int(rel), judged_only)
    if key not in state:
        entries_key = ("entries", judged_only)
        if entries_key not in state:
            order, depth = _order(ctx.profile)
            cut = (ctx.profile.options or {}).get("diversity_cut")
            run = _precut(ctx.run, cut) if cut else ctx.run
            if judged_only:
                run = _judged_entries(run, nuggets)
            state[entries_key] = RankedEntries.from_run(
                run, ctx.query_ids, order=order, depth=depth
            )
        table = SubtopicTable.build(nuggets, ctx.query_ids, rel=int(rel))
        state[key] = DiversityScorer(table, state[entries_key])
    return state[key]


def _judged_entries(run: Run, nuggets) -> Run:
    """The entries of *run* whose (query, doc) pair has a nugget judgment (any grade): the
    ranking ir_measures' ``judged_only`` gives pyndeval."""
    import pandas as pd

    q, _, d, _ = nuggets.arrays()
    judged = pd.MultiIndex.from_arrays([np.asarray(q, dtype=object), np.asarray(d, dtype=object)])
    qids, starts, docids, _ = run.arrays()
    queries = np.repeat(np.asarray(qids, dtype=object), np.diff(starts))
    entries = pd.MultiIndex.from_arrays([queries, np.asarray(docids, dtype=object)])
    keep = np.asarray(entries.isin(judged), dtype=bool)
    return run if keep.all() else run.filter_entries(keep)


#: ir_measures' ``judged_only`` of the diversity measures (pyndeval given the run's documents
#: that have a nugget judgment); not trec_eval's ``-J``, which leaves these measures alone.
DIVERSITY_JUDGED_ONLY = Param(
    "judged_only",
    bool,
    False,
    "drop documents without a nugget judgment first (ir_measures' judged_only for pyndeval)",
)


class _Diversity(MeasureFamily):
    cutoff = "required"
    params = params_table(ALPHA, REL, DIVERSITY_JUDGED_ONLY)

    def scorer(self, ctx: EvalContext, measure: Measure) -> DiversityScorer:
        return diversity_scorer(ctx, measure.param("rel"), measure)

    @staticmethod
    def alpha(measure: Measure) -> float:
        value = float(measure.param("alpha"))
        if not 0.0 <= value <= 1.0:
            raise InputError(f"{measure}: alpha must be between 0 and 1, got {value}")
        return value


class AlphaNDCG(_Diversity):
    name = "alpha_nDCG"
    aliases = ("alpha-nDCG", "alpha_ndcg", "a_nDCG")
    description = "alpha-nDCG@k (Clarke et al. 2008), ndeval's greedy ideal ranking, any k"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        return self.scorer(ctx, measure).alpha_ndcg(measure.cutoff, self.alpha(measure))


class AlphaDCG(_Diversity):
    name = "alpha_DCG"
    aliases = ("alpha-DCG",)
    description = "alpha-DCG@k normalised by the ideal-ideal ranking (ndeval's alpha-DCG)"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        return self.scorer(ctx, measure).alpha_dcg(measure.cutoff, self.alpha(measure))


class ERRIA(_Diversity):
    name = "ERR_IA"
    aliases = ("ERR-IA",)
    description = "intent-aware ERR@k, ideal-ideal normalised (ndeval's ERR-IA)"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        return self.scorer(ctx, measure).alpha_dcg(measure.cutoff, self.alpha(measure), kind="err")


class NERRIA(_Diversity):
    name = "nERR_IA"
    aliases = ("nERR-IA",)
    description = "intent-aware ERR@k normalised by the greedy ideal ranking (ndeval's nERR-IA)"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        return self.scorer(ctx, measure).alpha_ndcg(measure.cutoff, self.alpha(measure), kind="err")


class PIA(_Diversity):
    name = "P_IA"
    aliases = ("P-IA",)
    params = params_table(REL, DIVERSITY_JUDGED_ONLY)
    description = "intent-aware precision@k (Agrawal et al. 2009; ndeval's P-IA)"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        return self.scorer(ctx, measure).p_ia(measure.cutoff)


class StRecall(_Diversity):
    name = "StRecall"
    aliases = ("strec", "S_Recall")
    params = params_table(REL)
    description = (
        "subtopic recall@k: subtopics covered in the top k over the subtopics some document "
        "supports (ndeval's strec; Coverage counts every nugget instead)"
    )

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        return self.scorer(ctx, measure).strecall(measure.cutoff)


class NRBP(_Diversity):
    name = "NRBP"
    cutoff = "forbidden"
    params = params_table(ALPHA, BETA, REL)
    description = "novelty- and rank-biased precision (Clarke et al. 2009), whole ranking"

    @staticmethod
    def beta(measure: Measure) -> float:
        value = float(measure.param("beta"))
        if not 0.0 <= value <= 1.0:
            raise InputError(f"{measure}: beta must be between 0 and 1, got {value}")
        return value

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        return self.scorer(ctx, measure).nrbp(self.alpha(measure), self.beta(measure))


class NNRBP(NRBP):
    name = "nNRBP"
    description = "NRBP normalised by the greedy ideal ranking's NRBP (ndeval's nNRBP)"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        return self.scorer(ctx, measure).nnrbp(self.alpha(measure), self.beta(measure))


class APIA(_Diversity):
    name = "AP_IA"
    aliases = ("MAP-IA", "MAP_IA")
    cutoff = "forbidden"
    params = params_table(REL, DIVERSITY_JUDGED_ONLY)
    description = "intent-aware average precision over the whole ranking (ndeval's MAP-IA)"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        return self.scorer(ctx, measure).ap_ia()


for _family in (
    AlphaNDCG(),
    AlphaDCG(),
    ERRIA(),
    NERRIA(),
    PIA(),
    StRecall(),
    NRBP(),
    NNRBP(),
    APIA(),
):
    register(_family)

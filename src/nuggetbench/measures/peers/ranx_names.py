"""ranx's metric names read as nuggetbench measures (``hit_rate@10`` -> ``Success@10``).

Source: ranx 0.3.21 ``ranx/meta/evaluate.py`` (``extract_metric_and_params``) and
``ranx/metrics/__init__.py`` (``metric_switch``). ranx writes ``name[@k][-lN]``: ``k`` the cutoff
(none: the whole ranking), ``N`` the minimum relevant grade (``rel_lvl``, default 1); ``rbp``
takes its persistence instead (``rbp.95`` or ``rbp@95``: p = 0.95).

=================  ==========================================================================
ranx               nuggetbench
=================  ==========================================================================
``hits@k``         ``Hits@k``
``hit_rate@k``     ``Success@k`` (``Success``: the whole ranking)
``precision@k``    ``P@k``; ``precision``: ``SetP``
``recall@k``       ``R@k``; ``recall``: trec_eval's ``recall`` list (ranx: ``SetR``)
``f1@k``           ``F1@k``
``r-precision``    ``Rprec``
``mrr@k``          ``RR@k``
``map@k``          ``AP@k``
``ndcg@k``         ``nDCG@k``; ``-lN``: grades below N get gain 0 (``gains='1=0,...'``)
``ndcg_burges@k``  ``nDCG(dcg=exp-log2)@k`` (gain 2^grade - 1)
``dcg@k``          ``DCG@k``; ``dcg_burges@k``: ``DCG(dcg=exp-log2)@k``
``bpref``          ``Bpref``
``rbp.95``         ``RBP(p=0.95,gain=grade,depth=0)``: ``(1-p) sum p^i grade_i`` over the ranking
=================  ==========================================================================

``-lN`` becomes ``rel=N`` elsewhere. Differences kept (the measures are trec_eval's): ranx's
``bpref`` counts a negative grade as judged non-relevant, trec_eval as unjudged; ranx leaves
ties in no set order (numba's quicksort), nuggetbench uses the profile's.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["RANX_NAMES", "ranx_measure"]

#: ranx's name -> (family with a cutoff, family without one, params).
RANX_NAMES: dict[str, tuple[str, str, tuple[tuple[str, Any], ...]]] = {
    "hits": ("Hits", "Hits", ()),
    "hit_rate": ("Success", "Success", ()),
    "precision": ("P", "SetP", ()),
    "recall": ("R", "SetR", ()),
    "f1": ("F1", "F1", ()),
    "r-precision": ("Rprec", "Rprec", ()),
    "mrr": ("RR", "RR", ()),
    "map": ("AP", "AP", ()),
    "ndcg": ("nDCG", "nDCG", ()),
    "ndcg_burges": ("nDCG", "nDCG", (("dcg", "exp-log2"),)),
    "dcg": ("DCG", "DCG", ()),
    "dcg_burges": ("DCG", "DCG", (("dcg", "exp-log2"),)),
    "bpref": ("Bpref", "Bpref", ()),
}
_GAIN_FAMILIES = ("nDCG", "DCG")
#: ranx names that trec_eval also uses, alone, for something else (measures.trec.names).
_TREC_EVAL_NAMES = ("recall",)
_NAME = re.compile(
    r"^(?P<rbp>rbp)(?:[.@](?P<p>\d+))(?:-l(?P<rbprel>\d+))?$"
    r"|^(?P<name>[a-z][a-z0-9_\-]*?)(?:@(?P<k>\d+))?(?:-l(?P<rel>\d+))?$"
)


def ranx_measure(text: str) -> tuple[str, int | None, tuple[tuple[str, Any], ...]] | None:
    """``(family, cutoff, params)`` of ranx's metric *text*, or ``None`` when *text* is not
    written as ranx writes a metric (``"hit_rate@10"``, ``"rbp.95"``, ``"map@100-l2"``)."""
    m = _NAME.match(text.strip())
    if m is None:
        return None
    if m.group("rbp"):
        rel = int(m.group("rbprel") or 1)
        p = float(f"0.{m.group('p')}")
        params = (("p", p), ("gain", "grade"), ("depth", 0))
        return "RBP", None, params + ((("rel", rel),) if rel != 1 else ())
    entry = RANX_NAMES.get(m.group("name"))
    if entry is None:
        return None
    with_k, without_k, params = entry
    if text.strip() in _TREC_EVAL_NAMES:
        return None  # trec_eval's "recall" (its list of cutoffs) keeps its meaning
    k = int(m.group("k")) if m.group("k") else None
    if k == 0:
        k = None  # ranx's k=0: the whole ranking
    family = with_k if k is not None else without_k
    rel = int(m.group("rel")) if m.group("rel") else None
    if rel is not None and rel != 1:
        if family in _GAIN_FAMILIES:
            params += (("gains", ",".join(f"{g}=0" for g in range(rel))),)
        else:
            params += (("rel", rel),)
    return family, k, params

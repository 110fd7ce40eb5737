"""trec_eval's spellings of single measures, translated into ours in one place.

trec_eval names a cut-off measure ``name_k`` in its output and ``name.k`` in its ``-m`` option
(``ndcg_cut_10``, ``P.5``, ``recall_100``); :func:`cut_measure` turns such a name into our family
and cutoff (``("nDCG", "10")``), and :func:`~nuggetbench.measures.measure.parse_measure` asks it
only after our own names and aliases failed: our grammar sees no trec_eval spelling past it.
trec_eval's *groups* and parameter lists (``all_trec``, ``P.5,10``, ``ndcg.1=3``) are
:mod:`.names`'s. This module imports nothing of ours.
"""

from __future__ import annotations

import re

__all__ = ["TREC_CUT_NAMES", "cut_measure"]

TREC_CUT_NAMES = {
    "ndcg_cut": "nDCG",
    "map_cut": "AP",
    "P": "P",
    "recall": "R",
    "success": "Success",
}
"""trec_eval's cut-off measures and our family of each (trec_eval's ``m_*.c``)."""

_CUT = re.compile(r"^(.*?)[._](\d+)$")


def cut_measure(name: str) -> tuple[str, str] | None:
    """``(our family, cutoff text)`` of trec_eval's ``name_k`` / ``name.k`` (``ndcg_cut_10`` ->
    ``("nDCG", "10")``), or ``None`` when *name* is not such a spelling."""
    m = _CUT.match(name)
    if m and m.group(1) in TREC_CUT_NAMES:
        return TREC_CUT_NAMES[m.group(1)], m.group(2)
    return None

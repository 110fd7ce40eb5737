"""trec_eval's spellings of single measures, translated into ir_measures' in one place.

trec_eval names a cut-off measure ``name_k`` in its output and ``name.k`` in its ``-m`` option
(``ndcg_cut_10``, ``P.5``, ``recall_100``); :func:`cut_measure` turns such a name into our family
and cutoff (``("nDCG", "10")``) and :func:`cut_spelling` a whole measure text into ir_measures'
spelling (``P_5(rel=2)`` -> ``P(rel=2)@5``). They are asked where a measure's name enters
(:func:`nuggetbench.measures.spellings.parse_measure`, and :func:`.names.is_trec_spec` deciding
which names are trec_eval's lists), before the grammar
(:func:`~nuggetbench.measures.measure.parse_spelling`), which sees no trec_eval spelling.
trec_eval's *groups* and parameter lists (``all_trec``, ``P.5,10``, ``ndcg.1=3``) are
:mod:`.names`'s.
"""

from __future__ import annotations

import re

from nuggetbench.errors import SpecError
from nuggetbench.spec import split_call_spec

__all__ = ["TREC_CUT_NAMES", "cut_measure", "cut_spelling"]

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


def cut_spelling(text: str, where: str) -> str | None:
    """ir_measures' spelling of a measure named with trec_eval's ``name_k`` / ``name.k``, our
    parameters kept (``ndcg_cut.10`` -> ``nDCG@10``, ``P_5(rel=2)`` -> ``P(rel=2)@5``), or
    ``None`` when *text* is not so named.

    Raises:
        SpecError: a cutoff given after ``@`` as well (``ndcg_cut_10@5``); *where* names the
            measure.
    """
    parts = split_call_spec(text, where=where)
    if parts is None:
        return None
    name, params, cutoff = parts
    cut = cut_measure(name)
    if cut is None or cutoff == "":  # 'P_5@': the grammar says what '@' needs
        return None
    if cutoff is not None:
        raise SpecError(f"{where}: cutoff given twice ({name!r} and '@{cutoff}')")
    family, k = cut
    return family + (f"({params})" if params is not None else "") + f"@{k}"

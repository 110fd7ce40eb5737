"""The spellings a measure is given in, translated once into ir_measures' where they enter.

A measure's name reaches nuggetbench in several vocabularies: ir_measures' (``nDCG@10``,
``P(rel=2)@5``: the grammar, :func:`~nuggetbench.measures.measure.parse_spelling`, and the
families' aliases), ranx's (``hit_rate@10``, ``rbp.95``, ``map@100-l2``:
:mod:`nuggetbench.measures.peers.ranx_names`) and trec_eval's (``ndcg_cut.10``, ``P_5``:
:mod:`nuggetbench.measures.trec.spelling`). :func:`parse_measure` reads one measure in any of
them: a peer's name is translated first, then the grammar reads ir_measures' spelling, once,
and never asks back. trec_eval's groups and lists (``all_trec``, ``P.5,7,3``) name several
measures; :func:`nuggetbench.measures.compute.measure_pairs` expands them
(:mod:`nuggetbench.measures.trec.names`) where a list of measures enters.
"""

from __future__ import annotations

from collections.abc import Iterable

from nuggetbench.errors import SpecError
from nuggetbench.measures.measure import Measure, _split_top_level, check_measure, parse_spelling
from nuggetbench.measures.peers.ranx_names import ranx_measure
from nuggetbench.measures.trec.spelling import cut_spelling

__all__ = ["parse_measure", "parse_measures"]


def parse_measure(text: str | Measure) -> Measure:
    """Parse one measure string (``"nDCG@10"``, ``"P(rel=2)@5"``, ``"AP"``), in any spelling.

    Args:
        text: the measure in ir_measures spelling, a family's alias (``map``, ``MRR``), ranx's
            metric name (``hit_rate@10``, ``ndcg_burges@10``, ``rbp.95``, ``map@100-l2``) or
            trec_eval's name of a cut-off measure (``ndcg_cut_10``, ``P.5``, ``recall.100``); or
            a :class:`Measure` (validated and returned canonical).

    Returns:
        The :class:`Measure`; ``str()`` of it gives ir_measures' canonical spelling
        (``str(parse_measure(s)) == s`` for a canonical *s*).

    Raises:
        UnknownNameError: the family is unknown (the nearest valid name is suggested).
        SpecError: malformed text, unknown/ill-typed parameter, missing or forbidden cutoff,
            non-integer cutoff, a cutoff given twice (``ndcg_cut_10@5``); the message names the
            measure as given and the part at fault.
    """
    if isinstance(text, Measure):
        return check_measure(text)
    if not isinstance(text, str):
        raise SpecError(f"a measure must be a string like 'nDCG@10', got {text!r}")
    where = f"measure {text.strip()!r}"
    ranx = ranx_measure(text)
    if ranx is not None:
        return check_measure(Measure(*ranx), where)
    return parse_spelling(cut_spelling(text, where) or text, where)


def parse_measures(items: str | Measure | Iterable[str | Measure]) -> list[Measure]:
    """Parse several measures, each as :func:`parse_measure`.

    Args:
        items: a list of strings / :class:`Measure` values, or one string holding several
            measures separated by spaces or commas outside parentheses
            (``"nDCG@10 AP R@100"``).

    Returns:
        The measures in the order given (duplicates kept).

    Raises:
        UnknownNameError, SpecError: as :func:`parse_measure`; also when nothing is given.
    """
    if isinstance(items, Measure):
        return [check_measure(items)]
    if isinstance(items, str):
        items = [p for p in _split_top_level(items, " ,\t\n") if p.strip()]
    out = [parse_measure(item) for item in items]
    if not out:
        raise SpecError("no measures given; name at least one, e.g. 'nDCG@10'")
    return out

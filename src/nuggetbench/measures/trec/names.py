"""trec_eval's measure names (``-m all_trec``, ``-m P.5,7,3``) and its text output.

trec_eval names a measure, or a list of them, as ``name[.params]`` (``m_*.c`` and
``measures.c`` of usnistgov/trec_eval 10.0):

* groups: ``official`` (trec_eval's default), ``all_trec``, ``set``;
* cut-off lists ``P``, ``recall``, ``ndcg_cut``, ``map_cut``, ``relative_P``, ``success``, ``unj``
  (``P.5,7,3`` -> ``P_3``, ``P_5``, ``P_7``; sorted; a fractional cutoff is truncated);
* recall and multiple lists ``iprec_at_recall`` (``iprec_at_recall_0.10``) and ``Rprec_mult``
  (``Rprec_mult_0.20``);
* one measure with parameters, named ``name_params`` when they are given: ``utility.2,-1,0,0``,
  ``11pt_avg..25,.5,.75``, ``ndcg.1=3,2=9,4=4.5`` (also ``ndcg_rel``, ``Rndcg``, ``G``),
  ``set_F.0.5``, ``rbp.p=0.8``, ``relstring.20``;
* ``map_avgjg``, ``P_avgjg``, ``Rprec_mult_avgjg`` (group ``qrels_jg``): ``map``, ``P``,
  ``Rprec_mult`` averaged over judgment groups when the qrels have several
  (:mod:`nuggetbench.measures.trec.judgment_groups`); with one group they equal those measures;
* text measures ``runid`` (the run's tag) and ``relstring`` (the grades of the first N documents
  as characters: ``0``-``9``, ``>`` above 9, ``-`` unjudged, ``.`` judged negative).

:func:`trec_selection` turns such items into ``(key, Measure)`` pairs keyed by trec_eval's output
names, in trec_eval's order; :func:`format_trec_eval` prints results as trec_eval does
(``%-22s\\t%s\\t%.4f``, counts as integers).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from nuggetbench.errors import SpecError
from nuggetbench.measures.context import UNJUDGED, EvalContext
from nuggetbench.measures.measure import Measure, check_measure
from nuggetbench.measures.peers.ranx_names import ranx_measure
from nuggetbench.measures.registry import find_family
from nuggetbench.measures.spellings import parse_measure
from nuggetbench.measures.trec.prefs import PREFS_COUNTS, PREFS_MEASURES
from nuggetbench.measures.trec.spelling import TREC_CUT_NAMES

__all__ = [
    "GROUPS",
    "TrecEntry",
    "is_trec_spec",
    "parse_key",
    "trec_selection",
    "prefs_requested",
    "relstrings",
    "format_trec_eval",
]

_CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
#: trec_eval's measures in its printing order, with our family (None: a text measure).
_ORDER: dict[str, str | None] = {
    "runid": None,
    "num_q": "NumQ",
    "num_ret": "NumRet",
    "num_rel": "NumRel",
    "num_rel_ret": "NumRelRet",
    "map": "AP",
    "gm_map": "GMAP",
    "Rprec": "Rprec",
    "bpref": "Bpref",
    "recip_rank": "RR",
    "iprec_at_recall": "IPrec",
    "P": "P",
    "relstring": None,
    "recall": "R",
    "infAP": "infAP",
    "gm_bpref": "GMBpref",
    "Rprec_mult": "RprecMult",
    "utility": "Utility",
    "11pt_avg": "IPrecAvg",
    "binG": "binG",
    "G": "G",
    "ndcg": "nDCG",
    "ndcg_rel": "NDCGRel",
    "Rndcg": "Rndcg",
    "ndcg_cut": "nDCG",
    "map_cut": "AP",
    "relative_P": "RelP",
    "success": "Success",
    "set_P": "SetP",
    "set_relative_P": "SetRelP",
    "set_recall": "SetR",
    "set_map": "SetAP",
    "set_F": "SetF",
    "num_nonrel_judged_ret": "NumNonrelJudgedRet",
    "map_avgjg": "AP",
    "P_avgjg": "P",
    "Rprec_mult_avgjg": "RprecMult",
    "rbp": "TrecRBP",
    "rbp_resid": "TrecRBPResid",
    "unj": "Unj",
    **dict.fromkeys(PREFS_MEASURES),  # preference measures (measures.trec.prefs): no family
}
_CUT_DEFAULTS = {
    "P": _CUTS,
    "recall": _CUTS,
    "ndcg_cut": _CUTS,
    "map_cut": _CUTS,
    "relative_P": _CUTS,
    "success": (1, 5, 10),
    "P_avgjg": _CUTS,
    "unj": (5, 10, 20),
}
_LIST_DEFAULTS = {
    "iprec_at_recall": ("recall", tuple(i / 10 for i in range(11))),
    "Rprec_mult": ("mult", tuple(i / 5 for i in range(1, 11))),
    "Rprec_mult_avgjg": ("mult", tuple(i / 5 for i in range(1, 11))),
}
_GAIN_MEASURES = ("ndcg", "ndcg_rel", "Rndcg", "G")
#: trec_eval's measure groups (``-m official`` is its default).
GROUPS: dict[str, tuple[str, ...]] = {
    "official": tuple(list(_ORDER)[: list(_ORDER).index("P") + 1]),
    "all_trec": tuple(n for n in _ORDER if not n.endswith("_avgjg") and n not in PREFS_MEASURES),
    "all_prefs": ("runid", "num_q", *PREFS_MEASURES),
    "qrels_jg": ("runid", "num_q", "map_avgjg", "P_avgjg", "Rprec_mult_avgjg"),
    "set": (
        "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "utility",
        "set_P", "set_recall", "set_relative_P", "set_map", "set_F",
    ),
}  # fmt: skip
#: Measures trec_eval 10.0 added to ``all_trec`` (9.0.8's ``all_trec`` lacks them).
_NEW_IN_10 = ("rbp", "rbp_resid", "unj")
_COUNTS = ("NumQ", "NumRet", "NumRel", "NumRelRet", "NumNonrelJudgedRet")
_SUMMARY_ONLY = ("NumQ", "GMAP", "GMBpref")


@dataclass(frozen=True)
class TrecEntry:
    """One line kind of trec_eval's output: a measure, or the text ``runid`` / ``relstring``.

    Attributes:
        key: trec_eval's output name (``P_5``, ``utility_2,-1,0,0``, ``relstring_20``).
        measure: our :class:`Measure`, ``None`` for a text or preference measure.
        text: ``"runid"``, ``"relstring"``, ``"prefs"`` (a preference measure, computed from
            preference judgments: :mod:`nuggetbench.measures.trec.prefs`) or ``None``.
        length: the number of documents ``relstring`` shows.
    """

    key: str
    measure: Measure | None = None
    text: str | None = None
    length: int = 10


def _base(item: str) -> tuple[str, str | None]:
    name, dot, params = item.strip().partition(".")
    return name, (params if dot else None)


def is_trec_spec(item: object) -> bool:
    """True when *item* is a trec_eval group, list or parameterised measure, read as trec_eval
    reads it (:func:`trec_selection`); False for one measure of ours.

    Decided from trec_eval's own tables, never by trying our grammar: a group (``all_trec``);
    a list, named alone (``P``, ``recall``, ``success``, ``iprec_at_recall``: trec_eval's
    default cutoffs or points) or with values (``P.5,7,3``); a trec_eval measure no family of
    ours is named after (``runid``, ``relstring.20``, ``11pt_avg``, ``map_avgjg``); parameters
    after the dot (``utility.2,-1,0,0``, ``ndcg.1=3,2=9``). ``map``, ``ndcg``, ``P.5``,
    ``ndcg_cut.10`` (one cutoff, :data:`~.spelling.TREC_CUT_NAMES`) and ranx's ``rbp.95`` are one
    measure of ours, read by :func:`~nuggetbench.measures.spellings.parse_measure`.
    """
    if not isinstance(item, str):
        return False
    text = item.strip()
    if text in GROUPS:
        return True
    name, params = _base(text)
    if name not in _ORDER:
        return False
    if params is None:
        return name in _CUT_DEFAULTS or name in _LIST_DEFAULTS or find_family(name) is None
    return not (_one_cutoff(name, params) or ranx_measure(text) is not None)


def _one_cutoff(name: str, params: str) -> bool:
    """``name.params`` is trec_eval's spelling of one cut-off measure (``P.5``,
    ``ndcg_cut.10(rel=2)``), which :func:`~.spelling.cut_spelling` translates."""
    head, paren, _ = params.partition("(")
    return (
        name in TREC_CUT_NAMES
        and head.strip().isdigit()
        and int(head) > 0
        and (not paren or params.rstrip().endswith(")"))
    )


def _numbers(params: str, where: str) -> list[float]:
    try:
        return [float(p) for p in params.split(",") if p.strip()]
    except ValueError:
        raise SpecError(f"{where}: {params!r} is not a comma-separated list of numbers") from None


def _entries(name: str, params: str | None) -> list[TrecEntry]:
    """The entries of one trec_eval measure *name* with its parameter text (None: defaults)."""
    where = f"trec_eval measure {name}" + (f".{params}" if params is not None else "")
    family = _ORDER[name]
    suffix = f"_{params}" if params else ""
    if name in _CUT_DEFAULTS:
        cuts = _CUT_DEFAULTS[name] if not params else _numbers(params, where)
        cuts = sorted({int(c) for c in cuts})
        if not cuts or cuts[0] <= 0:
            raise SpecError(f"{where}: cutoffs must be positive")
        return [TrecEntry(f"{name}_{c}", check_measure(Measure(family, c), where)) for c in cuts]
    if name in _LIST_DEFAULTS:
        pname, default = _LIST_DEFAULTS[name]
        values = sorted(set(default if not params else _numbers(params, where)))
        return [
            TrecEntry(f"{name}_{v:.2f}", check_measure(Measure(family, None, ((pname, v),)), where))
            for v in values
        ]
    if name == "runid":
        return [TrecEntry("runid", text="runid")]
    if name in PREFS_MEASURES:
        if params:
            raise SpecError(f"{where}: {name} takes no parameters")
        return [TrecEntry(name, text="prefs")]
    if name == "relstring":
        length = int(_numbers(params, where)[0]) if params else 10
        return [TrecEntry(f"relstring{suffix}", text="relstring", length=length)]
    mparams: tuple = ()
    if params and name == "utility":
        values = _numbers(params, where)
        if len(values) != 4:
            raise SpecError(f"{where}: utility takes 4 coefficients, got {len(values)}")
        mparams = tuple(zip("abcd", values))
    elif params and name == "11pt_avg":
        mparams = (("recalls", params),)
    elif params and name in _GAIN_MEASURES:
        mparams = (("gains", params),)
    elif params and name == "set_F":
        mparams = (("beta", _numbers(params, where)[0]),)
    elif params and name == "rbp":
        key, _, value = params.partition("=")
        mparams = (("p", _numbers(value, where)[0]),) if key == "p" else (("gains", params),)
    elif params:
        raise SpecError(f"{where}: {name} takes no parameters")
    return [TrecEntry(f"{name}{suffix}", check_measure(Measure(family, None, mparams), where))]


def trec_selection(items: Iterable[str | Measure], *, version: str = "10.0") -> list[TrecEntry]:
    """The entries trec_eval prints for the ``-m`` *items*, in trec_eval's order.

    *version* ``"9.0.8"``: ``all_trec`` without the measures 10.0 added to it (``rbp``,
    ``rbp_resid``, ``unj``); naming them still selects them.

    Every item spelled with a trec_eval name (``P.5``, ``map``, ``all_trec``) is read as
    trec_eval reads it; the specs are merged as trec_eval merges repeated ``-m`` options (a later
    spec of the same measure replaces an earlier one) and ordered like its measure table; our own
    measure strings (``nDCG@10``) follow, keyed as given.

    Raises:
        SpecError, UnknownNameError: a malformed spec.
    """
    chosen: dict[str, str | None] = {}
    ours: list[TrecEntry] = []
    for item in items:
        if isinstance(item, str) and item.strip() in GROUPS:
            for name in GROUPS[item.strip()]:
                if not (version == "9.0.8" and item.strip() == "all_trec" and name in _NEW_IN_10):
                    chosen.setdefault(name, None)
        elif isinstance(item, str) and _base(item)[0] in _ORDER:
            name, params = _base(item)
            chosen[name] = params
        else:
            key = item.strip() if isinstance(item, str) else str(item)
            ours.append(TrecEntry(key, parse_key(item)))
    out = [e for name in _ORDER if name in chosen for e in _entries(name, chosen[name])]
    return out + ours


def parse_key(item: str | Measure) -> Measure:
    """:func:`~nuggetbench.measures.spellings.parse_measure`, which also reads the names
    trec_eval prints for its groups (``iprec_at_recall_0.00``, ``Rprec_mult_0.20``,
    ``relative_P_5``, ``11pt_avg``): the keys ``evaluate``, ``run`` and ``compare`` show for
    ``-m official`` or ``-m all_trec`` can be given back as measures. A printed name is looked
    up in trec_eval's table first (where both read a name, they agree).

    Raises:
        SpecError, UnknownNameError: as :func:`parse_measure` when it is neither.
    """
    found = _printed_names().get(item.strip()) if isinstance(item, str) else None
    return found if found is not None else parse_measure(item)


@cache
def _printed_names() -> dict[str, Measure]:
    """``{name trec_eval prints: Measure}`` for every measure of ``all_trec``."""
    return {e.key: e.measure for e in trec_selection(["all_trec"]) if e.measure is not None}


def prefs_requested(items: Iterable[str | Measure]) -> bool:
    """True when trec_eval's preference measures (``all_prefs``, ``prefs_simp``...) are among
    the ``-m`` *items* (they need preference judgments: ``-R prefs`` / ``-R qrels_prefs``):
    told from the names (one of them, or a group holding one), nothing expanded or parsed."""
    for item in items:
        if isinstance(item, str):
            text = item.strip()
            if any(n in PREFS_MEASURES for n in GROUPS.get(text, (_base(text)[0],))):
                return True
    return False


def relstrings(ctx: EvalContext, length: int) -> dict[str, str]:
    """trec_eval's ``relstring``: the grades of each query's first *length* documents as text.

    ``0``-``9`` a grade, ``>`` above 9, ``-`` not judged, ``.`` judged negative (m_relstring.c);
    under the profile's ``judged_only`` default (trec_eval ``-J``) the judged ranking.
    """
    ids = ctx.query_ids.tolist()
    if length <= 0:
        return dict.fromkeys(ids, "")
    judged_only = bool(ctx.profile.options.get("measure_defaults", {}).get("judged_only", False))
    view = ctx.ranked(judged_only=judged_only, cutoff=int(length))
    g = view.grade
    chars = np.where(
        g > 9, ">", np.where(g >= 0, g.clip(0, 9).astype(str), np.where(g == UNJUDGED, "-", "."))
    )
    return {qid: "".join(chars[view.starts[i] : view.starts[i + 1]]) for i, qid in enumerate(ids)}


def _value(entry: TrecEntry, value: float, z: bool = False) -> str:
    """C's ``printf("%6.4f")`` of *value* (``%ld`` of a count without ``-Z``): an infinity (a
    z value that overflowed) is ``"   inf"`` / ``"  -inf"``, NaN (trec_eval's 0/0, whose sign
    bit x86 sets) ``"  -nan"``."""
    if value != value:
        return "  -nan"
    if not z and entry.text == "prefs" and entry.key in PREFS_COUNTS:
        return str(int(round(value)))
    if not z and entry.measure is not None and entry.measure.family in _COUNTS:
        return str(int(round(value)))
    return f"{value:6.4f}"


def format_trec_eval(
    entries: Sequence[TrecEntry],
    per_query: Mapping[str, np.ndarray],
    means: Mapping[str, float],
    query_ids: Sequence[str],
    *,
    printed_queries: Sequence[str] | None = None,
    runid: str = "",
    relstring: Mapping[str, str] | None = None,
    zscores: bool = False,
) -> str:
    """trec_eval's text output, line for line (meas_print_single.c, meas_print_final.c).

    Args:
        entries: from :func:`trec_selection`.
        per_query: ``{key: float64 (Q,)}`` aligned with *query_ids*; *means*: ``{key: value}``.
        query_ids: the evaluated queries; *printed_queries*: those given per-query lines
            (trec_eval ``-q``: the run's queries; ``None``: no per-query lines).
        runid: the run's tag; *relstring*: ``{query: text}`` when ``relstring`` is selected.
        zscores: the values are z-scores (trec_eval ``-Z``): each measure's name gets a ``Z``
            prefix and every value 4 decimals (``runid`` and ``relstring`` are unchanged).

    Returns:
        The text, each line ``'%-22s\\t%s\\t%s'`` (name, query or ``all``, value), ending in a
        newline.
    """
    lines = []
    index = {q: i for i, q in enumerate(query_ids)}
    z = "Z" if zscores else ""
    for qid in printed_queries or ():
        i = index[qid]
        for e in entries:
            if e.text == "relstring":
                lines.append(f"{e.key:<22}\t{qid}\t'{(relstring or {}).get(qid, '')}'")
            elif e.text == "prefs" or (
                e.measure is not None and e.measure.family not in _SUMMARY_ONLY
            ):
                lines.append(f"{z}{e.key:<22}\t{qid}\t{_value(e, per_query[e.key][i], zscores)}")
    for e in entries:
        if e.text == "runid":
            lines.append(f"{e.key:<22}\tall\t{runid}")
        elif e.text in (None, "prefs"):
            lines.append(f"{z}{e.key:<22}\tall\t{_value(e, means[e.key], zscores)}")
    return "".join(line + "\n" for line in lines)

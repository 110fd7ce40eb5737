"""Graded gains and the flat per-query helpers that gain-based families share.

A document's *gain* comes from its grade in one of three ways (the ``dcg`` and ``gains``
parameters of ``nDCG``, ``G``, ``NDCGRel``, ``Rndcg``):

* linear (default, trec_eval): gain = grade for a judged grade >= 0;
* ``dcg=exp-log2``: gain = ``2**grade - 1`` (Burges et al., ICML 2005; gdeval, ir_measures'
  ``nDCG(dcg='exp-log2')``, the sparse-retrieval evaluation recipe);
* ``gains='1=3,2=9,4=4.5'``: trec_eval's gain map (``-m ndcg.1=3,2=9,4=4.5``,
  ``gain_init.c``): each listed level gets its gain, the other levels keep gain = level;
  ir_measures' spelling ``gains={1:3,2:9}`` (its ``nDCG(gains=...)``, same meaning) is read too.
  With ``dcg=exp-log2`` the map applies first (gain = ``2**mapped - 1``): ranx's
  ``ndcg_burges@k-l2`` is ``nDCG(dcg=exp-log2,gains='0=0,1=0')@k``.

A retrieved document without a judgment, or judged with a negative grade (trec_eval: "in the
pool but unjudged"), has gain 0. The ideal ranking holds every judged document of the query with
a positive gain, gains descending (trec_eval's ``setup_gains`` levels sorted by gain).
"""

from __future__ import annotations

import numpy as np

from nuggetbench.errors import SpecError
from nuggetbench.measures.context import EvalContext, Ranked
from nuggetbench.spec import Param

__all__ = [
    "DCG",
    "GAINS",
    "gain_table",
    "grade_gains",
    "ideal_gains",
    "cumsum_by_query",
    "sum_by_query",
    "position_in_query",
]

DCG = Param(
    "dcg",
    str,
    "linear",
    "gain of a grade: linear (gain = grade, trec_eval; log2 is ir_measures' name for it) or "
    "exp-log2 (2^grade - 1, gdeval)",
    choices=("linear", "exp-log2", "log2"),
)
GAINS = Param(
    "gains",
    str,
    "",
    "trec_eval's gain map 'level=gain,...' (quoted; levels not listed keep gain = level)",
)


def gain_table(text: str, where: str = "gains") -> dict[int, float]:
    """Parse trec_eval's gain map ``"1=3,2=9,4=4.5"`` into ``{level: gain}``.

    Pairs are separated by ``,`` or ``;``. An empty text is the empty map. ir_measures'
    ``"{1:3,2:9}"`` (a dict, as ``str(ir_measures.nDCG(gains=...))`` prints it) is read too.

    Raises:
        SpecError: a pair is not ``int=number``, a level is negative or listed twice.
    """
    table: dict[int, float] = {}
    text = text.strip()
    braces = text.startswith("{") and text.endswith("}")
    if braces:
        text = text[1:-1]
    for part in text.replace(";", ",").split(","):
        part = part.strip()
        if not part:
            continue
        level, sep, gain = part.partition(":" if braces else "=")
        try:
            lev, value = int(level), float(gain)
        except ValueError:
            lev, value, sep = -1, 0.0, ""
        if not sep or lev < 0:
            raise SpecError(
                f"{where}: {part!r} is not 'level=gain' with a level >= 0 (e.g. gains='1=3,2=9')"
            )
        if lev in table:
            raise SpecError(f"{where}: level {lev} is given twice")
        table[lev] = value
    return table


def grade_gains(grades: np.ndarray, dcg: str = "linear", gains: str = "") -> np.ndarray:
    """Gain of each grade, float64 of the shape of the int64 *grades* (see the module text).

    Raises:
        SpecError: *gains* is malformed.
    """
    judged = grades >= 0
    base = np.where(judged, grades, 0).astype(np.float64)
    for level, gain in gain_table(gains).items():
        base[grades == level] = gain
    if dcg == "exp-log2":
        return np.where(judged, np.exp2(base) - 1.0, 0.0)
    return base


def position_in_query(q: np.ndarray, n_queries: int) -> np.ndarray:
    """0-based position of each entry among its query's entries; *q* int64 (m,), grouped."""
    counts = np.bincount(q, minlength=n_queries)
    first = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=first[1:])
    return np.arange(len(q), dtype=np.int64) - first[q]


def sum_by_query(index: np.ndarray, weights: np.ndarray, minlength: int) -> np.ndarray:
    """``np.bincount(index, weights=weights, minlength=minlength)`` as float64 (shape
    ``(max(minlength, index.max() + 1),)``): numpy returns int64 zeros when *index* is empty
    (no retrieved document relevant or judged anywhere), which in-place float arithmetic on the
    result would refuse."""
    return np.bincount(index, weights=weights, minlength=minlength).astype(np.float64, copy=False)


def cumsum_by_query(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Inclusive running sum of float (n,) *values* restarted at each query's first entry.

    *starts*: int64 (Q+1,) query boundaries of the flat array (as :attr:`Ranked.starts`).
    """
    total = np.cumsum(values, dtype=np.float64)
    if not len(total):
        return total
    before = np.concatenate(([0.0], total))[starts[:-1]]
    return total - np.repeat(before, np.diff(starts))


def ideal_gains(
    ctx: EvalContext, dcg: str = "linear", gains: str = ""
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(qidx, gain, starts)`` of the ideal rankings: positive gains of each query, descending.

    ``qidx`` int64 (m,), ``gain`` float64 (m,), ``starts`` int64 (Q+1,).
    """
    key = ("ideal_gains", dcg, gains)
    cache = ctx._cache
    if key not in cache:
        qidx, grades = ctx.judged_grades()
        g = grade_gains(grades, dcg, gains)
        pos = g > 0
        q, g = qidx[pos], g[pos]
        order = np.lexsort((-g, q))
        starts = np.zeros(len(ctx.query_ids) + 1, dtype=np.int64)
        np.cumsum(np.bincount(q, minlength=len(ctx.query_ids)), out=starts[1:])
        cache[key] = (q[order], g[order], starts)
    return cache[key]


def run_gains(view: Ranked, dcg: str = "linear", gains: str = "") -> np.ndarray:
    """Gain of every entry of *view*, float64 (n,)."""
    return grade_gains(view.grade, dcg, gains)

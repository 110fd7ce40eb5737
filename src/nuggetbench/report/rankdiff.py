"""How differently two systems rank one query's documents, whatever the judgments say.

Two rankings can score the same (SciFact: 275 of 300 queries tie on nDCG@10 between BM25 and
its Pyserini parameters) and still differ everywhere below the first relevant document; the
report sorts queries by these two measures, as diffir does, to find the ones worth reading:

- :func:`rbo`: rank-biased overlap, the extrapolated ``RBO_ext`` of Webber, Moffat and Zobel
  (2010, eq. 32, lists of uneven length), persistence ``p`` (default 0.9: the top 10 carry 86%
  of the weight). 1: the same ranking; 0: no document in common.
- :func:`weighted_tau`: Vigna's (2015) weighted Kendall's tau with the hyperbolic additive
  weigher ``1/(r+1)``, averaged over the two lexicographic rankings, as
  ``scipy.stats.weightedtau(x, y)`` computes it (diffir's ``weightedtau`` measure). Over the
  union of the two top-k lists: each document's value in a system is ``k + 1 - rank``, ``0``
  when it is not in that system's top k (tied below every ranked one). 1: the same order;
  -1: reversed; NaN: fewer than two documents or one system has none.
- :func:`rank_differences`: both, per query, for one pair of runs over their top ``k``;
  :func:`against_baseline` for every system against the baseline.
- :func:`start_query`: the query a report opens on (the largest difference).

Written with numpy (an O(n^2) pass over at most ``2k`` documents), many times faster than the
scipy call per query; the tests check both measures against ``scipy.stats.weightedtau`` and an
independent RBO on random rankings.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from nuggetbench.data import Run

__all__ = [
    "rbo",
    "weighted_tau",
    "rank_differences",
    "against_baseline",
    "start_query",
    "RBO_P",
    "RANK_K",
]

#: RBO's persistence (the chance of reading on to the next rank), as diffir and most papers.
RBO_P = 0.9
#: Documents of each run compared per query.
RANK_K = 100


def rbo(a: Sequence[str], b: Sequence[str], p: float = RBO_P) -> float:
    """Extrapolated rank-biased overlap ``RBO_ext`` of two rankings (best first, no repeats).

    Args:
        a, b: document ids, best first; they may differ in length (eq. 32 of the paper).
        p: persistence in (0, 1).

    Returns:
        A float in [0, 1]: 1.0 when both are empty or equal, 0.0 when exactly one is empty or
        they share no document.
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be between 0 and 1, got {p}")
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    s, n = len(short), len(long_)
    if n == 0:
        return 1.0
    if s == 0:
        return 0.0
    pos_long = {d: i for i, d in enumerate(long_, 1)}
    # a shared document counts from the depth where both lists hold it
    depths = [max(i, pos_long[d]) for i, d in enumerate(short, 1) if d in pos_long]
    x = np.cumsum(np.bincount(np.asarray(depths, dtype=np.int64), minlength=n + 1)[1:])
    d = np.arange(1, n + 1, dtype=np.float64)
    w = p**d
    x_s = float(x[s - 1])
    total = float(np.sum(x / d * w))
    if n > s:
        tail = d[s:]
        total += float(np.sum(x_s * (tail - s) / (s * tail) * w[s:]))
    ext = ((float(x[-1]) - x_s) / n + x_s / s) * p**n
    return min(1.0, max(0.0, (1 - p) / p * total + ext))


def _ranking_weights(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The hyperbolic weights ``1/(r+1)`` of the ranking by ``(x, y)`` decreasing (scipy's
    ``rank=None``: ``r = 0`` for the largest ``x``, ties broken by the larger ``y``)."""
    rank = np.empty(len(x), dtype=np.int64)
    rank[np.lexsort((y, x))[::-1]] = np.arange(len(x))
    return 1.0 / (rank + 1.0)


def _tau(x: np.ndarray, y: np.ndarray) -> float:
    """Vigna's weighted tau, additive weights, averaged over the rankings by ``(x, y)`` and by
    ``(y, x)``: ``sum w_ij sx_ij sy_ij / sqrt(sum w_ij |sx_ij| * sum w_ij |sy_ij|)`` over pairs,
    ``w_ij = w_i + w_j``. Each sum is ``2 w . rowsum(M)`` for a symmetric ``M`` with a zero
    diagonal, so the pairs are visited once for both rankings."""
    sx = np.sign(x[:, None] - x[None, :])
    sy = np.sign(y[:, None] - y[None, :])
    both = (sx * sy).sum(axis=1)
    untied_x = np.abs(sx).sum(axis=1)
    untied_y = np.abs(sy).sum(axis=1)
    out = 0.0
    for w in (_ranking_weights(x, y), _ranking_weights(y, x)):
        ux, uy = float(w @ untied_x), float(w @ untied_y)
        if ux == 0.0 or uy == 0.0:
            return math.nan
        out += float(w @ both) / math.sqrt(ux * uy)
    return out / 2


def weighted_tau(a: Sequence[str], b: Sequence[str]) -> float:
    """Weighted Kendall's tau of two rankings over the union of their documents.

    Args:
        a, b: document ids, best first (e.g. each system's top k).

    Returns:
        A float in [-1, 1], ``scipy.stats.weightedtau(x, y).statistic`` for ``x[i] = len(a) + 1 -
        rank of document i in a`` (0 when absent) and ``y`` likewise; NaN with fewer than two
        documents or an empty ranking (every value tied).
    """
    union = list(dict.fromkeys([*a, *b]))
    if len(union) < 2:
        return math.nan
    x = _values(a, union)
    y = _values(b, union)
    return _tau(x, y)


def _values(ranking: Sequence[str], union: Sequence[str]) -> np.ndarray:
    top = len(ranking) + 1
    pos = {d: i for i, d in enumerate(ranking, 1)}
    return np.array([top - pos[d] if d in pos else 0 for d in union], dtype=np.float64)


def rank_differences(
    run_a: Run, run_b: Run, query_ids: Sequence[str], *, k: int = RANK_K, p: float = RBO_P
) -> tuple[list[float], list[float]]:
    """Per query of *query_ids*: ``RBO_ext`` (persistence *p*) and the weighted tau of the two
    runs' top *k* documents (a query a run lacks is an empty ranking).

    Returns:
        ``(rbo values, tau values)``, each one float per query (tau NaN where undefined).
    """
    rbos, taus = [], []
    for q in query_ids:
        a = run_a.doc_ids(q)[:k]
        b = run_b.doc_ids(q)[:k]
        rbos.append(rbo(a, b, p))
        taus.append(weighted_tau(a, b))
    return rbos, taus


def against_baseline(
    runs: Mapping[str, Run], query_ids: Sequence[str], baseline: str
) -> dict[str, dict[str, np.ndarray]]:
    """``{"RBO": {system: array}, "tau": {system: array}}``: :func:`rank_differences` of each
    other system against *baseline*, per query of *query_ids* (float arrays, NaN where tau is
    undefined); empty dicts when the baseline has no run."""
    out: dict[str, dict[str, np.ndarray]] = {"RBO": {}, "tau": {}}
    base = runs.get(baseline)
    for name, run in runs.items():
        if name == baseline or base is None:
            continue
        rbos, taus = rank_differences(base, run, query_ids)
        out["RBO"][name] = np.array(rbos, dtype=np.float64)
        out["tau"][name] = np.array(taus, dtype=np.float64)
    return out


def start_query(
    per_query: Mapping[str, Mapping[str, np.ndarray]],
    baseline: str,
    measure: str,
    rbos: Mapping[str, np.ndarray],
) -> int:
    """The query (an index into the per-query arrays) worth opening first: the largest
    ``|difference|`` on *measure* between *baseline* and the next system, ties broken by the
    lower RBO (*rbos*: per system against the baseline), then by order; with one system, the
    query nearest its median on *measure* (not the first query, where every system may score 0).
    """
    base = np.asarray(per_query[baseline][measure], dtype=np.float64)
    others = [s for s in per_query if s != baseline]
    if not len(base) or np.isnan(base).all():
        return 0
    if not others:
        gap = np.abs(base - np.nanmedian(base))
        return int(np.argmin(np.where(np.isnan(gap), np.inf, gap)))
    delta = np.abs(np.asarray(per_query[others[0]][measure]) - base)
    delta = np.nan_to_num(np.round(delta, 9), nan=-1.0)  # equal to the 9th digit: a tie
    rbo_ = np.nan_to_num(rbos.get(others[0], np.ones(len(base))), nan=1.0)
    return int(np.lexsort((np.arange(len(base)), rbo_, -delta))[0])

"""trec_eval's preference measures (``-m all_prefs`` with ``-R prefs`` or ``-R qrels_prefs``).

Definitions follow trec_eval 10.0's ``form_prefs_counts.c`` and ``m_prefs_*.c``. For one query:

* The run's documents are ordered by score descending, ties by doc id *ascending* (this file's
  own rule in trec_eval), and cut at ``-M``. Judged documents get an internal rank: the
  retrieved ones 0..NJR-1 in ranking order, the others NJR.. in doc id order.
* Each judgment group (JG) gives preferences "A before B". A group with one sub-group is a set
  of equivalence classes by ``rel_level`` (every higher class preferred to every lower one); a
  group with several sub-groups is a preference matrix closed under transitivity (a conflict,
  A > B and B > A, is an error).
* A preference A > B is *fulfilled among retrieved* (ful_ret) when both are retrieved and A is
  ranked above B, *possible among retrieved* (poss_ret) when both are retrieved; *implied*
  (ful_imp, poss_imp) when exactly one is retrieved (fulfilled when it is A); *not occurring*
  when neither is.
* Relevant documents have ``rel_level > 0``, non-relevant ones 0.

Measures (``_ret``: both retrieved only; ``_imp``: at least one retrieved; plain: all):

==========================  ===============================================================
``prefs_num_prefs_poss``    every preference (summed over queries)
``prefs_num_prefs_ful``     ful_ret + ful_imp (summed)
``prefs_num_prefs_ful_ret`` ful_ret (summed)
``prefs_simp*``             fulfilled / possible over all the query's preferences
``prefs_pair*``             mean over document pairs of the share of the preferences on the
                            pair (over all groups) that the ranking fulfils
``prefs_avgjg*``            mean over groups of fulfilled / possible
``prefs_avgjg_Rnonrel*``    as avgjg with the group's non-relevant documents counted as R
                            (its relevant ones): R - N extra fulfilled preferences per retrieved
                            relevant document when N < R, else only the top R non-relevant
==========================  ===============================================================
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import groupby

import numpy as np

from nuggetbench.errors import InputError

__all__ = [
    "PREFS_MEASURES",
    "PREFS_COUNTS",
    "QueryPrefs",
    "query_prefs",
    "prefs_values",
    "prefs_mean",
    "evaluate_prefs_values",
]

#: trec_eval's preference measures in its order (``all_prefs`` is runid, num_q and these).
PREFS_MEASURES = (
    "prefs_num_prefs_poss",
    "prefs_num_prefs_ful",
    "prefs_num_prefs_ful_ret",
    "prefs_simp",
    "prefs_pair",
    "prefs_avgjg",
    "prefs_avgjg_Rnonrel",
    "prefs_simp_ret",
    "prefs_pair_ret",
    "prefs_avgjg_ret",
    "prefs_avgjg_Rnonrel_ret",
    "prefs_simp_imp",
    "prefs_pair_imp",
    "prefs_avgjg_imp",
)
#: The counts among them: summed over queries, printed as integers.
PREFS_COUNTS = PREFS_MEASURES[:3]


@dataclass
class _Group:
    """One judgment group's preferences and counts (trec_eval's ``JG``)."""

    ecs: list[list[int]] | None = None  # equivalence classes, highest rel_level first
    levels: list[float] = field(default_factory=list)
    matrix: np.ndarray | None = None  # preference matrix (bool (J, J)) when several sub-groups
    rel: np.ndarray | None = None  # rel_level per internal rank (-1: not in this group)
    ful_ret: int = 0
    poss_ret: int = 0
    ful_imp: int = 0
    poss_imp: int = 0
    notoccur: int = 0
    num_rel: int = 0
    num_rel_ret: int = 0
    num_nonrel: int = 0
    num_nonrel_ret: int = 0


@dataclass
class QueryPrefs:
    """A query's preferences against a ranking (trec_eval's ``RESULTS_PREFS``).

    Attributes:
        groups: the judgment groups, in group id order.
        counts: int64 (J, J): ``counts[a, b]`` = the number of groups preferring a to b
            (internal ranks).
        judged: J, the number of judged documents; *judged_ret*: NJR, those retrieved.
    """

    groups: list[_Group]
    counts: np.ndarray
    judged: int
    judged_ret: int


def query_prefs(
    query: str, judgments: Sequence, ranking: Sequence[tuple[str, float]], depth: int | None = None
) -> QueryPrefs:
    """The preferences of one query's *judgments* (``PrefJudgment`` rows) against *ranking*.

    Args:
        query: the query id (for error messages).
        judgments: :class:`~nuggetbench.data.formats.prefs.PrefJudgment` rows of the query.
        ranking: the run's ``(doc_id, score)`` entries of the query, in any order.
        depth: trec_eval's ``-M``: documents kept after ordering.

    Raises:
        InputError: a document has two levels in one sub-group, 0 and a positive level in one
            group, or a group's preferences conflict (A > B and B > A).
    """
    ordered = sorted(ranking, key=lambda e: (-e[1], e[0]))[:depth]
    judged = sorted({j.doc for j in judgments})
    known = set(judged)
    rank = {doc: i for i, doc in enumerate(d for d, _ in ordered if d in known)}
    njr = len(rank)
    for doc in judged:
        rank.setdefault(doc, len(rank))
    nj = len(judged)
    counts = np.zeros((nj, nj), dtype=np.int64)
    rows = sorted(
        ((j.group, j.subgroup, -j.rel_level, rank[j.doc], j.doc) for j in judgments),
    )
    groups = []
    for gid, members in groupby(rows, key=lambda r: r[0]):
        lines = list(members)
        if len({r[1] for r in lines}) > 1:
            groups.append(_matrix_group(query, gid, lines, nj, njr, counts))
        else:
            groups.append(_class_group(query, gid, lines, njr, counts))
    return QueryPrefs(groups, counts, nj, njr)


def _class_group(query: str, gid: str, lines: list, njr: int, counts: np.ndarray) -> _Group:
    """A group with one sub-group: equivalence classes by level (``form_jg_ec``)."""
    g = _Group(ecs=[])
    for level, members in groupby(lines, key=lambda r: r[2]):
        g.levels.append(-level)
        g.ecs.append([r[3] for r in members])
    for i, (level, ec) in enumerate(zip(g.levels, g.ecs)):
        ret = sum(r < njr for r in ec)
        if level > 0.0:
            g.num_rel, g.num_rel_ret = g.num_rel + len(ec), g.num_rel_ret + ret
        else:
            g.num_nonrel, g.num_nonrel_ret = g.num_nonrel + len(ec), g.num_nonrel_ret + ret
        for lower in g.ecs[i + 1 :]:
            a = np.repeat(np.asarray(ec), len(lower))
            b = np.tile(np.asarray(lower), len(ec))
            if (a == b).any():
                raise InputError(
                    f"preferences of query {query!r}, group {gid!r}: a document has two "
                    "different levels in one sub-group; give each document one level"
                )
            np.add.at(counts, (a, b), 1)
            up = a < b
            g.ful_ret += int((up & (b < njr)).sum())
            g.ful_imp += int((up & (b >= njr) & (a < njr)).sum())
            g.poss_ret += int((~up & (a < njr)).sum())
            g.poss_imp += int((~up & (a >= njr) & (b < njr)).sum())
            g.notoccur += int(((a >= njr) & (b >= njr)).sum())
    g.poss_ret += g.ful_ret
    g.poss_imp += g.ful_imp
    return g


def _matrix_group(
    query: str, gid: str, lines: list, nj: int, njr: int, counts: np.ndarray
) -> _Group:
    """A group with several sub-groups: a transitive preference matrix (``form_jg_pa``)."""
    where = f"preferences of query {query!r}, group {gid!r}"
    rel = np.full(nj, -1.0)
    pref = np.zeros((nj, nj), dtype=bool)
    for i, (_, sub, neg, r, doc) in enumerate(lines):
        level = -neg
        if (rel[r] > 0.0 and level == 0.0) or (rel[r] == 0.0 and level > 0.0):
            raise InputError(
                f"{where}: document {doc!r} is non-relevant (0) in one sub-group and relevant "
                "in another; a group must agree on which documents are relevant"
            )
        rel[r] = level
        for other in lines[i + 1 :]:
            if other[1] != sub:
                break
            if other[2] != neg:
                pref[r, other[3]] = True
    closed = pref | np.eye(nj, dtype=bool)
    while True:
        step = (closed.astype(np.int64) @ closed.astype(np.int64)) > 0
        if (step == closed).all():
            break
        closed = step
    np.fill_diagonal(closed, False)
    if (closed & closed.T).any():
        a, b = np.argwhere(closed & closed.T)[0]
        raise InputError(
            f"{where}: the preferences conflict (internal ranks {a} and {b} are each preferred "
            "to the other); put conflicting judgments in different groups"
        )
    counts += closed
    g = _Group(matrix=closed, rel=rel)
    g.num_rel_ret, g.num_nonrel_ret = int((rel[:njr] > 0).sum()), int((rel[:njr] == 0).sum())
    g.num_rel, g.num_nonrel = int((rel > 0).sum()), int((rel == 0).sum())
    top, bottom = closed[:njr], closed[njr:]
    g.ful_ret = int(np.triu(top[:, :njr], 1).sum())
    g.poss_ret = g.ful_ret + int(np.tril(top[:, :njr], -1).sum())
    g.ful_imp = int(top[:, njr:].sum())
    g.poss_imp = g.ful_imp + int(bottom[:, :njr].sum())
    g.notoccur = int(bottom[:, njr:].sum())
    return g


# --- the measures --------------------------------------------------------------------------------
def prefs_values(qp: QueryPrefs) -> dict[str, float]:
    """Every measure of :data:`PREFS_MEASURES` for one query."""
    gs = qp.groups
    ful_ret = sum(g.ful_ret for g in gs)
    ful = ful_ret + sum(g.ful_imp for g in gs)
    poss_ret = sum(g.poss_ret for g in gs)
    poss_imp = poss_ret + sum(g.poss_imp for g in gs)
    poss = poss_imp + sum(g.notoccur for g in gs)
    pair, pair_ret, pair_imp = _pairs(qp.counts, qp.judged_ret)
    return {
        "prefs_num_prefs_poss": float(poss),
        "prefs_num_prefs_ful": float(ful),
        "prefs_num_prefs_ful_ret": float(ful_ret),
        "prefs_simp": ful / poss if poss else 0.0,
        "prefs_pair": pair,
        "prefs_avgjg": _avg(gs, [(g.ful_ret + g.ful_imp, _all(g)) for g in gs]),
        "prefs_avgjg_Rnonrel": _avg(gs, [_rnonrel(g, qp.judged_ret) for g in gs], strict=True),
        "prefs_simp_ret": ful_ret / poss_ret if poss_ret else 0.0,
        "prefs_pair_ret": pair_ret,
        "prefs_avgjg_ret": _avg(gs, [(g.ful_ret, g.poss_ret) for g in gs]),
        "prefs_avgjg_Rnonrel_ret": _avg(
            gs, [_rnonrel_ret(g, qp.judged_ret) for g in gs], strict=True
        ),
        "prefs_simp_imp": ful / poss_imp if poss_imp else 0.0,
        "prefs_pair_imp": pair_imp,
        "prefs_avgjg_imp": _avg(gs, [(g.ful_ret + g.ful_imp, g.poss_ret + g.poss_imp) for g in gs]),
    }


def _all(g: _Group) -> int:
    """Every preference of group *g* (possible among retrieved, implied, not occurring)."""
    return g.poss_ret + g.poss_imp + g.notoccur


def _avg(groups: list, ratios: list[tuple[int, int]], *, strict: bool = False) -> float:
    """Mean over groups of fulfilled / possible; a group with none possible adds 0, or (with
    *strict*, as trec_eval's Rnonrel measures, which divide anyway) makes the value 0."""
    total = 0.0
    for ful, poss in ratios:
        if poss:
            total += ful / poss
        elif strict:
            total = math.nan
    return total / len(groups) if total > 0.0 else 0.0


def _pairs(counts: np.ndarray, njr: int) -> tuple[float, float, float]:
    """prefs_pair, prefs_pair_ret, prefs_pair_imp from the counts matrix."""
    upper = np.triu(np.ones(counts.shape, dtype=bool), 1)
    both = counts + counts.T
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(both > 0, counts / np.maximum(both, 1), 0.0)
    ret = upper.copy()
    ret[njr:, :] = False
    ret[:, njr:] = False
    imp = np.zeros(counts.shape, dtype=bool)
    imp[:njr, njr:] = True
    none = upper.copy()
    none[:njr, :] = False
    n_ret, n_imp = int((both[ret] > 0).sum()), int((both[imp] > 0).sum())
    n_none = int((both[none] > 0).sum())
    s_ret, s_imp = float(share[ret].sum()), float(share[imp].sum())

    def ratio(total: float, n: int) -> float:
        return total / n if n else 0.0

    return (
        ratio(s_ret + s_imp, n_ret + n_imp + n_none),
        ratio(s_ret, n_ret),
        ratio(s_ret + s_imp, n_ret + n_imp),
    )


def _rnonrel(g: _Group, njr: int) -> tuple[int, int]:
    """(fulfilled, possible) of prefs_avgjg_Rnonrel for one group."""
    r, n = g.num_rel, g.num_nonrel
    if r >= n:
        ful = g.ful_ret + g.ful_imp + g.num_rel_ret * (r - n)
        return ful, _all(g) + g.num_rel * (r - n)
    if g.ecs is not None:
        keep = g.ecs[-1][: g.num_rel]
        ful, other = _class_pairs(g.ecs, keep, njr, None)
        return ful, ful + other
    return _matrix_pairs(g, njr, g.rel.shape[0], retrieved_only=False)


def _rnonrel_ret(g: _Group, njr: int) -> tuple[int, int]:
    """(fulfilled, possible) of prefs_avgjg_Rnonrel_ret for one group."""
    r, n = g.num_rel_ret, g.num_nonrel_ret
    if r >= n:
        return g.ful_ret + r * (r - n), g.poss_ret + g.num_rel * (r - n)
    if g.ecs is not None:
        keep = g.ecs[-1][: g.num_rel_ret]
        ful, other = _class_pairs(g.ecs, keep, njr, njr)
        return ful, ful + other
    return _matrix_pairs(g, njr, njr, retrieved_only=True)


def _class_pairs(
    ecs: list[list[int]], keep: list[int], njr: int, limit: int | None
) -> tuple[int, int]:
    """Recount a class group with its lowest class replaced by *keep* (m_prefs_avgjg_Rnonrel.c's
    ``recalculate``): pairs of every class with each lower class but the last, then of every
    class (the last included) with *keep*. With *limit*, only ranks below it on both sides."""

    def cut(ranks: list[int]) -> list[int]:
        return ranks if limit is None else [x for x in ranks if x < limit]

    ful = other = 0
    pairs = [(ecs[i], ecs[j]) for i in range(len(ecs)) for j in range(i + 1, len(ecs) - 1)]
    pairs += [(ec, keep) for ec in ecs]
    for high, low in pairs:
        a, b = np.asarray(cut(high))[:, None], np.asarray(cut(low))[None, :]
        won = (a < b) & ((a < njr) if limit is None else True)
        ful += int(won.sum())
        other += won.size - int(won.sum())
    return ful, other


def _matrix_pairs(g: _Group, njr: int, scan: int, *, retrieved_only: bool) -> tuple[int, int]:
    """Recount a matrix group without its non-relevant documents after the first R (R: the
    group's relevant count; the first *scan* internal ranks are searched for them); with
    *retrieved_only*, only preferences between retrieved documents."""
    assert g.rel is not None and g.matrix is not None
    rel, a = g.rel, g.matrix
    r = g.num_rel  # in both measures (m_prefs_avgjg_Rnonrel*.c)
    seen, first = 0, scan
    for i in range(scan):
        if rel[i] == 0.0:
            seen += 1
            if seen == r + 1:
                first = i
                break
    idx = np.arange(len(rel))
    keep = ~((idx >= first) & (rel == 0.0))
    m = a & keep[:, None] & keep[None, :]
    top = m[:njr]
    ful = int(np.triu(top[:, :njr], 1).sum())
    poss = int(np.tril(top[:, :njr], -1).sum())
    if not retrieved_only:
        ful += int(top[:, njr:].sum())
        poss += int(m[njr:].sum())
    return ful, poss + ful


def prefs_mean(name: str, values: np.ndarray) -> float:
    """The ``all`` value of measure *name* over per-query *values* (sum for counts)."""
    if name in PREFS_COUNTS:
        return float(values.sum())
    return float(values.mean()) if len(values) else 0.0


def evaluate_prefs_values(
    judgments: Mapping[str, Sequence],
    run,
    query_ids: Sequence[str],
    depth: int | None = None,
) -> dict[str, np.ndarray]:
    """``{measure: float64 (Q,)}`` over *query_ids* (a query absent from *run* is scored on an
    empty ranking, as trec_eval ``-c``)."""
    present = set(run.query_ids)
    rows = []
    for q in query_ids:
        ranking = run[q] if q in present else []
        rows.append(prefs_values(query_prefs(q, judgments[q], ranking, depth)))
    return {m: np.array([row[m] for row in rows], dtype=np.float64) for m in PREFS_MEASURES}

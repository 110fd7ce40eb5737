"""Novelty and diversity measures over nugget (subtopic) judgments, matching ndeval 4.5.

This is our own numpy implementation of the measures of ndeval (TREC Web track, version 4.5,
Clarke et al.), at any cutoff. The per-query values reproduce ndeval's columns:

* ``alpha_DCG@k`` (Clarke et al., SIGIR 2008): the gain of the document at 0-based rank ``i`` is
  ``G_i = sum_j rel_ij (1 - alpha)^c_ij`` where ``c_ij`` counts the documents above ``i`` relevant
  to subtopic ``j``; ``alpha_DCG@k = sum_{i<k} G_i d(i) / (S sum_{i<k} (1 - alpha)^i d(i))`` with
  the discount ``d(i) = log 2 / log(i + 2)`` and ``S`` the number of subtopics that some document
  supports (ndeval's "ideal ideal" normalisation, collection independent).
* ``alpha_nDCG@k``: ``sum_{i<k} G_i d(i)`` divided by the same sum over the ideal ranking; the ideal
  ranking is ndeval's greedy one (at each rank the judged document with the largest gain given the
  documents already placed; ties go to the larger doc id).
* ``ERR_IA@k`` / ``nERR_IA@k`` (Chapelle et al., CIKM 2009, as ndeval computes them): as above
  with the discount ``1 / (i + 1)``; ndeval uses ``alpha`` as the stopping probability.
* ``P_IA@k`` (Agrawal et al., WSDM 2009): relevant (document, subtopic) pairs in the top ``k``
  divided by ``k S``.
* ``StRecall@k``: subtopics covered in the top ``k`` divided by ``S`` (subtopics that no document
  supports are ignored, as ndeval does).
* ``NRBP`` / ``nNRBP`` (Clarke et al., ICTIR 2009): ``(1 - (1 - alpha) beta) / S sum_i G_i beta^i``
  over the whole ranking; nNRBP divides by the ideal ranking's value.
* ``AP_IA`` (ndeval's MAP-IA): per subtopic average precision, averaged over the ``S`` subtopics.

A subtopic counts as supported by a document when ``support >= rel`` (``rel`` = 1 by default;
ndeval clamps grades above 1 to 1, pyndeval uses the same threshold). Queries with ``S = 0`` score
0 on every measure (ndeval prints ``nan`` for their nNRBP).

Departures from ndeval, none of which reaches its output: at ``k = 1`` ndeval leaves
``alpha-DCG`` and ``ERR-IA`` un-normalised (an off-by-one; its columns start at ``k = 5``, but
pyndeval's ``@1`` returns the raw gain); we normalise at every ``k``. The ideal ranking of nNRBP
stops where the rest of it would add less than ``1e-16`` of its first gain (``beta < 1``). A
repeated identical qrels line counts once (ndeval counts it twice in MAP-IA's denominator).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from nuggetbench.data.ranking import rank_order
from nuggetbench.data.run import Run
from nuggetbench.errors import InputError
from nuggetbench.measures.diversity.table import SubtopicTable

__all__ = ["SubtopicTable", "RankedEntries", "DiversityScorer", "discount"]


def discount(ranks: np.ndarray) -> np.ndarray:
    """ndeval's DCG discount ``log 2 / log(i + 2)`` for 0-based ranks ``i`` (float64)."""
    return math.log(2.0) / np.log(np.asarray(ranks, dtype=np.float64) + 2.0)


@dataclass
class RankedEntries:
    """The run entries of the evaluated queries in the profile's order (flat, grouped by query).

    Attributes:
        entry_q: evaluated-query index of each entry, shape (n,), non-decreasing.
        entry_rank: 0-based rank within its query, shape (n,).
        entry_doc: doc ids, shape (n,).
    """

    entry_q: np.ndarray
    entry_rank: np.ndarray
    entry_doc: np.ndarray

    @classmethod
    def from_run(
        cls,
        run: Run,
        query_ids: list[str] | np.ndarray,
        *,
        order: str = "trec",
        depth: int | None = None,
    ) -> RankedEntries:
        """Order *run* for the evaluated *query_ids* and cut it at *depth* (ndeval's ``-M``).

        Args:
            order: ``"trec"`` (score desc, doc id desc: trec_eval and ``ndeval -traditional``),
                ``"rank"`` (the input rank column, ndeval's default; needs ``run.input_ranks``) or
                ``"docid_asc"`` (score desc, doc id asc: pyndeval and FreshStack).
            depth: keep the first *depth* entries of each query after ordering (``None``: all).

        Raises:
            InputError: ``order="rank"`` without input ranks, or a rank repeated within a query
                (ndeval refuses both), or an unknown order.
        """
        qids, starts, docids, scores = run.arrays()
        lengths = np.diff(starts)
        qcodes = np.repeat(np.arange(len(qids)), lengths)
        if order == "trec":
            perm = np.arange(len(docids))
        elif order == "docid_asc":
            perm = (
                rank_order(qcodes, scores, docids, tie_break="docid_asc")
                if len(docids)
                else np.zeros(0, np.int64)
            )
        elif order == "rank":
            ranks = run.input_ranks
            if ranks is None:
                raise InputError(
                    "the ndeval profile orders each query by the run file's rank column, but this "
                    "run has none; read it with read_run(path, keep_rank=True) (or use the "
                    "'ndeval -traditional' profile, which orders by score)"
                )
            perm = np.lexsort((ranks, qcodes))
            r_sorted, q_sorted = ranks[perm], qcodes[perm]
            dup = (r_sorted[1:] == r_sorted[:-1]) & (q_sorted[1:] == q_sorted[:-1])
            if dup.any():
                i = int(np.flatnonzero(dup)[0])
                raise InputError(
                    f"{run.metadata.get('source', 'run')}: rank {int(r_sorted[i])} occurs twice for "
                    f"query {qids[q_sorted[i]]!r} (documents {docids[perm[i]]!r} and "
                    f"{docids[perm[i + 1]]!r}); ndeval orders by the rank column and refuses "
                    "duplicate ranks: fix the ranks or use the 'ndeval -traditional' profile"
                )
        else:
            raise InputError(
                f"unknown diversity order {order!r}; use 'trec', 'rank' or 'docid_asc'"
            )
        # perm keeps the entries grouped by run query, so positions within a query are simple
        pos = np.arange(len(docids)) - np.repeat(starts[:-1], lengths)
        qindex = {q: i for i, q in enumerate(list(query_ids))}
        run_to_eval = np.array([qindex.get(q, -1) for q in qids.tolist()], dtype=np.int64)
        eq = run_to_eval[qcodes[perm]] if len(perm) else np.zeros(0, np.int64)
        keep = eq >= 0
        if depth is not None:
            keep &= pos < depth
        sel, sel_q, sel_rank = perm[keep], eq[keep], pos[keep]
        regroup = np.argsort(
            sel_q, kind="stable"
        )  # run queries are sorted by id, not by evaluation order
        return cls(
            sel_q[regroup].astype(np.int64),
            sel_rank[regroup].astype(np.int64),
            docids[sel[regroup]],
        )


class DiversityScorer:
    """Computes the diversity measures of one (run, nugget qrels, query set, rel) combination.

    Args:
        table: the supported pairs (:meth:`SubtopicTable.build`).
        entries: the ordered run entries (:meth:`RankedEntries.from_run`) for the same queries.

    Every method returns a float64 array of shape ``(len(table.query_ids),)``.
    """

    def __init__(self, table: SubtopicTable, entries: RankedEntries):
        import pandas as pd

        self.table = table
        self.entries = entries
        nq = len(table.query_ids)
        self._nq = nq
        left = pd.DataFrame(
            {"q": entries.entry_q, "d": entries.entry_doc, "e": np.arange(len(entries.entry_q))}
        )
        right = pd.DataFrame({"q": table.pair_q, "d": table.pair_doc, "j": table.pair_sub})
        pairs = left.merge(right, on=["q", "d"], how="inner")
        e = pairs["e"].to_numpy(dtype=np.int64)
        j = pairs["j"].to_numpy(dtype=np.int64)
        order = np.lexsort((j, e))
        self._pe, self._pj = e[order], j[order]
        self._pq = entries.entry_q[self._pe]
        self._prank = entries.entry_rank[self._pe]
        # c = earlier pairs of the same (query, subtopic): group by (q, j), in rank order
        grp = np.lexsort((self._prank, self._pj, self._pq))
        gq, gj = self._pq[grp], self._pj[grp]
        new = np.ones(len(grp), dtype=bool)
        if len(grp) > 1:
            new[1:] = (gq[1:] != gq[:-1]) | (gj[1:] != gj[:-1])
        group_start = np.maximum.accumulate(np.where(new, np.arange(len(grp)), 0))
        c = np.empty(len(grp), dtype=np.int64)
        c[grp] = np.arange(len(grp)) - group_start
        self._pc = c
        self._s = table.n_subtopics.astype(np.float64)
        self._gains: dict[float, np.ndarray] = {}

    # --- helpers ------------------------------------------------------------------------------
    def _safe_div(self, num: np.ndarray, den: np.ndarray) -> np.ndarray:
        out = np.zeros(self._nq, dtype=np.float64)
        ok = den > 0
        out[ok] = num[ok] / den[ok]
        return out

    def entry_gains(self, alpha: float) -> np.ndarray:
        """``G_i`` per run entry (sum over subtopics, in subtopic order), shape (n,)."""
        key = float(alpha)
        if key not in self._gains:
            w = np.power(1.0 - alpha, self._pc.astype(np.float64))
            self._gains[key] = np.bincount(
                self._pe, weights=w, minlength=len(self.entries.entry_q)
            ).astype(np.float64)
        return self._gains[key]

    def _per_query(self, weights: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        """Sum per query of per-entry *weights* (already restricted to *mask* when given)."""
        q = self.entries.entry_q if mask is None else self.entries.entry_q[mask]
        return np.bincount(q, weights=weights, minlength=self._nq).astype(np.float64)

    def _ideal_ideal(self, alpha: float, k: int, disc: np.ndarray) -> np.ndarray:
        i = np.arange(k, dtype=np.float64)
        return self._s * float(np.sum(np.power(1.0 - alpha, i) * disc))

    # --- measures -----------------------------------------------------------------------------
    def _dcg(self, alpha: float, k: int, kind: str) -> np.ndarray:
        rank = self.entries.entry_rank
        mask = rank < k
        d = discount(rank[mask]) if kind == "dcg" else 1.0 / (rank[mask] + 1.0)
        return self._per_query(self.entry_gains(alpha)[mask] * d, mask)

    def _disc_vector(self, k: int, kind: str) -> np.ndarray:
        i = np.arange(k)
        return discount(i) if kind == "dcg" else 1.0 / (i + 1.0)

    def alpha_dcg(self, k: int, alpha: float = 0.5, *, kind: str = "dcg") -> np.ndarray:
        """alpha-DCG@k (``kind="dcg"``) or ERR-IA@k (``kind="err"``), ideal-ideal normalised."""
        return self._safe_div(
            self._dcg(alpha, k, kind), self._ideal_ideal(alpha, k, self._disc_vector(k, kind))
        )

    def alpha_ndcg(self, k: int, alpha: float = 0.5, *, kind: str = "dcg") -> np.ndarray:
        """alpha-nDCG@k (``kind="dcg"``) or nERR-IA@k (``kind="err"``): normalised by the greedy ideal."""
        ideal = self.table.ideal_gains(alpha, k)
        disc = self._disc_vector(ideal.shape[1], kind)
        return self._safe_div(
            self._dcg(alpha, k, kind), ideal @ disc if ideal.shape[1] else np.zeros(self._nq)
        )

    def p_ia(self, k: int) -> np.ndarray:
        """P-IA@k: relevant (document, subtopic) pairs in the top k over ``k * S``."""
        count = np.bincount(self._pq[self._prank < k], minlength=self._nq).astype(np.float64)
        return self._safe_div(count, k * self._s)

    def strecall(self, k: int) -> np.ndarray:
        """Subtopic recall@k: covered subtopics over ``S``."""
        first = (self._pc == 0) & (self._prank < k)
        return self._safe_div(
            np.bincount(self._pq[first], minlength=self._nq).astype(np.float64), self._s
        )

    def nrbp(self, alpha: float = 0.5, beta: float = 0.5) -> np.ndarray:
        """NRBP over the whole ranking."""
        w = self.entry_gains(alpha) * np.power(beta, self.entries.entry_rank.astype(np.float64))
        return self._safe_div(self._per_query(w) * (1.0 - (1.0 - alpha) * beta), self._s)

    def nnrbp(self, alpha: float = 0.5, beta: float = 0.5) -> np.ndarray:
        """NRBP divided by the greedy ideal ranking's NRBP."""
        s_max = max(1.0, float(self._s.max())) if self._nq else 1.0
        if beta >= 1.0:
            depth = None
        elif beta <= 0.0:
            depth = 1
        else:  # the ideal's tail beyond `depth` is below 1e-16 of its first gain (>= 1)
            depth = int(math.ceil(math.log(1e-16 * (1.0 - beta) / s_max) / math.log(beta))) + 1
        ideal = self.table.ideal_gains(alpha, depth)
        denom = (
            ideal @ np.power(beta, np.arange(ideal.shape[1], dtype=np.float64))
            if ideal.shape[1]
            else np.zeros(self._nq)
        )
        num = self._per_query(
            self.entry_gains(alpha) * np.power(beta, self.entries.entry_rank.astype(np.float64))
        )
        return self._safe_div(num, denom)

    def ap_ia(self) -> np.ndarray:
        """Intent-aware average precision (ndeval's MAP-IA) over the whole ranking."""
        t = self.table
        nrel = t.nrel_sub[t.sub_offsets[self._pq] + self._pj] if len(self._pq) else np.zeros(0)
        w = (self._pc + 1.0) / (self._prank + 1.0) / nrel
        return self._safe_div(
            np.bincount(self._pq, weights=w, minlength=self._nq).astype(np.float64), self._s
        )

"""Nugget (subtopic) judgments prepared for the diversity measures, and ndeval's ideal ranking.

:class:`SubtopicTable` holds the supported (query, document, subtopic) pairs of the evaluated
queries and computes the greedy ideal ranking of ndeval 4.5's ``idealResult`` (see
:mod:`nuggetbench.measures.diversity.core` for the measures and their formulas).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from nuggetbench.data.nugget_qrels import NuggetQrels
from nuggetbench.data.ranking import factorize_sorted

#: Upper bound on the cells (queries x documents x subtopics) of one batch of the greedy ideal.
_MAX_BATCH_CELLS = 4_000_000


@dataclass
class SubtopicTable:
    """The supported (query, document, subtopic) pairs of the evaluated queries.

    Attributes:
        query_ids: evaluated query ids, shape (Q,).
        n_subtopics: ``S`` per query (subtopics with at least one supporting document), shape (Q,).
        pair_q, pair_doc, pair_sub: supported pairs sorted by (query, doc id, subtopic); ``pair_sub``
            is the subtopic's index among the query's supported subtopics, in declaration order
            (the order in which ndeval adds gains).
        nrel_sub: supporting documents per (query, subtopic), flat; query ``q``'s subtopics are at
            ``sub_offsets[q]:sub_offsets[q + 1]``.
    """

    query_ids: np.ndarray
    n_subtopics: np.ndarray
    pair_q: np.ndarray
    pair_doc: np.ndarray
    pair_sub: np.ndarray
    nrel_sub: np.ndarray
    sub_offsets: np.ndarray
    _ideal: dict = field(default_factory=dict, repr=False)

    @classmethod
    def build(
        cls, nuggets: NuggetQrels, query_ids: list[str] | np.ndarray, *, rel: int = 1
    ) -> SubtopicTable:
        """Collect the supported pairs of *query_ids* (support >= *rel*) from *nuggets*."""
        import pandas as pd

        qids = np.asarray(list(query_ids), dtype=object)
        qindex = {q: i for i, q in enumerate(qids.tolist())}
        decl: dict[str, int] = {}
        for nug in nuggets.iter_nuggets():
            if nug.query_id in qindex:
                decl[nug.nugget_id] = len(decl)
        jq, jn, jd, js = nuggets.arrays()
        keep = js >= rel
        frame = pd.DataFrame({"q": jq[keep], "n": jn[keep], "d": jd[keep]})
        frame["qi"] = frame["q"].map(qindex)
        frame["decl"] = frame["n"].map(decl)
        frame = frame.dropna(subset=["qi", "decl"])
        frame = frame.astype({"qi": np.int64, "decl": np.int64})
        # subtopic index = rank of the nugget among the query's supported nuggets, by declaration
        subs = frame[["qi", "decl"]].drop_duplicates().sort_values(["qi", "decl"])
        sub_q = subs["qi"].to_numpy()
        starts = np.searchsorted(sub_q, np.arange(len(qids) + 1)).astype(np.int64)
        local = np.arange(len(subs)) - starts[sub_q]
        subs = subs.assign(sub=local)
        frame = frame.merge(subs, on=["qi", "decl"], how="left")
        nrel = frame.groupby(["qi", "sub"], sort=True).size().to_numpy().astype(np.int64)
        _, dcodes = (
            factorize_sorted(frame["d"].to_numpy(dtype=object))
            if len(frame)
            else (None, np.zeros(0, np.int64))
        )
        order = np.lexsort((frame["sub"].to_numpy(), dcodes, frame["qi"].to_numpy()))
        return cls(
            query_ids=qids,
            n_subtopics=np.diff(starts),
            pair_q=frame["qi"].to_numpy()[order],
            pair_doc=frame["d"].to_numpy(dtype=object)[order],
            pair_sub=frame["sub"].to_numpy().astype(np.int64)[order],
            nrel_sub=nrel,
            sub_offsets=starts,
        )

    # --- ideal ranking ------------------------------------------------------------------------
    def ideal_gains(self, alpha: float, depth: int | None) -> np.ndarray:
        """Gains ``G_i`` of ndeval's greedy ideal ranking, shape (Q, D), zero-padded.

        Args:
            alpha: redundancy intolerance in [0, 1].
            depth: ranks needed (``None``: the whole ideal ranking).

        The greedy choice reproduces ndeval's ``idealResult`` bit for bit: gains are summed in
        subtopic order, each subtopic's gain is multiplied by ``1 - alpha`` when covered, and ties
        go to the larger doc id. Only documents supporting a subtopic can have a positive gain, so
        only they are ranked (the others add nothing at any rank).
        """
        q = len(self.query_ids)
        _, dcodes = (
            factorize_sorted(self.pair_doc) if len(self.pair_doc) else (None, np.zeros(0, np.int64))
        )
        new_doc = np.ones(len(self.pair_q), dtype=bool)
        if len(self.pair_q) > 1:
            new_doc[1:] = (self.pair_q[1:] != self.pair_q[:-1]) | (dcodes[1:] != dcodes[:-1])
        doc_of_pair = np.cumsum(new_doc) - 1
        doc_q = self.pair_q[new_doc]
        doc_start = np.searchsorted(doc_q, np.arange(q + 1))
        n_docs = np.diff(doc_start)
        full = int(n_docs.max()) if q and len(n_docs) else 0
        want = full if depth is None else min(int(depth), full)
        key = (float(alpha), want)
        for (a, d), value in self._ideal.items():
            if a == float(alpha) and d >= want:
                return value[:, :want]
        out = np.zeros((q, want), dtype=np.float64)
        if want == 0:
            return out
        local_doc = doc_of_pair - doc_start[self.pair_q]
        order = np.argsort(n_docs, kind="stable")
        batch: list[int] = []
        s_max = 1
        for qi in order.tolist():  # ascending size: the current query has the most documents
            s_new = max(s_max, int(self.n_subtopics[qi]))
            if batch and (len(batch) + 1) * int(n_docs[qi]) * s_new > _MAX_BATCH_CELLS:
                self._greedy_batch(np.asarray(batch), n_docs, local_doc, alpha, want, out)
                batch, s_new = [], max(1, int(self.n_subtopics[qi]))
            batch.append(qi)
            s_max = s_new
        if batch:
            self._greedy_batch(np.asarray(batch), n_docs, local_doc, alpha, want, out)
        self._ideal[key] = out
        return out

    def _greedy_batch(
        self,
        batch: np.ndarray,
        n_docs: np.ndarray,
        local_doc: np.ndarray,
        alpha: float,
        want: int,
        out: np.ndarray,
    ) -> None:
        r = int(n_docs[batch].max()) if len(batch) else 0
        s = int(self.n_subtopics[batch].max()) if len(batch) else 0
        if r == 0 or s == 0:
            return
        slot = np.full(len(self.query_ids), -1, dtype=np.int64)
        slot[batch] = np.arange(len(batch))
        mask = slot[self.pair_q] >= 0
        rel = np.zeros((len(batch), r, s), dtype=np.float64)
        rel[slot[self.pair_q[mask]], local_doc[mask], self.pair_sub[mask]] = 1.0
        available = np.arange(r)[None, :] < n_docs[batch][:, None]
        gain = np.ones((len(batch), s), dtype=np.float64)
        keep = 1.0 - alpha
        rows = np.arange(len(batch))
        for t in range(min(want, r)):
            score = np.zeros((len(batch), r), dtype=np.float64)
            for j in range(s):  # sequential sum in subtopic order, as ndeval adds
                score += rel[:, :, j] * gain[:, j : j + 1]
            score[~available] = -1.0
            pick = r - 1 - np.argmax(score[:, ::-1], axis=1)  # last maximum = largest doc id
            best = score[rows, pick]
            active = best >= 0.0
            if not active.any():
                break
            out[batch[active], t] = best[active]
            available[rows[active], pick[active]] = False
            hit = rel[rows, pick, :] > 0
            gain = np.where(hit & active[:, None], gain * keep, gain)

"""``EvalContext``: a run aligned with its qrels, as flat arrays that measure families share.

The context picks the evaluated queries (by the profile), then joins every run entry of those
queries to its judgment without a Python loop per document: document ids are factorised once
(``Run.doc_codes()``), qrels documents are mapped into the same codes with one hash lookup, and
``(query, doc)`` pairs become int64 keys looked up with ``np.searchsorted`` in the sorted qrels
keys. Per-query sums use ``np.bincount``. Views (relevance threshold, judged-only, cutoff) are
cached, so families asking for the same view share the work.

Grades follow trec_eval's ``form_res_rels.c``: a retrieved document absent from the qrels has
grade :data:`UNJUDGED`; a document judged with a negative grade keeps it (trec_eval treats it as
"in the pool but unjudged": never relevant, no gain, dropped by ``judged_only``, not counted as
judged non-relevant by bpref). A document is relevant at threshold ``rel`` when
``grade >= rel`` and ``grade >= 0``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from nuggetbench.data.lookup import index_in
from nuggetbench.data.ranking import rank_order
from nuggetbench.errors import IdMismatchError
from nuggetbench.measures.profiles import Profile, get_profile

if TYPE_CHECKING:  # pragma: no cover
    from nuggetbench.data.qrels import Qrels
    from nuggetbench.data.run import Run

logger = logging.getLogger(__name__)

__all__ = ["EvalContext", "Ranked", "UNJUDGED"]

#: Grade of a retrieved document that has no judgment for its query.
UNJUDGED = int(np.iinfo(np.int64).min)


@dataclass(frozen=True)
class Ranked:
    """Flat arrays over the ranked run entries of the evaluated queries (one view).

    Entries are grouped by query (in the order of ``ctx.query_ids``) and ranked inside each
    query. With ``n`` entries and ``Q`` evaluated queries:

    Attributes:
        qidx: int64 (n,), index of the entry's query in ``ctx.query_ids`` (non-decreasing).
        rank: int64 (n,), 0-based rank inside the query (after ``judged_only`` filtering).
        grade: int64 (n,), the qrels grade, :data:`UNJUDGED` when the document is not judged.
        relevant: bool (n,), ``grade >= rel`` and ``grade >= 0``.
        run_index: int64 (n,), position of the entry in ``ctx.run.arrays()`` columns.
        starts: int64 (Q+1,), query ``i``'s entries are ``starts[i]:starts[i+1]``.
    """

    qidx: np.ndarray
    rank: np.ndarray
    grade: np.ndarray
    relevant: np.ndarray
    run_index: np.ndarray
    starts: np.ndarray

    @property
    def num_ret(self) -> np.ndarray:
        """Entries per query in this view, int64 (Q,)."""
        return np.diff(self.starts)

    def count(self, mask: np.ndarray) -> np.ndarray:
        """Per-query number of entries where the bool (n,) *mask* is true, float64 (Q,)."""
        q = self.qidx[mask]
        return np.bincount(q, minlength=len(self.starts) - 1).astype(np.float64)

    def total(self, weights: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        """Per-query sum of float (n,) *weights* (optionally where *mask*), float64 (Q,)."""
        q = self.qidx if mask is None else self.qidx[mask]
        w = weights if mask is None else weights[mask]
        return np.bincount(q, weights=w, minlength=len(self.starts) - 1).astype(np.float64)


def _positions(haystack: np.ndarray, needles: np.ndarray) -> np.ndarray:
    """Index of each needle in the sorted object array *haystack*, -1 when absent."""
    if len(haystack) == 0 or len(needles) == 0:
        return np.full(len(needles), -1, dtype=np.int64)
    pos = np.searchsorted(haystack, needles).astype(np.int64)
    safe = np.minimum(pos, len(haystack) - 1)
    found = haystack[safe] == needles
    return np.where(found, safe, -1)


def _gather_ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(starts[i], starts[i] + lengths[i])`` (int64)."""
    total = int(lengths.sum())
    out_starts = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=out_starts[1:])
    return np.repeat(starts - out_starts[:-1], lengths) + np.arange(total, dtype=np.int64)


def _starts_from_counts(counts: np.ndarray) -> np.ndarray:
    starts = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    return starts


def _run_queries(run: Run) -> tuple[np.ndarray, np.ndarray]:
    """Sorted query ids (object (q,)) and entries per query (int64 (q,)), without the doc ids."""
    return np.asarray(run.query_ids, dtype=object), np.asarray(run.lengths(), dtype=np.int64)


def _doc_codes(run: Run) -> tuple[np.ndarray, np.ndarray]:
    """``(uniques, codes)`` of the run's doc ids, codes aligned with ``run.arrays()`` (the
    uniques as the run keeps them: an object array or a fast reader's pyarrow array)."""
    return run.doc_codes_kept()


def _normalise_id(qid: str) -> str:
    text = qid.strip().lower()
    try:
        number = float(text)
    except ValueError:
        return text
    return str(int(number)) if number.is_integer() else repr(number)


def _mismatch_message(qrels_ids: list[str], run_ids: list[str], run: Run, qrels: Qrels) -> str:
    run_label = f"run {run.name!r}" if run.name else "the run"
    qrels_label = f"qrels {qrels.name!r}" if qrels.name else "the qrels"
    if not run_ids:
        return f"{run_label} has no entries: nothing to evaluate against {qrels_label} ({len(qrels_ids)} queries)"
    if not qrels_ids:
        return f"{qrels_label} hold no judgments: nothing to evaluate {run_label} against"
    msg = (
        f"{run_label} and {qrels_label} share no query id (overlap 0 of {len(run_ids)} run queries "
        f"and {len(qrels_ids)} judged queries; e.g. run {run_ids[:3]}, qrels {qrels_ids[:3]})"
    )
    norm_q = {_normalise_id(q): q for q in qrels_ids}
    pairs = [(r, norm_q[_normalise_id(r)]) for r in run_ids if _normalise_id(r) in norm_q]
    if pairs:
        examples = ", ".join(f"{r!r} vs {q!r}" for r, q in pairs[:3])
        msg += (
            f". {len(pairs)} ids match after normalising case, whitespace and leading zeros "
            f"({examples}): rewrite the ids of one side so that they are identical strings"
        )
    else:
        msg += ": check that the run and the qrels belong to the same dataset and split"
    return msg


class EvalContext:
    """A run aligned with qrels for the queries a profile evaluates.

    Args:
        qrels: the judgments (:class:`~nuggetbench.data.Qrels`).
        run: the run (:class:`~nuggetbench.data.Run`).
        profile: a :class:`Profile` or its name (default ``"trec_eval -c"``); its ``transform``
            hook is applied first, then ``select_queries`` or ``average_over`` picks the queries.

    Attributes:
        qrels, run: after the profile's transform.
        profile: the :class:`Profile`.
        query_ids: object array (Q,) of evaluated query ids, sorted.
        run_only_queries: run queries (with entries) that have no judgments and that the profile
            does not evaluate (ignored).
        missing_queries: judged queries absent from the run (scored on an empty ranking when the
            profile evaluates them). Under a profile with ``select_queries``: exactly the
            evaluated queries absent from the run (a query the profile selects without document
            judgments, e.g. one with nuggets no document supports, is scored, so it is listed
            here and never among *run_only_queries*).

    Raises:
        IdMismatchError: the run and the qrels share no query id (the message gives the overlap
            and hints at ids that differ only by format, e.g. ``"1"`` vs ``"01"``).
    """

    def __init__(self, qrels: Qrels, run: Run, profile: str | Profile | None = None):
        profile = get_profile(profile)
        if profile.transform is not None:
            qrels, run = profile.transform(qrels, run)
        self.qrels = qrels
        self.run = run
        self.profile = profile
        qq = qrels.query_offsets()[0]
        rq, rlen = _run_queries(run)
        present = rq[rlen > 0]
        qset, rset = set(qq.tolist()), set(present.tolist())
        overlap = qset & rset
        if not overlap:
            raise IdMismatchError(_mismatch_message(qq.tolist(), present.tolist(), run, qrels))
        self.run_only_queries = sorted(rset - qset)
        self.missing_queries = sorted(qset - rset)
        if profile.select_queries is not None:
            ids = sorted({str(q) for q in profile.select_queries(qrels, run)})
            selected = set(ids)
            self.run_only_queries = sorted(rset - qset - selected)
            self.missing_queries = sorted(selected - rset)
        elif profile.average_over == "qrels":
            ids = qq.tolist()
        else:
            ids = sorted(overlap)
        self.query_ids = np.array(ids, dtype=object)
        self._qpos = _positions(qq, self.query_ids)
        rpos = _positions(rq, self.query_ids)
        if len(rpos):
            rpos[(rpos >= 0) & (rlen[np.maximum(rpos, 0)] == 0)] = -1
        self._rpos = rpos
        self._cache: dict = {}
        #: the family being computed (set by ``evaluate()``): ``ranked()`` uses its tie order
        self.family: str | None = None

    def __len__(self) -> int:
        return len(self.query_ids)

    def __repr__(self) -> str:
        return f"<EvalContext {self.profile.name!r}: {len(self.query_ids)} queries>"

    # --- judgments of the evaluated queries ------------------------------------------------
    def judgments(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(qidx, doc_ids, grades)`` of the evaluated queries' judgments, flat, grouped by query.

        ``qidx`` int64 (m,), ``doc_ids`` object (m,), ``grades`` int64 (m,).
        """
        if "judgments" not in self._cache:
            qidx, grades = self.judged_grades()
            index = self._cache["judgment_index"]
            qdocs = self.qrels.arrays()[2]
            self._cache["judgments"] = (qidx, qdocs if index is None else qdocs[index], grades)
        return self._cache["judgments"]

    def judged_grades(self) -> tuple[np.ndarray, np.ndarray]:
        """``(qidx, grades)`` of :meth:`judgments`, without the doc ids (which a fast reader's
        qrels build only when asked for)."""
        if "judged_grades" not in self._cache:
            qq, qstarts = self.qrels.query_offsets()
            qgrades = self.qrels.grades()
            has = self._qpos >= 0
            safe = np.maximum(self._qpos, 0)
            lengths = np.where(has, np.diff(qstarts)[safe] if len(qq) else 0, 0).astype(np.int64)
            index = _gather_ranges(
                qstarts[safe] if len(qq) else np.zeros(len(safe), np.int64), lengths
            )
            qidx = np.repeat(np.arange(len(self.query_ids), dtype=np.int64), lengths)
            if len(index) == len(qgrades) and np.array_equal(index, np.arange(len(index))):
                index = None  # every judgment, in order
            self._cache["judged_grades"] = (qidx, qgrades if index is None else qgrades[index])
            self._cache["judgment_index"] = index
        return self._cache["judged_grades"]

    def _judged_codes(self, uniques: np.ndarray) -> np.ndarray:
        """Position of each judgment's document (:meth:`judgments` order) among the run's doc
        *uniques* (``-1``: never retrieved). A run with ``judged_codes`` answers for the whole
        qrels column once, shared with the trap checks."""
        self.judged_grades()
        index = self._cache["judgment_index"]
        judged_codes = getattr(self.run, "judged_codes", None)
        if judged_codes is None:
            return index_in(self.judgments()[1], uniques)
        codes = judged_codes(self.qrels)
        return codes if index is None else codes[index]

    def per_view(self, view: Ranked, name: str, compute: Callable[[], Any]) -> Any:
        """``compute()`` for the cached *view* (from :meth:`ranked`), computed once per view and
        *name* (several measures count the same thing on the same view). Callers must not
        modify the value (hand out copies)."""
        store = self._cache.setdefault("per_view", {})
        key = (id(view), name)
        if key not in store:
            store[key] = (view, compute())  # the view is kept: its id stays its own
        return store[key][1]

    def num_rel(self, rel: int = 1) -> np.ndarray:
        """Judged relevant documents per query (``grade >= rel`` and ``>= 0``), float64 (Q,), a
        fresh copy (counted once per *rel*: ``-m all_trec`` asks 54 times)."""
        return self._judged_count("num_rel", rel)

    def num_judged_nonrel(self, rel: int = 1) -> np.ndarray:
        """Judged non-relevant documents per query (``0 <= grade < rel``), float64 (Q,), a fresh
        copy (counted once per *rel*)."""
        return self._judged_count("num_judged_nonrel", rel)

    def _judged_count(self, kind: str, rel: int) -> np.ndarray:
        """Per-query count of judgments with ``grade >= rel`` (``"num_rel"``) or
        ``grade < rel`` (``"num_judged_nonrel"``), grades ``>= 0`` only; cached per kind and
        *rel*, handed out as a copy."""
        key = (kind, rel)
        if key not in self._cache:
            qidx, grades = self.judged_grades()
            above = grades >= rel
            mask = (above if kind == "num_rel" else ~above) & (grades >= 0)
            counts = np.bincount(qidx[mask], minlength=len(self.query_ids)).astype(np.float64)
            self._cache[key] = counts
        return self._cache[key].copy()

    def ideal_gains(self) -> tuple[np.ndarray, np.ndarray]:
        """``(qidx, gains)``: positive grades of each query sorted descending (the ideal ranking).

        ``qidx`` int64 (m,) non-decreasing, ``gains`` float64 (m,); position inside the query =
        index minus the query's first index.
        """
        if "ideal" not in self._cache:
            qidx, grades = self.judged_grades()
            pos = grades > 0
            q, g = qidx[pos], grades[pos]
            order = np.lexsort((-g, q))
            self._cache["ideal"] = (q[order], g[order].astype(np.float64))
        return self._cache["ideal"]

    # --- run entries ------------------------------------------------------------------------
    def _base(
        self, tie_break: str | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(qidx, rank, grade, run_index, starts)`` over every entry of the evaluated queries,
        ties ordered by *tie_break* (``None``: the profile's)."""
        tie_break = tie_break or self.profile.tie_break
        if tie_break != self.profile.tie_break:
            key = ("base", tie_break)
            if key not in self._cache:
                qidx, rank, _, run_index, starts = self._base()
                perm = self._tie_order(qidx, run_index, tie_break)
                run_index = run_index[perm]
                grade = self._join(qidx, run_index)
                self._cache[key] = (qidx, rank, grade, run_index, starts)
            return self._cache[key]
        if "base" in self._cache:
            return self._cache["base"]
        rq, rlen = _run_queries(self.run)
        rstarts = _starts_from_counts(rlen)
        nq = len(self.query_ids)
        has = self._rpos >= 0
        safe = np.maximum(self._rpos, 0)
        lengths = np.where(has, rlen[safe] if len(rq) else 0, 0).astype(np.int64)
        starts = _starts_from_counts(lengths)
        n = int(starts[-1])
        whole = n == int(rstarts[-1]) and np.array_equal(self._rpos[has], np.flatnonzero(rlen > 0))
        if whole:  # every run entry, in the run's order
            run_index = np.arange(n, dtype=np.int64)
        else:
            run_index = _gather_ranges(
                rstarts[safe] if len(rq) else np.zeros(nq, np.int64), lengths
            )
        qidx = np.repeat(np.arange(nq, dtype=np.int64), lengths)
        rank = np.arange(n, dtype=np.int64) - np.repeat(starts[:-1], lengths)
        if self.profile.tie_break != "docid_desc" and n:
            run_index = run_index[self._tie_order(qidx, run_index, self.profile.tie_break)]
            whole = False
        grade = self._join(qidx, run_index, whole=whole)
        self._cache["base"] = (qidx, rank, grade, run_index, starts)
        return self._cache["base"]

    def _tie_order(self, qidx: np.ndarray, run_index: np.ndarray, tie_break: str) -> np.ndarray:
        """Permutation re-ranking the entries ``run_index`` (grouped by ``qidx``) by *tie_break*."""
        if not len(run_index):
            return np.zeros(0, dtype=np.int64)
        _, _, rdocs, rscores = self.run.arrays()
        positions = None
        if tie_break == "input":
            order = getattr(self.run, "input_order", None)
            positions = order[run_index] if order is not None else run_index
        return rank_order(
            qidx, rscores[run_index], rdocs[run_index], tie_break=tie_break, positions=positions
        )

    def _join(self, qidx: np.ndarray, run_index: np.ndarray, *, whole: bool = False) -> np.ndarray:
        """Grade of every entry (``UNJUDGED`` when not judged), vectorised. *whole*: *run_index*
        is ``arange`` over every run entry (the run's codes are then used without a copy)."""
        n = len(qidx)
        grade = np.full(n, UNJUDGED, dtype=np.int64)
        jq, jgrades = self.judged_grades()
        if n == 0 or len(jq) == 0:
            return grade
        uniques, codes = _doc_codes(self.run)
        jcode = self._judged_codes(uniques)
        keep = jcode >= 0
        if not keep.any():
            return grade
        jq, jcode, jg = jq[keep], jcode[keep], jgrades[keep]
        ecodes = codes if whole else codes[run_index]  # no copy of a whole run's codes
        # most documents are judged for one query only: a direct table lookup serves them
        n_judging = np.bincount(jcode, minlength=len(uniques))
        single = n_judging[jcode] == 1
        several = n_judging > 1  # bool (u,): the counts' int64 table is not kept
        del n_judging
        # int32 when it holds every query index: the per-entry gather below is half the size
        small = len(self.query_ids) < 2**31 - 1
        doc_query = np.full(len(uniques), -1, dtype=np.int32 if small else np.int64)
        doc_query[jcode[single]] = jq[single]
        doc_grade = np.zeros(len(uniques), dtype=np.int64)
        doc_grade[jcode[single]] = jg[single]
        hit = doc_query[ecodes] == qidx
        del doc_query
        grade[hit] = doc_grade[ecodes[hit]]
        del doc_grade, hit
        if not single.all():  # documents judged for several queries: sorted (query, doc) keys
            nd = np.int64(max(len(uniques), 1))
            jkeys = jq[~single] * nd + jcode[~single]
            order = np.argsort(jkeys, kind="stable")
            jkeys, multi_grades = jkeys[order], jg[~single][order]
            cand = np.flatnonzero(several[ecodes])
            ekeys = qidx[cand] * nd + ecodes[cand]
            pos = np.minimum(np.searchsorted(jkeys, ekeys), len(jkeys) - 1)
            found = jkeys[pos] == ekeys
            grade[cand[found]] = multi_grades[pos[found]]
        return grade

    def _entries(
        self, judged_only: bool, tie_break: str | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        tie_break = tie_break or self.profile.tie_break
        key = ("entries", bool(judged_only), tie_break)
        if key in self._cache:
            return self._cache[key]
        qidx, rank, grade, run_index, starts = self._base(tie_break)
        if judged_only:
            keep = grade >= 0
            qidx, grade, run_index = qidx[keep], grade[keep], run_index[keep]
            starts = _starts_from_counts(np.bincount(qidx, minlength=len(self.query_ids)))
            rank = np.arange(len(qidx), dtype=np.int64) - starts[qidx]
        self._cache[key] = (qidx, rank, grade, run_index, starts)
        return self._cache[key]

    def ranked(
        self,
        rel: int = 1,
        judged_only: bool = False,
        cutoff: int | None = None,
        tie_break: str | None = None,
    ) -> Ranked:
        """The entries of the evaluated queries as one :class:`Ranked` view (cached).

        Args:
            rel: relevance threshold (trec_eval's ``-l``): relevant = ``grade >= rel`` (and >= 0).
            judged_only: drop documents without a non-negative judgment first and re-rank the
                rest (trec_eval ``-J``, pytrec_eval's ``judged_docs_only_flag``).
            cutoff: keep the top *cutoff* entries of each query (``None``: all).
            tie_break: order of tied scores (``"docid_desc"``, ``"docid_asc"``, ``"input"``);
                ``None``: the profile's for the family being computed
                (``profile.tie_break_for(ctx.family)``).
        """
        tie_break = tie_break or self.profile.tie_break_for(self.family)
        key = ("ranked", int(rel), bool(judged_only), cutoff, tie_break)
        if key in self._cache:
            return self._cache[key]
        qidx, rank, grade, run_index, starts = self._entries(judged_only, tie_break)
        if cutoff is not None and len(rank) and int(np.diff(starts).max()) > cutoff:
            keep = rank < cutoff
            qidx, rank, grade, run_index = qidx[keep], rank[keep], grade[keep], run_index[keep]
            starts = _starts_from_counts(np.minimum(np.diff(starts), cutoff))
        relevant = grade >= max(int(rel), 0)
        view = Ranked(qidx, rank, grade, relevant, run_index, starts)
        self._cache[key] = view
        return view

    def num_ret(self, judged_only: bool = False) -> np.ndarray:
        """Retrieved entries per query, float64 (Q,) (0 for queries missing from the run)."""
        return np.diff(self._entries(judged_only)[4]).astype(np.float64)

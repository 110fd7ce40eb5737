"""``Run``: an immutable mapping ``query_id -> ranked [(doc_id, score), ...]``."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from nuggetbench._runtime import in_background, usable_cpus
from nuggetbench.data._grouped import QueryGrouped
from nuggetbench.data.columns import (
    _arrived_sorted,
    _as_str_array,
    _check_duplicate_codes,
    _factorize,
    _factorize_ints,
    _first_occurrences,
    sorted_query_codes,
)
from nuggetbench.data.lookup import (
    as_objects,
    index_in,
    is_arrow,
    objects_at,
    share_strings,
)
from nuggetbench.data.ranking import (
    _UNSET,
    TieBreak,
    factorize_sorted,
    rank_codes,
    rank_order,
)
from nuggetbench.errors import InputError

if TYPE_CHECKING:
    from nuggetbench.data.qrels import Qrels

logger = logging.getLogger(__name__)

#: What a run does with a (query, doc) pair listed twice: ``"error"`` (trec_eval refuses them)
#: or ``"first"`` (the first occurrence wins; the later ones are dropped, with a warning).
DUPLICATE_POLICIES = ("error", "first")


class Run(QueryGrouped, Mapping[str, list[tuple[str, float]]]):
    """A retrieval run, stored column-wise and ranked by trec_eval's rule.

    Entries are grouped by query id (sorted ascending as strings) and, within a query, ordered by
    score descending with ties broken by doc id descending (see :mod:`nuggetbench.data.ranking`).
    ``run[qid]`` returns the ranked list of ``(doc_id, score)``. Construction never mutates its
    inputs, and a ``Run`` is never mutated afterwards: methods return new runs.

    Attributes:
        name: a label (e.g. the retriever spec or the run file's tag).
        input_sorted: whether the input already arrived in ranked order (issue-7 style warning).
        metadata: free-form provenance (retriever parameters, source file...).
        input_ranks: ``None``, or the rank column of the input file (int64, shape (n,), aligned
            with the ranked entries of :meth:`arrays`); kept only on request
            (``read_run(path, keep_rank=True)``) for profiles that order by it (ndeval's default).
        input_order: int64 (n,) aligned with the ranked entries: the position at which each
            entry arrived (its index in the constructor's columns, i.e. the file order), for
            profiles that break ties by input order (FreshStack's Coverage). Only the relative
            order within a query is meaningful.
    """

    __slots__ = (
        "_qids",
        "_starts",
        "_docids_cache",
        "_scores",
        "name",
        "input_sorted",
        "metadata",
        "input_ranks",
        "_doc_uniques",
        "_doc_codes",
        "_input_pos",
        "_lookup",
    )

    def __init__(
        self,
        query_ids: Iterable[Any],
        doc_ids: Iterable[Any],
        scores: Iterable[float],
        *,
        name: str | None = None,
        metadata: dict | None = None,
        tie_break: TieBreak = "docid_desc",
        source: str | None = None,
        ranks: Iterable[int] | None = None,
        duplicates: str = "error",
    ):
        """Build a run from three parallel columns (one entry per (query, doc) pair).

        Args:
            query_ids, doc_ids: ids (converted to ``str``), shape (n,).
            scores: floats, shape (n,). Higher is better.
            name: label of the run.
            metadata: provenance.
            tie_break: order of tied scores (trec_eval: ``"docid_desc"``).
            source: where the data came from, used in error messages.
            ranks: optional input rank column (integers, shape (n,)), stored aligned with the
                ranked entries as ``input_ranks``; it never changes the ranking.
            duplicates: a (query, doc) pair listed twice: ``"error"`` (the default, as trec_eval)
                or ``"first"`` (the first occurrence in input order is kept, the later ones are
                dropped and a warning names the query, the document and the positions).

        Raises:
            DuplicateError: a (query_id, doc_id) pair occurs twice and *duplicates* is
                ``"error"`` (the pair is named).
            InputError: the columns differ in length, a score is NaN, or *duplicates* is not one
                of :data:`DUPLICATE_POLICIES`.
        """
        q = _as_str_array(query_ids)
        d = _as_str_array(doc_ids)
        s = np.asarray(scores, dtype=np.float64)
        if not (len(q) == len(d) == len(s)):
            raise InputError(
                f"run columns differ in length: {len(q)} queries, {len(d)} docs, {len(s)} scores"
            )
        if np.isnan(s).any():
            i = int(np.flatnonzero(np.isnan(s))[0])
            raise InputError(f"{source or 'run'}: score of query {q[i]!r}, doc {d[i]!r} is NaN")
        uq, qcodes = (
            factorize_sorted(q) if len(q) else (np.array([], dtype=object), np.zeros(0, np.int64))
        )
        du, dcodes = _factorize(d)
        self._init_ranked(
            uq,
            qcodes,
            du,
            dcodes,
            s,
            name=name,
            metadata=metadata,
            tie_break=tie_break,
            source=source,
            ranks=ranks,
            duplicates=duplicates,
        )

    def _init_ranked(
        self,
        uq: np.ndarray,
        qcodes: np.ndarray,
        du: np.ndarray,
        dcodes: np.ndarray,
        s: np.ndarray,
        *,
        name: str | None,
        metadata: dict | None,
        tie_break: TieBreak,
        source: str | None,
        ranks: Iterable[int] | None,
        duplicates: str = "error",
        score_order: Any = _UNSET,
    ) -> None:
        """Rank factorised columns (``uq`` sorted; ``du`` in any order) and fill the slots.

        *score_order*: :func:`.ranking.score_order` of ``qcodes`` and ``s`` when the caller has
        it. The (query, doc) pairs are checked for repeats beside the ranking (in a thread for
        long runs: a repeat does not depend on the order)."""
        r = None
        if ranks is not None:
            r = np.asarray(
                list(ranks) if not isinstance(ranks, np.ndarray) else ranks, dtype=np.int64
            )
            if len(r) != len(s):
                raise InputError(f"run columns differ in length: {len(s)} entries, {len(r)} ranks")
        if duplicates not in DUPLICATE_POLICIES:
            raise InputError(
                f"duplicates must be one of {', '.join(DUPLICATE_POLICIES)}, got {duplicates!r}"
            )
        kept: np.ndarray | None = None
        if duplicates == "first":
            kept = _first_occurrences(qcodes, dcodes, uq, du, source)
            if kept is not None:
                qcodes, dcodes, s = qcodes[kept], dcodes[kept], s[kept]
                r = None if r is None else r[kept]
                score_order = _UNSET  # computed for the entries before the repeats went
        check = (
            in_background(_check_duplicate_codes, qcodes, dcodes, uq, du, source)
            if len(s) >= CHECK_BESIDE_MIN and usable_cpus() >= 2
            else None
        )
        if tie_break == "input":
            order = rank_order(qcodes, s, dcodes, tie_break="input", positions=np.arange(len(s)))
            order = None if np.array_equal(order, np.arange(len(s))) else order
        else:
            order = rank_codes(qcodes, s, du, dcodes, tie_break=tie_break, order=score_order)
        self.input_sorted = _arrived_sorted(qcodes, s)
        if check is None:
            _check_duplicate_codes(qcodes, dcodes, uq, du, source)
        else:
            check()  # raises the DuplicateError found in the thread
        if order is not None:
            qcodes = qcodes[order]
            dcodes = dcodes[order]
            s = s[order]
        self._input_pos = order if kept is None else (kept if order is None else kept[order])
        self.input_ranks = None if r is None else (r if order is None else r[order])
        starts = np.searchsorted(qcodes, np.arange(len(uq) + 1)).astype(np.int64)
        self._qids = uq
        self._starts = starts
        self._doc_uniques = du
        self._doc_codes = dcodes
        self._docids_cache = None  # materialised on first use (see _docids)
        self._lookup = None
        self._scores = s
        self.name = name
        self.metadata = dict(metadata or {})

    @classmethod
    def from_codes(
        cls,
        query_uniques: np.ndarray,
        query_codes: np.ndarray,
        doc_uniques: np.ndarray,
        doc_codes: np.ndarray,
        scores: np.ndarray,
        *,
        name: str | None = None,
        metadata: dict | None = None,
        tie_break: TieBreak = "docid_desc",
        source: str | None = None,
        ranks: np.ndarray | None = None,
        duplicates: str = "error",
        doc_strings: Any = None,
        score_order: Any = _UNSET,
    ) -> Run:
        """Build a run from factorised columns (a fast reader's output).

        ``query_uniques`` / ``doc_uniques``: distinct ids (object arrays, any order);
        ``query_codes`` / ``doc_codes``: int arrays (n,) into them; ``scores`` float64 (n,).
        ``doc_strings``: ``doc_uniques`` as a pyarrow string array, when the reader has it
        (shared with the look-ups: :func:`.lookup.share_strings`). ``score_order``: the
        reader's :func:`.ranking.score_order` of these columns, its query codes those of
        :func:`sorted_query_codes` (``None`` included: the identity). Same ranking, checks,
        *duplicates* policy and errors as the constructor.
        """
        s = np.asarray(scores, dtype=np.float64)
        qu = np.asarray(query_uniques, dtype=object)
        if np.isnan(s).any():
            i = int(np.flatnonzero(np.isnan(s))[0])
            raise InputError(
                f"{source or 'run'}: score of query {qu[query_codes[i]]!r}, "
                f"doc {objects_at(doc_uniques, [doc_codes[i]])[0]!r} is NaN"
            )
        qu, qcodes = sorted_query_codes(qu, query_codes)
        run = cls.__new__(cls)
        run._init_ranked(
            qu,
            qcodes,
            doc_uniques if is_arrow(doc_uniques) else np.asarray(doc_uniques, dtype=object),
            np.asarray(doc_codes, dtype=np.int64),
            s,
            name=name,
            metadata=metadata,
            tie_break=tie_break,
            source=source,
            ranks=ranks,
            duplicates=duplicates,
            score_order=score_order,
        )
        if doc_strings is not None and not is_arrow(run._doc_uniques):
            share_strings(run._doc_uniques, doc_strings)
        return run

    _from_codes = from_codes  # the older, private name

    # --- constructors -------------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: Mapping[str, Mapping[str, float]], **kwargs: Any) -> Run:
        """From ``{query_id: {doc_id: score}}`` (the pytrec_eval / ranx shape)."""
        q: list[str] = []
        d: list[str] = []
        s: list[float] = []
        for qid, docs in data.items():
            for did, score in docs.items():
                q.append(qid)
                d.append(did)
                s.append(score)
        return cls(q, d, s, **kwargs)

    @classmethod
    def from_ranked_lists(cls, data: Mapping[str, Iterable[str]], **kwargs: Any) -> Run:
        """From ``{query_id: [doc_id, ...]}`` best first; scores become ``n, n-1, ..., 1``."""
        q: list[str] = []
        d: list[str] = []
        s: list[float] = []
        for qid, docs in data.items():
            docs = list(docs)
            n = len(docs)
            for i, did in enumerate(docs):
                q.append(qid)
                d.append(did)
                s.append(float(n - i))
        return cls(q, d, s, **kwargs)

    @classmethod
    def from_ranked_arrays(
        cls,
        qids: np.ndarray,
        starts: np.ndarray,
        docids: np.ndarray,
        scores: np.ndarray,
        *,
        name: str | None,
        metadata: dict | None,
        input_sorted: bool = True,
        input_ranks: np.ndarray | None = None,
        doc_codes: tuple[np.ndarray, np.ndarray] | None = None,
        input_pos: np.ndarray | None = None,
    ) -> Run:
        run = cls.__new__(cls)
        run.input_ranks = input_ranks
        run._input_pos = input_pos  # None: the entries arrived in ranked order
        run._doc_uniques, run._doc_codes = doc_codes if doc_codes is not None else (None, None)
        run._qids = qids
        run._starts = starts
        run._docids_cache = docids  # may be None when doc_codes is given
        run._lookup = None
        run._scores = scores
        run.name = name
        run.metadata = dict(metadata or {})
        run.input_sorted = input_sorted
        return run

    _from_ranked_arrays = from_ranked_arrays  # the older, private name

    # --- mapping protocol ----------------------------------------------------------------
    def __getitem__(self, query_id: str) -> list[tuple[str, float]]:
        span = self._span(query_id)
        return list(zip(self._docids[span].tolist(), self._scores[span].tolist()))

    def __repr__(self) -> str:
        label = f" {self.name!r}" if self.name else ""
        return f"<Run{label}: {len(self)} queries, {self.n_entries} entries>"

    # --- columnar access -----------------------------------------------------------------
    @property
    def n_entries(self) -> int:
        """Total number of (query, doc) entries."""
        return len(self._scores)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(query_ids, starts, doc_ids, scores)``: the ranked columns (read-only views).

        ``query_ids`` has shape (q,), ``starts`` shape (q+1,) with query *i*'s entries at
        ``starts[i]:starts[i+1]``; ``doc_ids`` (object) and ``scores`` (float64) shape (n,).
        """
        return self._qids, self._starts, self._docids, self._scores

    def query_offsets(self) -> tuple[np.ndarray, np.ndarray]:
        """``(query_ids, starts)`` of :meth:`arrays` without building the doc id column."""
        return self._qids, self._starts

    def score_column(self) -> np.ndarray:
        """The ranked scores (float64 (n,)) of :meth:`arrays` without building the doc id column."""
        return self._scores

    def doc_ids(self, query_id: str) -> list[str]:
        """Ranked doc ids of one query (empty when absent)."""
        i = self._index(query_id)
        if i is None:
            return []
        return self._docids[self._starts[i] : self._starts[i + 1]].tolist()

    def doc_codes(self) -> tuple[np.ndarray, np.ndarray]:
        """``(uniques, codes)``: the doc id column factorised (computed once, then cached).

        ``uniques`` is an object array of distinct doc ids in no particular order (after
        filtering it may hold ids no longer present); ``codes`` int64 (n,) is aligned with
        :meth:`arrays` and ``uniques[codes]`` equals its doc id column.
        """
        uniques, codes = self.doc_codes_kept()
        if is_arrow(uniques):  # a fast reader's ids: converted once, when asked for
            uniques = self._doc_uniques = as_objects(uniques)
        return uniques, codes

    def doc_codes_kept(self) -> tuple[Any, np.ndarray]:
        """:meth:`doc_codes` with the uniques in the form they are kept in: an object array,
        or a pyarrow string array (a fast reader's; :func:`.lookup.index_in` and the checks
        take it without building a ``str`` per id)."""
        if self._doc_codes is None:
            self._doc_uniques, self._doc_codes = _factorize(self._docids)
        return self._doc_uniques, self._doc_codes

    def codes_of(self, doc_ids: np.ndarray) -> np.ndarray:
        """Position of each of *doc_ids* among :meth:`doc_codes`'s uniques, ``-1`` where absent.

        Args:
            doc_ids: object (m,) of ``str`` (e.g. a qrels' doc id column).

        Returns:
            int64 (m,), read-only. The answer for the last array asked about is kept (compared by
            identity; the run holds that array), so the trap checks and the evaluation's join
            map a qrels' documents to the run's codes once.
        """
        cached = self._lookup
        if cached is not None and cached[0] is doc_ids:
            return cached[1]
        uniques, _ = self.doc_codes_kept()
        codes = index_in(doc_ids, uniques)
        codes.flags.writeable = False
        self._lookup = (doc_ids, codes)
        return codes

    def judged_codes(self, qrels: Qrels) -> np.ndarray:
        """:meth:`codes_of` the doc id column of *qrels* (its ``arrays()[2]``): int64 (n,),
        ``-1`` where the run never retrieves the document. Qrels read factorised
        (``Qrels.doc_codes``) are looked up by their distinct ids only.
        """
        pair = qrels.doc_codes_kept()
        if pair is None:
            return self.codes_of(qrels.arrays()[2])
        uniques, codes = pair
        return self.codes_of(uniques)[codes]

    @property
    def _docids(self) -> np.ndarray:
        """The ranked doc id column (object (n,)), built from the codes when first needed."""
        docids = self._docids_cache
        if docids is None:
            uniques, codes = self.doc_codes()
            docids = uniques[codes]
            self._docids_cache = docids
        return docids

    def _docids_subset(self, keep: np.ndarray) -> np.ndarray | None:
        return None if self._docids_cache is None else self._docids_cache[keep]

    def _codes_subset(self, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        if self._doc_codes is None:
            return None
        uniques, codes = self.doc_codes()
        return uniques, codes[keep]

    @property
    def input_order(self) -> np.ndarray:
        """int64 (n,), aligned with :meth:`arrays`: the input position of each ranked entry.

        The order in which the entries arrived (a file's line order, a dict's insertion order);
        equal to ``arange(n)`` when they arrived already ranked. Only the relative order inside a
        query is meaningful (a filtered run keeps its entries' original positions).
        """
        if self._input_pos is None:
            return np.arange(self.n_entries, dtype=np.int64)
        return self._input_pos

    def lengths(self) -> np.ndarray:
        """Number of entries per query, shape (q,)."""
        return np.diff(self._starts)

    # --- derived runs --------------------------------------------------------------------
    def truncate(self, k: int) -> Run:
        """Keep the top *k* of every query (trec_eval's ``-M k``)."""
        if k < 0:
            raise InputError(f"depth must be >= 0, got {k}")
        lengths = self.lengths()
        if (lengths <= k).all():
            return self
        rank = np.arange(self.n_entries) - np.repeat(self._starts[:-1], lengths)
        return self._take(rank < k)

    def filter_queries(self, query_ids: Iterable[str]) -> Run:
        """Keep only the given queries (those absent from the run are ignored)."""
        wanted = set(query_ids)
        keep_q = np.array([q in wanted for q in self._qids.tolist()], dtype=bool)
        return self._take(np.repeat(keep_q, self.lengths()), keep_q)

    def filter_entries(self, keep: np.ndarray) -> Run:
        """Keep the entries where the boolean mask *keep* (shape (n,)) is true; order is preserved.

        Queries left with no entries are kept, with zero entries.
        """
        return self._take(np.asarray(keep, dtype=bool))

    def _take(self, keep: np.ndarray, keep_q: np.ndarray | None = None) -> Run:
        """The entries under the mask *keep* (n,), and the queries under *keep_q* (q,) when given
        (every kept entry must belong to a kept query); ranking order is preserved."""
        qcodes = np.repeat(np.arange(len(self._qids)), self.lengths())[keep]
        qids = self._qids
        if keep_q is not None:
            qcodes = (np.cumsum(keep_q) - 1)[qcodes]
            qids = self._qids[keep_q]
        starts = np.searchsorted(qcodes, np.arange(len(qids) + 1)).astype(np.int64)
        return Run.from_ranked_arrays(
            qids,
            starts,
            self._docids_subset(keep),
            self._scores[keep],
            name=self.name,
            metadata=self.metadata,
            input_sorted=self.input_sorted,
            input_ranks=None if self.input_ranks is None else self.input_ranks[keep],
            doc_codes=self._codes_subset(keep),
            input_pos=None if self._input_pos is None else self._input_pos[keep],
        )

    def with_name(self, name: str | None, metadata: dict | None = None) -> Run:
        """The same entries under another name (and optionally other metadata)."""
        return Run.from_ranked_arrays(
            self._qids,
            self._starts,
            self._docids_cache,
            self._scores,
            name=name,
            metadata=self.metadata if metadata is None else metadata,
            input_sorted=self.input_sorted,
            input_ranks=self.input_ranks,
            doc_codes=None if self._doc_codes is None else self.doc_codes(),
            input_pos=self._input_pos,
        )

    def to_dict(self) -> dict[str, dict[str, float]]:
        """``{query_id: {doc_id: score}}`` (an edge format; prefer the columns)."""
        out: dict[str, dict[str, float]] = {}
        docs = self._docids.tolist()
        scores = self._scores.tolist()
        for i, q in enumerate(self._qids.tolist()):
            a, b = int(self._starts[i]), int(self._starts[i + 1])
            out[q] = dict(zip(docs[a:b], scores[a:b]))
        return out

    def to_pandas(self):
        """A DataFrame with columns ``query_id, doc_id, rank (1-based), score``."""
        import pandas as pd

        lengths = self.lengths()
        rank = np.arange(self.n_entries) - np.repeat(self._starts[:-1], lengths) + 1
        return pd.DataFrame(
            {
                "query_id": np.repeat(self._qids, lengths),
                "doc_id": self._docids,
                "rank": rank,
                "score": self._scores,
            }
        )

    def fingerprint(self) -> str:
        """SHA-256 (hex, 16 chars) of the ranked content."""
        h = hashlib.sha256()
        h.update("\x1f".join(self._qids.tolist()).encode())
        h.update(self._starts.tobytes())
        # the doc id column, canonically: distinct ids in order of first appearance, then codes
        uniques, codes = self.doc_codes()
        canonical, first = _factorize_ints(codes)
        h.update("\x1f".join(uniques[np.asarray(first, dtype=np.int64)].tolist()).encode())
        h.update(np.asarray(canonical, dtype=np.int64).tobytes())
        h.update(self._scores.tobytes())
        return h.hexdigest()[:16]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Run):
            return NotImplemented
        return (
            np.array_equal(self._qids, other._qids)
            and np.array_equal(self._starts, other._starts)
            and np.array_equal(self._docids, other._docids)
            and np.array_equal(self._scores, other._scores)
        )

    __hash__ = None  # type: ignore[assignment]


CHECK_BESIDE_MIN = 1 << 20
"""From this many entries the repeated-pair check runs in a thread beside the ranking."""

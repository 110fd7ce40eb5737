"""``Qrels``: graded judgments ``query_id -> doc_id -> relevance``."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from nuggetbench.data import arrow
from nuggetbench.data._grouped import QueryGrouped
from nuggetbench.data.columns import _as_str_array
from nuggetbench.data.lookup import (
    as_objects,
    is_arrow,
    order_by_code_and_id,
    share_strings,
    shared_strings,
    short_keys,
)
from nuggetbench.data.ranking import factorize_sorted
from nuggetbench.data.source import INT64_MAX as _INT64_MAX
from nuggetbench.data.source import INT64_MIN as _INT64_MIN
from nuggetbench.data.source import parse_grade, short
from nuggetbench.errors import DuplicateError, InputError


class Qrels(QueryGrouped, Mapping[str, dict[str, int]]):
    """Graded document-level judgments, stored column-wise.

    ``qrels[qid]`` is ``{doc_id: relevance}``. Relevance values are integers as in trec_eval
    (negative values are allowed and count as judged, non-relevant). Whether a judged document is
    *relevant* depends on a threshold chosen by the measure (``rel=N``, trec_eval's ``-l``).

    Attributes:
        name: a label (file name or dataset id).
        metadata: provenance.
        nuggets: optional nugget-level judgments (see :mod:`nuggetbench.data.nugget_qrels`), or ``None``.
    """

    __slots__ = (
        "_qids",
        "_starts",
        "_docids_cache",
        "_doc_uniques",
        "_doc_codes",
        "_rels",
        "name",
        "metadata",
        "nuggets",
    )

    def __init__(
        self,
        query_ids: Iterable[Any],
        doc_ids: Iterable[Any],
        relevance: Iterable[int],
        *,
        name: str | None = None,
        metadata: dict | None = None,
        nuggets: Any = None,
        source: str | None = None,
        on_duplicate: str = "error",
    ):
        """Build qrels from parallel columns.

        Args:
            query_ids, doc_ids: ids (converted to ``str``), shape (n,).
            relevance: integer grades, shape (n,).
            on_duplicate: ``"error"`` (default) raises when a (query, doc) pair repeats with a
                different grade; ``"last"`` keeps the last one (trec_eval keeps the last line).

        Raises:
            DuplicateError: a (query, doc) pair is judged twice with different grades.
        """
        q = _as_str_array(query_ids)
        d = _as_str_array(doc_ids)
        r = _as_grades(relevance, q, d, source)
        if not (len(q) == len(d) == len(r)):
            raise InputError("qrels columns differ in length")
        if len(q):
            uq, qcodes = factorize_sorted(q)
            order = order_by_code_and_id(qcodes, d)
            if order is None:
                _, dcodes = factorize_sorted(d)
                order = np.lexsort((dcodes, qcodes))
            qcodes, d, r = qcodes[order], d[order], r[order]
            same = (qcodes[1:] == qcodes[:-1]) & (d[1:] == d[:-1])
        else:
            uq = np.array([], dtype=object)
            qcodes = np.zeros(0, dtype=np.int64)
            same = np.zeros(0, dtype=bool)
        self._init_sorted(uq, qcodes, d, r, same, source=source, on_duplicate=on_duplicate)
        self.name = name
        self.metadata = dict(metadata or {})
        self.nuggets = nuggets

    def _init_sorted(
        self,
        uq: np.ndarray,
        qcodes: np.ndarray,
        d: np.ndarray | None,
        r: np.ndarray,
        same: np.ndarray,
        *,
        source: str | None,
        on_duplicate: str = "error",
    ) -> None:
        """Fill the columns from entries sorted by (query code, doc id), input order kept inside
        a pair; *same* (n-1,) marks an entry equal in both to the one before it. *d* ``None``:
        the caller sets the factorised doc id column (no entry may then repeat)."""
        if same.any():
            # the stable sort keeps input order inside a pair: the later line comes second
            conflict = same & (r[1:] != r[:-1])
            if conflict.any() and on_duplicate == "error":
                i = int(np.flatnonzero(conflict)[0])
                raise DuplicateError(
                    f"{source or 'qrels'}: document {d[i]!r} is judged twice for query "
                    f"{uq[qcodes[i]]!r} with different grades ({r[i]} and {r[i + 1]}); "
                    "keep one judgment per (query, doc)",
                    key=(str(uq[qcodes[i]]), str(d[i])),
                )
            keep = np.ones(len(d), dtype=bool)
            keep[:-1][same] = False  # keep the last of each run of equal pairs
            qcodes, d, r = qcodes[keep], d[keep], r[keep]
        self._qids = uq
        self._starts = np.searchsorted(qcodes, np.arange(len(uq) + 1)).astype(np.int64)
        self._docids_cache, self._doc_uniques, self._doc_codes = d, None, None
        self._rels = r

    @classmethod
    def from_codes(
        cls,
        query_uniques: np.ndarray,
        query_codes: np.ndarray,
        doc_uniques: np.ndarray,
        doc_codes: np.ndarray,
        relevance: np.ndarray,
        *,
        name: str | None = None,
        metadata: dict | None = None,
        source: str | None = None,
        doc_strings: Any = None,
    ) -> Qrels:
        """Qrels from factorised columns (a fast reader's output), as the constructor builds them.

        ``query_uniques`` / ``doc_uniques``: distinct ``str`` ids (object arrays, any order);
        ``query_codes`` / ``doc_codes``: int arrays (n,) into them; ``relevance`` int64 (n,).
        ``doc_strings``: ``doc_uniques`` as a pyarrow string array, when the reader has it: the
        doc id column's pyarrow form is then shared with the look-ups
        (:func:`.lookup.share_strings`). The entries are ordered by (query id, doc id) with
        the query ids compared through their ranks: a stable sort by (query rank, doc id), the
        doc ids compared as integer keys when short (:func:`.lookup.short_keys`) or as strings
        in C++ (:func:`.lookup.order_by_code_and_id`), or without pyarrow by the ranks of the
        distinct doc ids. Same duplicate rule and error.
        """
        qu = np.asarray(query_uniques, dtype=object)
        du = doc_uniques if is_arrow(doc_uniques) else np.asarray(doc_uniques, dtype=object)
        qc = np.asarray(query_codes, dtype=np.int64)
        dc = np.asarray(doc_codes, dtype=np.int64)
        r = np.asarray(relevance, dtype=np.int64)
        qperm = np.argsort(qu, kind="stable")
        qrank = np.empty(len(qu), dtype=np.int64)
        qrank[qperm] = np.arange(len(qu), dtype=np.int64)
        qcodes = qrank[qc]
        keys = short_keys(doc_strings) if doc_strings is not None else None
        order = None
        if keys is None:
            du = as_objects(du)  # long ids: compared as str below
            ids = du[dc] if doc_strings is None else arrow.load()[1].take(doc_strings, dc)
            order = order_by_code_and_id(qcodes, ids)
        if order is None:  # the ranks of the distinct doc ids: short ones by their integer keys
            by_id = np.argsort(keys) if keys is not None else np.argsort(du, kind="stable")
            drank = np.empty(len(du), dtype=np.int64)
            drank[by_id] = np.arange(len(du), dtype=np.int64)
            if len(qu) * max(len(du), 1) < 2**62:
                order = np.argsort(qcodes * np.int64(max(len(du), 1)) + drank[dc], kind="stable")
            else:  # pragma: no cover - astronomically many ids
                order = np.lexsort((drank[dc], qcodes))
        qcodes, dc, r = qcodes[order], dc[order], r[order]
        same = (qcodes[1:] == qcodes[:-1]) & (dc[1:] == dc[:-1])
        qrels = cls.__new__(cls)
        if same.any():  # a repeated pair: the column path names it (or keeps one)
            qrels._init_sorted(
                qu[qperm], qcodes, as_objects(du)[dc], r, same, source=source, on_duplicate="error"
            )
        else:  # the doc id column stays factorised until someone asks for it (``_docids``)
            qrels._init_sorted(qu[qperm], qcodes, None, r, same, source=source)
            qrels._doc_uniques, qrels._doc_codes = du, dc
            if doc_strings is not None and not is_arrow(du):
                share_strings(du, doc_strings)
        qrels.name = name
        qrels.metadata = dict(metadata or {})
        qrels.nuggets = None
        return qrels

    _from_codes = from_codes  # the older, private name

    @classmethod
    def from_dict(cls, data: Mapping[str, Mapping[str, int]], **kwargs: Any) -> Qrels:
        """From ``{query_id: {doc_id: relevance}}``."""
        q: list[str] = []
        d: list[str] = []
        r: list[int] = []
        for qid, docs in data.items():
            for did, rel in docs.items():
                q.append(qid)
                d.append(did)
                r.append(rel)
        return cls(q, d, r, **kwargs)

    # --- mapping protocol ----------------------------------------------------------------
    def __getitem__(self, query_id: str) -> dict[str, int]:
        span = self._span(query_id)
        return dict(zip(self._docids[span].tolist(), self._rels[span].tolist()))

    def __repr__(self) -> str:
        label = f" {self.name!r}" if self.name else ""
        return f"<Qrels{label}: {len(self)} queries, {self.n_judgments} judgments>"

    # --- columnar access -----------------------------------------------------------------
    @property
    def _docids(self) -> np.ndarray:
        """The doc id column (object (n,)), built from the factorised column when first asked
        for (a fast reader's qrels keep ``(uniques, codes)`` only: :meth:`doc_codes`)."""
        docids = self._docids_cache
        if docids is None:
            du, dc = self.doc_codes()  # type: ignore[misc]
            docids = du[dc]
            shared = shared_strings(du)
            if shared is not None:
                share_strings(docids, arrow.load()[1].take(shared, dc))
            self._docids_cache = docids
        return docids

    @_docids.setter
    def _docids(self, value: np.ndarray) -> None:
        self._docids_cache, self._doc_uniques, self._doc_codes = value, None, None

    def doc_codes(self) -> tuple[np.ndarray, np.ndarray] | None:
        """``(uniques, codes)``: the doc id column factorised (``uniques`` object (u,) of distinct
        ``str``, ``codes`` int64 (n,) with ``uniques[codes]`` the column of :meth:`arrays`), when
        the qrels were read that way (the TREC fast reader); ``None`` otherwise. Look-ups over
        the distinct ids then cost less than over the column (a judged document usually repeats
        across queries)."""
        if self._doc_codes is None:
            return None
        if is_arrow(self._doc_uniques):  # the fast reader's pyarrow ids: converted once
            self._doc_uniques = as_objects(self._doc_uniques)
        return self._doc_uniques, self._doc_codes

    def doc_codes_kept(self) -> tuple[Any, np.ndarray] | None:
        """:meth:`doc_codes` with the uniques as kept: an object array or a pyarrow string
        array (for the look-ups and checks, which take either)."""
        if self._doc_codes is None:
            return None
        return self._doc_uniques, self._doc_codes

    def query_offsets(self) -> tuple[np.ndarray, np.ndarray]:
        """``(query_ids, starts)`` of :meth:`arrays` without building the doc id column."""
        return self._qids, self._starts

    def grades(self) -> np.ndarray:
        """The relevance column of :meth:`arrays` (int64 (n,)) without building the doc ids."""
        return self._rels

    @property
    def n_judgments(self) -> int:
        return len(self._rels)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(query_ids, starts, doc_ids, relevance)``; query *i* at ``starts[i]:starts[i+1]``."""
        return self._qids, self._starts, self._docids, self._rels

    def n_relevant(self, rel: int = 1) -> dict[str, int]:
        """Number of documents with relevance >= *rel* per query."""
        counts = (
            np.add.reduceat((self._rels >= rel).astype(np.int64), self._starts[:-1])
            if len(self._rels)
            else []
        )
        lengths = np.diff(self._starts)
        return {q: int(c) if n else 0 for q, c, n in zip(self._qids.tolist(), counts, lengths)}

    def filter_queries(self, query_ids: Iterable[str]) -> Qrels:
        """Keep only the given queries."""
        wanted = set(query_ids)
        lengths = np.diff(self._starts)
        keep_q = np.array([q in wanted for q in self._qids.tolist()], dtype=bool)
        keep = np.repeat(keep_q, lengths)
        qrels = Qrels.__new__(Qrels)
        qrels._qids = self._qids[keep_q]
        qrels._starts = np.concatenate([[0], np.cumsum(lengths[keep_q])]).astype(np.int64)
        if self._doc_codes is not None:  # stays factorised
            qrels._docids_cache = None
            qrels._doc_uniques, qrels._doc_codes = self._doc_uniques, self._doc_codes[keep]
        else:
            qrels._docids = self._docids[keep]
        qrels._rels = self._rels[keep]
        qrels.name = self.name
        qrels.metadata = dict(self.metadata)
        qrels.nuggets = self.nuggets
        return qrels

    def to_dict(self) -> dict[str, dict[str, int]]:
        """``{query_id: {doc_id: relevance}}`` (an edge format)."""
        out: dict[str, dict[str, int]] = {}
        docs = self._docids.tolist()
        rels = self._rels.tolist()
        for i, q in enumerate(self._qids.tolist()):
            a, b = int(self._starts[i]), int(self._starts[i + 1])
            out[q] = dict(zip(docs[a:b], rels[a:b]))
        return out

    def to_pandas(self):
        """A DataFrame with columns ``query_id, doc_id, relevance``."""
        import pandas as pd

        return pd.DataFrame(
            {
                "query_id": np.repeat(self._qids, np.diff(self._starts)),
                "doc_id": self._docids,
                "relevance": self._rels,
            }
        )

    def fingerprint(self) -> str:
        """SHA-256 (hex, 16 chars) of the judgments."""
        h = hashlib.sha256()
        h.update("\x1f".join(self._qids.tolist()).encode())
        h.update(self._starts.tobytes())
        h.update("\x1f".join(self._docids.tolist()).encode())
        h.update(self._rels.tobytes())
        return h.hexdigest()[:16]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Qrels):
            return NotImplemented
        return (
            np.array_equal(self._qids, other._qids)
            and np.array_equal(self._starts, other._starts)
            and np.array_equal(self._docids, other._docids)
            and np.array_equal(self._rels, other._rels)
        )

    __hash__ = None  # type: ignore[assignment]


def _as_grades(
    relevance: Iterable[Any], q: np.ndarray, d: np.ndarray, source: str | None
) -> np.ndarray:
    """Integer grades as int64, exactly: no float rounding, no wrap-around (shape (n,)).

    Raises:
        InputError: a grade is not a finite integer, or lies outside the 64-bit range (the query,
            document and value are named).
    """
    arr = np.asarray(relevance if not isinstance(relevance, range) else list(relevance))
    if arr.ndim != 1:
        arr = arr.reshape(-1) if arr.size else np.zeros(0, dtype=np.int64)
    if arr.dtype.kind in "bi":
        return arr.astype(np.int64)
    if arr.dtype.kind == "u":
        bad = arr > np.uint64(_INT64_MAX)
        if bad.any():
            _bad_grade(int(np.flatnonzero(bad)[0]), arr, q, d, source)
        return arr.astype(np.int64)
    if arr.dtype.kind == "f":
        ok = np.isfinite(arr) & (arr == np.round(arr)) & (np.abs(arr) < 2.0**63)
        if not ok.all():
            _bad_grade(int(np.flatnonzero(~ok)[0]), arr, q, d, source)
        return arr.astype(np.int64)
    out = np.empty(len(arr), dtype=np.int64)
    for i, value in enumerate(arr.tolist()):
        if isinstance(value, float) and value.is_integer() and abs(value) < 2.0**63:
            value = int(value)
        elif isinstance(value, (str, np.str_)):
            value = parse_grade(str(value))
        if not isinstance(value, int) or not _INT64_MIN <= value <= _INT64_MAX:
            _bad_grade(i, arr, q, d, source)
        out[i] = value
    return out


def _bad_grade(i: int, arr: np.ndarray, q: np.ndarray, d: np.ndarray, source: str | None) -> None:
    value = arr[i]
    where = f"query {short(q[i])}, doc {short(d[i])}: " if i < len(q) and i < len(d) else ""
    raise InputError(
        f"{source or 'qrels'}: {where}relevance {short(value)} is not an integer grade in the "
        f"64-bit range [{_INT64_MIN}, {_INT64_MAX}]; grades must be integers"
    )

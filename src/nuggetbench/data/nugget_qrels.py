"""Nugget-level judgments: ``(query_id, nugget_id, doc_id) -> support``.

A *nugget* is an atomic fact a query's answer needs (FreshStack's nuggets, TREC diversity
subtopics, fastbook's answer components). Nugget ids are unique keys: a nugget belongs to the query
it is declared under, never to a query inferred from an id prefix (FreshStack's own loader matches
nuggets with ``startswith``, so query ``12`` would collect the nuggets of query ``123``; we do not).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nuggetbench.data.columns import _as_str_array
from nuggetbench.data.qrels import Qrels
from nuggetbench.data.ranking import factorize_sorted
from nuggetbench.errors import DuplicateError, InputError


@dataclass(frozen=True)
class Nugget:
    """One nugget of one query.

    Attributes:
        nugget_id: unique across the whole collection of nuggets.
        query_id: the query it belongs to.
        text: the fact (may be empty for TREC subtopics without descriptions).
        spans: evidence strings (span-judged nuggets, e.g. fastbook contexts); empty otherwise.
        metadata: flags and provenance (e.g. ``explicit_context``, ``extraneous_answer``, chapter).
    """

    nugget_id: str
    query_id: str
    text: str = ""
    spans: tuple[str, ...] = ()
    metadata: dict = field(default_factory=dict, compare=False)


class NuggetQrels:
    """Nugget-level judgments plus the list of each query's nuggets.

    Args:
        nuggets: every nugget (including nuggets that no document supports: they count in
            Coverage's denominator).
        query_ids, nugget_ids, doc_ids, support: parallel columns of judgments, shape (n,).
            ``support`` is an integer (0 = judged, not supported; > 0 supported).
        name: label.
        source: used in error messages.

    Raises:
        InputError: a judgment names a nugget that is not declared, or names it under another
            query ("a nugget with no query").
        DuplicateError: a nugget id is declared twice, or a (nugget, doc) pair is judged twice
            with different values.
    """

    def __init__(
        self,
        nuggets: Iterable[Nugget],
        query_ids: Iterable[Any] = (),
        nugget_ids: Iterable[Any] = (),
        doc_ids: Iterable[Any] = (),
        support: Iterable[int] = (),
        *,
        name: str | None = None,
        source: str | None = None,
    ):
        where = f"{source}: " if source else ""
        by_id: dict[str, Nugget] = {}
        per_query: dict[str, list[Nugget]] = {}
        for nug in nuggets:
            if nug.nugget_id in by_id:
                raise DuplicateError(
                    f"{where}nugget id {nug.nugget_id!r} is declared twice "
                    f"(queries {by_id[nug.nugget_id].query_id!r} and {nug.query_id!r})"
                )
            by_id[nug.nugget_id] = nug
            per_query.setdefault(nug.query_id, []).append(nug)
        q = _as_str_array(query_ids)
        n = _as_str_array(nugget_ids)
        d = _as_str_array(doc_ids)
        s = np.asarray(
            list(support) if not isinstance(support, np.ndarray) else support, dtype=np.int64
        )
        if not (len(q) == len(n) == len(d) == len(s)):
            raise InputError("nugget judgment columns differ in length")
        for qi, ni in zip(q.tolist(), n.tolist()):
            nug = by_id.get(ni)
            if nug is None:
                raise InputError(
                    f"{where}judgment for nugget {ni!r} (query {qi!r}) names a nugget with no "
                    "declared query; declare every nugget with its query first"
                )
            if nug.query_id != qi:
                raise InputError(
                    f"{where}nugget {ni!r} belongs to query {nug.query_id!r} but is judged under "
                    f"query {qi!r}"
                )
        if len(n):
            _, ncodes = factorize_sorted(n)
            _, dcodes = factorize_sorted(d)
            order = np.lexsort((dcodes, ncodes))
            q, n, d, s, ncodes, dcodes = (
                q[order],
                n[order],
                d[order],
                s[order],
                ncodes[order],
                dcodes[order],
            )
            same = (ncodes[1:] == ncodes[:-1]) & (dcodes[1:] == dcodes[:-1])
            if same.any():
                conflict = same & (s[1:] != s[:-1])
                if conflict.any():
                    i = int(np.flatnonzero(conflict)[0])
                    raise DuplicateError(
                        f"{where}document {d[i]!r} is judged twice for nugget {n[i]!r} "
                        f"(query {q[i]!r}) with different values ({s[i]} and {s[i + 1]})"
                    )
                keep = np.concatenate([[True], ~same])
                q, n, d, s = q[keep], n[keep], d[keep], s[keep]
        self._nuggets = by_id
        self._per_query = per_query
        self._q, self._n, self._d, self._s = q, n, d, s
        self.name = name

    # --- nuggets ---------------------------------------------------------------------------
    @property
    def query_ids(self) -> list[str]:
        """Queries that declare at least one nugget, sorted."""
        return sorted(self._per_query)

    def nuggets_of(self, query_id: str) -> list[Nugget]:
        """The nuggets declared for a query, in declaration order (empty when none)."""
        return list(self._per_query.get(query_id, []))

    def nugget(self, nugget_id: str) -> Nugget:
        return self._nuggets[nugget_id]

    def iter_nuggets(self) -> Iterator[Nugget]:
        for nugs in self._per_query.values():
            yield from nugs

    @property
    def n_nuggets(self) -> int:
        return len(self._nuggets)

    # --- judgments -------------------------------------------------------------------------
    @property
    def n_judgments(self) -> int:
        return len(self._d)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(query_ids, nugget_ids, doc_ids, support)`` columns, sorted by nugget then doc."""
        return self._q, self._n, self._d, self._s

    def supported(self, query_id: str) -> dict[str, set[str]]:
        """``{doc_id: {nugget_id, ...}}`` of the documents supporting at least one nugget of a query."""
        out: dict[str, set[str]] = {}
        mask = (self._q == query_id) & (self._s > 0)
        for n, d in zip(self._n[mask].tolist(), self._d[mask].tolist()):
            out.setdefault(d, set()).add(n)
        return out

    def document_qrels(self, *, mode: str = "count", name: str | None = None) -> Qrels:
        """Derive document-level qrels.

        Args:
            mode: ``"count"`` (FreshStack: relevance = number of nuggets the document supports;
                judged-but-unsupported documents get 0) or ``"binary"`` (1 when it supports any).

        Returns:
            :class:`Qrels` whose ``nuggets`` attribute is this object.
        """
        if mode not in ("count", "binary"):
            raise InputError(f"document_qrels mode must be 'count' or 'binary', got {mode!r}")
        import pandas as pd

        frame = pd.DataFrame({"q": self._q, "d": self._d, "s": (self._s > 0).astype(np.int64)})
        grouped = frame.groupby(["q", "d"], sort=True)["s"].sum().reset_index()
        rel = grouped["s"].to_numpy()
        if mode == "binary":
            rel = (rel > 0).astype(np.int64)
        return Qrels(
            grouped["q"].to_numpy(dtype=object),
            grouped["d"].to_numpy(dtype=object),
            rel,
            name=name or self.name,
            nuggets=self,
        )

    def filter_queries(self, query_ids: Iterable[str]) -> NuggetQrels:
        wanted = set(query_ids)
        mask = np.array([q in wanted for q in self._q.tolist()], dtype=bool)
        return NuggetQrels(
            [n for n in self.iter_nuggets() if n.query_id in wanted],
            self._q[mask],
            self._n[mask],
            self._d[mask],
            self._s[mask],
            name=self.name,
        )

    @classmethod
    def from_dict(
        cls,
        nuggets: Mapping[str, Mapping[str, str]] | Mapping[str, Iterable[str]],
        judgments: Mapping[str, Mapping[str, Mapping[str, int]]],
        **kwargs: Any,
    ) -> NuggetQrels:
        """From ``{qid: {nugget_id: text}}`` (or ``{qid: [nugget_id, ...]}``) and
        ``{qid: {nugget_id: {doc_id: support}}}``."""
        nug_list = []
        for qid, items in nuggets.items():
            if isinstance(items, Mapping):
                nug_list += [Nugget(str(nid), str(qid), str(text)) for nid, text in items.items()]
            else:
                nug_list += [Nugget(str(nid), str(qid)) for nid in items]
        q, n, d, s = [], [], [], []
        for qid, per_nug in judgments.items():
            for nid, docs in per_nug.items():
                for did, sup in docs.items():
                    q.append(str(qid))
                    n.append(str(nid))
                    d.append(str(did))
                    s.append(int(sup))
        return cls(nug_list, q, n, d, s, **kwargs)

    def __repr__(self) -> str:
        return (
            f"<NuggetQrels {self.name or ''}: {len(self._per_query)} queries, "
            f"{self.n_nuggets} nuggets, {self.n_judgments} judgments>"
        )

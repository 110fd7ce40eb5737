"""Edge conversions: what pytrec_eval, ranx, ir_measures, PyTerrier and pandas users hold, as
:class:`Qrels` and :class:`Run`.

Accepted shapes:

* our own :class:`Qrels` / :class:`Run` (returned unchanged);
* nested mappings ``{query_id: {doc_id: grade}}`` and ``{query_id: {doc_id: score}}`` (pytrec_eval,
  ranx's ``to_dict()``); a run may also be ``{query_id: [doc_id, ...]}`` best first;
* pandas DataFrames with a query column (``query_id``, ``qid`` or ``q_id``), a document column
  (``doc_id``, ``docno`` or ``docid``) and a grade column (``relevance``, ``label``, ``rel``,
  ``grade``) or a ``score`` column (ir_measures, PyTerrier, ranx's ``from_df``);
* iterables of records with ``query_id``, ``doc_id`` and ``relevance`` / ``score`` attributes
  (ir_measures' ``Qrel`` and ``ScoredDoc`` namedtuples);
* objects with a ``to_dict()`` returning one of the mappings above (ranx ``Qrels`` / ``Run``).

Anything else raises :class:`~nuggetbench.errors.InputError` naming the type and the shapes taken.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from nuggetbench.data.qrels import Qrels
from nuggetbench.data.run import Run
from nuggetbench.errors import InputError

__all__ = ["as_qrels", "as_run"]

QUERY_COLUMNS = ("query_id", "qid", "q_id")
DOC_COLUMNS = ("doc_id", "docno", "docid")
GRADE_COLUMNS = ("relevance", "label", "rel", "grade")
SCORE_COLUMNS = ("score",)

_SHAPES = {
    "qrels": "a nuggetbench Qrels, {query_id: {doc_id: grade}}, a DataFrame with query_id, doc_id "
    "and relevance columns, ir_measures Qrel records, or a qrels file path (nuggetbench.read_qrels)",
    "run": "a nuggetbench Run, {query_id: {doc_id: score}}, {query_id: [doc_id, ...]}, a DataFrame "
    "with query_id, doc_id and score columns, ir_measures ScoredDoc records, or a run file path "
    "(nuggetbench.read_run)",
}


def as_qrels(value: Any, *, name: str | None = None) -> Qrels:
    """*value* as :class:`Qrels` (see the module docstring for the shapes taken).

    Grades must be integers (``1.0`` is taken as ``1``).

    Raises:
        InputError: an unsupported type, a DataFrame without the needed columns, a nested
            mapping whose inner values are not mappings, or a grade that is not an integer.
    """
    if isinstance(value, Qrels):
        return value
    q, d, r = _columns(value, "qrels", GRADE_COLUMNS, "relevance")
    grades = np.asarray(r, dtype=np.float64) if len(r) else np.zeros(0)
    bad = ~np.isfinite(grades) | (grades != np.round(grades))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"qrels: the grade of query {q[i]!r}, doc {d[i]!r} is {r[i]!r}, not an integer; "
            "judgments are integer grades (0 = not relevant)"
        )
    return Qrels(q, d, grades.astype(np.int64), name=name, source="qrels given in Python")


def as_run(value: Any, *, name: str | None = None) -> Run:
    """*value* as a :class:`Run` (see the module docstring for the shapes taken); ranked by the
    trec_eval rule (score descending, doc id descending).

    Raises:
        InputError: an unsupported type, a DataFrame without the needed columns, or a score that
            is not a number.
        DuplicateError: a (query, doc) pair occurs twice.
    """
    if isinstance(value, Run):
        return value
    if (
        isinstance(value, Mapping)
        and value
        and all(isinstance(v, (list, tuple)) for v in value.values())
    ):
        return Run.from_ranked_lists(
            {str(k): [str(x) for x in v] for k, v in value.items()}, name=name
        )
    q, d, s = _columns(value, "run", SCORE_COLUMNS, "score")
    try:
        scores = np.asarray(s, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"run: a score is not a number ({exc}); scores are floats") from exc
    return Run(q, d, scores, name=name, source="run given in Python")


def _columns(value: Any, kind: str, value_columns: tuple[str, ...], noun: str):
    """``(query ids, doc ids, values)`` lists from any accepted shape of *kind*."""
    if hasattr(value, "columns") and hasattr(value, "__getitem__"):
        return _frame_columns(value, kind, value_columns)
    if isinstance(value, Mapping):
        return _mapping_columns(value, kind, noun)
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict) and not isinstance(value, (str, bytes)):
        converted = to_dict()
        if isinstance(converted, Mapping):
            return _mapping_columns(converted, kind, noun)
    if isinstance(value, Iterable) and not isinstance(value, (str, bytes)):
        return _record_columns(value, kind, value_columns[0])
    raise InputError(f"{kind}: cannot use a {type(value).__name__}; give {_SHAPES[kind]}")


def _frame_columns(frame: Any, kind: str, value_columns: tuple[str, ...]):
    names = [str(c) for c in frame.columns]

    def pick(options: tuple[str, ...], what: str) -> str:
        for option in options:
            if option in names:
                return option
        raise InputError(
            f"{kind}: the DataFrame has columns {names}; it needs a {what} column "
            f"(one of {', '.join(options)})"
        )

    qcol = pick(QUERY_COLUMNS, "query")
    dcol = pick(DOC_COLUMNS, "document")
    vcol = pick(value_columns, "score" if kind == "run" else "relevance")
    return (
        [str(x) for x in frame[qcol].tolist()],
        [str(x) for x in frame[dcol].tolist()],
        frame[vcol].tolist(),
    )


def _mapping_columns(data: Mapping, kind: str, noun: str):
    q: list[str] = []
    d: list[str] = []
    v: list[Any] = []
    for qid, docs in data.items():
        if not isinstance(docs, Mapping):
            raise InputError(
                f"{kind}: query {qid!r} maps to a {type(docs).__name__}, not to "
                f"{{doc_id: {noun}}}; give {_SHAPES[kind]}"
            )
        for did, x in docs.items():
            q.append(str(qid))
            d.append(str(did))
            v.append(x)
    return q, d, v


def _record_columns(records: Iterable, kind: str, field: str):
    q: list[str] = []
    d: list[str] = []
    v: list[Any] = []
    for i, rec in enumerate(records):
        try:
            q.append(str(rec.query_id))
            d.append(str(rec.doc_id))
            v.append(getattr(rec, field))
        except AttributeError as exc:
            raise InputError(
                f"{kind}: item {i} is a {type(rec).__name__} without query_id, doc_id and "
                f"{field}; give {_SHAPES[kind]}"
            ) from exc
    return q, d, v

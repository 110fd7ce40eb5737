"""FreshStack queries files: one JSON query row per line, nuggets and their judgments inside.

Rows have ``query_id``, ``query_title``, ``query_text``, ``answer_text`` and ``nuggets: [{_id,
text, relevant_corpus_ids, non_relevant_corpus_ids}]`` (the rows of the Hugging Face dataset
``freshstack/queries-oct-2024``). Nuggets belong to the row that declares them; their ids are
unique keys (FreshStack's own loader matches nuggets to queries with ``startswith``, so query
``12`` collects the nuggets of query ``123``: we never do that). Relevant documents get support 1,
non-relevant ones 0. :func:`nuggetbench.data.formats.diversity.load_nugget_qrels_file` reads these
files as qrels too.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from nuggetbench._atomic import atomic_write
from nuggetbench.data.corpus import Queries
from nuggetbench.data.nugget_qrels import Nugget, NuggetQrels
from nuggetbench.errors import DuplicateError, FormatError, InputError
from nuggetbench.jsonl import iter_jsonl

__all__ = ["read_freshstack_queries", "freshstack_rows_to_nuggets", "write_freshstack_queries"]


def _nugget_list(value: Any, path: Path, lineno: int, qid: str) -> list[Mapping]:
    """Accept a list of nugget objects, or the columnar ``{field: [values]}`` shape of ``datasets``."""
    if isinstance(value, Mapping):
        keys = list(value)
        columns = [list(value[k] or []) for k in keys]
        if len({len(c) for c in columns}) > 1:
            raise FormatError(
                path, lineno, f"query {qid!r}: the columns of 'nuggets' differ in length"
            )
        return [dict(zip(keys, row)) for row in zip(*columns)]
    if not isinstance(value, list):
        raise FormatError(
            path,
            lineno,
            f"query {qid!r}: 'nuggets' must be a list of objects, got {type(value).__name__}",
        )
    return value


def _id_list(value: Any, path: Path, lineno: int, what: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise FormatError(path, lineno, f"{what} must be a list of document ids, got {value!r}")
    return [str(v) for v in value]


def freshstack_rows_to_nuggets(
    rows: Iterable[tuple[int, Mapping[str, Any]]],
    *,
    source: str | Path = "<rows>",
    name: str | None = None,
) -> tuple[Queries, NuggetQrels]:
    """Turn FreshStack query rows into :class:`Queries` and :class:`NuggetQrels`.

    Args:
        rows: ``(line_number, row)`` pairs; a row has ``query_id``, ``query_title``,
            ``query_text``, ``answer_text`` and ``nuggets`` (a list of ``{_id, text,
            relevant_corpus_ids, non_relevant_corpus_ids}``; the columnar ``{field: [...]}`` shape
            that ``datasets`` produces is accepted too).
        source: the file named in error messages.
        name: label of the returned values.

    Returns:
        ``(queries, nuggets)``: query text ``query_title + " " + query_text`` (FreshStack's rule);
        query metadata ``query_title``, ``query_text``, ``answer_text``, ``nugget_ids`` and any
        other scalar field of the row; one nugget per entry of ``nuggets`` (support 1 for
        relevant documents, 0 for non-relevant ones).

    Raises:
        FormatError: a row is not an object, lacks ``nuggets`` or ``query_text``, has nuggets but
            no ``query_id`` ("a nugget with no query"), or a nugget lacks ``_id``
            (file, line and query named).
        DuplicateError: a query id or nugget id occurs twice, or a document is listed both as
            relevant and non-relevant for the same nugget (file, line, nugget and document named).
    """
    path = Path(str(source))
    texts: dict[str, str] = {}
    meta: dict[str, dict] = {}
    query_line: dict[str, int] = {}
    nugget_line: dict[str, tuple[int, str]] = {}
    nuggets: list[Nugget] = []
    columns: tuple[list, list, list, list] = ([], [], [], [])  # query, nugget, doc, support
    for lineno, row in rows:
        qid, items = _query_row(row, path, lineno, query_line)
        query_line[qid] = lineno
        texts[qid] = f"{row.get('query_title') or ''} {row.get('query_text') or ''}"
        ids: list[str] = []
        for item in items:
            nid = _nugget_item(item, qid, path, lineno, nugget_line, columns)
            ids.append(nid)
            nuggets.append(Nugget(nid, qid, str(item.get("text") or "")))
        extra = {k: v for k, v in row.items() if k not in ("query_id", "nuggets") and _is_plain(v)}
        extra["nugget_ids"] = ids
        meta[qid] = extra
    queries = Queries(texts, metadata=meta, name=name)
    nugget_qrels = NuggetQrels(nuggets, *columns, name=name, source=str(path))
    return queries, nugget_qrels


def _query_row(
    row: Any, path: Path, lineno: int, query_line: dict[str, int]
) -> tuple[str, list[Any]]:
    """``(query id, nugget items)`` of one row, checked (see
    :func:`freshstack_rows_to_nuggets` for what is refused)."""
    if not isinstance(row, Mapping):
        raise FormatError(path, lineno, "expected a JSON object (a FreshStack query row)")
    raw_qid = row.get("query_id")
    qid = "" if raw_qid is None else str(raw_qid).strip()
    if "nuggets" not in row:
        raise FormatError(
            path,
            lineno,
            f"query {qid or '(no id)'!r} has no 'nuggets' field; a FreshStack "
            "queries file lists each query's nuggets as 'nuggets': [{_id, text, "
            "relevant_corpus_ids, non_relevant_corpus_ids}]",
        )
    items = _nugget_list(row["nuggets"], path, lineno, qid)
    if not qid:
        first = str(items[0].get("_id")) if items and isinstance(items[0], Mapping) else None
        detail = f" (first nugget {first!r})" if first else ""
        raise FormatError(
            path,
            lineno,
            f"a row without 'query_id' declares {len(items)} nugget(s){detail}: "
            "a nugget with no query; give every row its query_id",
        )
    if qid in query_line:
        raise DuplicateError(
            f"{path}, line {lineno}: query id {qid!r} occurs twice "
            f"(first at line {query_line[qid]})"
        )
    if "query_text" not in row:
        raise FormatError(path, lineno, f"query {qid!r} has no 'query_text'")
    return qid, items


def _nugget_item(
    item: Any,
    qid: str,
    path: Path,
    lineno: int,
    nugget_line: dict[str, tuple[int, str]],
    columns: tuple[list, list, list, list],
) -> str:
    """Check one nugget of query *qid*, append its judgments to *columns*; its id."""
    if not isinstance(item, Mapping) or item.get("_id") is None:
        raise FormatError(path, lineno, f"query {qid!r}: a nugget has no '_id': {item!r}")
    nid = str(item["_id"])
    if nid in nugget_line:
        first_line, first_q = nugget_line[nid]
        raise DuplicateError(
            f"{path}, line {lineno}: nugget id {nid!r} of query {qid!r} is already "
            f"declared at line {first_line} (query {first_q!r}); nugget ids must be unique"
        )
    nugget_line[nid] = (lineno, qid)
    relevant = _id_list(
        item.get("relevant_corpus_ids"), path, lineno, f"relevant_corpus_ids of nugget {nid!r}"
    )
    non_relevant = _id_list(
        item.get("non_relevant_corpus_ids"),
        path,
        lineno,
        f"non_relevant_corpus_ids of nugget {nid!r}",
    )
    both = set(relevant) & set(non_relevant)
    if both:
        doc = sorted(both)[0]
        raise DuplicateError(
            f"{path}, line {lineno}: document {doc!r} is judged twice for nugget {nid!r} "
            f"of query {qid!r} with different values (relevant and non-relevant); "
            "list it in one of relevant_corpus_ids / non_relevant_corpus_ids"
        )
    cq, cn, cd, cs = columns
    for docs, value in ((dict.fromkeys(relevant), 1), (dict.fromkeys(non_relevant), 0)):
        for doc in docs:
            cq.append(qid)
            cn.append(nid)
            cd.append(doc)
            cs.append(value)
    return nid


def _is_plain(value: Any) -> bool:
    return (
        value is None
        or isinstance(value, (str, int, float, bool))
        or (isinstance(value, list) and all(isinstance(v, (str, int, float, bool)) for v in value))
    )


def _iter_jsonl(path: Path):
    return iter_jsonl(path, hint="each line must be one JSON object", encoding="utf-8-sig")


def read_freshstack_queries(
    path: str | Path, *, name: str | None = None
) -> tuple[Queries, NuggetQrels]:
    """Read a FreshStack queries file (JSON lines; fields as on the hub; see module docstring).

    Returns:
        ``(queries, nuggets)`` as :func:`freshstack_rows_to_nuggets` builds them.

    Raises:
        InputError: the file does not exist.
        FormatError / DuplicateError: as :func:`freshstack_rows_to_nuggets` (file and line named);
            also a line that is not JSON.
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file")
    return freshstack_rows_to_nuggets(_iter_jsonl(path), source=path, name=name or path.name)


def write_freshstack_queries(queries: Queries, nuggets: NuggetQrels, path: str | Path) -> Path:
    """Write queries and their nugget judgments as a FreshStack queries file, atomically.

    Each query of *queries* becomes one row; ``query_title`` / ``query_text`` / ``answer_text``
    come from the query's metadata when present (else the title is empty and the text is the
    query text). Nuggets are written in declaration order; documents with support > 0 go to
    ``relevant_corpus_ids``, the others to ``non_relevant_corpus_ids``.
    """
    qs, ns, ds, ss = nuggets.arrays()
    per_nugget: dict[str, tuple[list[str], list[str]]] = {}
    for n, d, s in zip(ns.tolist(), ds.tolist(), ss.tolist()):
        rel, non = per_nugget.setdefault(n, ([], []))
        (rel if s > 0 else non).append(d)
    with atomic_write(path) as fh:
        for qid in queries:
            meta = queries.meta(qid)
            row = {
                "query_id": qid,
                "query_title": meta.get("query_title", ""),
                "query_text": meta.get("query_text", queries[qid]),
                "answer_text": meta.get("answer_text", ""),
                "nuggets": [
                    {
                        "_id": nug.nugget_id,
                        "text": nug.text,
                        "relevant_corpus_ids": per_nugget.get(nug.nugget_id, ([], []))[0],
                        "non_relevant_corpus_ids": per_nugget.get(nug.nugget_id, ([], []))[1],
                    }
                    for nug in nuggets.nuggets_of(qid)
                ],
            }
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    return Path(path)

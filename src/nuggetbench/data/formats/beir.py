"""BEIR folders (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``) and simple JSON files."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from nuggetbench._atomic import atomic_write
from nuggetbench.data.corpus import Corpus, Document, JsonlCorpus, Queries
from nuggetbench.data.formats.jsonl_index import IndexedJsonlCorpus
from nuggetbench.data.lines import layout_error, read_text, tab_lines, text_lines
from nuggetbench.data.qrels import Qrels
from nuggetbench.data.run import Run
from nuggetbench.data.source import (
    SPACES,
    decode_id_text,
    encode_id_text,
    parse_grade,
    read_source,
    short,
)
from nuggetbench.errors import FormatError, InputError
from nuggetbench.jsonl import iter_jsonl, write_jsonl


def read_beir_qrels(
    path: str | Path, *, name: str | None = None, content: bytes | None = None
) -> Qrels:
    """Read a BEIR qrels TSV (``query-id<TAB>corpus-id<TAB>score`` with a header row; CRLF or LF).

    The file is read once (*content*: its bytes when the caller has read them; ``.gz`` and a
    byte-order mark handled); ids keep their bytes (:func:`.source.decode_id_text`); scores exactly
    as integers (see :func:`.source.parse_grade`).

    Raises:
        FormatError: a row does not have 3 tab-separated fields, or the score is not an integer in
            the 64-bit range (file, line and a short prefix of the value named).
        DuplicateError: a (query, doc) pair is judged twice with different grades.
    """
    path = Path(path)
    data = read_source(path, what="qrels") if content is None else content
    queries: dict[str, int] = {}  # id -> code, as the lines are read (no second pass)
    docs: dict[str, int] = {}
    q: list[int] = []
    d: list[int] = []
    r: list[int] = []
    for lineno, parts in tab_lines(text_lines(read_text(path, what="qrels", content=data))):
        if lineno == 1 and parse_grade(parts[-1]) is None:
            continue  # header row
        if len(parts) != 3:
            raise layout_error(path, lineno, "query-id<TAB>corpus-id<TAB>score", parts, sep="\t")
        grade = parse_grade(parts[2])
        if grade is None or not -(2**63) <= grade < 2**63:
            raise FormatError(
                path,
                lineno,
                f"score must be an integer in the 64-bit range, got {short(parts[2])}",
            )
        qid = parts[0].strip(SPACES)  # ASCII white space only: ids keep every other byte
        did = parts[1].strip(SPACES)
        q.append(queries.setdefault(qid, len(queries)))
        d.append(docs.setdefault(did, len(docs)))
        r.append(grade)
    return Qrels.from_codes(
        np.array(list(queries), dtype=object),
        np.asarray(q, dtype=np.int64),
        np.array(list(docs), dtype=object),
        np.asarray(d, dtype=np.int64),
        np.asarray(r, dtype=np.int64),
        name=name or path.name,
        metadata={"source": str(path)},
        source=str(path),
    )


def read_queries_jsonl(path: str | Path, *, name: str | None = None) -> Queries:
    """Read BEIR ``queries.jsonl`` (``{"_id", "text", "metadata"?}`` per line).

    Raises:
        FormatError: a line is not JSON, or lacks ``_id`` / ``text`` (file and line named).
    """
    path = Path(path)
    texts: dict[str, str] = {}
    meta: dict[str, dict] = {}
    for lineno, obj in iter_jsonl(path, encoding="utf-8-sig"):
        if not isinstance(obj, dict) or "_id" not in obj or "text" not in obj:
            raise FormatError(path, lineno, "a query line needs '_id' and 'text'")
        qid = str(obj["_id"])
        if qid in texts:
            raise FormatError(path, lineno, f"query id {qid!r} occurs twice")
        texts[qid] = obj["text"]
        extra = {k: v for k, v in obj.items() if k not in ("_id", "text")}
        if extra:
            meta[qid] = extra
    return Queries(texts, metadata=meta, name=name)


LARGE_CORPUS_BYTES = 256 << 20
"""A ``corpus.jsonl`` this large (bytes) is read as an :class:`IndexedJsonlCorpus` (memory-mapped
ids, the SHA-256 stored beside the file) rather than a :class:`JsonlCorpus` (ids in a Python list
and dict, the file re-hashed by every process)."""


def read_beir_folder(
    folder: str | Path,
    *,
    split: str = "test",
    name: str | None = None,
    text_field: str | None = None,
) -> tuple[Corpus, Queries, Qrels]:
    """Load a BEIR folder: ``(corpus, queries, qrels)``; queries are restricted to the split's qrels.

    *text_field* names the corpus field holding each document's text (default ``text``; a
    document without it is an error when read).

    Raises:
        InputError: a required file is missing (the message lists the folder's qrels splits).
    """
    folder = Path(folder)
    corpus_path = folder / "corpus.jsonl"
    queries_path = folder / "queries.jsonl"
    qrels_path = folder / "qrels" / f"{split}.tsv"
    for p in (corpus_path, queries_path):
        if not p.exists():
            raise InputError(f"{folder} is not a BEIR folder: {p.name} is missing")
        if not p.is_file():
            raise InputError(
                f"{folder} is not a BEIR folder: {p.name} is a {'folder' if p.is_dir() else 'special file'}, "
                "not a file of JSON lines"
            )
    if not qrels_path.exists():
        splits = (
            sorted(x.stem for x in (folder / "qrels").glob("*.tsv"))
            if (folder / "qrels").is_dir()
            else []
        )
        raise InputError(
            f"{qrels_path} is missing; splits available in {folder}: {', '.join(splits) or 'none'}"
        )
    qrels = read_beir_qrels(qrels_path, name=name)
    queries = read_queries_jsonl(queries_path, name=name)
    queries = queries.subset(qrels.query_ids)
    if corpus_path.stat().st_size >= LARGE_CORPUS_BYTES:
        corpus: Corpus = IndexedJsonlCorpus(corpus_path, name=name, text_field=text_field)
    else:
        corpus = JsonlCorpus(corpus_path, name=name, text_field=text_field)
    return corpus, queries, qrels


def write_corpus_jsonl(documents, path: str | Path) -> Path:
    """Write documents (an iterable of :class:`Document`) as BEIR ``corpus.jsonl``, atomically."""
    rows = (
        {"_id": doc.doc_id, "title": doc.title, "text": doc.text}
        | ({"metadata": doc.metadata} if doc.metadata else {})
        for doc in documents
    )
    write_jsonl(path, rows)
    return Path(path)


def write_queries_jsonl(queries: Queries, path: str | Path) -> Path:
    """Write queries as BEIR ``queries.jsonl``, atomically."""
    rows = (
        {"_id": qid, "text": text} | ({"metadata": queries.meta(qid)} if queries.meta(qid) else {})
        for qid, text in queries.items()
    )
    write_jsonl(path, rows)
    return Path(path)


def write_beir_qrels(qrels: Qrels, path: str | Path) -> Path:
    """Write qrels as a BEIR TSV with its header row, atomically."""
    lines = ["query-id\tcorpus-id\tscore\n"]
    for q, docs in qrels.items():
        for d, r in docs.items():
            lines.append(f"{q}\t{d}\t{r}\n")
    with atomic_write(path, "wb") as fh:
        fh.write(encode_id_text("".join(lines)))
    return Path(path)


def _load_json(path: Path, content: bytes | None, what: str) -> object:
    """Decode a JSON file read once; ``NaN``/``Infinity`` and overflowing numbers (``1e400``) are
    refused (strict JSON has none; a TREC run rejects them too)."""
    data = read_source(path, what=what) if content is None else content

    def constant(name: str) -> float:
        raise _NonFinite(name)

    def number(text: str) -> float:
        value = float(text)
        if not math.isfinite(value):
            raise _NonFinite(text)
        return value

    try:
        return json.loads(
            decode_id_text(data, path=path), parse_constant=constant, parse_float=number
        )
    except json.JSONDecodeError as exc:
        raise FormatError(path, exc.lineno, f"not valid JSON ({exc.msg})") from None
    except _NonFinite as exc:
        raise FormatError(
            path,
            None,
            f"a number is not finite ({short(exc.args[0])}); scores and grades must be finite numbers",
        ) from None
    except RecursionError:
        raise FormatError(path, None, "the JSON is nested too deeply") from None


class _NonFinite(ValueError):
    pass


def read_json_run(
    path: str | Path,
    *,
    name: str | None = None,
    duplicates: str = "error",
    content: bytes | None = None,
) -> Run:
    """Read ``{query_id: {doc_id: score}}`` (or ``{query_id: [doc_id, ...]}`` best first) from JSON.

    The file is read once (*content*: its bytes when the caller has read them). Scores must be
    finite: ``NaN``, ``Infinity`` and ``1e400`` are refused, as in a TREC run.
    *duplicates*: ``"error"`` or ``"first"`` for a list naming a document twice (see :class:`Run`).

    Raises:
        FormatError: invalid JSON, a non-finite number, the top level is not an object, or a
            query's value is neither an object of numbers nor a list of ids (the query is named).
    """
    path = Path(path)
    obj = _load_json(path, content, "run")
    return run_from_json_object(obj, path=path, name=name, duplicates=duplicates)


def run_from_json_object(
    obj, *, path: str | Path | None = None, name: str | None = None, duplicates: str = "error"
) -> Run:
    """A run from a decoded JSON object: ``{qid: {doc: score}}`` or ``{qid: [doc, ...]}``.

    *duplicates* (a list naming a document twice): ``"error"`` or ``"first"`` (see :class:`Run`).
    """
    if not isinstance(obj, Mapping):
        raise FormatError(
            path,
            None,
            "a JSON run must be an object {query_id: {doc_id: score}} or {query_id: [doc_id, ...]}",
        )
    q: list[str] = []
    d: list[str] = []
    s: list[float] = []
    for qid, value in obj.items():
        if isinstance(value, Mapping):
            for did, score in value.items():
                if (
                    not isinstance(score, (int, float))
                    or isinstance(score, bool)
                    or not math.isfinite(score)
                ):
                    raise FormatError(
                        path,
                        None,
                        f"query {short(qid)}, doc {short(did)}: score {short(score)} is not a "
                        "finite number",
                    )
                q.append(str(qid))
                d.append(str(did))
                s.append(float(score))
        elif isinstance(value, (list, tuple)):
            n = len(value)
            for i, did in enumerate(value):
                q.append(str(qid))
                d.append(str(did))
                s.append(float(n - i))
        else:
            raise FormatError(
                path,
                None,
                f"query {short(qid)}: expected an object of scores or a list of doc ids, got {type(value).__name__}",
            )
    return Run(
        q,
        d,
        s,
        name=name or (Path(path).name if path else None),
        metadata={"source": str(path)} if path else {},
        source=str(path) if path else None,
        duplicates=duplicates,
    )


def write_json_run(run: Run, path: str | Path) -> Path:
    """Write ``{query_id: {doc_id: score}}`` atomically."""
    with atomic_write(path) as fh:
        json.dump(run.to_dict(), fh)
    return Path(path)


def read_json_qrels(
    path: str | Path, *, name: str | None = None, content: bytes | None = None
) -> Qrels:
    """Read ``{query_id: {doc_id: relevance}}`` from JSON (read once; grades exact integers).

    Raises:
        FormatError: invalid JSON or a non-finite number; InputError: a grade is not an integer in
            the 64-bit range (query and doc named).
    """
    path = Path(path)
    obj = _load_json(path, content, "qrels")
    if not isinstance(obj, Mapping):
        raise FormatError(
            path, None, "JSON qrels must be an object {query_id: {doc_id: relevance}}"
        )
    q, d, r = [], [], []
    for qid, docs in obj.items():
        if not isinstance(docs, Mapping):
            raise FormatError(
                path, None, f"query {short(qid)}: expected an object {{doc_id: relevance}}"
            )
        for did, rel in docs.items():
            q.append(str(qid))
            d.append(str(did))
            r.append(rel)
    grades = np.empty(len(r), dtype=object)
    grades[:] = r
    return Qrels(q, d, grades, name=name or path.name, source=str(path))


def write_json_qrels(qrels: Qrels, path: str | Path) -> Path:
    """Write ``{query_id: {doc_id: relevance}}`` atomically."""
    with atomic_write(path) as fh:
        json.dump(qrels.to_dict(), fh)
    return Path(path)


__all__ = [
    "Document",
    "read_beir_folder",
    "read_beir_qrels",
    "read_queries_jsonl",
    "read_json_run",
    "read_json_qrels",
    "write_json_run",
    "write_json_qrels",
    "write_corpus_jsonl",
    "write_queries_jsonl",
    "write_beir_qrels",
    "run_from_json_object",
]

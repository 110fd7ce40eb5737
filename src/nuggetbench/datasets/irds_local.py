"""The local files of a dataset registered in ir_datasets (``ir_datasets.create_dataset``, or any
``TsvDocs`` / ``TsvQueries`` / ``TrecQrels`` over a ``LocalDownload``), read as nuggetbench reads
every text file, and kept current.

* **Queries and judgments** of a local ``id<TAB>text`` or TREC qrels file are read through the
  reading layer (:mod:`nuggetbench.data.lines`) rather than ir_datasets' parsers: a byte-order
  mark dropped, ids byte-exact (a Latin-1 byte is kept, not a ``UnicodeDecodeError``), fields
  split at ASCII white space (ir_datasets' ``str.split`` also splits at ``U+00A0``), errors
  naming the dataset, file, line and value.
* **Documents** stay ir_datasets' (streamed, and looked up through its docstore, which a corpus
  of millions needs), with three guards:

  - *a current docstore*: ir_datasets builds ``<docs file>.pklz4/`` once and reads it ever after,
    also for ``docs_iter()`` and the count, so an edited ``docs.tsv`` was still scored on its old
    texts while the fingerprint (the file's size and time) named the new ones. A store older
    than any local source file of its documents is cleared with ir_datasets' own
    ``clear_cache()`` (logged), so it is rebuilt from the current file on first use: what is
    read is what the fingerprint names. (Two stats per load; a process reading the old store at
    that moment may fail.)
  - *faults located*: a failure while ir_datasets reads a local TSV documents file (a line
    without its text column: ``RuntimeError: expected 2 fields, got 1``; a byte that is not
    UTF-8: ``UnicodeDecodeError``) becomes a :class:`FormatError` naming the dataset, the file,
    the line and the value, found by reading the file through the reading layer;
  - *a byte-order mark*: ir_datasets keeps it in the first document id; :func:`bom_id` names
    that id so :class:`.irds.IrdsCorpus` can drop it (and look it up with it).

  ir_datasets decodes documents strictly, so a local documents file that is not UTF-8 is refused
  (with its line) rather than read byte-exact.
"""

from __future__ import annotations

import contextlib
import logging
import typing
from pathlib import Path
from typing import Any

from nuggetbench.data import Qrels
from nuggetbench.data.lines import field_lines, layout_error, stream_lines, tab_lines
from nuggetbench.data.source import BOM, INT64_MAX, INT64_MIN, parse_grade, short
from nuggetbench.errors import FormatError

__all__ = ["bom_id", "local_docs_fault", "local_qrels", "local_queries", "refresh_docstore"]

log = logging.getLogger(__name__)


def _local(handler: Any, attribute: str) -> Path | None:
    """The path of *handler*'s source when it is one ``LocalDownload`` (else ``None``)."""
    from ir_datasets.util.download import LocalDownload  # lazy: ir_datasets is optional

    dlc = getattr(handler, attribute, None)
    return Path(dlc.path(force=False)) if isinstance(dlc, LocalDownload) else None


def _of(dataset_id: str, part: str, exc: FormatError) -> FormatError:
    return FormatError(exc.path, exc.line, f"{exc.message} (the {part} of {dataset_id})")


def local_qrels(dataset_id: str, ds: Any) -> Qrels | None:
    """The judgments of a local 4-column TREC qrels file (``TrecQrels`` over a
    ``LocalDownload``), read through the reading layer; ``None`` for any other source.

    Raises:
        FormatError: a line has not 4 fields or its grade is not an integer (the dataset,
            file, line and value named).
    """
    from ir_datasets.formats import TrecQrels  # lazy: ir_datasets is optional

    handler = ds.qrels_handler()
    path = _local(handler, "_qrels_dlc")
    if type(handler) is not TrecQrels or path is None or getattr(handler, "_format_3col", False):
        return None
    q: list[str] = []
    d: list[str] = []
    r: list[int] = []
    try:
        with contextlib.closing(stream_lines(path, what="qrels")) as lines:
            for number, fields in field_lines(lines):
                if len(fields) != 4:
                    raise layout_error(path, number, "query_id iteration doc_id relevance", fields)
                grade = parse_grade(fields[3])
                if grade is None or not INT64_MIN <= grade <= INT64_MAX:
                    raise FormatError(
                        path, number, f"relevance must be an integer, got {short(fields[3])}"
                    )
                q.append(fields[0])
                d.append(fields[2])
                r.append(grade)
    except FormatError as exc:
        raise _of(dataset_id, "judgments", exc) from None
    # a pair judged twice keeps its last grade, as ir_datasets' own reading did
    return Qrels(q, d, r, name=dataset_id, source=dataset_id, on_duplicate="last")


def local_queries(dataset_id: str, ds: Any) -> list[Any] | None:
    """The query records (ir_datasets' query type) of a local ``TsvQueries`` file, read through
    the reading layer; ``None`` for any other source.

    Raises:
        FormatError: a line has not the query type's number of tab-separated fields (the
            dataset, file, line and value named).
    """
    from ir_datasets.formats import TsvQueries  # lazy: ir_datasets is optional

    handler = ds.queries_handler()
    path = _local(handler, "_dlc")
    if type(handler) is not TsvQueries or path is None:
        return None
    cls = handler.queries_cls()
    records = []
    try:
        with contextlib.closing(stream_lines(path, what="queries")) as lines:
            for number, fields in tab_lines(lines):
                records.append(_record(cls, fields, path, number))
    except FormatError as exc:
        raise _of(dataset_id, "queries", exc) from None
    return records


def _record(cls: Any, fields: list[str], path: Path, number: int) -> Any:
    """``cls(*fields)`` as ir_datasets' ``TsvIter`` builds it (a last field typed
    ``Tuple[str, ...]`` takes the rest), or a :class:`FormatError`."""
    names = cls._fields
    last = getattr(cls, "__annotations__", {}).get(names[-1])
    rest = typing.get_origin(last) is tuple and typing.get_args(last) == (str, ...)
    if rest and len(fields) >= len(names) - 1:
        return cls(*fields[: len(names) - 1], tuple(fields[len(names) - 1 :]))
    if len(fields) != len(names):
        raise layout_error(path, number, "<TAB>".join(names), fields, sep="\t")
    return cls(*fields)


def local_docs_fault(dataset_id: str, ds: Any, exc: BaseException) -> FormatError | None:
    """The line of a local TSV documents file that made ir_datasets fail with *exc* (a field
    count or a byte that is not UTF-8), as a :class:`FormatError` naming the dataset, the file,
    the line and the value; ``None`` when the documents are not such a file or no line is
    at fault."""
    from ir_datasets.formats import TsvDocs  # lazy: ir_datasets is optional

    handler = ds.docs_handler()
    path = _local(handler, "_dlc")
    if not isinstance(handler, TsvDocs) or path is None or not path.is_file():
        return None
    cls, skip = handler.docs_cls(), bool(getattr(handler, "_skip_first_line", False))
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, start=1):
            raw = raw.rstrip(b"\n").removesuffix(b"\r")
            if number == 1:
                raw = raw.removeprefix(BOM)
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as bad:
                byte = raw[bad.start]
                return FormatError(
                    path,
                    number,
                    f"byte 0x{byte:02x} at column {bad.start + 1} is not UTF-8, which "
                    f"ir_datasets needs: {short(raw)}; save the file as UTF-8 (the documents of "
                    f"{dataset_id})",
                )
            if (skip and number == 1) or not line:
                continue
            try:
                _record(cls, line.split("\t"), path, number)
            except FormatError as fault:
                return _of(dataset_id, "documents", fault)
    return None


def bom_id(ds: Any) -> str | None:
    """The first document id as ir_datasets reads it (with ``"\\ufeff"``) when the local TSV
    documents file starts with a UTF-8 byte-order mark; else ``None``. Reads 3 bytes (and the
    first document when there is a mark)."""
    path = _local(ds.docs_handler(), "_dlc")
    if path is None or not path.is_file():
        return None
    with open(path, "rb") as fh:
        if fh.read(len(BOM)) != BOM:
            return None
    first = next(iter(ds.docs_iter()), None)
    return str(first.doc_id) if first is not None else None


def refresh_docstore(dataset_id: str, ds: Any, local: list[Path]) -> bool:
    """Clear ir_datasets' docstore of *ds* when it is older than one of *local* (the local
    source files of its documents: one was edited after the store was built); ``True`` when
    cleared. ir_datasets rebuilds the store from the current files on its first use.
    """
    if not local:
        return False
    try:
        store = ds.docs_handler().docs_store()
        folder = Path(store.path)
    except Exception:  # a handler without a store in a folder: nothing kept to go stale
        return False
    made = (
        [f.stat().st_mtime_ns for f in folder.glob("*") if f.is_file()] if folder.is_dir() else []
    )
    edited = max(p.stat().st_mtime_ns for p in local)
    if not made or edited < max(made) or not store.built():
        return False
    store.clear_cache()
    log.warning(
        "%s: ir_datasets' document store %s is older than %s; cleared, so it is rebuilt from "
        "the current file",
        dataset_id,
        folder,
        ", ".join(str(p) for p in local),
    )
    return True

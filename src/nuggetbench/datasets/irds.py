"""ir_datasets (MacAvaney et al., SIGIR 2021): any id of its catalogue as ``irds:<id>``.

``irds:msmarco-passage/trec-dl-2019/judged``, ``irds:beir/scifact/test``,
``irds:disks45/nocr/trec-robust-2004``... are served by the ``ir_datasets`` package (the
optional extra ``pip install 'nuggetbench[irds]'``), imported only when such an id is used.
Its catalogue of ids: https://ir-datasets.com/.

* **Streaming.** Documents are read from ``docs_iter()`` as they are needed and looked up one by
  one through ir_datasets' own ``docs_store()``; nothing holds the corpus in memory. Queries and
  judgments are read from ``queries_iter()`` / ``qrels_iter()``; only the judged queries are
  kept (as for BEIR folders).
* **Fields.** A document's ``title`` becomes :attr:`Document.title` and its ``text`` (else
  ``body``, ``abstract``, ``contents``) :attr:`Document.text`; a type with neither is read through
  its ``default_text()`` (title included, so the title stays empty). A query is its
  ``default_text()`` (the ``title`` of TREC topics), or the field named by ``query_field``.
* **Downloads and cache are ir_datasets'.** Files go where ir_datasets puts them
  (``IR_DATASETS_HOME``, default ``~/.ir_datasets``) and are checked against its MD5s; this module
  downloads nothing itself. When a download fails (offline, a licence-protected source), the
  error names the dataset, each missing file, its URLs, its MD5 and the path it must be placed at.
  ``NUGGETBENCH_OFFLINE=1`` (or ``download=False``) refuses before ir_datasets tries.
* **Fingerprint.** The corpus's fingerprint is what ir_datasets declares, without reading the
  documents: the id of the dataset that owns the documents, ir_datasets' version, the MD5 of each
  source file (a local file: its path, size and modification time) and the declared document
  count. Queries and judgments are fingerprinted by content, as for every dataset.
* **Policies.** Measures: the dataset's ``official_measures`` from ir_datasets' documentation
  when there are some (TREC DL: ``nDCG@10 RR(rel=2) AP(rel=2)``), else BEIR's. Self hits are
  removed for ``beir/arguana`` and ``beir/quora``, as the BEIR family does.

Datasets registered in ir_datasets at run time (``ir_datasets.registry.register(name, ds)``, e.g.
``ir_datasets.create_dataset(docs_tsv=..., queries_tsv=..., qrels_trec=...)``) are served like
its own, in the same process.
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import json
import logging
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from nuggetbench import home as _home
from nuggetbench.data import Corpus, Document, Qrels, Queries
from nuggetbench.datasets.dataset import Dataset
from nuggetbench.datasets.family import DatasetFamily
from nuggetbench.errors import (
    ChecksumError,
    DatasetError,
    DownloadError,
    NuggetbenchError,
    UnknownNameError,
    suggest,
)
from nuggetbench.measures import parse_measure
from nuggetbench.spec import Param, params_table

log = logging.getLogger(__name__)

PREFIX = "irds:"
CATALOGUE = "https://ir-datasets.com/"
EXTRA = "pip install 'nuggetbench[irds]'"
DEFAULT_MEASURES = ("nDCG@10", "R@100", "RR@10", "AP")
SELF_HIT_DATASETS = ("beir/arguana", "beir/quora")
TEXT_FIELDS = ("text", "body", "abstract", "contents")


def _ir_datasets():
    """The ``ir_datasets`` module, imported now (never on ``import nuggetbench``).

    Raises:
        DatasetError: it is not installed (the message names the extra to install).
    """
    try:
        import ir_datasets  # lazy: an optional dependency, slow to import (its whole catalogue)
    except ImportError as exc:
        raise DatasetError(
            f"'{PREFIX}' dataset ids are served by the ir_datasets package, which is not "
            f"installed: {EXTRA}"
        ) from exc
    return ir_datasets


def irds_name(dataset_id: str) -> str:
    """``irds:<name>`` -> ``<name>`` (ir_datasets' own id).

    Raises:
        UnknownNameError: *dataset_id* does not start with ``irds:`` or names nothing after it.
    """
    name = dataset_id[len(PREFIX) :] if dataset_id.startswith(PREFIX) else ""
    if not name.strip():
        raise UnknownNameError(
            f"{dataset_id!r} is not an ir_datasets id: write irds:<id>, e.g. "
            f"irds:msmarco-passage/trec-dl-2019/judged (the ids: {CATALOGUE})"
        )
    return name


def catalogue_url(name: str) -> str:
    """The catalogue page of ir_datasets' dataset *name* (``https://ir-datasets.com/<top>.html#<name>``)."""
    return f"{CATALOGUE}{name.split('/')[0]}.html#{name}"


def handle(dataset_id: str) -> Any:
    """ir_datasets' dataset object for ``irds:<name>`` (nothing is downloaded).

    Raises:
        UnknownNameError: ir_datasets has no such id (the nearest is named).
        DatasetError: ir_datasets is not installed.
    """
    name = irds_name(dataset_id)
    ir = _ir_datasets()
    try:
        return ir.load(name)
    except KeyError:
        raise UnknownNameError(
            f"ir_datasets has no dataset {name!r} (from {dataset_id!r}).{suggest(name, list(ir.registry))} "
            f"Its catalogue of ids: {CATALOGUE}"
        ) from None


# --- downloads: what ir_datasets declares, and what is missing --------------------------------------
@dataclass(frozen=True)
class SourceFile:
    """One file ir_datasets reads for a part of a dataset.

    Attributes:
        part: ``docs``, ``queries`` or ``qrels``.
        urls: where ir_datasets downloads it from (empty: it must be provided by hand).
        md5: the MD5 ir_datasets checks, or ``None``.
        path: where ir_datasets keeps it (under ``IR_DATASETS_HOME``), or ``None`` (streamed).
        present: whether *path* exists.
        kept_at: for a streamed file, where ir_datasets keeps what it makes of it (unpacked).
    """

    part: str
    urls: tuple[str, ...]
    md5: str | None
    path: str | None
    present: bool
    kept_at: str | None = None

    def describe(self) -> str:
        where = f" -> {self.path}" if self.path else " (streamed by ir_datasets)"
        if not self.path and self.kept_at:
            where = f" (read by ir_datasets, which keeps it unpacked at {self.kept_at})"
        md5 = f" (MD5 {self.md5})" if self.md5 else ""
        source = ", ".join(self.urls) or "no download: provide it by hand"
        return f"{self.part}: {source}{md5}{where}"


def _nodes(obj: Any, seen: set[int], depth: int = 0, cache: Any = None) -> Iterator[tuple]:
    """``(node, cache)``: ir_datasets' download objects (and its present caches) reachable from a
    handler, each with the missing cache it is read into (or ``None``)."""
    if depth > 12 or id(obj) in seen or isinstance(obj, (str, bytes, int, float, Path, type)):
        return
    seen.add(id(obj))
    from ir_datasets.util import Cache  # lazy: ir_datasets is optional
    from ir_datasets.util.download import Download, LocalDownload

    if isinstance(obj, (Download, LocalDownload)) or (
        isinstance(obj, Cache) and Path(obj.path(force=False)).exists()
    ):
        yield obj, cache
        return
    if isinstance(obj, Cache):
        cache = obj
    if isinstance(obj, dict):
        children: Iterable[Any] = obj.values()
    elif isinstance(obj, (list, tuple, set)):
        children = obj
    else:
        children = getattr(obj, "__dict__", {}).values()
    for child in children:
        yield from _nodes(child, seen, depth + 1, cache)


def _source(part: str, node: Any, cache: Any = None) -> SourceFile:
    from ir_datasets.util import Cache  # lazy: ir_datasets is optional
    from ir_datasets.util.download import LocalDownload

    if isinstance(node, (Cache, LocalDownload)):
        path = Path(node.path(force=False))
        return SourceFile(part, (), None, str(path), path.exists())
    urls = tuple(m.url for m in node.mirrors if hasattr(m, "url"))
    local = [Path(m.path(force=False)) for m in node.mirrors if isinstance(m, LocalDownload)]
    kept_path = getattr(node, "_cache_path", None)  # where ir_datasets keeps the download
    path = Path(kept_path) if kept_path else (local[0] if local else None)
    present = path is not None and path.exists()
    kept = str(cache.path(force=False)) if cache is not None else None
    return SourceFile(part, urls, node.expected_md5, str(path) if path else None, present, kept)


def source_files(ds: Any, parts: Iterable[str] = ("docs", "queries", "qrels")) -> list[SourceFile]:
    """The files ir_datasets reads for *parts* of *ds* (a file shared by parts is listed once)."""
    found: dict[tuple, SourceFile] = {}
    for part in parts:
        if not ds.has(part):
            continue
        for node, cache in _nodes(getattr(ds, f"{part}_handler")(), set()):
            src = _source(part, node, cache)
            key = (src.md5, src.path, src.urls)
            if key in found and part not in found[key].part.split("/"):
                found[key] = replace(found[key], part=f"{found[key].part}/{part}")
            found.setdefault(key, src)
    return list(found.values())


def _instructions(ds: Any) -> str:
    """ir_datasets' own words on getting the data (``data_access``), as plain text, shortened."""
    doc = ds.documentation() if hasattr(ds, "documentation") else {}
    text = (doc or {}).get("docs_instructions") or (doc or {}).get("data_access") or ""
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", text)).split())
    return text if len(text) <= 400 else text[:397] + "..."


def missing_error(
    dataset_id: str, ds: Any, parts: Iterable[str], cause: object = None
) -> DownloadError:
    """A :class:`DownloadError` naming *dataset_id*, each missing file of *parts* (URLs, MD5 and
    the path ir_datasets expects it at) and ir_datasets' instructions; a :class:`ChecksumError`
    when *cause* is (or holds) ir_datasets' MD5 mismatch."""
    name = irds_name(dataset_id)
    missing = [s for s in source_files(ds, parts) if not s.present]
    home = _ir_datasets().util.home_path()
    lines = [f"{dataset_id}: ir_datasets could not provide its {'/'.join(parts)}"]
    if isinstance(cause, BaseException):
        lines[0] += f" ({type(cause).__name__}: {str(cause)[:300]})"
    elif cause is not None:
        lines[0] += f" ({cause})"
    if missing:
        lines.append("Download these files (ir_datasets checks the MD5) and put each at its path:")
        lines += [f"  {s.describe()}" for s in missing]
    lines.append(
        f"ir_datasets keeps its files under IR_DATASETS_HOME ({home}); on a machine with internet, "
        f"`nuggetbench datasets fetch {dataset_id}` downloads them into its IR_DATASETS_HOME, "
        f"whose {name.split('/')[0]}/ folder can then be copied here"
    )
    hint = _instructions(ds)
    if hint:
        lines.append(f"ir_datasets says: {hint}")
    lines.append(f"About the dataset: {catalogue_url(name)}")
    # ir_datasets raises its own error, or RuntimeError(text, [(mirror, error), ...])
    nested = getattr(cause, "args", ())[1:2]
    causes = [cause, *(e for group in nested if isinstance(group, list) for _, e in group)]
    mismatch = any(type(c).__name__ == "HashVerificationError" for c in causes)
    return (ChecksumError if mismatch else DownloadError)("\n".join(lines))


@contextlib.contextmanager
def _translated(dataset_id: str, ds: Any, part: str) -> Iterator[None]:
    """Turn a failure of ir_datasets while it reads *part* into a :class:`DownloadError` naming
    what to fetch, when files of *part* are missing (other errors pass unchanged)."""
    try:
        yield
    except (NuggetbenchError, KeyError):
        raise
    except Exception as exc:
        if any(not s.present for s in source_files(ds, [part])):
            raise missing_error(dataset_id, ds, [part], exc) from exc
        raise


def _check_present(dataset_id: str, ds: Any, parts: list[str], download: bool) -> None:
    """Refuse, before ir_datasets tries, when downloads are off and a file is missing."""
    if download and not _home.offline():
        return
    if any(not s.present for s in source_files(ds, parts)):
        why = "download=False" if not download else "NUGGETBENCH_OFFLINE=1"
        raise missing_error(dataset_id, ds, parts, f"downloads are off: {why}")


# --- the fingerprint --------------------------------------------------------------------------------
def docs_fingerprint(dataset_id: str, ds: Any) -> str:
    """SHA-256 (16 hex chars) of what ir_datasets declares about *dataset_id*'s documents: the id
    owning them, ir_datasets' version, each source file's MD5 (a local file: path, size and
    modification time) and the declared count. Reads no document."""
    ir = _ir_datasets()
    name = irds_name(dataset_id)
    try:
        owner = ir.docs_parent_id(name)
    except Exception:  # a dataset registered at run time under a new top-level name
        owner = name
    files = []
    for s in source_files(ds, ["docs"]):
        if s.md5:
            files.append(f"md5:{s.md5}")
        elif s.path and Path(s.path).exists():
            st = Path(s.path).stat()
            files.append(f"file:{s.path}:{st.st_size}:{st.st_mtime_ns}")
        else:
            files.append(f"url:{','.join(s.urls)}:{s.path}")
    count = (ds.docs_metadata() or {}).get("count") if hasattr(ds, "docs_metadata") else None
    declared = {"docs": owner, "ir_datasets": ir.__version__, "files": files, "count": count}
    return hashlib.sha256(json.dumps(declared, sort_keys=True).encode()).hexdigest()[:16]


# --- records -> our values --------------------------------------------------------------------------
def to_document(doc: Any) -> Document:
    """An ir_datasets document (a named tuple) as a :class:`Document` (see the module docstring)."""
    fields = getattr(doc, "_fields", ())
    title = getattr(doc, "title", "") if "title" in fields else ""
    for name in TEXT_FIELDS:
        value = getattr(doc, name, None) if name in fields else None
        if isinstance(value, str):
            return Document(str(doc.doc_id), value, title if isinstance(title, str) else "")
    text = doc.default_text() if hasattr(doc, "default_text") else str(doc[1])
    return Document(str(doc.doc_id), text)


def query_text(query: Any, field: str | None, dataset_id: str) -> str:
    """The text of an ir_datasets query: *field* when named, else ``default_text()``.

    Raises:
        UnknownNameError: the query type has no field *field* (its fields are listed).
    """
    fields = getattr(query, "_fields", ())
    if field:
        if field not in fields:
            raise UnknownNameError(
                f"{dataset_id}: its queries have no field {field!r}.{suggest(field, list(fields))} "
                f"Fields: {', '.join(fields)}"
            )
        return str(getattr(query, field))
    if hasattr(query, "default_text"):
        return str(query.default_text())
    return str(getattr(query, "text", query[1]))


class IrdsCorpus(Corpus):
    """The documents of an ir_datasets dataset, streamed from ``docs_iter()`` and looked up through
    its ``docs_store()`` (ir_datasets builds and keeps the store in its cache on first lookup).

    ``len()`` is ir_datasets' declared count, else one pass over the documents (kept).
    """

    def __init__(self, dataset_id: str, ds: Any):
        self._id = dataset_id
        self._ds = ds
        self._store: Any = None
        self._len: int | None = None
        self._fp: str | None = None
        self.name = dataset_id

    def _docs(self) -> Iterator[Any]:
        with _translated(self._id, self._ds, "docs"):
            yield from self._ds.docs_iter()

    def iter_documents(self) -> Iterator[Document]:
        for doc in self._docs():
            yield to_document(doc)

    def __iter__(self) -> Iterator[str]:
        for doc in self._docs():
            yield str(doc.doc_id)

    def __len__(self) -> int:
        if self._len is None:
            with _translated(self._id, self._ds, "docs"):
                count = self._ds.docs_count() if hasattr(self._ds, "docs_count") else None
            self._len = int(count) if count is not None else sum(1 for _ in self._docs())
        return self._len

    def _docstore(self) -> Any:
        if self._store is None:
            with _translated(self._id, self._ds, "docs"):
                self._store = self._ds.docs_store()
        return self._store

    def __getitem__(self, doc_id: str) -> Document:
        store = self._docstore()
        with _translated(self._id, self._ds, "docs"):
            return to_document(store.get(doc_id))  # KeyError when absent

    def texts(self, doc_ids: Iterable[str], *, with_title: bool = True) -> list[str]:
        ids = list(doc_ids)
        store = self._docstore()
        with _translated(self._id, self._ds, "docs"):
            found = store.get_many(ids)
        docs = [to_document(found[d]) for d in ids]  # KeyError when absent, as __getitem__
        return [d.full_text if with_title else d.text for d in docs]

    def fingerprint(self) -> str:
        if self._fp is None:
            self._fp = docs_fingerprint(self._id, self._ds)
        return self._fp

    def __repr__(self) -> str:
        return f"<IrdsCorpus {self._id}>"


# --- loading ----------------------------------------------------------------------------------------
def _judgments(dataset_id: str, ds: Any) -> Qrels:
    if not ds.has("qrels"):
        raise DatasetError(
            f"{dataset_id} has no judgments (qrels) in ir_datasets; pick one of its ids that has "
            f"(e.g. a /judged or test subset): {catalogue_url(irds_name(dataset_id))}"
        )
    q: list[str] = []
    d: list[str] = []
    r: list[int] = []
    with _translated(dataset_id, ds, "qrels"):
        for qrel in ds.qrels_iter():
            q.append(str(qrel.query_id))
            d.append(str(qrel.doc_id))
            r.append(int(qrel.relevance))
    # a pair judged twice keeps its last grade, as trec_eval reads a qrels file
    return Qrels(q, d, r, name=dataset_id, source=dataset_id, on_duplicate="last")


def _queries(dataset_id: str, ds: Any, judged: set[str], field: str | None) -> Queries:
    if not ds.has("queries"):
        raise DatasetError(f"{dataset_id} has no queries in ir_datasets")
    texts: dict[str, str] = {}
    with _translated(dataset_id, ds, "queries"):
        for query in ds.queries_iter():
            qid = str(query.query_id)
            if qid in judged:
                texts[qid] = query_text(query, field, dataset_id)
    return Queries(texts, name=dataset_id)


def _measures(ds: Any) -> list[str]:
    """ir_datasets' ``official_measures`` when it declares some that we read, else BEIR's."""
    doc = ds.documentation() if hasattr(ds, "documentation") else {}
    official = list((doc or {}).get("official_measures") or [])
    try:
        for m in official:
            parse_measure(m)
    except NuggetbenchError:
        official = []
    return official or list(DEFAULT_MEASURES)


def load(
    dataset_id: str,
    *,
    query_field: str | None = None,
    remove_self_hits: bool | None = None,
    download: bool = True,
) -> Dataset:
    """Load ``irds:<id>`` through ir_datasets (documents streamed, judged queries kept).

    Args:
        dataset_id: ``irds:`` and an id of ir_datasets' catalogue
            (``irds:msmarco-passage/trec-dl-2019/judged``).
        query_field: the query field to use (``description`` of TREC topics); default the
            query type's ``default_text()``.
        remove_self_hits: override the self-hit policy (on for ``beir/arguana``, ``beir/quora``).
        download: let ir_datasets download missing files (unless ``NUGGETBENCH_OFFLINE=1``);
            when false, a missing file is an error naming it.

    Returns:
        A :class:`Dataset` whose corpus is an :class:`IrdsCorpus`; queries and judgments are read
        now (the documents only when a retriever reads them).

    Raises:
        UnknownNameError: not an ir_datasets id, or *query_field* is not a query field.
        DatasetError: ir_datasets is not installed, or the dataset has no queries, judgments or
            documents.
        DownloadError: a file is missing and cannot be downloaded (the message names each file,
            its URLs, MD5 and the path ir_datasets expects it at).
    """
    ds = handle(dataset_id)
    name = irds_name(dataset_id)
    if not ds.has("docs"):
        raise DatasetError(f"{dataset_id} has no documents in ir_datasets: {catalogue_url(name)}")
    _check_present(dataset_id, ds, ["queries", "qrels"], download)
    qrels = _judgments(dataset_id, ds)
    queries = _queries(dataset_id, ds, set(qrels.query_ids), query_field)
    _check_present(dataset_id, ds, ["docs"], download)
    corpus = IrdsCorpus(dataset_id, ds)
    policy = name.startswith(SELF_HIT_DATASETS) if remove_self_hits is None else remove_self_hits
    ir = _ir_datasets()
    return Dataset(
        id=dataset_id,
        corpus=corpus,
        queries=queries,
        qrels=qrels,
        split=None,
        default_measures=_measures(ds),
        remove_self_hits=bool(policy),
        metadata={
            "format": "ir_datasets",
            "ir_datasets_id": name,
            "ir_datasets_version": ir.__version__,
            "ir_datasets_home": str(ir.util.home_path()),
            "docs_fingerprint": corpus.fingerprint(),
            "source_files": [s.describe() for s in source_files(ds)],
            "catalogue": catalogue_url(name),
        },
    )


def info(dataset_id: str) -> dict[str, Any]:
    """Facts about ``irds:<id>`` from ir_datasets' declarations, without downloading anything:
    its types' fields, declared counts, official measures, source files (URL, MD5, path, whether
    present) and its catalogue page.

    Raises:
        UnknownNameError, DatasetError: see :func:`handle`.
    """
    ds = handle(dataset_id)
    name = irds_name(dataset_id)
    ir = _ir_datasets()
    meta = ds.metadata() if hasattr(ds, "metadata") else {}
    parts = [p for p in ("docs", "queries", "qrels") if ds.has(p)]
    files = source_files(ds, parts)
    return {
        "id": dataset_id,
        "family": "irds",
        "ir_datasets_id": name,
        "ir_datasets_version": ir.__version__,
        "ir_datasets_home": str(ir.util.home_path()),
        "provides": parts,
        "counts": {p: (meta.get(p) or {}).get("count") for p in parts},
        "doc_fields": list(ds.docs_cls()._fields) if ds.has("docs") else None,
        "query_fields": list(ds.queries_cls()._fields) if ds.has("queries") else None,
        "default_measures": _measures(ds),
        "default_profile": "trec_eval -c",
        "source_files": [s.describe() for s in files],
        "on_disk": all(s.present for s in files),
        "catalogue": catalogue_url(name),
    }


def fetch(dataset_id: str, *, show_progress: bool = False) -> Path:
    """Have ir_datasets download (and MD5-check) every missing source file of ``irds:<id>``;
    returns ir_datasets' folder of the dataset (``IR_DATASETS_HOME/<top-level id>``).

    Raises:
        DownloadError: offline (``NUGGETBENCH_OFFLINE=1``) or a download failed (the message
            names each missing file, its URLs, MD5 and the path it must be put at).
    """
    ds = handle(dataset_id)
    parts = [p for p in ("docs", "queries", "qrels") if ds.has(p)]
    _check_present(dataset_id, ds, parts, True)
    from ir_datasets.util.download import LocalDownload  # lazy: ir_datasets is optional

    for part in parts:
        with _translated(dataset_id, ds, part):
            for node, cache in _nodes(getattr(ds, f"{part}_handler")(), set()):
                if _source(part, node, cache).present:
                    continue
                if getattr(node, "_cache_path", None) or isinstance(node, LocalDownload):
                    node.path()  # downloaded to its path, MD5-checked (by hand: FileNotFoundError)
                elif cache is not None:
                    cache.path()  # ir_datasets streams the download, MD5-checked, into its cache
    return Path(_ir_datasets().util.home_path()) / irds_name(dataset_id).split("/")[0]


class IrdsFamily(DatasetFamily):
    """``irds:<id>``: any dataset of ir_datasets' catalogue (see the module docstring)."""

    name = "irds"
    pattern = "irds:*"
    description = (
        f"ir_datasets (MacAvaney et al., 2021): irds:<id> for any id of its catalogue, {CATALOGUE} "
        "(e.g. irds:msmarco-passage/trec-dl-2019/judged); needs the irds extra"
    )
    default_measures = DEFAULT_MEASURES
    options = params_table(
        Param("query_field", str, None, "query field (e.g. description); default its default_text"),
        Param(
            "remove_self_hits",
            bool,
            None,
            "override the self-hit policy (on for beir/arguana, quora)",
        ),
        Param("download", bool, True, "let ir_datasets download (unless NUGGETBENCH_OFFLINE=1)"),
    )

    def info(self, dataset_id: str) -> dict[str, Any]:
        return info(dataset_id)

    def fetch(self, dataset_id: str, *, show_progress: bool = False) -> Path | None:
        return fetch(dataset_id, show_progress=show_progress)

    def load(self, dataset_id: str, **options: Any) -> Dataset:
        return load(dataset_id, **options)


FAMILY = IrdsFamily()

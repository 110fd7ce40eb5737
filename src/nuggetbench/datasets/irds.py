"""ir_datasets (MacAvaney et al., SIGIR 2021): any id of its catalogue as ``irds:<id>``.

``irds:msmarco-passage/trec-dl-2019/judged``, ``irds:beir/scifact/test``,
``irds:disks45/nocr/trec-robust-2004``... are served by the ``ir_datasets`` package (the
optional extra ``pip install 'nuggetbench[irds]'``), imported only when such an id is used.
Its catalogue of ids: https://ir-datasets.com/.

* **Streaming.** Documents are read from ``docs_iter()`` as they are needed and looked up one by
  one through ir_datasets' own ``docs_store()``; nothing holds the corpus in memory. Queries and
  judgments are read from ``queries_iter()`` / ``qrels_iter()``; only the judged queries are
  kept (as for BEIR folders). Scoring a run reads no document (nothing of the corpus is
  downloaded for ``nuggetbench evaluate irds:<id> RUN``).
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

What ir_datasets declares (source files, errors, fingerprint) is read by :mod:`.irds_sources`.

Datasets registered in ir_datasets at run time (``ir_datasets.registry.register(name, ds)``, e.g.
``ir_datasets.create_dataset(docs_tsv=..., queries_tsv=..., qrels_trec=...)``) are served like
its own, in the same process, and read from their current files (:mod:`.irds_local`: a docstore
older than its documents file is cleared; local queries and judgments go through nuggetbench's
reading layer; a malformed documents line is named with its file and line).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from nuggetbench.data import Corpus, Document, Qrels, Queries
from nuggetbench.datasets.dataset import Dataset
from nuggetbench.datasets.family import DatasetFamily
from nuggetbench.datasets.irds_local import bom_id, local_qrels, local_queries, refresh_docstore
from nuggetbench.datasets.irds_sources import (
    CATALOGUE,
    catalogue_url,
    check_present,
    docs_fingerprint,
    download_missing,
    handle,
    ir_datasets_module,
    irds_name,
    local_sources,
    source_files,
    translated,
)
from nuggetbench.errors import DatasetError, NuggetbenchError, UnknownNameError, suggest
from nuggetbench.measures import parse_measure
from nuggetbench.spec import Param, params_table

DEFAULT_MEASURES = ("nDCG@10", "R@100", "RR@10", "AP")
SELF_HIT_DATASETS = ("beir/arguana", "beir/quora")
TEXT_FIELDS = ("text", "body", "abstract", "contents")


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

    ``len()`` is ir_datasets' declared count, else one pass over the documents (kept). Nothing
    is downloaded until the documents are read: scoring a run needs only the judgments, and
    ``doc_id in corpus`` is ``True`` (unknown) while the documents are not on disk, so the
    evaluation's corpus checks do not download a corpus.

    Args:
        dataset_id: ``irds:<id>``.
        ds: ir_datasets' dataset object.
        download: let ir_datasets download the documents when read (unless
            ``NUGGETBENCH_OFFLINE=1``); else reading them is a :class:`DownloadError`.
    """

    def __init__(self, dataset_id: str, ds: Any, *, download: bool = True):
        self._id = dataset_id
        self._ds = ds
        self._download = download
        self._store: Any = None
        self._len: int | None = None
        self._fp: str | None = None
        self._on_disk = False
        self._bom: str | None | bool = False  # False: not looked at yet
        self.name = dataset_id

    def on_disk(self) -> bool:
        """Whether ir_datasets holds every source file of the documents (nothing to download)."""
        if not self._on_disk:
            self._on_disk = all(s.present for s in source_files(self._ds, ["docs"]))
        return self._on_disk

    def _first_id(self) -> str | None:
        """The first document id as ir_datasets keeps it when a local documents file starts
        with a byte-order mark (``"\ufeff" + id``; see :func:`.irds_local.bom_id`), else None."""
        if self._bom is False:
            with translated(self._id, self._ds, "docs"):
                self._bom = bom_id(self._ds)
        return self._bom or None

    def _key(self, doc_id: str) -> str:
        """The id ir_datasets' docstore knows *doc_id* by (the byte-order mark put back)."""
        first = self._first_id()
        return first if first is not None and doc_id == first[1:] else doc_id

    def _docs(self) -> Iterator[Any]:
        check_present(self._id, self._ds, ["docs"], self._download)
        first = self._first_id()
        with translated(self._id, self._ds, "docs"):
            for doc in self._ds.docs_iter():
                if first is not None and doc.doc_id == first:
                    doc = doc._replace(doc_id=first[1:])  # the mark dropped, as every reader
                yield doc

    def iter_documents(self) -> Iterator[Document]:
        for doc in self._docs():
            yield to_document(doc)

    def __iter__(self) -> Iterator[str]:
        for doc in self._docs():
            yield str(doc.doc_id)

    def __len__(self) -> int:
        if self._len is None:
            with translated(self._id, self._ds, "docs"):
                count = self._ds.docs_count() if hasattr(self._ds, "docs_count") else None
            self._len = int(count) if count is not None else sum(1 for _ in self._docs())
        return self._len

    def _docstore(self) -> Any:
        if self._store is None:
            check_present(self._id, self._ds, ["docs"], self._download)
            with translated(self._id, self._ds, "docs"):
                self._store = self._ds.docs_store()
        return self._store

    def __getitem__(self, doc_id: str) -> Document:
        store = self._docstore()
        key = self._key(doc_id)
        with translated(self._id, self._ds, "docs"):
            found = store.get(key)  # KeyError when absent
        return to_document(found._replace(doc_id=doc_id) if key != doc_id else found)

    def __contains__(self, doc_id: object) -> bool:
        if not self.on_disk():
            return True  # unknown until the documents are downloaded
        try:
            self[str(doc_id)]
        except KeyError:
            return False
        return True

    def texts(self, doc_ids: Iterable[str], *, with_title: bool = True) -> list[str]:
        ids = list(doc_ids)
        store = self._docstore()
        keys = [self._key(d) for d in ids]
        with translated(self._id, self._ds, "docs"):
            found = store.get_many(keys)
        docs = [to_document(found[k]) for k in keys]  # KeyError when absent, as __getitem__
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
    local = local_qrels(dataset_id, ds)  # a local qrels file: through the reading layer
    if local is not None:
        return local
    q: list[str] = []
    d: list[str] = []
    r: list[int] = []
    with translated(dataset_id, ds, "qrels"):
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
    with translated(dataset_id, ds, "queries"):
        records = local_queries(dataset_id, ds)  # a local TSV file: through the reading layer
        for query in ds.queries_iter() if records is None else records:
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
    check_present(dataset_id, ds, ["queries", "qrels"], download)
    with translated(dataset_id, ds, "docs"):  # read from the current files (irds_local)
        refresh_docstore(dataset_id, ds, local_sources(ds))
    qrels = _judgments(dataset_id, ds)
    queries = _queries(dataset_id, ds, set(qrels.query_ids), query_field)
    corpus = IrdsCorpus(dataset_id, ds, download=download)
    policy = name.startswith(SELF_HIT_DATASETS) if remove_self_hits is None else remove_self_hits
    ir = ir_datasets_module()
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
    ir = ir_datasets_module()
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
        "remove_self_hits": name.startswith(SELF_HIT_DATASETS),
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
    download_missing(dataset_id, ds, parts)
    return Path(ir_datasets_module().util.home_path()) / irds_name(dataset_id).split("/")[0]


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

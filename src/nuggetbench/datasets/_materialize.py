"""Writing hub data into the home's BEIR layout once, and assembling a :class:`Dataset` from it.

Shared by the MIRACL, mMARCO and BEIR-hub loaders. The layout is BEIR's
(``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``) plus the lean corpus index
(``corpus.jsonl.index/``, see :mod:`.jsonl_index`), so that later runs stream or memory-map it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from nuggetbench._atomic import atomic_write
from nuggetbench.data import Document, Qrels, Queries, read_beir_qrels, read_queries_jsonl
from nuggetbench.data.formats.beir import write_beir_qrels, write_queries_jsonl
from nuggetbench.data.formats.jsonl_index import IndexedJsonlCorpus, write_jsonl_corpus
from nuggetbench.datasets.dataset import Dataset
from nuggetbench.datasets.hub import iter_records
from nuggetbench.errors import FormatError

log = logging.getLogger(__name__)

ID_FIELDS = ("docid", "_id", "doc_id", "id", "pid")
TEXT_FIELDS = ("text", "document", "passage", "contents")
QUERY_ID_FIELDS = ("query_id", "_id", "qid", "id")
QUERY_TEXT_FIELDS = ("query", "text")


def _field(rec: Mapping[str, Any], names: tuple[str, ...], path: Path, what: str) -> Any:
    for n in names:
        if n in rec and rec[n] is not None:
            return rec[n]
    raise FormatError(
        path,
        None,
        f"a {what} record has none of the fields {', '.join(names)} "
        f"(fields: {', '.join(sorted(rec))})",
    )


def documents_from_records(paths: list[Path]) -> Iterator[Document]:
    """Documents from hub-shaped corpus files (``docid``/``_id``/``id``, ``title``, ``text``)."""
    for path in paths:
        for rec in iter_records([path]):
            did = _field(rec, ID_FIELDS, path, "corpus")
            text = _field(rec, TEXT_FIELDS, path, "corpus")
            yield Document(str(did).strip(), str(text), str(rec.get("title") or ""))


def documents_from_pairs(pairs: Iterable[tuple[str, str]]) -> Iterator[Document]:
    """Documents from ``(id, text)`` pairs (TSV collections have no title)."""
    for did, text in pairs:
        yield Document(did, text)


def queries_from_records(paths: list[Path]) -> Queries:
    """Queries from hub-shaped records (``query_id``/``_id``/``id``, ``query``/``text``)."""
    texts: dict[str, str] = {}
    for path in paths:
        for rec in iter_records([path]):
            qid = str(_field(rec, QUERY_ID_FIELDS, path, "query")).strip()
            texts[qid] = str(_field(rec, QUERY_TEXT_FIELDS, path, "query"))
    return Queries(texts)


def write_split(folder: Path, split: str, queries: Queries, qrels: Qrels) -> None:
    """Write ``qrels/<split>.tsv`` and merge *queries* into ``queries.jsonl`` (other splits kept)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "queries.jsonl"
    merged: dict[str, str] = {}
    if path.exists():
        merged.update(read_queries_jsonl(path))
    merged.update(queries)
    write_queries_jsonl(Queries(merged), path)
    write_beir_qrels(qrels, folder / "qrels" / f"{split}.tsv")


def has_split(folder: Path | None, split: str) -> bool:
    """Whether *folder* holds ``queries.jsonl`` and ``qrels/<split>.tsv``."""
    return (
        folder is not None
        and (folder / "queries.jsonl").exists()
        and (folder / "qrels" / f"{split}.tsv").exists()
    )


def assemble(
    dataset_id: str,
    *,
    corpus_path: Path,
    queries_path: Path,
    qrels_path: Path,
    split: str,
    default_measures: list[str],
    metadata: dict,
) -> Dataset:
    """A :class:`Dataset` over BEIR-layout files (queries restricted to the split's judged ones)."""
    qrels = read_beir_qrels(qrels_path, name=dataset_id)
    queries = read_queries_jsonl(queries_path, name=dataset_id).subset(qrels.query_ids)
    corpus = IndexedJsonlCorpus(corpus_path, name=dataset_id)
    meta = {
        "corpus_file": str(corpus_path),
        "queries_file": str(queries_path),
        "qrels_file": str(qrels_path),
        "format": "beir",
        **metadata,
    }
    return Dataset(
        id=dataset_id,
        corpus=corpus,
        queries=queries,
        qrels=qrels,
        split=split,
        default_measures=list(default_measures),
        metadata=meta,
    )


def write_subset(
    documents: Iterable[Document],
    path: Path,
    *,
    judged: set[str],
    max_docs: int,
    keep_judged: bool,
    source: str = "",
    show_progress: bool = False,
    desc: str = "subset",
) -> dict:
    """Write the first *max_docs* documents (plus every judged one when *keep_judged*) to *path*.

    A subset has fewer distractors, so retrieval on it is easier than on the full corpus; without
    *keep_judged*, judged documents go missing and recall is capped. The returned description
    (also saved as ``<path>.subset.json``) says which.

    Returns:
        ``{"max_docs", "keep_judged", "n_docs", "full_size" (None when the stream was not read to
        its end), "judged_kept", "judged_total", "source", "file", "note"}``.
    """
    counts = {"seen": 0, "kept": 0, "judged_kept": 0, "complete": False}

    def keep() -> Iterator[Document]:
        for doc in documents:
            counts["seen"] += 1
            is_judged = doc.doc_id in judged
            if counts["seen"] <= max_docs or (keep_judged and is_judged):
                counts["kept"] += 1
                counts["judged_kept"] += is_judged
                yield doc
            elif not keep_judged:
                return
        counts["complete"] = True

    write_jsonl_corpus(keep(), path, show_progress=show_progress, desc=desc)
    info = {
        "max_docs": max_docs,
        "keep_judged": keep_judged,
        "n_docs": counts["kept"],
        "full_size": counts["seen"] if counts["complete"] else None,
        "judged_kept": counts["judged_kept"],
        "judged_total": len(judged),
        "source": source,
        "file": str(path),
        "note": (
            "easier than the full task: fewer distractors (every judged document kept)"
            if keep_judged
            else "judged documents beyond the first max_docs are missing: recall is capped "
            "and scores are not comparable"
        ),
    }
    with atomic_write(path.with_name(path.name + ".subset.json")) as fh:
        json.dump(info, fh, indent=1)
    return info


def read_subset_info(path: Path) -> dict | None:
    """The description saved by :func:`write_subset`, or ``None`` when the subset is absent."""
    meta = path.with_name(path.name + ".subset.json")
    if not (path.exists() and meta.exists()):
        return None
    try:
        return json.loads(meta.read_text(encoding="utf-8"))
    except ValueError:
        return None

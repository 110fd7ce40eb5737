"""``Corpus`` and ``Queries``: mapping-like collections with content fingerprints.

A corpus may be large: :class:`JsonlCorpus` streams a BEIR ``corpus.jsonl`` and reads single
documents by byte offset, so iterating never holds all texts as Python strings.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from nuggetbench.errors import DuplicateError, FormatError


@dataclass(frozen=True)
class Document:
    """One passage: ``doc_id``, ``title`` (may be empty), ``text`` and free ``metadata``."""

    doc_id: str
    text: str
    title: str = ""
    metadata: dict = field(default_factory=dict)

    @property
    def full_text(self) -> str:
        """``title + " " + text`` (BEIR's indexing convention), or the text when no title."""
        return f"{self.title} {self.text}" if self.title else self.text


class Corpus(Mapping[str, Document]):
    """Base class: ``doc_id -> Document``, iterable over ids, with :meth:`fingerprint`."""

    name: str | None = None

    def iter_documents(self) -> Iterator[Document]:
        """Yield every document in corpus order (streaming for file-backed corpora)."""
        for doc_id in self:
            yield self[doc_id]

    def doc_ids(self) -> list[str]:
        """All doc ids, in corpus order."""
        return list(self)

    def texts(self, doc_ids: Iterable[str], *, with_title: bool = True) -> list[str]:
        """Texts of the given documents (``title + " " + text`` when *with_title*)."""
        return [self[d].full_text if with_title else self[d].text for d in doc_ids]

    def fingerprint(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError


class InMemoryCorpus(Corpus):
    """A corpus held in a dict; fine for up to a few hundred thousand passages."""

    def __init__(
        self,
        documents: Iterable[Document] | Mapping[str, Document],
        *,
        name: str | None = None,
        source: str | None = None,
    ):
        docs: dict[str, Document] = {}
        items = documents.values() if isinstance(documents, Mapping) else documents
        for doc in items:
            if doc.doc_id in docs:
                raise DuplicateError(
                    f"{source or 'corpus'}: document id {doc.doc_id!r} occurs twice"
                )
            docs[doc.doc_id] = doc
        self._docs = docs
        self.name = name
        self._fp: str | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], **kwargs: Any) -> InMemoryCorpus:
        """From ``{doc_id: text}`` or ``{doc_id: {"title": ..., "text": ...}}``."""
        docs = []
        for did, value in data.items():
            if isinstance(value, str):
                docs.append(Document(str(did), value))
            else:
                extra = {k: v for k, v in value.items() if k not in ("title", "text")}
                docs.append(
                    Document(str(did), value.get("text", ""), value.get("title", "") or "", extra)
                )
        return cls(docs, **kwargs)

    def __getitem__(self, doc_id: str) -> Document:
        return self._docs[doc_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._docs)

    def __len__(self) -> int:
        return len(self._docs)

    def iter_documents(self) -> Iterator[Document]:
        return iter(self._docs.values())

    def fingerprint(self) -> str:
        if self._fp is None:
            h = hashlib.sha256()
            for doc in self._docs.values():
                h.update(doc.doc_id.encode())
                h.update(b"\x1f")
                h.update(doc.title.encode())
                h.update(b"\x1f")
                h.update(doc.text.encode())
                h.update(b"\x1e")
            self._fp = h.hexdigest()[:16]
        return self._fp

    def __repr__(self) -> str:
        return f"<InMemoryCorpus {self.name or ''}: {len(self)} documents>"


def _load_line(path: Path, lineno: int, raw: bytes) -> tuple[dict, Any]:
    """A corpus line as ``(object, doc id)``; ``FormatError`` naming the line when it is not one."""
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise FormatError(
            path, lineno, f"not valid JSON ({exc.msg}); each line must be one JSON object"
        ) from None
    except UnicodeDecodeError as exc:
        raise FormatError(
            path, lineno, f"not valid UTF-8 ({exc.reason} at byte {exc.start}); re-encode the file"
        ) from None
    except RecursionError:
        raise FormatError(path, lineno, "the JSON is nested too deeply") from None
    if not isinstance(obj, dict):
        raise FormatError(path, lineno, "expected a JSON object with '_id' and 'text'")
    did = obj.get("_id", obj.get("doc_id", obj.get("id")))
    if did is None:
        raise FormatError(
            path, lineno, "missing '_id' (BEIR corpus lines need '_id', 'title', 'text')"
        )
    return obj, did


def _parse_corpus_line(
    path: Path, lineno: int, raw: bytes, text_field: str | None = None
) -> Document:
    """One document of a corpus line; its text is *text_field*, else ``text`` (``contents``).

    Raises:
        FormatError: not a JSON object with an id, or a document without its text field (a
            document of a title only would be indexed silently by its title).
    """
    obj, did = _load_line(path, lineno, raw)
    field_name = text_field or ("text" if "text" in obj or "contents" not in obj else "contents")
    if field_name not in obj:
        hint = (
            f"name the field that holds it with -O text_field={_guess_text_field(obj)}"
            if text_field is None
            else "give the field that holds every document's text"
        )
        raise FormatError(
            path,
            lineno or None,
            f"document {did!r} has no {field_name!r} field (its fields: "
            f"{', '.join(map(str, obj))}); a document is indexed by its text: add it, or {hint}",
        )
    text = obj[field_name]
    if text is None:
        text = ""
    if not isinstance(text, str):
        raise FormatError(
            path, lineno or None, f"{field_name!r} of document {did!r} is not a string"
        )
    title = obj.get("title") or ""
    extra = {
        k: v
        for k, v in obj.items()
        if k not in ("_id", "doc_id", "id", "title", "text", "contents", field_name)
    }
    return Document(str(did), text, str(title), extra)


def _field_fingerprint(file_fp: str, text_field: str | None) -> str:
    """A corpus file's fingerprint, mixed with *text_field* when one is named (other texts from
    the same bytes)."""
    if not text_field:
        return file_fp
    return hashlib.sha256(f"{file_fp}\x1f{text_field}".encode()).hexdigest()[:16]


def _guess_text_field(obj: dict) -> str:
    """The longest string field of a corpus line other than its id and title (a hint)."""
    strings = {
        k: v
        for k, v in obj.items()
        if isinstance(v, str) and k not in ("_id", "doc_id", "id", "title")
    }
    return max(strings, key=lambda k: len(strings[k])) if strings else "FIELD"


class JsonlCorpus(Corpus):
    """A BEIR ``corpus.jsonl`` read lazily: an offset index in numpy, documents parsed on demand.

    Lines hold ``{"_id": ..., "title": ..., "text": ...}`` (other keys go to ``metadata``);
    *text_field* names another field that holds the text (``body``). The fingerprint is the
    SHA-256 of the file's bytes (and the *text_field*, when given).

    Raises:
        FormatError: a line is not JSON, lacks ``_id``, or (when read) its text field (file
            and line named).
        DuplicateError: an id occurs twice.
    """

    #: the field holding each document's text (``None``: ``text``, else ``contents``)
    text_field: str | None = None

    #: whether a first complete :meth:`iter_documents` pass keeps the id index in memory
    _index_on_iteration = True

    def __init__(self, path: str | Path, *, name: str | None = None, text_field: str | None = None):
        self.path = Path(path)
        self.name = name
        self.text_field = text_field or None
        self._ids: list[str] | None = None
        self._offsets: np.ndarray | None = None
        self._lookup: dict[str, int] | None = None
        self._fp: str | None = None

    def _build_index(self) -> None:
        ids: list[str] = []
        offsets: list[int] = []
        h = hashlib.sha256()
        with open(self.path, "rb") as fh:
            pos = 0
            for lineno, raw in enumerate(fh, start=1):
                h.update(raw)
                stripped = raw.strip()
                if stripped:
                    ids.append(_fast_id(self.path, lineno, stripped))
                    offsets.append(pos)
                pos += len(raw)
        self._set_index(ids, offsets)
        self._fp = h.hexdigest()[:16]

    def _set_index(self, ids: list[str], offsets: list[int]) -> None:
        """Keep the id index (ids and byte offsets of the non-blank lines, in file order).

        Raises:
            DuplicateError: an id occurs twice.
        """
        lookup: dict[str, int] = {}
        for i, did in enumerate(ids):
            if did in lookup:
                raise DuplicateError(
                    f"{self.path}: document id {did!r} occurs twice (line order {lookup[did] + 1} and {i + 1})"
                )
            lookup[did] = i
        self._ids = ids
        self._offsets = np.asarray(offsets, dtype=np.int64)
        self._lookup = lookup

    def _ensure(self) -> None:
        if self._ids is None:
            self._build_index()

    def _row(self, doc_id: object) -> int | None:
        """The line (0-based among non-blank lines) of *doc_id*, or ``None``."""
        self._ensure()
        return self._lookup.get(doc_id) if isinstance(doc_id, str) else None  # type: ignore[union-attr]

    def _read(self, fh: BinaryIO, row: int) -> Document:
        """Parse the document on line *row* of the open file *fh*."""
        fh.seek(int(self._offsets[row]))  # type: ignore[index]
        return _parse_corpus_line(self.path, 0, fh.readline(), self.text_field)

    def __getitem__(self, doc_id: str) -> Document:
        row = self._row(doc_id)
        if row is None:
            raise KeyError(doc_id)
        with open(self.path, "rb") as fh:
            return self._read(fh, row)

    def texts(self, doc_ids: Iterable[str], *, with_title: bool = True) -> list[str]:
        out = []
        with open(self.path, "rb") as fh:
            for d in doc_ids:
                row = self._row(d)
                if row is None:
                    raise KeyError(d)
                doc = self._read(fh, row)
                out.append(doc.full_text if with_title else doc.text)
        return out

    def __iter__(self) -> Iterator[str]:
        self._ensure()
        return iter(self._ids)  # type: ignore[arg-type]

    def __len__(self) -> int:
        self._ensure()
        return len(self._ids)  # type: ignore[arg-type]

    def __contains__(self, doc_id: object) -> bool:
        return self._row(doc_id) is not None

    def iter_documents(self) -> Iterator[Document]:
        """Stream the file in order; nothing but the current line is held.

        A complete first pass also builds the id index (ids, offsets, the duplicate check), so
        the file is not parsed a second time for it.

        Raises:
            FormatError: a line is not a document (file and line named).
            DuplicateError: an id occurs twice (at the end of a first complete pass).
        """
        build = self._index_on_iteration and self._ids is None
        ids: list[str] = []
        offsets: list[int] = []
        with open(self.path, "rb") as fh:
            pos = 0
            for lineno, raw in enumerate(fh, start=1):
                if raw.strip():
                    doc = _parse_corpus_line(self.path, lineno, raw, self.text_field)
                    if build:
                        ids.append(doc.doc_id)
                        offsets.append(pos)
                    yield doc
                pos += len(raw)
        if build and self._ids is None:
            self._set_index(ids, offsets)

    def fingerprint(self) -> str:
        """The first 16 hex digits of the SHA-256 of the file's bytes (the file is hashed, not
        parsed, when the id index is not built yet)."""
        if self._fp is None:
            h = hashlib.sha256()
            with open(self.path, "rb") as fh:
                while block := fh.read(1 << 20):
                    h.update(block)
            self._fp = h.hexdigest()[:16]
        return _field_fingerprint(self._fp, self.text_field)

    def __repr__(self) -> str:
        return f"<JsonlCorpus {self.path}>"


def _fast_id(path: Path, lineno: int, raw: bytes) -> str:
    """The ``_id`` of a JSON line (clear error naming the line when it has none)."""
    return str(_load_line(path, lineno, raw)[1])


class Queries(Mapping[str, str]):
    """``query_id -> text``, with optional per-query metadata (``queries.meta(qid)``)."""

    def __init__(
        self,
        texts: Mapping[str, str] | Iterable[tuple[str, str]],
        *,
        metadata: Mapping[str, dict] | None = None,
        name: str | None = None,
    ):
        items = texts.items() if isinstance(texts, Mapping) else texts
        self._texts: dict[str, str] = {}
        for qid, text in items:
            qid = str(qid)
            if qid in self._texts:
                raise DuplicateError(f"query id {qid!r} occurs twice")
            self._texts[qid] = text
        self._meta = {str(k): dict(v) for k, v in (metadata or {}).items()}
        self.name = name

    def __getitem__(self, query_id: str) -> str:
        return self._texts[query_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._texts)

    def __len__(self) -> int:
        return len(self._texts)

    def meta(self, query_id: str) -> dict:
        """Metadata of one query (empty dict when none)."""
        return self._meta.get(query_id, {})

    def subset(self, query_ids: Iterable[str]) -> Queries:
        """The given queries, in the given order (unknown ids are skipped)."""
        ids = [q for q in query_ids if q in self._texts]
        return Queries(
            {q: self._texts[q] for q in ids},
            metadata={q: self._meta[q] for q in ids if q in self._meta},
            name=self.name,
        )

    def with_texts(self, texts: Mapping[str, str]) -> Queries:
        """Same ids and metadata, other texts (e.g. oracle query fields)."""
        return Queries(
            {q: texts[q] for q in self._texts if q in texts}, metadata=self._meta, name=self.name
        )

    def fingerprint(self) -> str:
        h = hashlib.sha256()
        for qid, text in self._texts.items():
            h.update(qid.encode() + b"\x1f" + text.encode() + b"\x1e")
        return h.hexdigest()[:16]

    def __repr__(self) -> str:
        return f"<Queries {self.name or ''}: {len(self)}>"

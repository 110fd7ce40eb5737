"""A BEIR ``corpus.jsonl`` with a lean, memory-mapped index, for corpora of tens of millions.

:class:`nuggetbench.data.JsonlCorpus` keeps every doc id as a Python string plus a
``dict[str, int]``: about 150-200 bytes per document, so 5-7 GB of RAM for MIRACL's 33 million
English passages before a single text is read. :class:`IndexedJsonlCorpus` keeps the same file
and the same ``Corpus`` interface, but its index is four numpy files in a folder beside it
(``corpus.jsonl.index/``), opened memory-mapped:

* ``offsets.npy`` int64, shape (n + 1,): byte offset of each line (the last is the file size);
* ``ids.npy``: doc ids as fixed-width UTF-8 bytes (``S<w>``), in file order;
* ``sorted_ids.npy`` and ``sorted_rows.npy``: the ids sorted, and the line of each, for lookups
  by binary search (``np.searchsorted``).

That is ``16 + 2w`` bytes per document on disk (w = the longest id; about 48 bytes for MIRACL's
``12345678#12`` ids) and only the pages touched in RAM. ``meta.json`` records the file's size,
mtime, a hash of 16 sampled 64 KiB blocks and the full SHA-256 (the fingerprint, equal to
``JsonlCorpus.fingerprint()``, computed once while indexing); a stale index is rebuilt, and a warm
start reads 1 MiB of the file, not all of it. :func:`write_jsonl_corpus` writes a corpus and its index in one streaming pass.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from nuggetbench import home as _home
from nuggetbench._atomic import atomic_write, clean_stale, make_temp, make_temp_dir, staging_prefix
from nuggetbench.data.corpus import Document, JsonlCorpus, _field_fingerprint, _parse_corpus_line
from nuggetbench.data.source import decode_id_text, encode_id_text
from nuggetbench.errors import DuplicateError, FormatError
from nuggetbench.progress import Meter

log = logging.getLogger(__name__)

__all__ = ["IndexedJsonlCorpus", "write_jsonl_corpus", "INDEX_FORMAT"]

INDEX_FORMAT = 1
_CHUNK = 1 << 16  # ids buffered before they become one numpy chunk
_ID_RE = re.compile(rb'^\{"_id": "((?:[^"\\]|\\.)*)"')


class _IndexBuilder:
    """Accumulates (id, offset) pairs in numpy chunks; never one Python object per document."""

    def __init__(self) -> None:
        self.id_chunks: list[np.ndarray] = []
        self.off_chunks: list[np.ndarray] = []
        self._ids: list[bytes] = []
        self._offs: list[int] = []
        self.n = 0

    def add(self, doc_id: bytes, offset: int) -> None:
        self._ids.append(doc_id)
        self._offs.append(offset)
        self.n += 1
        if len(self._ids) >= _CHUNK:
            self._flush()

    def _flush(self) -> None:
        if self._ids:
            self.id_chunks.append(np.array(self._ids, dtype=bytes))
            self.off_chunks.append(np.array(self._offs, dtype=np.int64))
            self._ids, self._offs = [], []

    def save(self, folder: Path, *, end: int, meta: dict, source: Path) -> None:
        """Write the four arrays and ``meta.json`` into *folder* (created)."""
        self._flush()
        folder.mkdir(parents=True, exist_ok=True)
        width = max((c.dtype.itemsize for c in self.id_chunks), default=1)
        ids = (
            np.concatenate(self.id_chunks).astype(f"S{width}")
            if self.id_chunks
            else np.zeros(0, "S1")
        )
        self.id_chunks = []
        offsets = np.concatenate([*self.off_chunks, np.array([end], dtype=np.int64)])
        self.off_chunks = []
        order = np.argsort(ids, kind="stable")
        sorted_ids = ids[order]
        if len(sorted_ids) > 1:
            dup = np.flatnonzero(sorted_ids[1:] == sorted_ids[:-1])
            if len(dup):
                rows = sorted((int(order[dup[0]]), int(order[dup[0] + 1])))
                raise DuplicateError(
                    f"{source}: document id {sorted_ids[dup[0]].decode()!r} occurs "
                    f"twice (documents {rows[0] + 1} and {rows[1] + 1}); ids must be unique"
                )
        np.save(folder / "ids.npy", ids)
        np.save(folder / "offsets.npy", offsets)
        np.save(folder / "sorted_ids.npy", sorted_ids)
        np.save(folder / "sorted_rows.npy", order.astype(np.int64))
        with atomic_write(folder / "meta.json") as fh:
            json.dump({**meta, "format": INDEX_FORMAT, "n": int(len(ids)), "id_width": width}, fh)


SAMPLE_BLOCKS = 16
SAMPLE_BYTES = 1 << 16


def _stat(path: Path) -> dict:
    """What decides that the stored index (and its full SHA-256) still describes *path*: size,
    mtime and the SHA-256 of ``SAMPLE_BLOCKS`` blocks of ``SAMPLE_BYTES`` bytes spread evenly
    over the file (1 MiB read, whatever the file's size), so a warm start never re-reads it."""
    st = path.stat()
    return {
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "sample": _sampled_hash(path, st.st_size),
    }


def _sampled_hash(path: Path, size: int) -> str:
    h = hashlib.sha256()
    step = max(size // SAMPLE_BLOCKS, 1)
    with open(path, "rb") as fh:
        for start in range(0, size, step)[:SAMPLE_BLOCKS]:
            fh.seek(start)
            h.update(fh.read(SAMPLE_BYTES))
    return h.hexdigest()[:32]


def _line_id(path: Path, lineno: int, raw: bytes) -> bytes:
    m = _ID_RE.match(raw)
    if m and b"\\" not in m.group(1):
        return m.group(1)
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise FormatError(
            path, lineno, f"not valid JSON ({exc.msg}); each line must be one JSON object"
        ) from None
    did = obj.get("_id", obj.get("doc_id", obj.get("id"))) if isinstance(obj, dict) else None
    if did is None:
        raise FormatError(
            path, lineno, "missing '_id' (BEIR corpus lines need '_id', 'title', 'text')"
        )
    return str(did).encode("utf-8")


class IndexedJsonlCorpus(JsonlCorpus):
    """A BEIR ``corpus.jsonl`` read through a memory-mapped index (see the module docstring).

    Args:
        path: the ``corpus.jsonl`` file.
        name: a label.
        text_field: the field holding each document's text (default ``text``).
        index_dir: where the index lives; default ``<path>.index/`` beside the file, or a folder
            under ``<home>/cache/jsonl-index/`` when the file's folder is read-only or in
            ``NUGGETBENCH_DATA``. A missing or stale index is built by one streaming pass.

    Raises:
        FormatError: a line is not JSON or lacks ``_id`` (file and line named).
        DuplicateError: an id occurs twice.
    """

    _index_on_iteration = False  # its index is memory-mapped files, built by _ensure()

    def __init__(
        self,
        path: str | Path,
        *,
        name: str | None = None,
        index_dir: str | Path | None = None,
        text_field: str | None = None,
    ):
        self.path = Path(path)
        self.name = name
        self.text_field = text_field or None
        self.index_dir = Path(index_dir) if index_dir else _default_index_dir(self.path)
        self._arrays: dict[str, np.ndarray] | None = None
        self._meta: dict | None = None

    # --- index -----------------------------------------------------------------------------
    def _ensure(self) -> dict[str, np.ndarray]:
        if self._arrays is None:
            meta = _read_meta(self.index_dir)
            if (
                meta is None
                or meta.get("format") != INDEX_FORMAT
                or meta.get("source") != _stat(self.path)
            ):
                self._build()
                meta = _read_meta(self.index_dir)
            assert meta is not None
            self._meta = meta
            self._arrays = {
                k: np.load(self.index_dir / f"{k}.npy", mmap_mode="r")
                for k in ("ids", "offsets", "sorted_ids", "sorted_rows")
            }
        return self._arrays

    def _build(self) -> None:
        log.info("indexing %s (one pass; the index goes to %s)", self.path, self.index_dir)
        builder = _IndexBuilder()
        h = hashlib.sha256()
        pos = 0
        with open(self.path, "rb") as fh:
            for lineno, raw in enumerate(fh, start=1):
                h.update(raw)
                if raw.strip():
                    builder.add(_line_id(self.path, lineno, raw.strip()), pos)
                pos += len(raw)
        _save_index(
            builder,
            self.index_dir,
            end=pos,
            source=self.path,
            stat=_stat(self.path),
            sha256=h.hexdigest(),
        )

    def _row(self, doc_id: object) -> int | None:
        a = self._ensure()
        key = encode_id_text(doc_id) if isinstance(doc_id, str) else None
        if (
            key is None
            or len(key) > a["sorted_ids"].dtype.itemsize
            or not key
            or key.endswith(b"\0")
        ):
            return None
        i = int(np.searchsorted(a["sorted_ids"], key))
        if i < len(a["sorted_ids"]) and a["sorted_ids"][i] == key:
            return int(a["sorted_rows"][i])
        return None

    def _read(self, fh, row: int) -> Document:
        a = self._ensure()
        start, end = int(a["offsets"][row]), int(a["offsets"][row + 1])
        fh.seek(start)
        line = fh.read(end - start).split(b"\n", 1)[0]
        return _parse_corpus_line(self.path, 0, line, self.text_field)

    # --- Corpus interface ------------------------------------------------------------------
    def __iter__(self) -> Iterator[str]:
        ids = self._ensure()["ids"]
        for start in range(0, len(ids), 65536):
            for raw in ids[start : start + 65536].tolist():
                yield decode_id_text(raw, path=self.path)

    def __len__(self) -> int:
        return int(len(self._ensure()["ids"]))

    def fingerprint(self) -> str:
        """SHA-256 of the file's bytes (16 hex chars; mixed with ``text_field`` when one is
        named), as ``JsonlCorpus.fingerprint()``."""
        self._ensure()
        assert self._meta is not None
        return _field_fingerprint(self._meta["sha256"][:16], self.text_field)

    def __repr__(self) -> str:
        return f"<IndexedJsonlCorpus {self.path}>"


def _read_meta(folder: Path) -> dict | None:
    try:
        return json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _default_index_dir(path: Path) -> Path:
    sidecar = path.with_name(path.name + ".index")
    if (sidecar / "meta.json").exists():
        return sidecar
    resolved = path.resolve()
    read_only = any(_is_within(resolved, d) for d in _home.data_dirs()) or not os.access(
        path.parent, os.W_OK
    )
    if not read_only:
        return sidecar
    key = hashlib.sha256(str(resolved).encode()).hexdigest()[:16]
    return _home.cache_dir("jsonl-index") / key


def _is_within(path: Path, folder: Path) -> bool:
    try:
        path.relative_to(folder.expanduser().resolve())
        return True
    except ValueError:
        return False


def _save_index(
    builder: _IndexBuilder,
    folder: Path,
    *,
    end: int,
    source: Path,
    stat: dict,
    sha256: str,
    before_install=None,
) -> None:
    """Build the index in a temporary folder, run *before_install* (if any), then move it in."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    clean_stale(folder.parent)
    tmp = Path(make_temp_dir(folder.parent, staging_prefix(folder.name), ".tmp"))
    try:
        builder.save(tmp, end=end, source=source, meta={"source": stat, "sha256": sha256})
        if before_install is not None:
            before_install()
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(tmp, folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def write_jsonl_corpus(
    documents: Iterable[Document],
    path: str | Path,
    *,
    name: str | None = None,
    show_progress: bool = False,
    total: int | None = None,
    desc: str = "writing corpus",
) -> IndexedJsonlCorpus:
    """Stream *documents* into a BEIR ``corpus.jsonl`` and its index, in one pass, atomically.

    Only one document is held at a time (plus a buffer of 65,536 ids); the file appears
    under its name only when complete.

    Args:
        documents: :class:`~nuggetbench.data.Document` values (any iterable, consumed once).
        path: the ``corpus.jsonl`` to write (its folder is created).
        name: label of the returned corpus.
        show_progress: a progress meter (documents; :class:`~nuggetbench.progress.Meter`).
        total: the number of documents, for the bar, when known.
        desc: the bar's label.

    Returns:
        An :class:`IndexedJsonlCorpus` over the new file.

    Raises:
        DuplicateError: two documents share an id (nothing is kept).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    builder = _IndexBuilder()
    h = hashlib.sha256()
    pos = 0
    fd, tmp_name = make_temp(path.parent, staging_prefix(path.name), ".tmp")
    tmp = Path(tmp_name)
    try:
        with (
            os.fdopen(fd, "wb") as fh,
            Meter(desc, total, "doc", show=show_progress) as bar,
        ):
            for doc in documents:
                obj = {"_id": doc.doc_id, "title": doc.title, "text": doc.text}
                if doc.metadata:
                    obj["metadata"] = doc.metadata
                line = (json.dumps(obj, ensure_ascii=False) + "\n").encode("utf-8")
                fh.write(line)
                h.update(line)
                builder.add(encode_id_text(doc.doc_id), pos)
                pos += len(line)
                bar.update(1)
            fh.flush()
            os.fsync(fh.fileno())
        index_dir = path.with_name(path.name + ".index")
        # the index is built (duplicates checked) before the file takes its name; a rename keeps
        # size and mtime, so the index's record of them stays valid
        _save_index(
            builder,
            index_dir,
            end=pos,
            source=path,
            stat=_stat(tmp),
            sha256=h.hexdigest(),
            before_install=lambda: os.replace(tmp, path),
        )
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return IndexedJsonlCorpus(path, name=name, index_dir=index_dir)

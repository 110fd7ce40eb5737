"""Chunk notebooks into a corpus, cached under ``<home>/cache/chunks/<spec>-<key>/``.

The cache folder is named by the chunker's canonical spec and a key made of the chunker
fingerprint (spec, format version, tokenizer vocabulary), the reading options and the SHA-256 of
every notebook file. It holds ``corpus.jsonl`` (BEIR lines with ``metadata``) and ``meta.json``,
both written atomically, ``meta.json`` last: a folder without it is ignored and rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Iterable
from pathlib import Path

from .. import home
from .._atomic import atomic_write
from ..data import Document, InMemoryCorpus, write_corpus_jsonl
from ..errors import DuplicateError, FormatError
from .chunkers import FORMAT_VERSION, Chunker
from .notebook import DEFAULT_SKIP_SECTIONS, DEFAULT_STOP_AT, read_notebook
from .spec import parse_chunker

log = logging.getLogger(__name__)


def _file_sha(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    except OSError as exc:
        raise FormatError(path, None, f"cannot read the notebook: {exc.strerror or exc}") from exc


def cache_key(
    paths: list[Path], chunker: Chunker, *, stop_at: str | None, skip_sections: tuple[str, ...]
) -> str:
    """The cache key (16 hex chars) of chunking *paths* with *chunker* and these reading options."""
    h = hashlib.sha256()
    h.update(
        f"{chunker.fingerprint()}\x1f{stop_at!r}\x1f{skip_sections!r}\x1fv{FORMAT_VERSION}".encode()
    )
    for p in paths:
        h.update(f"\x1e{p.name}\x1f{_file_sha(p)}".encode())
    return h.hexdigest()[:16]


def _slug(spec: str) -> str:
    return re.sub(r"[^A-Za-z0-9=._-]+", "_", spec)[:80]


def _read_cached(folder: Path) -> list[Document] | None:
    corpus_file, meta_file = folder / "corpus.jsonl", folder / "meta.json"
    if not (corpus_file.is_file() and meta_file.is_file()):
        return None
    try:
        meta = json.loads(meta_file.read_text(encoding="utf-8"))
        docs = []
        with open(corpus_file, encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    obj = json.loads(line)
                    docs.append(
                        Document(
                            obj["_id"], obj["text"], obj.get("title", ""), obj.get("metadata", {})
                        )
                    )
    except (OSError, ValueError, KeyError) as exc:
        log.warning("ignoring an unreadable chunk cache in %s (%s); rebuilding it", folder, exc)
        return None
    if meta.get("n_documents") != len(docs):
        log.warning("ignoring an incomplete chunk cache in %s; rebuilding it", folder)
        return None
    return docs


def chunk_notebooks(
    paths: Iterable[str | Path],
    chunker: Chunker | str,
    *,
    stop_at: str | None = DEFAULT_STOP_AT,
    skip_sections: tuple[str, ...] = DEFAULT_SKIP_SECTIONS,
    cache: bool = True,
    name: str | None = None,
) -> InMemoryCorpus:
    """Chunk notebooks into one corpus (passages in file order, then position).

    Args:
        paths: ``.ipynb`` files; their names (without ``.ipynb``) must differ.
        chunker: a :class:`Chunker` or a spec string (``"paragraphs:group=3,headers=true"``).
        stop_at, skip_sections: reading options, see
            :func:`~nuggetbench.corpus.notebook.read_notebook`.
        cache: read and write the chunk cache under ``<home>/cache/chunks/``.
        name: the corpus name.

    Returns:
        an :class:`~nuggetbench.data.InMemoryCorpus` of passages.

    Raises:
        SpecError: the chunker spec cannot be parsed.
        FormatError: a notebook cannot be read or parsed (the file is named).
        DuplicateError: two notebooks have the same name.
    """
    chunker = parse_chunker(chunker) if isinstance(chunker, str) else chunker
    paths = [Path(p) for p in paths]
    seen: dict[str, Path] = {}
    for p in paths:
        stem = p.name.removesuffix(".ipynb")
        if stem in seen:
            raise DuplicateError(
                f"notebooks {seen[stem]} and {p} have the same name {stem!r}; passage ids "
                "start with the notebook name, so rename one of them"
            )
        seen[stem] = p
    folder = None
    if cache:
        key = cache_key(paths, chunker, stop_at=stop_at, skip_sections=skip_sections)
        folder = home.cache_dir("chunks", f"{_slug(chunker.spec)}-{key}")
        cached = _read_cached(folder)
        if cached is not None:
            log.debug("chunk cache hit: %s", folder)
            return InMemoryCorpus(cached, name=name, source=str(folder))
    docs: list[Document] = []
    for p in paths:
        nb = read_notebook(p, stop_at=stop_at, skip_sections=skip_sections)
        docs.extend(chunker.chunk(nb))
    corpus = InMemoryCorpus(docs, name=name, source="chunked notebooks")
    if folder is not None:
        write_corpus_jsonl(docs, folder / "corpus.jsonl")
        meta = {
            "chunker": chunker.spec,
            "fingerprint": chunker.fingerprint(),
            "stop_at": stop_at,
            "skip_sections": list(skip_sections),
            "format_version": FORMAT_VERSION,
            "notebooks": [{"name": p.name, "sha256_16": _file_sha(p)} for p in paths],
            "n_documents": len(docs),
            "corpus_fingerprint": corpus.fingerprint(),
        }
        with atomic_write(folder / "meta.json") as fh:
            json.dump(meta, fh, indent=1)
        log.info(
            "chunked %d notebooks into %d passages with %s (cached in %s)",
            len(paths),
            len(docs),
            chunker.spec,
            folder,
        )
    return corpus


__all__ = ["chunk_notebooks", "cache_key"]

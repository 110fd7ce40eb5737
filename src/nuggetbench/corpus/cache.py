"""Chunk notebooks into a corpus, cached in the artifact store (``<home>/cache/chunks/``).

The artifact (:class:`~nuggetbench.store.Artifact`) is named by the chunker's canonical spec and
keyed by the chunker fingerprint (spec, format version, tokenizer vocabulary), the reading options
and the SHA-256 of every notebook file. It holds ``corpus.jsonl`` (BEIR lines with ``metadata``)
and ``meta.json``, written last: a folder without it is ignored and rebuilt.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable
from pathlib import Path

from nuggetbench.corpus.chunkers import FORMAT_VERSION, Chunker
from nuggetbench.corpus.notebook import DEFAULT_SKIP_SECTIONS, DEFAULT_STOP_AT, read_notebook
from nuggetbench.corpus.spec import parse_chunker
from nuggetbench.data import Document, InMemoryCorpus, write_corpus_jsonl
from nuggetbench.errors import DuplicateError, FormatError
from nuggetbench.store import Artifact, iter_jsonl, slug

log = logging.getLogger(__name__)


def _file_sha(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    except OSError as exc:
        raise FormatError(path, None, f"cannot read the notebook: {exc.strerror or exc}") from exc


def chunk_artifact(
    paths: list[Path], chunker: Chunker, *, stop_at: str | None, skip_sections: tuple[str, ...]
) -> Artifact:
    """The store artifact of chunking *paths* with *chunker* and these reading options."""
    params = {
        "chunker": chunker.fingerprint(),
        "stop_at": stop_at,
        "skip_sections": list(skip_sections),
        "format_version": FORMAT_VERSION,
    }
    inputs = {"notebooks": [[p.name, _file_sha(p)] for p in paths]}
    return Artifact("chunks", params, inputs, label=slug(chunker.spec, keep="start"))


def cache_key(
    paths: list[Path], chunker: Chunker, *, stop_at: str | None, skip_sections: tuple[str, ...]
) -> str:
    """The cache key (24 hex chars) of chunking *paths* with *chunker* and these reading options."""
    return chunk_artifact(paths, chunker, stop_at=stop_at, skip_sections=skip_sections).key


def _read_cached(artifact: Artifact) -> list[Document] | None:
    meta = artifact.meta()
    corpus_file = artifact.path / "corpus.jsonl"
    if meta is None or not corpus_file.is_file():
        return None
    try:
        docs = [
            Document(obj["_id"], obj["text"], obj.get("title", ""), obj.get("metadata", {}))
            for _, obj in iter_jsonl(corpus_file)
        ]
    except (OSError, ValueError, KeyError) as exc:
        log.warning(
            "ignoring an unreadable chunk cache in %s (%s); rebuilding it", artifact.path, exc
        )
        return None
    if meta.get("n_documents") != len(docs):
        log.warning("ignoring an incomplete chunk cache in %s; rebuilding it", artifact.path)
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
    artifact = None
    if cache:
        artifact = chunk_artifact(paths, chunker, stop_at=stop_at, skip_sections=skip_sections)
        cached = _read_cached(artifact)
        if cached is not None:
            log.debug("chunk cache hit: %s", artifact.path)
            return InMemoryCorpus(cached, name=name, source=str(artifact.path))
    docs: list[Document] = []
    for p in paths:
        nb = read_notebook(p, stop_at=stop_at, skip_sections=skip_sections)
        docs.extend(chunker.chunk(nb))
    corpus = InMemoryCorpus(docs, name=name, source="chunked notebooks")
    if artifact is not None:
        with artifact.build() as (staging, meta):
            write_corpus_jsonl(docs, staging / "corpus.jsonl")
            meta.update(
                chunker=chunker.spec,
                n_documents=len(docs),
                corpus_fingerprint=corpus.fingerprint(),
            )
        log.info(
            "chunked %d notebooks into %d passages with %s (cached in %s)",
            len(paths),
            len(docs),
            chunker.spec,
            artifact.path,
        )
    return corpus


__all__ = ["chunk_notebooks", "cache_key"]

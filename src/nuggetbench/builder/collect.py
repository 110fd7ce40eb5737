"""The corpus of a benchmark: repository trees (:mod:`.repos`) walked and chunked.

Each repository tree is walked in sorted order without following symbolic links: a link is never
read (one that points outside the repository is reported as ``symlink-outside``, one inside as
``symlink``: its target is walked on its own), and a file whose real path leaves the repository is
refused. Hidden paths, images, audio/video, archives and other binary formats, data files
(``.csv``, ``.json``...), files over a size limit, files whose bytes are not UTF-8 text and paths
matching ``exclude`` globs are skipped, each counted under its reason. The rest is chunked by
:mod:`.chunking` (code by syntax, prose by paragraphs, notebooks by cells) up to a token budget.

A chunk is a :class:`~nuggetbench.data.Document` with id ``<repo>/<path>_<start>_<end>`` (byte
span of the file; of the rendered text for notebooks), text ``"<repo>/<path>\\n\\n<slice>"`` (the
file path leads the text, as in FreshStack's corpus) and metadata ``repo, path, start_byte,
end_byte, commit, url, chunker, tokens`` (``tokens`` counts the whole text, path included, and
stays within the budget unless the path alone exceeds it).
"""

from __future__ import annotations

import fnmatch
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nuggetbench.builder.repos import PreparedRepo
from nuggetbench.corpus import code as chunking
from nuggetbench.data import Document
from nuggetbench.errors import InputError
from nuggetbench.progress import Meter

log = logging.getLogger(__name__)

IMAGE_EXTENSIONS = frozenset(
    [
        ".png",
        ".jpg",
        ".jpeg",
        ".gif",
        ".bmp",
        ".ico",
        ".svg",
        ".webp",
        ".tif",
        ".tiff",
        ".psd",
        ".eps",
        ".heic",
        ".avif",
    ]
)
AUDIO_VIDEO_EXTENSIONS = frozenset(
    [
        ".mp3",
        ".wav",
        ".ogg",
        ".flac",
        ".m4a",
        ".aac",
        ".opus",
        ".mp4",
        ".mov",
        ".avi",
        ".mkv",
        ".webm",
        ".wmv",
        ".flv",
        ".m4v",
    ]
)
DATA_EXTENSIONS = frozenset(
    [
        ".csv",
        ".tsv",
        ".json",
        ".jsonl",
        ".ndjson",
        ".parquet",
        ".feather",
        ".arrow",
        ".avro",
        ".xls",
        ".xlsx",
        ".npy",
        ".npz",
        ".pkl",
        ".pickle",
        ".h5",
        ".hdf5",
        ".db",
        ".sqlite",
        ".sqlite3",
        ".mat",
        ".geojson",
    ]
)
BINARY_EXTENSIONS = frozenset(
    [
        ".zip",
        ".gz",
        ".tar",
        ".tgz",
        ".bz2",
        ".xz",
        ".7z",
        ".rar",
        ".zst",
        ".jar",
        ".war",
        ".whl",
        ".egg",
        ".so",
        ".dll",
        ".dylib",
        ".exe",
        ".bin",
        ".o",
        ".a",
        ".lib",
        ".pyc",
        ".pyo",
        ".class",
        ".woff",
        ".woff2",
        ".ttf",
        ".otf",
        ".eot",
        ".pdf",
        ".pt",
        ".pth",
        ".onnx",
        ".safetensors",
        ".ckpt",
        ".wasm",
        ".dat",
        ".ds_store",
    ]
)


@dataclass(frozen=True)
class CorpusOptions:
    """How files are chosen and chunked (every list is configurable in the plan's ``[corpus]``)."""

    max_tokens: int = 2048
    tokenizer: str = "regex"
    max_file_bytes: int = 1_000_000
    skip_extensions: frozenset[str] = (
        IMAGE_EXTENSIONS | AUDIO_VIDEO_EXTENSIONS | DATA_EXTENSIONS | BINARY_EXTENSIONS
    )
    exclude: tuple[str, ...] = ()
    include_hidden: bool = False

    def describe(self) -> dict[str, Any]:
        return {
            "max_tokens": self.max_tokens,
            "tokenizer": self.tokenizer,
            "max_file_bytes": self.max_file_bytes,
            "skip_extensions": sorted(self.skip_extensions),
            "exclude": list(self.exclude),
            "include_hidden": self.include_hidden,
        }


@dataclass
class CorpusStats:
    """What collecting the corpus saw: files, skips by reason, chunks and tokens per chunk."""

    files_seen: int = 0
    files_chunked: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    chunks: int = 0
    chunks_by_kind: dict[str, int] = field(default_factory=dict)
    tokens: list[int] = field(default_factory=list, repr=False)
    per_repo: dict[str, dict[str, int]] = field(default_factory=dict)

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def as_dict(self) -> dict[str, Any]:
        import numpy as np

        tok = np.asarray(self.tokens or [0], dtype=np.float64)
        dist = {
            "min": int(tok.min()),
            "p50": float(np.median(tok)),
            "mean": round(float(tok.mean()), 1),
            "p90": float(np.percentile(tok, 90)),
            "max": int(tok.max()),
            "total": int(tok.sum()),
        }
        return {
            "files_seen": self.files_seen,
            "files_chunked": self.files_chunked,
            "files_skipped": sum(self.skipped.values()),
            "skipped": dict(sorted(self.skipped.items())),
            "chunks": self.chunks,
            "chunks_by_kind": dict(sorted(self.chunks_by_kind.items())),
            "tokens_per_chunk": dist,
            "per_repo": self.per_repo,
        }


def _skip_reason(rel: str, path: Path, options: CorpusOptions, root: Path) -> str | None:
    parts = rel.split("/")
    if not options.include_hidden and any(p.startswith(".") for p in parts):
        return "hidden"
    if path.is_symlink():
        try:
            target = path.resolve(strict=False)
        except (OSError, RuntimeError):
            return "symlink-outside"
        return "symlink" if target.is_relative_to(root) else "symlink-outside"
    if any(fnmatch.fnmatch(rel, pat) for pat in options.exclude):
        return "excluded"
    ext = path.suffix.lower()
    if ext in IMAGE_EXTENSIONS and ext in options.skip_extensions:
        return "image"
    if ext in AUDIO_VIDEO_EXTENSIONS and ext in options.skip_extensions:
        return "audio-video"
    if ext in DATA_EXTENSIONS and ext in options.skip_extensions:
        return "data"
    if ext in options.skip_extensions:
        return "binary-extension"
    return None


def iter_files(
    repo: PreparedRepo, options: CorpusOptions, stats: CorpusStats
) -> Iterator[tuple[str, bytes]]:
    """Yield ``(relative path, bytes)`` of the files to chunk, counting skips in *stats*."""
    root = repo.root
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(dirpath)
        kept = []
        for d in sorted(dirnames):
            full = here / d
            rel = full.relative_to(root).as_posix()
            if d == ".git" or (not options.include_hidden and d.startswith(".")):
                stats.files_seen += 1  # a pruned folder counts as one entry
                stats.skip("hidden")
            elif full.is_symlink():
                stats.files_seen += 1
                stats.skip("symlink" if full.resolve().is_relative_to(root) else "symlink-outside")
            elif any(
                fnmatch.fnmatch(rel, pat) or fnmatch.fnmatch(rel + "/", pat)
                for pat in options.exclude
            ):
                stats.files_seen += 1
                stats.skip("excluded")
            else:
                kept.append(d)
        dirnames[:] = kept
        for name in sorted(filenames):
            path = here / name
            rel = path.relative_to(root).as_posix()
            stats.files_seen += 1
            reason = _skip_reason(rel, path, options, root)
            if reason is None:
                reason, data = _read(path, root, options)
                if reason is None and data is not None:
                    yield rel, data
                    continue
            stats.skip(reason or "unreadable")


def _read(path: Path, root: Path, options: CorpusOptions) -> tuple[str | None, bytes | None]:
    try:
        if not path.resolve(strict=True).is_relative_to(root):
            return "symlink-outside", None
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(path, flags)
    except OSError:
        return "unreadable", None
    with os.fdopen(fd, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > options.max_file_bytes:
            return "too-large", None
        if size == 0:
            return "empty", None
        data = fh.read(options.max_file_bytes + 1)
    if b"\x00" in data[:8192]:
        return "binary", None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return "binary", None
    return None, data


def chunk_file(
    repo: PreparedRepo, rel: str, data: bytes, options: CorpusOptions, counter_factory
) -> list[Document]:
    """Chunk one file into documents (see the module docstring for ids, texts and metadata)."""
    prefix = f"{repo.name}/{rel}"
    head = prefix + "\n\n"
    head_bytes = head.encode("utf-8")
    head_tokens = counter_factory(head, head_bytes).count(0, len(head_bytes))
    budget = max(16, options.max_tokens - head_tokens)
    ext = Path(rel).suffix.lower()
    text = data.decode("utf-8")
    spans: list[chunking.Span] | None = None
    source_text, source_bytes = text, data
    if ext in chunking.NOTEBOOK_EXTENSIONS:
        try:
            rendered, cells = chunking.render_notebook(data, Path(rel).stem)
        except Exception as exc:  # a broken notebook is chunked as text
            log.info("%s: not a readable notebook (%s); chunked as text", prefix, exc)
        else:
            source_text, source_bytes = rendered, rendered.encode("utf-8")
            counter = counter_factory(source_text, source_bytes)
            spans = chunking.chunk_notebook(rendered, cells, counter, budget)
    if spans is None and ext in chunking.CODE_LANGUAGES:
        counter = counter_factory(text, data)
        spans = chunking.chunk_code(data, chunking.CODE_LANGUAGES[ext], counter, budget)
    if spans is None:
        counter = counter_factory(text, data)
        spans = chunking.chunk_prose(text, data, counter, budget)
    docs = []
    for sp in spans:
        body = source_bytes[sp.start : sp.end].decode("utf-8", errors="replace")
        if not body.strip():
            continue
        meta = {
            "repo": repo.name,
            "path": rel,
            "start_byte": sp.start,
            "end_byte": sp.end,
            "commit": repo.commit,
            "url": repo.url_for(rel),
            "chunker": sp.kind,
            "tokens": sp.tokens + head_tokens,
        }
        docs.append(Document(f"{prefix}_{sp.start}_{sp.end}", head + body, "", meta))
    return docs


def collect_corpus(
    repos: list[PreparedRepo],
    options: CorpusOptions,
    stats: CorpusStats | None = None,
    *,
    show_progress: bool = False,
) -> Iterator[Document]:
    """Yield the chunks of every repository in order, filling *stats* (when given) as it goes.

    ``stats.files_seen == stats.files_chunked + sum(stats.skipped.values())`` (a pruned folder,
    hidden or excluded or a link, counts as one entry).

    Raises:
        InputError: two chunks get one id (two repositories with one name).
        SpecError / ModelError: a bad budget or tokenizer.
    """
    stats = stats if stats is not None else CorpusStats()
    chunking.check_budget(options.max_tokens)
    factory = chunking.make_counter(options.tokenizer)
    seen_ids: set[str] = set()
    for repo in repos:
        before_files, before_chunks = stats.files_chunked, stats.chunks
        before_seen = stats.files_seen
        with Meter(f"chunking {repo.name}", None, "files", show=show_progress) as files:
            for rel, data in files.iterate(iter_files(repo, options, stats)):
                docs = chunk_file(repo, rel, data, options, factory)
                stats.files_chunked += 1
                for doc in docs:
                    if (
                        doc.doc_id in seen_ids
                    ):  # two repositories with one name: refuse, ids must be unique
                        raise InputError(
                            f"chunk id {doc.doc_id!r} occurs twice: give each [[repos]] entry a "
                            "distinct name"
                        )
                    seen_ids.add(doc.doc_id)
                    stats.chunks += 1
                    kind = doc.metadata["chunker"].split(":")[0]
                    stats.chunks_by_kind[kind] = stats.chunks_by_kind.get(kind, 0) + 1
                    stats.tokens.append(int(doc.metadata["tokens"]))
                    yield doc
        stats.per_repo[repo.name] = {
            "files_seen": stats.files_seen - before_seen,
            "files_chunked": stats.files_chunked - before_files,
            "chunks": stats.chunks - before_chunks,
        }


__all__ = [
    "CorpusOptions",
    "CorpusStats",
    "iter_files",
    "chunk_file",
    "collect_corpus",
    "IMAGE_EXTENSIONS",
    "AUDIO_VIDEO_EXTENSIONS",
    "DATA_EXTENSIONS",
    "BINARY_EXTENSIONS",
]

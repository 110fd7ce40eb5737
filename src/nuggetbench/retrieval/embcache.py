"""Caches of encoded corpora and of runs, under ``<home>/cache/`` (plain npy / npz / TREC + meta.json).

Every artefact lives in its own folder ``<home>/cache/<stage>/<label>-<key>/`` where *key* is the
SHA-256 of its key fields (model id, model revision or file fingerprint, encoding parameters,
corpus fingerprint...). ``meta.json`` is written last and repeats the key fields; an artefact is
used only when its ``meta.json`` matches the fields asked for exactly, so a changed corpus,
parameter or model never reuses a stale cache. Folders are built under a temporary name and
renamed into place, so an interrupted run leaves no half-written cache behind. Nothing is pickled.

* dense: ``embeddings.npy`` (n, dim) float32, opened memory-mapped;
* sparse: ``matrix.npz`` (scipy CSR, n x vocabulary);
* late interaction: ``tokens.npy`` (total tokens, dim) and ``offsets.npy`` (n + 1,);
* runs: ``run.trec`` (see :class:`RunCache` and :class:`CachedRetriever`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .. import home
from .._version import __version__
from .._atomic import atomic_write
from ..errors import CacheError

log = logging.getLogger(__name__)

FORMAT = 1


def key_of(fields: Mapping[str, Any]) -> str:
    """SHA-256 (24 hex chars) of the canonical JSON of *fields*."""
    text = json.dumps(fields, sort_keys=True, default=str, ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _slug(text: str) -> str:
    """A short folder-name-safe label (the end of a model path or spec; never hidden)."""
    return re.sub(r"[^A-Za-z0-9_.\-]+", "_", text)[-60:].lstrip("._-") or "x"


def doc_ids_digest(doc_ids: list[str]) -> str:
    """SHA-256 (16 hex) of the doc id list in order (checks that cached rows line up with a corpus)."""
    return hashlib.sha256("\x1f".join(doc_ids).encode()).hexdigest()[:16]


class Artifact:
    """One cached artefact folder.

    Args:
        stage: ``embeddings/dense``, ``embeddings/sparse``, ``runs``...
        fields: the key fields (JSON-serialisable); ``format`` is added.
        label: human-readable prefix of the folder name (e.g. the model name).
    """

    def __init__(self, stage: str, fields: Mapping[str, Any], *, label: str = ""):
        self.fields = {"format": FORMAT, **fields}
        self.key = key_of(self.fields)
        self.path = home.cache_dir(*stage.split("/")) / f"{_slug(label)}-{self.key}"

    def meta(self) -> dict | None:
        """The ``meta.json`` of a complete artefact whose key fields match, else ``None``."""
        meta_path = self.path / "meta.json"
        if not meta_path.exists():
            return None
        try:
            meta = json.loads(meta_path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            log.warning("ignoring unreadable cache %s (%s)", meta_path, exc)
            return None
        stored = json.loads(json.dumps(meta.get("fields"), default=str))
        wanted = json.loads(json.dumps(self.fields, default=str))
        if stored != wanted:
            log.warning("cache %s was written for other parameters; it is not reused", self.path)
            return None
        return meta

    @contextlib.contextmanager
    def build(self) -> Iterator[tuple[Path, dict]]:
        """Yield ``(staging_folder, extra_meta)``; on success the folder is renamed into place with a
        ``meta.json`` holding the key fields plus *extra_meta*. On error nothing is kept."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(
            tempfile.mkdtemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
        )
        extra: dict = {}
        try:
            yield staging, extra
            meta = {
                "fields": self.fields,
                "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
                "nuggetbench": __version__,
                **extra,
            }
            with atomic_write(staging / "meta.json") as fh:
                json.dump(meta, fh, indent=1, default=str)
            os.chmod(staging, 0o755)  # mkdtemp made it private; caches are plain shared files
            if self.path.exists():
                shutil.rmtree(self.path, ignore_errors=True)
            try:
                os.replace(staging, self.path)
            except OSError:  # another process finished the same artefact first: keep theirs
                shutil.rmtree(staging, ignore_errors=True)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise


def _check(cond: bool, artifact: Artifact, what: str) -> None:
    if not cond:
        raise CacheError(
            f"cache {artifact.path} is inconsistent ({what}); delete that folder and run again"
        )


# --- dense --------------------------------------------------------------------------------------
def load_dense(artifact: Artifact, n_docs: int) -> tuple[np.ndarray, dict] | None:
    """Memory-map cached embeddings ``(n_docs, dim)``, or ``None`` when absent/stale.

    Raises:
        CacheError: the cached array does not have the shape its ``meta.json`` records.
    """
    meta = artifact.meta()
    if meta is None:
        return None
    arr = np.load(artifact.path / "embeddings.npy", mmap_mode="r")
    _check(
        arr.ndim == 2 and arr.shape == (n_docs, int(meta["dim"])),
        artifact,
        f"embeddings of shape {arr.shape}, expected ({n_docs}, {meta.get('dim')})",
    )
    return arr, meta


@contextlib.contextmanager
def write_dense(
    artifact: Artifact, n_docs: int, dim: int, dtype: str = "float32"
) -> Iterator[np.ndarray]:
    """Yield a writable memory-mapped ``(n_docs, dim)`` array that becomes the cache on success."""
    with artifact.build() as (staging, extra):
        arr = np.lib.format.open_memmap(
            staging / "embeddings.npy", mode="w+", dtype=dtype, shape=(n_docs, dim)
        )
        yield arr
        arr.flush()
        del arr
        extra.update({"n": n_docs, "dim": dim, "dtype": dtype})


def check_dim(cached_dim: int, model_dim: int, artifact_path: Path, model: str) -> None:
    """Raise :class:`CacheError` when a model's embedding size differs from its cached embeddings'."""
    if int(cached_dim) != int(model_dim):
        raise CacheError(
            f"cached embeddings in {artifact_path} have dimension {cached_dim}, but model {model!r} now "
            f"produces dimension {model_dim}: the model changed under the same name/fingerprint. Delete "
            "that folder (or pin revision=...) and run again"
        )


# --- sparse -------------------------------------------------------------------------------------
def load_sparse(artifact: Artifact, n_docs: int):
    """Load a cached CSR matrix ``(n_docs, vocabulary)``, or ``None`` when absent/stale."""
    meta = artifact.meta()
    if meta is None:
        return None
    import scipy.sparse as sp

    mat = sp.load_npz(artifact.path / "matrix.npz").tocsr()
    _check(
        mat.shape == (n_docs, int(meta["dim"])),
        artifact,
        f"matrix of shape {mat.shape}, expected ({n_docs}, {meta.get('dim')})",
    )
    return mat, meta


def save_sparse(artifact: Artifact, matrix, **extra_meta: Any) -> None:
    """Store a CSR matrix as the artefact."""
    import scipy.sparse as sp

    with artifact.build() as (staging, extra):
        sp.save_npz(staging / "matrix.npz", matrix.tocsr(), compressed=False)
        extra.update(
            {
                "n": int(matrix.shape[0]),
                "dim": int(matrix.shape[1]),
                "nnz": int(matrix.nnz),
                **extra_meta,
            }
        )


# --- multi-vector -------------------------------------------------------------------------------
def load_multivector(artifact: Artifact, n_docs: int) -> tuple[np.ndarray, np.ndarray, dict] | None:
    """Memory-map cached token embeddings and offsets, or ``None`` when absent/stale."""
    meta = artifact.meta()
    if meta is None:
        return None
    tokens = np.load(artifact.path / "tokens.npy", mmap_mode="r")
    offsets = np.load(artifact.path / "offsets.npy")
    _check(
        offsets.shape == (n_docs + 1,)
        and tokens.ndim == 2
        and int(offsets[-1]) == tokens.shape[0]
        and tokens.shape[1] == int(meta["dim"]),
        artifact,
        "token and offset arrays disagree",
    )
    return tokens, offsets, meta


def save_multivector(
    artifact: Artifact, tokens: np.ndarray, offsets: np.ndarray, **extra_meta: Any
) -> None:
    """Store token embeddings ``(T, dim)`` and offsets ``(n + 1,)`` as the artefact."""
    with artifact.build() as (staging, extra):
        np.save(staging / "tokens.npy", tokens)
        np.save(staging / "offsets.npy", offsets.astype(np.int64))
        extra.update(
            {
                "n": int(len(offsets) - 1),
                "dim": int(tokens.shape[1]),
                "tokens": int(tokens.shape[0]),
                **extra_meta,
            }
        )


# --- runs ---------------------------------------------------------------------------------------
def doc_filter_digest(doc_filter: Mapping[str, Any] | None) -> str | None:
    """SHA-256 (16 hex) of a ``{query_id: doc ids}`` filter, order-independent; ``None`` for none."""
    if not doc_filter:
        return None
    h = hashlib.sha256()
    for q in sorted(doc_filter):
        docs = "\x1f".join(sorted(map(str, doc_filter[q])))
        h.update(q.encode() + b"\x1f" + docs.encode() + b"\x1e")
    return h.hexdigest()[:16]


class RunCache:
    """Cached runs of one retriever on one corpus and query set, at any depth.

    The folder ``<home>/cache/runs/<label>-<key>/`` (key: the *fields*, which must not include the
    depth) holds ``k<depth>.trec`` and ``k<depth>.json`` (name, metadata, queries without results,
    the key fields; written last). A request for depth *k* is served by the smallest cached depth
    >= *k*, truncated: the top *k* of a deeper run are the same documents in the same order.

    Args:
        fields: key fields (retriever identity, corpus and queries fingerprints, filter...).
        label: folder-name prefix.
    """

    def __init__(self, fields: Mapping[str, Any], *, label: str = "run"):
        self.fields = {"format": FORMAT, **fields}
        self.path = home.cache_dir("runs") / f"{_slug(label)}-{key_of(self.fields)}"

    def depths(self) -> list[int]:
        """Depths cached, ascending."""
        if not self.path.exists():
            return []
        found = (re.fullmatch(r"k(\d+)\.json", p.name) for p in self.path.iterdir())
        return sorted(int(m.group(1)) for m in found if m)

    def load(self, k: int, *, exact: bool = False):
        """The cached run truncated to depth *k*, or ``None`` when no cached depth >= *k* exists
        (with *exact*, only depth *k* itself serves: for retrievers whose top *k* depends on *k*)."""
        from ..data import read_run

        for depth in (d for d in self.depths() if (d == k if exact else d >= k)):
            try:
                meta = json.loads((self.path / f"k{depth}.json").read_text())
            except (OSError, json.JSONDecodeError):
                continue
            if json.loads(json.dumps(meta.get("fields"), default=str)) != json.loads(
                json.dumps(self.fields, default=str)
            ):
                continue
            run = read_run(self.path / f"k{depth}.trec")
            if meta.get("queries_without_results"):
                from .topk import _with_empty_queries

                run = _with_empty_queries(run, meta["queries_without_results"])
            metadata = dict(meta.get("metadata") or {}, cached=True, cached_depth=depth)
            return run.truncate(k).with_name(meta.get("name"), metadata)
        return None

    def save(self, run, k: int) -> None:
        """Store *run*, searched at depth *k* (its name and metadata go to ``k<k>.json``)."""
        from ..data import write_run

        empty = [q for q, n in zip(run.query_ids, run.lengths().tolist()) if n == 0]
        meta = {
            "fields": self.fields,
            "name": run.name,
            "metadata": json.loads(json.dumps(run.metadata, default=str)),
            "queries_without_results": empty,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "nuggetbench": __version__,
        }
        write_run(run, self.path / f"k{int(k)}.trec")
        with atomic_write(self.path / f"k{int(k)}.json") as fh:
            json.dump(meta, fh, indent=1, default=str)


def retriever_identity(retriever: Any) -> Any:
    """What identifies a retriever's results: its ``identity()`` when it has one (the neural
    retrievers add the model fingerprint), else its ``name`` and ``params`` (e.g. BM25); ``None``
    when it has neither ``identity()`` nor ``params`` (its runs are then not cached)."""
    fn = getattr(retriever, "identity", None)
    if callable(fn):
        return fn()
    params = getattr(retriever, "params", None)
    if not isinstance(params, dict):
        return None
    return {
        "name": getattr(retriever, "name", None),
        "params": params,
        "class": f"{type(retriever).__module__}.{type(retriever).__qualname__}",
    }


class CachedRetriever:
    """Wraps a retriever so that its search results are cached as runs (same protocol).

    The wrapped retriever's index is only built when a search misses the cache, so a second
    experiment (or a pipeline / fusion reusing the same first stage, at the same or a smaller
    depth) neither encodes nor indexes anything. Retrievers without ``identity()`` or ``params``
    are passed through uncached; a retriever whose top *k* depends on *k* (``depth_dependent``,
    e.g. a fusion without an explicit depth) is served only from a run of the same depth.
    """

    def __init__(self, retriever: Any):
        self.retriever = retriever
        self.name = retriever.name

    def identity(self) -> Any:
        return retriever_identity(self.retriever)

    def index(self, corpus, *, show_progress: bool = False) -> CachedIndex:
        return CachedIndex(self.retriever, corpus, show_progress=show_progress)

    def __rshift__(self, other):
        from .pipeline import Pipeline

        return Pipeline(self, other)


class CachedIndex:
    """The index side of :class:`CachedRetriever` (built lazily on the first cache miss).

    Attributes:
        hits, misses: cache lookups served and missed.
    """

    def __init__(self, retriever: Any, corpus, *, show_progress: bool = False):
        self.retriever = retriever
        self.corpus = corpus
        self.name = retriever.name
        self._inner = None
        self._show_progress = show_progress
        self.hits = 0
        self.misses = 0

    def _cache(self, queries, doc_filter, objective) -> RunCache | None:
        identity = retriever_identity(self.retriever)
        if identity is None:
            return None
        fields = {
            "retriever": identity,
            "corpus": self.corpus.fingerprint(),
            "queries": queries.fingerprint(),
            "doc_filter": doc_filter_digest(doc_filter),
            "objective": objective,
            "nuggetbench": __version__,
        }
        return RunCache(fields, label=self.name)

    def search(
        self,
        queries,
        k: int,
        *,
        doc_filter=None,
        show_progress: bool = False,
        objective: str | None = None,
    ):
        """As the wrapped index's ``search``; served from the run cache when possible."""
        cache = self._cache(queries, doc_filter, objective)
        exact = bool(getattr(self.retriever, "depth_dependent", False))
        run = cache.load(k, exact=exact) if cache is not None else None
        if run is not None:
            self.hits += 1
            log.info("reusing cached run %s", cache.path)
            return run
        self.misses += 1
        if self._inner is None:
            self._inner = self.retriever.index(
                self.corpus, show_progress=show_progress or self._show_progress
            )
        from .pipeline import call_search

        run = call_search(
            self._inner,
            queries,
            k,
            doc_filter=doc_filter,
            show_progress=show_progress,
            objective=objective,
        )
        if cache is not None:
            cache.save(run, k)
        return run

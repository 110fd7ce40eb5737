"""Caches of encoded corpora in the artifact store (:mod:`nuggetbench.store`), as plain arrays.

Each cache is an :class:`~nuggetbench.store.Artifact` under ``<home>/cache/embeddings/<kind>/``,
keyed by the model id and fingerprint, the encoding parameters and the corpus fingerprint; a
changed corpus, parameter or model never reuses a stale cache. Nothing is pickled.

* dense: ``embeddings.npy`` (n, dim) float32, opened memory-mapped;
* sparse: ``matrix.npz`` (scipy CSR, n x vocabulary);
* late interaction: ``tokens.npy`` (total tokens, dim) and ``offsets.npy`` (n + 1,).

Runs are cached by :mod:`nuggetbench.retrieval.compose.caching`.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from nuggetbench.errors import CacheError
from nuggetbench.store import Artifact

__all__ = [
    "Artifact",
    "check_dim",
    "doc_ids_digest",
    "load_dense",
    "load_multivector",
    "load_sparse",
    "save_multivector",
    "save_sparse",
    "write_dense",
]


def doc_ids_digest(doc_ids: list[str]) -> str:
    """SHA-256 (16 hex) of the doc id list in order (checks that cached rows line up with a corpus)."""
    return hashlib.sha256("\x1f".join(doc_ids).encode()).hexdigest()[:16]


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
    artifact.check(
        arr.ndim == 2 and arr.shape == (n_docs, int(meta["dim"])),
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
    artifact.check(
        mat.shape == (n_docs, int(meta["dim"])),
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
    artifact.check(
        offsets.shape == (n_docs + 1,)
        and tokens.ndim == 2
        and int(offsets[-1]) == tokens.shape[0]
        and tokens.shape[1] == int(meta["dim"]),
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
